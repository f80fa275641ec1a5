#pragma once
// /var/lib/dpkg/status: stanzas of "Field: value" separated by blank lines. Pure.

#include <map>
#include <string>
#include <string_view>

namespace cmax::audit {

/// Installed packages ("Status: install ok installed") -> version. Multi-arch duplicates keep
/// the first. Malformed stanzas are skipped.
std::map<std::string, std::string, std::less<>> parse_dpkg_status(std::string_view text);

}  // namespace cmax::audit
