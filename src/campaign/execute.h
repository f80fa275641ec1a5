#pragma once
// Runs one stage's command as a child (argv, no shell, its own process group), its output into a
// log file in the run directory, stopped at its budget or when the caller asks (Ctrl-C): SIGINT to
// the group first so the stage keeps what it measured, SIGKILL after a grace period.

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "campaign/state.h"

namespace cmax::campaign {

struct StageRun {
  Status status = Status::failed;
  int exit_code = -1;
  double seconds = 0;
  std::string error;      ///< failed/timed_out/interrupted: why, with the log's last line
  std::string last_line;  ///< the last line the stage printed
};

struct ExecuteOptions {
  std::string log_path;                        ///< created (truncated); both streams go here
  const std::atomic<bool>* stop = nullptr;     ///< set by a signal handler: stop the stage now
  std::chrono::milliseconds grace{10000};      ///< SIGINT, then this long before SIGKILL
  /// Called about once a second with the time spent and the stage's last output line.
  std::function<void(double seconds, const std::string& last_line)> on_tick;
};

/// What a stage command's exit code means (docs/run.md, docs/exit-codes.md): 0 "clean", 1-2
/// "findings", 3 "usage or environment", 130 "interrupted", else "failed".
std::string exit_label(int exit_code);

/// True for a line that only points at a document ("report: PATH", "Run directory: ..."), never
/// a stage's last word on why it ended.
bool says_nothing(std::string_view line);

/// Exit codes 0-2 are a stage that ran to the end (0 clean, 1-2 findings); anything else, a
/// signal, or a start that fails is `failed`. Never throws; never blocks past budget + grace.
StageRun execute_stage(const Decision& d, const ExecuteOptions& o);

}  // namespace cmax::campaign
