#include "health/stall.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

#include "core/host.h"
#include "health/active.h"
#include "health/numa.h"
#include "health/pinned_thread.h"

namespace cmax::health {

using audit::Outcome;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kId = "cpu.stall";
constexpr std::string_view kHint =
    "cores locked or starved (check dmesg for soft lockups / RCU stalls)";

std::string cpu_names(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ", ") + std::to_string(c);
  return s;
}

double p99(std::vector<double> v) {
  if (v.empty()) return 0;
  auto k = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

CheckResult judge_stall(std::span<const NodeObservations> nodes, std::chrono::milliseconds watched,
                        const Bounds& max_wakeup) {
  CheckResult r;
  r.id = std::string(kId);
  r.outcome = Outcome::pass;
  std::vector<std::string> all_targets, bad_targets, reasons, summary;
  const auto watched_ms = static_cast<double>(watched.count());
  for (const auto& n : nodes) {
    if (n.threads.empty()) continue;  // a memory-only node has no CPU to watch
    const std::string name = fmt::format("numa{}", n.node);
    all_targets.push_back(name);
    std::vector<int> never_ran, not_started;
    std::vector<double> lateness;
    double worst = 0;
    std::string start_error;
    for (const auto& t : n.threads) {
      if (!t.start_error.empty()) {
        not_started.push_back(t.cpu);
        start_error = t.start_error;
        continue;
      }
      if (!t.started) {
        never_ran.push_back(t.cpu);
        continue;
      }
      lateness.insert(lateness.end(), t.lateness_ms.begin(), t.lateness_ms.end());
      for (double l : t.lateness_ms) worst = std::max(worst, l);
      worst = std::max(worst, t.stuck_ms);
    }
    const std::size_t usable = n.threads.size() - not_started.size();
    Outcome node_outcome = Outcome::pass;
    std::string node_reason;
    if (usable == 0) {
      node_outcome = Outcome::unverified;
      node_reason = fmt::format("could not start a pinned thread on any CPU of NUMA node {}: {}",
                                n.node, start_error);
      summary.push_back(fmt::format("{} not watched", name));
    } else if (!never_ran.empty()) {
      node_outcome = Outcome::fail;
      node_reason =
          never_ran.size() == usable
              ? fmt::format("no CPU of NUMA node {} ran a pinned thread for {:.0f} ms: {}", n.node,
                            watched_ms, kHint)
              : fmt::format("CPU {} of NUMA node {} did not run a pinned thread for {:.0f} ms: {}",
                            cpu_names(never_ran), n.node, watched_ms, kHint);
      // A thread that never ran woke at least `watched` late; record that as the node's worst.
      r.measurements.push_back({name + ".max_wakeup_ms", std::max(worst, watched_ms), "ms",
                                std::nullopt,
                                max_wakeup.max ? max_wakeup.max : max_wakeup.warn_max});
      summary.push_back(fmt::format("{} {} of {} CPUs never ran", name, never_ran.size(), usable));
    } else {
      const double p = p99(lateness);
      r.measurements.push_back({name + ".p99_wakeup_ms", p, "ms", std::nullopt, std::nullopt});
      Measurement m{name + ".max_wakeup_ms", worst, "ms", std::nullopt, std::nullopt};
      auto j = judge(m, max_wakeup);
      r.measurements.push_back(std::move(m));
      node_outcome = j.outcome;
      node_reason = j.reason;
      summary.push_back(fmt::format("{} p99 {:.3f} ms max {:.3f} ms over {} wake-ups", name, p,
                                    worst, lateness.size()));
    }
    if (!not_started.empty() && usable > 0) {
      node_reason +=
          fmt::format("{}CPU {} of NUMA node {} not watched: {}", node_reason.empty() ? "" : "; ",
                      cpu_names(not_started), n.node, start_error);
      node_outcome = worse(node_outcome, Outcome::unverified);
    }
    r.outcome = worse(r.outcome, node_outcome);
    if (node_outcome != Outcome::pass) bad_targets.push_back(name);
    if (!node_reason.empty()) reasons.push_back(std::move(node_reason));
  }
  if (all_targets.empty()) {
    r.outcome = Outcome::unverified;
    reasons.push_back("no NUMA node with a CPU to watch");
  }
  auto join = [](const std::vector<std::string>& v, std::string_view sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
    return s;
  };
  r.target = join(bad_targets.empty() ? all_targets : bad_targets, ",");
  r.summary = join(summary, "; ");
  r.reason = join(reasons, "; ");
  return r;
}

namespace {

/// One sleeper's state, written by its thread and read by the parent.
struct Slot {
  std::atomic<bool> started{false};
  std::atomic<std::size_t> count{0};
  std::atomic<std::int64_t> last_progress_ns{0};  // steady clock, ns since its epoch
  std::vector<double> lateness_ms;                // preallocated; entries [0, count) are final
};

struct StallRun {
  Clock::time_point deadline;
  std::atomic<bool> abandon{false};
  std::vector<std::unique_ptr<Slot>> slots;
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void sleeper(const std::shared_ptr<StallRun>& run, std::size_t i) {
  Slot& s = *run->slots[i];
  s.last_progress_ns.store(now_ns(), std::memory_order_relaxed);
  s.started.store(true, std::memory_order_release);
  const timespec one_ms{0, 1000000};
  std::size_t n = 0;
  while (!run->abandon.load(std::memory_order_relaxed) && Clock::now() < run->deadline &&
         n < s.lateness_ms.size()) {
    auto t0 = Clock::now();
    clock_nanosleep(CLOCK_MONOTONIC, 0, &one_ms, nullptr);
    auto t1 = Clock::now();
    s.lateness_ms[n] =
        std::max(0.0, std::chrono::duration<double, std::milli>(t1 - t0).count() - 1.0);
    s.count.store(++n, std::memory_order_release);
    s.last_progress_ns.store(now_ns(), std::memory_order_relaxed);
  }
}

}  // namespace

CheckResult check_cpu_stall(const ActiveOptions& o, const Thresholds& t) {
  const auto begin = Clock::now();
  core::HostRoot host(o.host_root);
  auto finish = [&](CheckResult r) {
    r.id = std::string(kId);
    r.category = audit::Category::reliability;
    r.title = "CPU responsiveness per NUMA node (pinned 1 ms sleepers)";
    r.duration_s = std::chrono::duration<double>(Clock::now() - begin).count();
    return r;
  };
  auto nodes = read_numa_nodes(host);
  if (!nodes) {
    CheckResult r;
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("{}: cannot tell which CPUs to watch", nodes.error().message);
    return finish(std::move(r));
  }
  const auto window = std::max(o.stall_window, std::chrono::milliseconds(10));
  // Enough slots for a sleeper that wakes exactly on time for the whole window.
  const auto capacity = static_cast<std::size_t>(window.count()) + 16;
  auto run = std::make_shared<StallRun>();
  std::vector<std::pair<std::size_t, std::size_t>> where;  // (node index, thread index) per slot
  std::vector<NodeObservations> obs;
  for (const auto& n : *nodes) {
    NodeObservations no{n.id, {}};
    for (int cpu : n.cpus) {
      no.threads.push_back(StallObservation{cpu, {}, false, {}, 0});
      run->slots.push_back(std::make_unique<Slot>());
      run->slots.back()->lateness_ms.resize(capacity);
      where.emplace_back(obs.size(), no.threads.size() - 1);
    }
    obs.push_back(std::move(no));
  }

  // Every node at once, so the check takes one window however many nodes there are.
  const auto start = Clock::now();
  run->deadline = start + window;
  PinnedThreads threads;
  std::vector<std::size_t> started_slot;  // thread index -> slot index
  for (std::size_t i = 0; i < run->slots.size(); ++i) {
    auto& ob = obs[where[i].first].threads[where[i].second];
    auto started = threads.start(ob.cpu, [run, i] { sleeper(run, i); });
    if (!started) {
      ob.start_error = started.error().message;
      continue;
    }
    started_slot.push_back(i);
  }
  // The margin lets a sleeper that started late finish its last 1 ms sleep; never wait longer.
  const auto margin = std::chrono::milliseconds(200) + window / 10;
  threads.wait_until(start + window + margin);
  run->abandon.store(true);
  const auto cutoff = Clock::now();
  const auto cutoff_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(cutoff.time_since_epoch()).count();
  for (std::size_t k = 0; k < started_slot.size(); ++k) {
    const std::size_t i = started_slot[k];
    Slot& s = *run->slots[i];
    auto& ob = obs[where[i].first].threads[where[i].second];
    ob.started = s.started.load(std::memory_order_acquire);
    const std::size_t count = s.count.load(std::memory_order_acquire);
    ob.lateness_ms.assign(s.lateness_ms.begin(),
                          s.lateness_ms.begin() + static_cast<std::ptrdiff_t>(count));
    if (ob.started && !threads.finished(k))
      ob.stuck_ms =
          std::max(0.0, static_cast<double>(cutoff_ns - s.last_progress_ns.load()) / 1e6 - 1.0);
  }
  auto watched = std::chrono::duration_cast<std::chrono::milliseconds>(cutoff - start);
  return finish(judge_stall(obs, watched, read_bounds(t, "cpu.stall.max_wakeup_ms")));
}

}  // namespace cmax::health
