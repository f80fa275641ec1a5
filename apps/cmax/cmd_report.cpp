// cmax report: one self-contained HTML page (no scripts, no fetches) from one or more run
// directories: the scorecard, every finding with its evidence, the NCCL curves, drill timelines,
// endpoint latency / hit-rate / cost charts and availability calendars as inline SVG; plus a
// terminal summary. `cmax run` ends by writing DIR/report.html the same way.

#include <fmt/format.h>

#include "apps/cmax/command.h"
#include "apps/cmax/report_page.h"
#include "audit/audit.h"
#include "html/write.h"
#include "score/rubric.h"

namespace cmax::app {
namespace {

struct ReportFlags {
  std::vector<std::string> dirs;
  std::string out, rubric;
  bool json = false;
};

int run_report(const ReportFlags& f) {
  auto rubric = score::load_rubric(f.rubric.empty() ? std::nullopt : std::optional<std::string>(f.rubric));
  if (!rubric) {
    fmt::print(stderr, "cmax report: {}\n", rubric.error().message);
    return audit::kExitUsage;
  }
  auto written = html::write_report(f.dirs, *rubric, f.out, page_meta());
  if (!written) {
    fmt::print(stderr, "cmax report: {}\n", written.error().message);
    return audit::kExitUsage;
  }
  fmt::print("{}", f.json ? html::report_to_json(*written) : html::render_summary(*written));
  return 0;
}

}  // namespace

Runner setup_report(CLI::App& sub) {
  auto f = std::make_shared<ReportFlags>();
  sub.description(
      "Write one self-contained HTML report of run directories: the scorecard with its reasons and what\n"
      "would move the cluster up a tier, every finding with its evidence, and the stages' charts as inline\n"
      "SVG (NCCL busbw curves, drill timelines, endpoint latency / hit rate / cost, availability calendars),\n"
      "from the documents in each directory (docs/report.md). The page fetches nothing and runs no script,\n"
      "reads on a phone and prints. Several directories are also shown side by side and ranked.\n"
      "Prints a short summary (or --json) naming the file written.\n"
      "Exit codes: 0 written; 3 usage (a directory without results.json, an invalid rubric, an unwritable --out).");
  sub.add_option("RUN_DIR", f->dirs, "Run directories (cmax run --out DIR; stage documents beside results.json)")
      ->required();
  sub.add_option("--out,-o", f->out, "The HTML file to write (default: DIR/report.html for one directory, "
                                     "./cmax-report.html for several)");
  sub.add_option("--rubric", f->rubric, "A cmax.rubric/1 file instead of the built-in data/rubric.json");
  sub.add_flag("--json", f->json, "Print {\"schema\": \"cmax.report/1\", ...} (docs/schemas/report.md)");
  return [f] { return run_report(*f); };
}

}  // namespace cmax::app
