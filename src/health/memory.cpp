// memory.bandwidth: STREAM-style copy and triad with one pinned thread per CPU, judged as a
// fraction of the ceiling the DIMM population allows (dmi.h). Bytes are counted the STREAM way:
// copy moves 2 arrays, triad 3; the write-allocate read of the destination is not counted, so a
// healthy machine reaches roughly 60-80% of the theoretical ceiling.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/host.h"
#include "core/strings.h"
#include "health/active.h"
#include "health/dmi.h"
#include "health/judge.h"
#include "health/numa.h"
#include "health/pinned_thread.h"

namespace cmax::health {

using audit::Outcome;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kId = "memory.bandwidth";
constexpr std::uint64_t kMinArrayBytes = 64ull << 20;
constexpr std::uint64_t kMaxArrayBytes = 1ull << 30;
constexpr std::uint64_t kFloorArrayBytes = 8ull << 20;  // below this the caches would answer
constexpr int kRepetitions = 5;
constexpr auto kMaxRun = std::chrono::seconds(30);
constexpr double kScalar = 3.0;

// ---- what the host says: DIMMs, last-level cache, free memory ----

/// The populated DIMMs from /sys/firmware/dmi (per-record entries, else the whole table).
Result<std::vector<Dimm>> read_dimms(const core::HostRoot& host) {
  constexpr std::string_view kEntries = "/sys/firmware/dmi/entries";
  constexpr std::string_view kTable = "/sys/firmware/dmi/tables/DMI";
  if (host.exists(kEntries)) {
    auto entries = host.list_dir(kEntries);
    if (!entries) return Unexpected<Error>{entries.error()};
    std::vector<Dimm> dimms;
    int records = 0;
    for (const auto& e : *entries) {
      if (!e.name.starts_with("17-")) continue;
      ++records;
      auto raw =
          host.read_file(core::join_path(core::join_path(kEntries, e.name), "raw"), 64 * 1024);
      if (!raw) return Unexpected<Error>{raw.error()};
      auto d = parse_type17_record(std::string_view(*raw));
      if (d && *d) dimms.push_back(std::move(**d));
    }
    if (records == 0) return fail("{} has no type 17 (Memory Device) records", kEntries);
    return dimms;
  }
  if (host.exists(kTable)) {
    auto table = host.read_file(kTable, 1u << 20);
    if (!table) return Unexpected<Error>{table.error()};
    return parse_smbios_table(*table);
  }
  return fail("neither {} nor {} exists (no SMBIOS tables: a VM or a kernel without DMI sysfs)",
              kEntries, kTable);
}

/// Total last-level cache in bytes: the distinct LLC instances summed; 0 when sysfs does not say.
std::uint64_t llc_bytes(const core::HostRoot& host, const std::vector<int>& cpus) {
  std::vector<std::string> seen;  // shared_cpu_list of instances already counted
  std::uint64_t total = 0;
  for (int cpu : cpus) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/cache", cpu);
    auto entries = host.list_dir(dir);
    if (!entries) continue;
    int best_level = 0;
    std::uint64_t best_size = 0;
    std::string best_shared;
    for (const auto& e : *entries) {
      if (!e.name.starts_with("index")) continue;
      const std::string idx = core::join_path(dir, e.name);
      auto level = host.read_file(core::join_path(idx, "level"), 64);
      auto size = host.read_file(core::join_path(idx, "size"), 64);
      if (!level || !size) continue;
      auto lv = core::parse_uint(*level);
      std::string_view sz = core::trim(*size);
      std::uint64_t mult = 1;
      if (sz.ends_with("K") || sz.ends_with("M")) {
        mult = sz.ends_with("K") ? 1024 : 1024 * 1024;
        sz.remove_suffix(1);
      }
      auto n = core::parse_uint(sz);
      if (!lv || !n || static_cast<int>(*lv) < best_level) continue;
      auto shared = host.read_file(core::join_path(idx, "shared_cpu_list"), 4096);
      best_level = static_cast<int>(*lv);
      best_size = *n * mult;
      best_shared = shared ? std::string(core::trim(*shared)) : std::to_string(cpu);
    }
    if (best_size == 0 || std::find(seen.begin(), seen.end(), best_shared) != seen.end()) continue;
    seen.push_back(best_shared);
    total += best_size;
  }
  return total;
}

/// MemAvailable from /proc/meminfo in bytes; nullopt when unreadable.
std::optional<std::uint64_t> mem_available_bytes(const core::HostRoot& host) {
  auto text = host.read_file("/proc/meminfo", 1u << 20);
  if (!text) return std::nullopt;
  for (auto line : core::split_lines(*text)) {
    if (!line.starts_with("MemAvailable:")) continue;
    auto v = core::trim(line.substr(13));
    if (v.ends_with("kB")) v = core::trim(v.substr(0, v.size() - 2));
    if (auto n = core::parse_uint(v)) return *n * 1024;
  }
  return std::nullopt;
}

// ---- the measurement ----

/// A barrier whose waits end at a deadline; once broken (timeout) every waiter returns false.
class TimedBarrier {
 public:
  explicit TimedBarrier(std::size_t n) : n_(n) {}
  template <class F>
  bool arrive_and_wait(Clock::time_point deadline, F&& on_last) {
    std::unique_lock lock(mu_);
    if (broken_) return false;
    const auto gen = generation_;
    if (++count_ == n_) {
      count_ = 0;
      ++generation_;
      on_last();
      cv_.notify_all();
      return true;
    }
    if (cv_.wait_until(lock, deadline, [&] { return generation_ != gen || broken_; }))
      return generation_ != gen;
    broken_ = true;
    cv_.notify_all();
    return false;
  }
  /// Releases every waiter now, with false.
  void abort() {
    std::lock_guard lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t n_, count_ = 0, generation_ = 0;
  bool broken_ = false;
};

struct StreamRun {
  StreamRun(std::size_t threads, std::size_t n) : barrier(threads), elements(n), workers(threads) {}
  TimedBarrier barrier;
  std::size_t elements, workers;
  Clock::time_point deadline;
  std::unique_ptr<double[]> a, b, c;
  Clock::time_point phase_start;
  std::vector<double> copy_s, triad_s;  // written by the last thread at each barrier
  std::atomic<int> ran{0};
};

void stream_worker(const std::shared_ptr<StreamRun>& run, std::size_t w) {
  StreamRun& s = *run;
  s.ran.fetch_add(1);
  const std::size_t lo = s.elements * w / s.workers, hi = s.elements * (w + 1) / s.workers;
  double* __restrict a = s.a.get();
  double* __restrict b = s.b.get();
  double* __restrict c = s.c.get();
  // First touch by the thread that will stream the slice: its pages land on its NUMA node.
  for (std::size_t i = lo; i < hi; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;
  auto start = [&] { s.phase_start = Clock::now(); };
  auto seconds = [&] {
    return std::chrono::duration<double>(Clock::now() - s.phase_start).count();
  };
  for (int rep = 0; rep < kRepetitions; ++rep) {
    if (!s.barrier.arrive_and_wait(s.deadline, start)) return;
    for (std::size_t i = lo; i < hi; ++i) c[i] = a[i];
    if (!s.barrier.arrive_and_wait(s.deadline, [&] { s.copy_s.push_back(seconds()); })) return;
    if (!s.barrier.arrive_and_wait(s.deadline, start)) return;
    for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + kScalar * c[i];
    if (!s.barrier.arrive_and_wait(s.deadline, [&] { s.triad_s.push_back(seconds()); })) return;
  }
}

}  // namespace

CheckResult check_memory_bandwidth(const ActiveOptions& o, const Thresholds& t) {
  const auto begin = Clock::now();
  CheckResult r;
  r.id = std::string(kId);
  r.category = audit::Category::reliability;
  r.title = "Memory bandwidth (STREAM triad) against the DIMM population's ceiling";
  auto finish = [&] {
    r.duration_s = std::chrono::duration<double>(Clock::now() - begin).count();
    return r;
  };
  core::HostRoot host(o.host_root);

  auto online = read_online_cpus(host);
  auto allowed = allowed_cpus();
  if (!online || !allowed) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("{}: cannot tell which CPUs to run on",
                           !online ? online.error().message : allowed.error().message);
    return finish();
  }
  std::vector<int> cpus;
  for (int c : *online)
    if (std::binary_search(allowed->begin(), allowed->end(), c)) cpus.push_back(c);
  if (cpus.empty()) {
    r.outcome = Outcome::unverified;
    r.reason = "no online CPU is in this process's cpuset";
    return finish();
  }

  // Arrays: 4x the last-level cache, at least 64 MiB, at most 1 GiB each, and the three together
  // under 3/8 of the available memory.
  const std::uint64_t llc = llc_bytes(host, cpus);
  std::uint64_t array_bytes = std::clamp<std::uint64_t>(4 * llc, kMinArrayBytes, kMaxArrayBytes);
  std::string sizing = llc ? fmt::format("4 x {} MiB LLC", llc >> 20) : "LLC size unknown";
  if (auto avail = mem_available_bytes(host); avail && *avail / 8 < array_bytes) {
    array_bytes = *avail / 8;
    sizing += fmt::format(", cut to 1/8 of {} MiB available", *avail >> 20);
  }
  if (array_bytes < kFloorArrayBytes) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format(
        "only {} MiB per array would fit in available memory: the caches, not "
        "DRAM, would be measured",
        array_bytes >> 20);
    return finish();
  }
  const std::size_t n = array_bytes / sizeof(double);
  auto run = std::make_shared<StreamRun>(cpus.size(), n);
  run->a = std::make_unique_for_overwrite<double[]>(n);
  run->b = std::make_unique_for_overwrite<double[]>(n);
  run->c = std::make_unique_for_overwrite<double[]>(n);
  run->deadline = Clock::now() + std::min<Clock::duration>(kMaxRun, o.check_timeout / 2);

  PinnedThreads threads;
  for (std::size_t w = 0; w < cpus.size(); ++w) {
    if (auto s = threads.start(cpus[w], [run, w] { stream_worker(run, w); }); !s) {
      r.outcome = Outcome::unverified;
      r.reason = s.error().message;
      run->barrier.abort();  // releases the threads already waiting at the first barrier
      return finish();
    }
  }
  // The barriers end at the run's deadline; the extra second lets the workers see that.
  const bool all_done = threads.wait_until(run->deadline + std::chrono::seconds(1));
  const std::size_t reps = all_done ? run->triad_s.size() : 0;
  if (reps == 0) {
    r.outcome = Outcome::fail;
    r.timed_out = true;
    r.reason = fmt::format(
        "the STREAM pass on {} pinned threads did not finish within {:.0f} s ({} of them ran): a "
        "CPU locked or starved, or memory far too slow (check dmesg)",
        cpus.size(), std::chrono::duration<double>(run->deadline - begin).count(), run->ran.load());
    return finish();
  }
  const double copy_s = *std::min_element(run->copy_s.begin(), run->copy_s.end());
  const double triad_s = *std::min_element(run->triad_s.begin(), run->triad_s.end());
  const double bytes = static_cast<double>(n) * sizeof(double);
  const double copy_gbps = 2 * bytes / copy_s / 1e9;
  const double triad_gbps = 3 * bytes / triad_s / 1e9;
  r.measurements.push_back({"triad_gbps", triad_gbps, "GB/s", std::nullopt, std::nullopt});
  r.measurements.push_back({"copy_gbps", copy_gbps, "GB/s", std::nullopt, std::nullopt});
  const std::string how = fmt::format(
      "{} threads, 3 arrays x {} MiB ({}), best of {}, STREAM byte counting (triad 3 "
      "arrays, write-allocate not counted)",
      cpus.size(), array_bytes >> 20, sizing, reps);

  auto dimms = read_dimms(host);
  std::optional<MemoryCeiling> ceiling;
  std::string why_not;
  if (!dimms) {
    why_not = dimms.error().message;
  } else if (dimms->empty()) {
    why_not = "the SMBIOS tables list no populated Memory Device";
  } else if (!(ceiling = memory_ceiling(*dimms))) {
    why_not = fmt::format("{} DIMM record{} without a speed, as virtual machines report",
                          dimms->size(), dimms->size() == 1 ? "" : "s");
  }
  if (!ceiling) {
    r.outcome = Outcome::unverified;
    r.target = "memory";
    r.summary =
        fmt::format("triad {:.1f} GB/s, copy {:.1f} GB/s; no ceiling", triad_gbps, copy_gbps);
    r.reason = fmt::format("no DIMM population readable ({}): bandwidth measured, not judged; {}",
                           why_not, how);
    return finish();
  }
  r.measurements.push_back({"ceiling_gbps", ceiling->gbps, "GB/s", std::nullopt, std::nullopt});
  Measurement frac{"fraction_of_ceiling", triad_gbps / ceiling->gbps, "", std::nullopt,
                   std::nullopt};
  auto j = judge(frac, t, "memory.bandwidth.fraction_of_ceiling");
  r.measurements.push_back(frac);
  r.outcome = j.outcome;
  r.target =
      fmt::format("{} DIMM{}, {}", ceiling->dimms, ceiling->dimms == 1 ? "" : "s", ceiling->basis);
  r.summary = fmt::format("triad {:.1f} GB/s = {:.0f}% of {:.1f} GB/s ceiling; copy {:.1f} GB/s",
                          triad_gbps, 100 * frac.value, ceiling->gbps, copy_gbps);
  r.reason = j.reason.empty() ? how : fmt::format("{}; {}", j.reason, how);
  return finish();
}

}  // namespace cmax::health
