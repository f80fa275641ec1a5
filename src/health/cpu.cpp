// cpu.throughput: the same fixed integer + floating-point kernel timed on each CPU alone, pinned,
// so a core that is throttled, broken or shared with a noisy neighbour stands out against the
// median of its peers.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "core/host.h"
#include "health/active.h"
#include "health/judge.h"
#include "health/numa.h"
#include "health/pinned_thread.h"

namespace cmax::health {

using audit::Outcome;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kId = "cpu.throughput";
constexpr int kIterationsPerChunk = 4096;
// Per iteration: xorshift (6), add + multiply (2), mask + convert (2), fused multiply-add (2).
constexpr double kOpsPerIteration = 12;
constexpr auto kWarmup = std::chrono::milliseconds(10);  // lets the core leave its idle clock
constexpr auto kPerCpuMax = std::chrono::milliseconds(50);
constexpr auto kPerCpuMin = std::chrono::milliseconds(10);
constexpr auto kTotalBudget = std::chrono::seconds(10);  // all CPUs together, timed part
constexpr auto kStartGrace = std::chrono::seconds(1);    // for a thread to get onto its CPU

/// A dependent chain the compiler can neither vectorise nor fold away.
struct Kernel {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  double f = 1.0;
  void chunk() {
    for (int i = 0; i < kIterationsPerChunk; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      x = x * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(i);
      f = f * 0.9999999 + 1e-9 * static_cast<double>(x & 0xFF);
    }
  }
};

struct CpuRun {
  std::chrono::nanoseconds budget;
  std::atomic<double> mops{0};
  std::atomic<double> sink{0};
};

void measure(const std::shared_ptr<CpuRun>& run) {
  Kernel k;
  const auto warm_until = Clock::now() + kWarmup;
  while (Clock::now() < warm_until) k.chunk();
  const auto t0 = Clock::now();
  std::uint64_t chunks = 0;
  Clock::time_point t1;
  do {
    k.chunk();
    ++chunks;
    t1 = Clock::now();
  } while (t1 - t0 < run->budget);
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  run->sink.store(k.f + static_cast<double>(k.x & 1));
  run->mops.store(static_cast<double>(chunks) * kIterationsPerChunk * kOpsPerIteration / seconds /
                  1e6);
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += fmt::format("{}cpu{}", s.empty() ? "" : ",", c);
  return s;
}

}  // namespace

CheckResult check_cpu_throughput(const ActiveOptions& o, const Thresholds& t) {
  const auto begin = Clock::now();
  CheckResult r;
  r.id = std::string(kId);
  r.category = audit::Category::reliability;
  r.title = "Per-core integer and floating-point throughput";
  auto finish = [&] {
    r.duration_s = std::chrono::duration<double>(Clock::now() - begin).count();
    return r;
  };

  auto online = read_online_cpus(core::HostRoot(o.host_root));
  auto allowed = allowed_cpus();
  if (!online || !allowed) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("{}: cannot tell which CPUs to measure",
                           !online ? online.error().message : allowed.error().message);
    return finish();
  }
  std::vector<int> cpus, outside;
  for (int c : *online)
    (std::binary_search(allowed->begin(), allowed->end(), c) ? cpus : outside).push_back(c);
  if (cpus.empty()) {
    r.outcome = Outcome::unverified;
    r.reason = "no online CPU is in this process's cpuset";
    return finish();
  }
  const auto per_cpu = std::clamp<std::chrono::nanoseconds>(
      std::chrono::nanoseconds(kTotalBudget) / static_cast<long>(cpus.size()), kPerCpuMin,
      kPerCpuMax);
  // Bounded even if CPUs never run their thread: each gets its time plus a grace, and the whole
  // pass stops at a hard deadline (CPUs left are reported as not measured).
  const auto hard_deadline =
      begin + kTotalBudget + std::chrono::seconds(5) + static_cast<long>(cpus.size()) * kWarmup;

  std::vector<std::pair<int, double>> measured;
  std::vector<int> never_ran, not_reached;
  std::string start_error;
  for (int cpu : cpus) {
    if (Clock::now() >= hard_deadline) {
      not_reached.push_back(cpu);
      continue;
    }
    auto run = std::make_shared<CpuRun>();
    run->budget = per_cpu;
    PinnedThreads thread;
    if (auto s = thread.start(cpu, [run] { measure(run); }); !s) {
      start_error = s.error().message;
      not_reached.push_back(cpu);
      continue;
    }
    auto until = std::min(hard_deadline, Clock::now() + kWarmup + per_cpu + kStartGrace);
    if (!thread.wait_until(until)) {
      never_ran.push_back(cpu);
      continue;
    }
    measured.emplace_back(cpu, run->mops.load());
  }

  for (const auto& [cpu, mops] : measured)
    r.measurements.push_back(
        {fmt::format("cpu{}.mops", cpu), mops, "Mop/s", std::nullopt, std::nullopt});
  std::vector<std::string> reasons;
  if (!never_ran.empty()) {
    r.outcome = Outcome::fail;
    reasons.push_back(fmt::format(
        "{} did not finish a {} ms kernel pinned to it within {} ms: cores locked or starved "
        "(check dmesg for soft lockups / RCU stalls)",
        cpu_list(never_ran), std::chrono::duration_cast<std::chrono::milliseconds>(per_cpu).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(kWarmup + per_cpu + kStartGrace)
            .count()));
  }
  if (measured.empty()) {
    r.outcome = worse(r.outcome, Outcome::unverified);
    if (!start_error.empty()) reasons.push_back(start_error);
    r.target = cpu_list(never_ran);
    r.reason = fmt::format("{}", fmt::join(reasons, "; "));
    return finish();
  }

  std::vector<double> rates;
  for (const auto& m : measured) rates.push_back(m.second);
  std::sort(rates.begin(), rates.end());
  const double median = rates.size() % 2
                            ? rates[rates.size() / 2]
                            : (rates[rates.size() / 2 - 1] + rates[rates.size() / 2]) / 2;
  const double slowest = rates.front();
  r.measurements.push_back({"median_mops", median, "Mop/s", std::nullopt, std::nullopt});
  Measurement frac{"slowest_core_fraction", median > 0 ? slowest / median : 0, "", std::nullopt,
                   std::nullopt};
  const Bounds bounds = read_bounds(t, "cpu.throughput.slowest_core_fraction");
  auto j = judge(frac, bounds);
  r.measurements.push_back(frac);
  r.outcome = never_ran.empty() ? j.outcome : worse(r.outcome, j.outcome);

  // The slow cores: those under the warn bound (or the fail bound when only that is set).
  std::vector<int> slow;
  if (auto bar = bounds.warn_min ? bounds.warn_min : bounds.min)
    for (const auto& [cpu, mops] : measured)
      if (median > 0 && mops / median < *bar) slow.push_back(cpu);
  std::vector<int> flagged = never_ran;
  flagged.insert(flagged.end(), slow.begin(), slow.end());
  r.target = flagged.empty() || r.outcome == Outcome::pass
                 ? fmt::format("{} CPUs ({}-{})", measured.size(), measured.front().first,
                               measured.back().first)
                 : cpu_list(flagged);
  if (!j.reason.empty())
    reasons.push_back(slow.empty() ? j.reason
                                   : fmt::format("{} ({} slow)", j.reason, cpu_list(slow)));
  if (!not_reached.empty()) {
    r.outcome = worse(r.outcome, Outcome::unverified);
    reasons.push_back(
        fmt::format("{} not measured{}", cpu_list(not_reached),
                    start_error.empty() ? ": time budget spent" : ": " + start_error));
  }
  if (!outside.empty())
    reasons.push_back(
        fmt::format("{} outside this process's cpuset, not measured", cpu_list(outside)));
  r.summary = fmt::format(
      "{} CPUs, median {:.0f} Mop/s, slowest {:.0f} Mop/s ({:.2f} of median), "
      "{} ms each",
      measured.size(), median, slowest, frac.value,
      std::chrono::duration_cast<std::chrono::milliseconds>(per_cpu).count());
  r.reason = fmt::format("{}", fmt::join(reasons, "; "));
  return finish();
}

}  // namespace cmax::health
