#pragma once
// A run directory: results.json, cmax.db (SQLite: the run, every fact and finding) and
// security.sarif. Default ~/.cmax/runs/<UTC stamp>/.

#include <string>

#include "audit/audit.h"
#include "core/result.h"

namespace cmax::report {

/// ~/.cmax/runs/<stamp> ($HOME, else /root); the stamp is like 20261202T122122Z.
std::string default_run_dir(std::string_view stamp);

/// Makes `dir` ready for a new audit run before any work starts. A directory that already holds
/// one (a results.json) is refused, naming it, unless `overwrite`: then that run's results.json,
/// security.sarif, cmax.db, cluster.json, fanout.log and nodes/ are removed, so results.json and
/// cmax.db always describe the same run. Other stages' documents in `dir` are left alone.
Result<void> prepare_run_dir(const std::string& dir, bool overwrite);

/// Creates `dir` (and parents) and writes the three files. Returns the directory.
Result<std::string> write_run_dir(const audit::AuditReport& report, int exit_code, const std::string& dir);

/// One stage's document into a run directory: creates `dir` (and parents) and writes `dir`/`name`
/// through a temporary file renamed over it, so a reader never sees half of it. The same way in for
/// every stage (scan.json, sla.json, isolation.json, check-active.json, ...). Returns the path.
Result<std::string> write_stage_document(const std::string& dir, std::string_view name, std::string_view text);

/// Reads `dir`/results.json back.
Result<audit::AuditReport> read_run_dir(const std::string& dir);

}  // namespace cmax::report
