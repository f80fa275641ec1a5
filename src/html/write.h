#pragma once
// cmax report end to end: read run directories, render the page, write it atomically, and the
// terminal summary and cmax.report/1 document that say what was written.

#include <string>
#include <vector>

#include "core/result.h"
#include "html/page.h"
#include "html/views.h"
#include "score/rubric.h"

namespace cmax::html {

inline constexpr std::string_view kReportSchema = "cmax.report/1";
inline constexpr std::string_view kReportFile = "report.html";

struct Written {
  std::string path;
  std::size_t bytes = 0;
  std::vector<RunReport> runs;
  std::vector<std::string> charts, sections;
};

/// Reads every directory (each needs results.json), renders, and writes `out` through a temporary
/// file renamed into place, so a reader never sees half a page. `out` empty: DIR/report.html for
/// one directory, ./cmax-report.html for several.
Result<Written> write_report(const std::vector<std::string>& dirs, const score::Rubric& rubric, std::string out,
                             const PageMeta& meta);

/// For the terminal: each run's tier, total, confidence and findings, the sections present, the path.
std::string render_summary(const Written& w);

/// {"schema": "cmax.report/1", "path", "bytes", "charts", "sections", "runs": [...]} (docs/schemas/report.md).
std::string report_to_json(const Written& w);

}  // namespace cmax::html
