#pragma once
// Child processes from argv vectors: no shell, a deadline, bounded captured output, and the whole
// process group killed when the deadline passes.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

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

/// A running child whose output is read as it arrives (a fan-out that hears from many nodes
/// through one srun). Same spawning as run_process: argv, stdin /dev/null, its own process group.
/// The destructor kills the group and reaps the child without blocking (a child stuck in the
/// kernel is left to exit later rather than hang the caller). Move-only; not thread-safe.
class Child {
 public:
  /// Starts `spec.argv` (spec.timeout is not used: the caller bounds its own pump loop).
  static Result<Child> spawn(const ProcessSpec& spec);
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();

  using Sink = std::function<void(std::string_view)>;
  /// Waits up to `wait` for output and hands what arrived to `on_out` / `on_err`. Returns false
  /// once both streams are closed (the child exited or closed them).
  bool pump(std::chrono::milliseconds wait, const Sink& on_out, const Sink& on_err);
  /// Sends `sig` to the child's whole process group.
  void signal_group(int sig);
  /// Reaps the child if it has exited, waiting up to `wait`; the raw wait status, or nullopt
  /// while it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds wait);
  pid_t pid() const { return pid_; }

 private:
  Child(pid_t pid, UniqueFd out, UniqueFd err) : pid_(pid), out_(std::move(out)), err_(std::move(err)) {}
  pid_t pid_ = -1;
  bool reaped_ = false;
  UniqueFd out_, err_;
};

/// The absolute path of this program (/proc/self/exe), or nullopt when it cannot be read.
std::optional<std::string> self_executable();

/// The absolute path of `name` on PATH (or `path_env` when given), or nullopt.
std::optional<std::string> find_program(std::string_view name,
                                        std::optional<std::string_view> path_env = std::nullopt);

/// "runc --version" style rendering of an argv for evidence and logs (never executed).
std::string describe_argv(const std::vector<std::string>& argv);

}  // namespace cmax::core
