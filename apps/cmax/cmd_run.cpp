// cmax run: the main job. Detects the harness, runs every stage this release has (the audit),
// writes a run directory and prints a scorecard grouped by the ten ClusterMAX categories.

#include <unistd.h>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/command.h"
#include "core/clock.h"
#include "report/audit_json.h"
#include "report/run_dir.h"
#include "report/terminal.h"

namespace cmax::app {
namespace {

struct RunState {
  AuditFlags flags;
  std::string out_dir;
};

void progress(std::string_view line) {
  // A progress line only for a person watching; quiet when stderr is a pipe or file.
  if (::isatty(STDERR_FILENO) == 1) fmt::print(stderr, "\r\033[K{}", line);
}

int run_main(const RunState& s) {
  auto options = to_audit_options(s.flags);
  if (!options) return environment_error(options.error().message);
  core::SystemClock clock;
  std::string dir = s.out_dir.empty() ? report::default_run_dir(core::format_utc_compact(clock.now())) : s.out_dir;

  progress("cmax run [1/1] audit: collecting facts and judging checks...");
  auto report = audit::run_audit(*options);
  progress("");
  if (!report) return environment_error(report.error().message);
  int code = audit::exit_code_for(report->findings);
  auto written = report::write_run_dir(*report, code, dir);
  if (!written) return environment_error(written.error().message);

  if (s.flags.json) {
    fmt::print("{}", report::audit_to_json(*report, code));
    return code;
  }
  auto topt = to_terminal_options(s.flags);
  fmt::print("{}", report::render_audit_terminal(*report, code, topt));
  fmt::print("{}", report::render_scorecard_terminal(*report, topt));
  fmt::print("\nRun directory: {}\n  results.json  cmax.db  security.sarif   (re-render: cmax audit review {})\n",
             *written, *written);
  return code;
}

}  // namespace

Runner setup_run(CLI::App& sub) {
  auto s = std::make_shared<RunState>();
  sub.description(
      "The main job on this machine: detect the harness, run the audit (later releases add health, drills,\n"
      "NCCL and endpoint stages), write a run directory with results.json and an SQLite database of every\n"
      "fact and finding, and print a scorecard grouped by the ten ClusterMAX categories.\n"
      "Exit codes: 0 no fail; 1 a check failed; 2 a security check failed; 3 usage or environment error.");
  sub.add_option("--out", s->out_dir, "Run directory (default ~/.cmax/runs/<UTC timestamp>/)");
  add_audit_flags(sub, s->flags);
  return [s] { return run_main(*s); };
}

}  // namespace cmax::app
