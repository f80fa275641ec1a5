// cmax audit [flags]            audit this machine (or --host-root DIR)
// cmax audit review RUN_DIR     re-render a saved run offline
// cmax audit isolation ...      what a tenant can reach (apps/cmax/cmd_audit_isolation.cpp)

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/cmd_audit_isolation.h"
#include "apps/cmax/command.h"
#include "audit/check.h"
#include "report/audit_json.h"
#include "report/run_dir.h"
#include "report/sarif.h"
#include "report/terminal.h"

namespace cmax::app {
namespace {

struct AuditState {
  AuditFlags flags;
  std::string sarif_path;
  std::string out_dir;
  CLI::App* review = nullptr;
  AuditFlags review_flags;
  std::string review_dir;
  bool list_checks = false;
  bool overwrite = false;
};

int list_checks(bool json) {
  if (json) fmt::print("{{\"schema\": \"cmax.checks/1\", \"checks\": [\n");
  bool first = true;
  for (const auto& c : audit::all_checks()) {
    if (json) {
      fmt::print("{}  {{\"id\": \"{}\", \"category\": \"{}\", \"severity\": \"{}\", \"security\": {}}}", first ? "" : ",\n",
                 c.id, audit::to_string(c.category), audit::to_string(c.severity), c.security ? "true" : "false");
    } else {
      fmt::print("{:<46} {:<13} {:<8} {}{}\n", c.id, audit::to_string(c.category), audit::to_string(c.severity),
                 c.title, c.security ? " [security]" : "");
    }
    first = false;
  }
  if (json) fmt::print("\n]}}\n");
  return 0;
}

int print_report(const audit::AuditReport& report, int code, const AuditFlags& flags) {
  if (flags.json)
    fmt::print("{}", report::audit_to_json(report, code));
  else
    fmt::print("{}", report::render_audit_terminal(report, code, to_terminal_options(flags)));
  return code;
}

int run_review(const AuditState& s) {
  auto report = report::read_run_dir(s.review_dir);
  if (!report) return environment_error(report.error().message);
  return print_report(*report, audit::exit_code_for(report->findings), s.review_flags);
}

int run_audit_command(const AuditState& s) {
  auto options = to_audit_options(s.flags);
  if (!options) return environment_error(options.error().message);
  if (!s.out_dir.empty())
    if (auto ready = report::prepare_run_dir(s.out_dir, s.overwrite); !ready) return environment_error(ready.error().message);
  auto report = audit::run_audit(*options);
  if (!report) return environment_error(report.error().message);
  int code = audit::exit_code_for(report->findings);
  if (!s.sarif_path.empty()) {
    std::ofstream out(s.sarif_path, std::ios::binary | std::ios::trunc);
    if (!out || !(out << report::render_sarif(*report)))
      return environment_error(fmt::format("write SARIF to {}: cannot write the file", s.sarif_path));
  }
  if (!s.out_dir.empty()) {
    auto dir = report::write_run_dir(*report, code, s.out_dir);
    if (!dir) return environment_error(dir.error().message);
  }
  return print_report(*report, code, s.flags);
}

}  // namespace

Runner setup_audit(CLI::App& sub) {
  auto s = std::make_shared<AuditState>();
  sub.description(
      "Read-only audit of this machine against the ClusterMAX criteria and the version floors in\n"
      "data/min-versions.json. Every check ends pass, warn, fail, not_applicable (with why) or unverified\n"
      "(evidence missing or unreadable: never a pass, never a fail).\n"
      "Exit codes: 0 no fail; 1 a check failed; 2 a security check failed; 3 usage or environment error.");
  add_audit_flags(sub, s->flags);
  sub.add_option("--sarif", s->sarif_path, "Also write the security findings as SARIF 2.1.0 to FILE");
  sub.add_flag("--list-checks", s->list_checks, "List every check (id, category, severity, title) and exit");
  sub.add_option("--out", s->out_dir, "Also write a run directory (results.json, cmax.db, security.sarif) to DIR");
  sub.add_flag("--overwrite", s->overwrite,
               "With --out: replace the run a directory already holds (without it such a directory is refused)");
  s->review = sub.add_subcommand("review", "Re-render a saved run directory offline (no host access)");
  s->review->add_option("RUN_DIR", s->review_dir, "A directory written by `cmax run` or `cmax audit --out`")
      ->required();
  add_render_flags(*s->review, s->review_flags);
  auto isolation = setup_audit_isolation(sub);
  return [s, isolation] {
    if (isolation.app->parsed()) return isolation.run();
    if (s->review->parsed()) return run_review(*s);
    if (s->list_checks) return list_checks(s->flags.json);
    return run_audit_command(*s);
  };
}

}  // namespace cmax::app
