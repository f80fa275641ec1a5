#include "health/pinned_thread.h"

#include <sched.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <mutex>

namespace cmax::health {

Result<std::vector<int>> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return fail("read this process's CPU affinity: {}", std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

struct PinnedThreads::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<char> done;  // guarded by mu
  std::size_t done_count = 0;
};

namespace {

struct Payload {
  std::shared_ptr<PinnedThreads::Shared> shared;
  std::size_t index;
  std::function<void()> body;
};

}  // namespace

// Free function with C linkage semantics for pthread_create.
static void* pinned_entry(void* arg) {
  std::unique_ptr<Payload> p(static_cast<Payload*>(arg));
  p->body();
  auto& s = *p->shared;
  {
    std::lock_guard lock(s.mu);
    s.done[p->index] = 1;
    ++s.done_count;
  }
  s.cv.notify_all();
  return nullptr;
}

PinnedThreads::PinnedThreads() : shared_(std::make_shared<Shared>()) {}

PinnedThreads::~PinnedThreads() {
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (finished(i)) {
      // It has returned its body; joining waits only for its exit path, and never for long.
      timespec until{};
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += 1;
      if (pthread_timedjoin_np(threads_[i], nullptr, &until) == 0) continue;
    }
    pthread_detach(threads_[i]);
  }
}

Result<void> PinnedThreads::start(int cpu, std::function<void()> body) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return fail("start a thread on CPU {}: no such CPU", cpu);
  pthread_attr_t attr;
  if (int rc = pthread_attr_init(&attr); rc != 0)
    return fail("start a thread on CPU {}: {}", cpu, std::strerror(rc));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  std::size_t index = threads_.size();
  {
    std::lock_guard lock(shared_->mu);
    shared_->done.push_back(0);
  }
  auto* payload = new Payload{shared_, index, std::move(body)};
  pthread_t t{};
  int rc = pthread_create(&t, &attr, &pinned_entry, payload);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    delete payload;
    std::lock_guard lock(shared_->mu);
    shared_->done.pop_back();
    return fail("start a thread pinned to CPU {}: {}{}", cpu, std::strerror(rc),
                rc == EINVAL ? " (the CPU is outside this process's cpuset)" : "");
  }
  threads_.push_back(t);
  return ok();
}

bool PinnedThreads::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(shared_->mu);
  return shared_->cv.wait_until(lock, deadline,
                                [&] { return shared_->done_count == threads_.size(); });
}

bool PinnedThreads::finished(std::size_t i) const {
  std::lock_guard lock(shared_->mu);
  return i < shared_->done.size() && shared_->done[i] != 0;
}

}  // namespace cmax::health
