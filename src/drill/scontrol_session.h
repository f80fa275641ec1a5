#pragma once
// One long-lived `scontrol -o` reading commands from a pipe, for the drill's watcher: each poll is
// then one RPC to slurmctld (a few milliseconds) instead of a new process with its own munge
// credential (tens of milliseconds), which is what bounds the timing uncertainty of every stage.
// Answers are framed by a `ping` after the commands. No shell; argv only; every read has a deadline.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cmax::drill {

class ScontrolSession {
 public:
  /// Starts `scontrol -o` (SLURM_CONF=`conf` when not empty). Fails when it cannot be spawned.
  static Result<ScontrolSession> start(const std::string& scontrol, const std::string& conf);
  ScontrolSession(ScontrolSession&& other) noexcept;
  ScontrolSession& operator=(ScontrolSession&& other) noexcept;
  ScontrolSession(const ScontrolSession&) = delete;
  ScontrolSession& operator=(const ScontrolSession&) = delete;
  /// Closes its input and kills its process group.
  ~ScontrolSession();

  /// Runs `commands` ("show node n1") and returns each one's output lines, in order. An error
  /// when scontrol died or did not answer within `timeout` (the session is then unusable: start
  /// another).
  Result<std::vector<std::vector<std::string>>> run(const std::vector<std::string>& commands,
                                                   std::chrono::milliseconds timeout);

 private:
  ScontrolSession(pid_t pid, core::UniqueFd in, core::UniqueFd out) : pid_(pid), in_(std::move(in)), out_(std::move(out)) {}
  void stop();
  /// "; it said: ..." from the last lines scontrol printed, or empty.
  std::string last_words() const;
  pid_t pid_ = -1;
  core::UniqueFd in_, out_;
  std::string pending_;  ///< bytes read past the last full line
  std::string tail_;     ///< the last lines read (up to about 1 KiB), for an error that says why
};

}  // namespace cmax::drill
