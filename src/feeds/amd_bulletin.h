#pragma once
// AMD product security bulletins (amd.com/.../bulletin/amd-sb-NNNN.html): the Instinct rows of their
// Program | CVE | Mitigation | Date tables, rowspans carried per column, read into ROCm floors per
// Instinct model and the AMD GPU Linux driver floor. GIM (the SR-IOV host driver), firmware bundles
// alone and "No fix planned" rows become notes: no floors component judges them.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "feeds/fix.h"

namespace cmax::feeds {

/// A table as its rows of cell texts, rowspans expanded (tags stripped, <br> as a space, entities
/// decoded). Pure; never throws.
std::vector<std::vector<std::string>> html_tables_rows(std::string_view html);

/// Reads one bulletin page; `name` is its file name or URL ("amd-sb-6027.html"), which gives the id
/// when the page does not.
Result<FeedDocument> read_amd_bulletin(std::string_view html, std::string_view name);

/// The GPU security bulletins an AMD product-security index page lists ("AMD-SB-6027"): rows of
/// type Security Bulletin whose title names graphics, GPU, Instinct or ROCm. Pure.
std::vector<std::string> amd_index_gpu_bulletins(std::string_view index_html);

}  // namespace cmax::feeds
