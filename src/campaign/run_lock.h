#pragma once
// An exclusive lock on a run directory while a `cmax run` writes into it: two runs in one
// directory would measure each other's load and overwrite each other's documents. flock(2) on
// DIR/.cmax-run.lock, so the kernel releases it when the holder dies (no stale lock to clean up);
// the file says who holds it, for the refusal.

#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cmax::campaign {

inline constexpr const char* kRunLockFile = ".cmax-run.lock";

/// Held while alive; move-only.
class RunLock {
 public:
  /// Takes the lock on `dir` (created if missing) without waiting, and writes `holder` (who and
  /// what: "pid 123 on login1 since 2026-12-06T10:00:00Z: cmax run --plan standard") into the
  /// lock file. When another process holds it: an error naming the directory and that holder.
  static Result<RunLock> acquire(const std::string& dir, const std::string& holder);

 private:
  explicit RunLock(core::UniqueFd fd) : fd_(std::move(fd)) {}
  core::UniqueFd fd_;
};

}  // namespace cmax::campaign
