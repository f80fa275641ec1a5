#pragma once
// The human report: findings grouped by ClusterMAX category with a per-category tally.
//   verbosity 0: one line per finding (result, id, what was observed)
//   1 (-v):      + expected vs observed, and the reason
//   2 (-vv):     + evidence (file or command, raw value), CVE ids and links
//   3 (-vvv):    + what the check looks at, and the remediation

#include <string>

#include "audit/audit.h"

namespace cmax::report {

struct TerminalOptions {
  int verbosity = 0;
  bool color = false;
  bool show_not_applicable = true;
};

std::string render_audit_terminal(const audit::AuditReport& report, int exit_code, const TerminalOptions& options);

/// The closing scorecard of `cmax run`: one line per category with its tally and score.
std::string render_scorecard_terminal(const audit::AuditReport& report, const TerminalOptions& options);

}  // namespace cmax::report
