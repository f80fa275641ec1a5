#pragma once
// Child processes from argv vectors: no shell, a deadline, bounded captured output, and the whole
// process group killed when the deadline passes.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::core {

/// What to run. argv[0] is looked up on PATH when it has no slash.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::chrono::milliseconds timeout{5000};
  std::size_t max_output_bytes = 1u << 20;  ///< per stream; the rest is read and dropped
  std::vector<std::string> extra_env;       ///< "KEY=VALUE" over the inherited environment
};

/// How it ended. `exit_code` is -1 when killed by a signal (see `signal`).
struct ProcessResult {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool truncated = false;
  std::string out;
  std::string err;
  std::chrono::microseconds wall{0};
};

/// Runs a process to completion or to its deadline. An error means it could not be started;
/// a non-zero exit or a timeout is a successful Result that says so.
Result<ProcessResult> run_process(const ProcessSpec& spec);

/// The absolute path of `name` on PATH (or `path_env` when given), or nullopt.
std::optional<std::string> find_program(std::string_view name,
                                        std::optional<std::string_view> path_env = std::nullopt);

/// "runc --version" style rendering of an argv for evidence and logs (never executed).
std::string describe_argv(const std::vector<std::string>& argv);

}  // namespace cmax::core
