#pragma once
// A long-running child process owned by a test: started from argv (no shell) in its own process
// group, output appended to a log file, and killed with its whole group when the owner goes.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::test {

/// The absolute path of `name` on PATH or in /usr/sbin, /sbin (where daemons live), or nullopt.
std::optional<std::string> find_system_program(std::string_view name);

/// Waits until `log` holds `text` (a daemon said it is ready: "reading /dev/kmsg from now on"), or
/// `timeout` passes, or `daemon` exits; true when the text is there. The event a test waits on
/// instead of a sleep tuned to a quiet machine.
class Daemon;
bool wait_for_log(const std::filesystem::path& log, std::string_view text, std::chrono::milliseconds timeout,
                  Daemon* daemon = nullptr);

/// A child process and its process group. Killed (SIGKILL) and reaped on destruction; also killed
/// by the kernel if the thread that started it dies (PR_SET_PDEATHSIG). Move-only; not thread-safe.
class Daemon {
 public:
  /// Starts argv[0] (looked up with find_system_program) with `extra_env` over the inherited
  /// environment; stdin is /dev/null, stdout and stderr append to `log`.
  static Result<Daemon> start(const std::vector<std::string>& argv,
                              const std::vector<std::string>& extra_env,
                              const std::filesystem::path& log);

  Daemon(Daemon&& other) noexcept;
  Daemon& operator=(Daemon&& other) noexcept;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  ~Daemon();

  pid_t pid() const { return pid_; }
  /// "slurmd -D -N n1", for messages.
  const std::string& name() const { return name_; }
  /// True until the process has exited (then reaped, and exit_status() says how).
  bool running();
  /// "exit 1" or "signal 9" once it has exited; empty while it runs.
  const std::string& exit_status() const { return exit_status_; }
  /// Kills the process group with SIGKILL and reaps the process. Idempotent.
  void stop();

 private:
  Daemon(pid_t pid, std::string name) : pid_(pid), name_(std::move(name)) {}
  void record(int status);

  pid_t pid_ = -1;
  std::string name_;
  std::string exit_status_;
};

}  // namespace cmax::test
