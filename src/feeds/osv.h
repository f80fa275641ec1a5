#pragma once
// OSV records (ossf.github.io/osv-schema): GitHub advisories for Go modules (runc), osv.dev query
// responses ({"vulns": [...]}), and Canonical's Ubuntu security notices (USN-NNNN-N), whose
// affected[] entries give the fixed version of each source package per Ubuntu release. Pure.

#include <string_view>

#include "core/result.h"
#include "feeds/fix.h"
#include <nlohmann/json_fwd.hpp>

namespace cmax::feeds {

/// One OSV vulnerability (a GHSA or GO record) for the packages cmax floors (runc): per release
/// branch, the fixed version (a pre-release fix names its stable release); CVEs from aliases.
Result<FeedDocument> read_osv_record(const nlohmann::json& record, std::string_view name);

/// An osv.dev query response: every record in "vulns", merged into one document.
Result<FeedDocument> read_osv_query(const nlohmann::json& response, std::string_view name);

/// A Canonical USN record: the fixed version of each kernel source package ("linux",
/// "linux-aws", "linux-hwe-6.8") per release, with the CVEs it fixes (upstream[], cves_map, or,
/// where both are empty as in USN-8373-1, the CVE ids in its details).
Result<FeedDocument> read_usn(const nlohmann::json& record, std::string_view name);

}  // namespace cmax::feeds
