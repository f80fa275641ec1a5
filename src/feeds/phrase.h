#pragma once
// NVIDIA's CSAF bulletins give versions as English phrases in product names ("25.10.6 or newer,",
// "595.71.05(vGPU 20.1)", "CUDA Toolkit 12.9 Update 1", "1.7.21 and older versions"). These turn a
// phrase into the versions it names. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::feeds {

/// The fixed releases a leaf of product_status.fixed names: "595.71.05", "25.10.6 or newer,",
/// "595.71.05(vGPU 20.1)" (the driver, not the vGPU release), "CUDA Toolkit 13.1", "12.9 Update 1"
/// (12.9.1), "12.6U1" (12.6.1), "v2.2.1", "0.13.1 and 0.12.3" (two lines). Empty when the phrase
/// names no version ("Contact your NVIDIA Customer Program Manager", commit ids).
std::vector<std::string> fixed_versions_in(std::string_view phrase);

/// The newest affected release an affected leaf names when it is inclusive and on its own scale:
/// "1.7.21 and older versions" -> 1.7.21. nullopt for exclusive bounds ("All versions prior to X").
std::optional<std::string> inclusive_affected_in(std::string_view phrase);

/// "2026-05-21T00:00:00.000Z" -> "2026-05-21"; "" when it does not start with a date.
std::string date_part(std::string_view timestamp);

}  // namespace cmax::feeds
