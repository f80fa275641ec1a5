#pragma once
// Runs the active checks of `cmax check --active`, each in a child process of its own with a time
// limit: the child is the cmax binary again (`cmax check --run-one ID ...`), which runs one check
// and prints its result as JSON. A child that does not finish in time is killed with its process
// group and, when it cannot die (stuck in the kernel on a hung filesystem), left behind and reaped
// later: the check is a fail with timed_out set, and cmax goes on. The GPU checks run through
// run_gpu_checks (their own bounded program).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "health/active.h"
#include "health/result.h"

namespace cmax::health {

/// The groups --checks accepts, in run order.
inline constexpr std::string_view kActiveGroups[] = {"storage", "memory", "cpu", "gpu"};

/// "storage,cpu" -> {"storage", "cpu"}; errors name the unknown group and list the known ones.
Result<std::vector<std::string>> parse_groups(std::string_view csv);

/// How run_active starts its children and reports progress.
struct RunnerOptions {
  /// The cmax binary that runs one check (`PROGRAM check --run-one ID ...`). Empty: this process's
  /// own executable (/proc/self/exe).
  std::string program;
  /// How long a killed child may take to die before it is left behind.
  std::chrono::milliseconds reap_grace{200};
  /// Called before each check (or the GPU group) starts: id, 1-based position, total. Optional.
  std::function<void(std::string_view id, std::size_t index, std::size_t total)> on_start;
  /// Called with each result as it arrives. Optional.
  std::function<void(const CheckResult&)> on_result;
};

/// Runs the checks of `groups` (empty: every group) one after the other, each in a child bounded
/// by o.check_timeout; then, when "gpu" is selected, run_gpu_checks(o.gpu). Never blocks longer
/// than about (check_timeout + reap_grace) per check. Errors: an unknown group, a thresholds table
/// that cannot be handed to the children, a bad GPU thresholds file.
Result<std::vector<CheckResult>> run_active(const ActiveOptions& o, const Thresholds& t,
                                            std::span<const std::string> groups,
                                            const RunnerOptions& r = {});

// The pieces below are what run_active is made of; public for `cmax check --run-one` and tests.

/// The child's argv: PROGRAM check --run-one ID --child-options JSON --child-thresholds JSON.
Result<std::vector<std::string>> child_argv(const std::string& program, std::string_view id,
                                            const ActiveOptions& o, const Thresholds& t);

/// The child's side: runs check `id` in this process with the options and thresholds from
/// child_argv, and returns the result's JSON text (one line). Errors: unknown id, bad JSON.
Result<std::string> run_one(std::string_view id, std::string_view options_json,
                            std::string_view thresholds_json);

/// How a bounded child ended.
struct ChildRun {
  int exit_code = -1;  ///< -1 when killed by a signal or abandoned
  int signal = 0;
  bool timed_out = false;
  /// Killed at the deadline but still alive after the grace: stuck in the kernel; left behind.
  bool abandoned = false;
  pid_t pid = -1;
  std::string out;  ///< stdout, at most 1 MiB
  std::string err;  ///< stderr, at most 64 KiB
  std::chrono::milliseconds wall{0};
};

/// Runs argv (argv[0] a path) in its own process group with stdin from /dev/null. At `timeout`,
/// SIGKILLs the group and waits at most `reap_grace` for the child; one that has not died is left
/// to a later reap (never a blocking wait). Errors only when it cannot be started.
Result<ChildRun> run_bounded(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout,
                             std::chrono::milliseconds reap_grace);

/// The check's result from its child's run: the parsed JSON, or a fail (timed out) or unverified
/// (crashed, bad output) result that says what happened and what to do.
CheckResult result_from_child(const ActiveCheck& check, const ActiveOptions& o,
                              const ChildRun& run);

}  // namespace cmax::health
