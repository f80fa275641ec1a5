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

/// Writes DIR/report.html with the built-in rubric. Returns the line to print ("Report: ...").
inline Result<std::string> try_write_run_report(const std::string& dir) {
  auto rubric = score::load_rubric(std::nullopt);
  if (!rubric) return Unexpected<Error>{rubric.error()};
  auto w = html::write_report({dir}, *rubric, "", page_meta());
  if (!w) return Unexpected<Error>{w.error()};
  return fmt::format("Report: {} ({} charts; re-render: cmax report {})\n", w->path, w->charts.size(), dir);
}

/// The same, or a warning line: a run whose report could not be written still has its run
/// directory and exit code.
inline std::string write_run_report(const std::string& dir) {
  auto line = try_write_run_report(dir);
  return line ? *line : fmt::format("warning: no report written: {}\n", line.error().message);
}

}  // namespace cmax::app
