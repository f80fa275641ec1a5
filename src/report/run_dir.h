#pragma once
// A run directory: results.json, cmax.db (SQLite: the run, every fact and finding) and
// security.sarif. Default ~/.cmax/runs/<UTC stamp>/.

#include <string>

#include "audit/audit.h"
#include "core/result.h"

namespace cmax::report {

/// ~/.cmax/runs/<stamp> ($HOME, else /root); the stamp is like 20261202T122122Z.
std::string default_run_dir(std::string_view stamp);

/// Creates `dir` (and parents) and writes the three files. Returns the directory.
Result<std::string> write_run_dir(const audit::AuditReport& report, int exit_code, const std::string& dir);

/// Reads `dir`/results.json back.
Result<audit::AuditReport> read_run_dir(const std::string& dir);

}  // namespace cmax::report
