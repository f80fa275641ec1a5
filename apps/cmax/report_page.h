#pragma once
// What `cmax report` and `cmax run` stamp on a page, and the report `cmax run` writes at its end.

#include <string>

#include <fmt/format.h>

#include "core/clock.h"
#include "html/write.h"
#include "report/audit_json.h"
#include "score/rubric.h"

namespace cmax::app {

inline html::PageMeta page_meta() {
  return {core::format_utc(core::SystemClock().now()), std::string(report::cmax_version())};
}

/// Writes DIR/report.html with the built-in rubric. Returns the line to print ("report: ..."), or a
/// warning: a run whose report could not be written still has its run directory and exit code.
inline std::string write_run_report(const std::string& dir) {
  auto rubric = score::load_rubric(std::nullopt);
  if (!rubric) return fmt::format("warning: no report written: {}\n", rubric.error().message);
  auto w = html::write_report({dir}, *rubric, "", page_meta());
  if (!w) return fmt::format("warning: no report written: {}\n", w.error().message);
  return fmt::format("Report: {} ({} charts; re-render: cmax report {})\n", w->path, w->charts.size(), dir);
}

}  // namespace cmax::app
