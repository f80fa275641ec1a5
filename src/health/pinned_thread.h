#pragma once
// Threads pinned to one CPU each, for the CPU, memory and stall checks. The affinity is set on the
// thread attributes before creation, so a thread meant for a locked CPU never runs anywhere else
// (that is what the stall check detects). Every wait is bounded: threads that have not returned
// when the owner stops waiting are detached, so a body must only touch state it co-owns (capture a
// shared_ptr, never a reference to the caller's stack).

#include <pthread.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/result.h"

namespace cmax::health {

/// The CPUs this process may run on (sched_getaffinity), sorted.
Result<std::vector<int>> allowed_cpus();

/// A set of pinned threads. Not thread-safe; the destructor never blocks for long: it joins the
/// threads that returned and detaches the rest.
class PinnedThreads {
 public:
  PinnedThreads();
  ~PinnedThreads();
  PinnedThreads(const PinnedThreads&) = delete;
  PinnedThreads& operator=(const PinnedThreads&) = delete;

  /// Starts `body` on `cpu` with a 256 KiB stack. Errors name the CPU and the reason (a CPU
  /// outside this process's cpuset, no threads left).
  Result<void> start(int cpu, std::function<void()> body);
  /// Waits until every started thread has returned or `deadline` passes; true when all returned.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  /// Whether the i-th started thread has returned.
  bool finished(std::size_t i) const;
  std::size_t size() const { return threads_.size(); }

  struct Shared;  ///< completion flags; outlives the object while detached threads run

 private:
  std::shared_ptr<Shared> shared_;
  std::vector<pthread_t> threads_;
};

}  // namespace cmax::health
