#pragma once
// The audit as JSON, schema "cmax.audit/1" (docs/schemas/audit.md), and back. Deterministic:
// findings in check-table order, facts in key order, keys in a fixed order.

#include <string>
#include <string_view>

#include "audit/audit.h"
#include "core/result.h"

namespace cmax::report {

inline constexpr std::string_view kAuditSchema = "cmax.audit/1";

/// The version string of this build ("0.1.0").
std::string_view cmax_version();

/// Renders the report; `exit_code` is recorded in the summary. Two-space indented.
std::string audit_to_json(const audit::AuditReport& report, int exit_code, bool include_facts = true);

/// Reads a results.json back (for `cmax audit review`). Errors name `origin`.
Result<audit::AuditReport> audit_from_json(std::string_view text, std::string_view origin);

}  // namespace cmax::report
