#pragma once
// The document `cmax collect` prints for its node, schema "cmax.collect/1" (docs/schemas/collect.md):
// the audit (facts and the node's own findings), the kernel-log scan, the active checks that ran,
// and the stages that failed. One line of compact JSON, so it can be framed (frame.h).

#include <string>
#include <string_view>
#include <vector>

#include "audit/audit.h"
#include "core/result.h"
#include "health/result.h"

namespace cmax::cluster {

inline constexpr std::string_view kCollectSchema = "cmax.collect/1";

/// The kernel-log scan as the controller needs it: counts, and the incidents that need action.
struct ScanSummary {
  bool ran = false;
  std::uint64_t bytes = 0;
  std::size_t incidents = 0;
  std::size_t actionable = 0;  ///< unresolved and stronger than monitor
  std::string worst_action;    ///< the strongest unresolved action; empty when none
  std::vector<std::string> top;  ///< up to 5 actionable incidents, "xid 79 reboot_node x3 0000:3b:00"
  std::vector<std::string> errors;
};

struct CollectDoc {
  std::string node;
  std::string cmax_version;
  double seconds = 0;
  audit::AuditReport audit;
  ScanSummary scan;
  std::string scan_json;  ///< the node's whole cmax.scan/1 document, compact, for the run directory
  std::vector<health::CheckResult> checks;
  std::vector<std::string> errors;  ///< stages that failed on the node, with why
};

/// The node's document: compact JSON without newlines. `audit_json` and `scan_json` are the
/// cmax.audit/1 and cmax.scan/1 documents (any formatting; re-emitted compact); an empty one is
/// left out.
Result<std::string> render_collect_doc(std::string_view node, double seconds, std::string_view audit_json,
                                       std::string_view scan_json, const std::vector<health::CheckResult>& checks,
                                       const std::vector<std::string>& errors);

/// Reads a node's document. Errors name `origin` and what is wrong.
Result<CollectDoc> parse_collect_doc(std::string_view text, std::string_view origin);

}  // namespace cmax::cluster
