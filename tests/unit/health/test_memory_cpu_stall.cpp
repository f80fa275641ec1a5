// The CPU, memory and stall checks run for real on this machine with small windows (numbers are
// asserted only for sanity: these are shared CI machines), and the stall verdict on synthetic
// observations, where one node's threads never ran.

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "health/active.h"
#include "health/numa.h"
#include "health/stall.h"
#include "support/temp_host.h"

using namespace cmax::health;
using cmax::audit::Outcome;
using namespace std::chrono_literals;

namespace {

Thresholds table() {
  Thresholds t;
  t.set("memory.bandwidth.fraction_of_ceiling.warn_min", 0.6);
  t.set("memory.bandwidth.fraction_of_ceiling.min", 0.4);
  t.set("cpu.throughput.slowest_core_fraction.warn_min", 0.85);
  t.set("cpu.throughput.slowest_core_fraction.min", 0.7);
  t.set("cpu.stall.max_wakeup_ms.warn_max", 20);
  t.set("cpu.stall.max_wakeup_ms.max", 200);
  return t;
}

const Measurement* find(const CheckResult& r, std::string_view name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return &m;
  return nullptr;
}

StallObservation healthy(int cpu, double late_ms = 0.05) {
  StallObservation o;
  o.cpu = cpu;
  o.started = true;
  o.lateness_ms.assign(900, late_ms);
  o.lateness_ms[10] = late_ms * 10;
  return o;
}

StallObservation never_ran(int cpu) {
  StallObservation o;
  o.cpu = cpu;
  return o;
}

Bounds stall_bounds() { return read_bounds(table(), "cpu.stall.max_wakeup_ms"); }

std::size_t online_cpus() {
  auto cpus = read_online_cpus(cmax::core::HostRoot("/"));
  return cpus ? cpus->size() : 0;
}

}  // namespace

TEST(StallJudge, AllNodesResponsive) {
  std::vector<NodeObservations> nodes{{0, {healthy(0), healthy(1)}}, {1, {healthy(2), healthy(3)}}};
  auto r = judge_stall(nodes, 1100ms, stall_bounds());
  EXPECT_EQ(r.outcome, Outcome::pass) << r.reason;
  EXPECT_EQ(r.id, "cpu.stall");
  EXPECT_EQ(r.target, "numa0,numa1");
  ASSERT_TRUE(find(r, "numa1.p99_wakeup_ms"));
  EXPECT_DOUBLE_EQ(find(r, "numa1.p99_wakeup_ms")->value, 0.05);
  EXPECT_DOUBLE_EQ(find(r, "numa1.max_wakeup_ms")->value, 0.5);
  EXPECT_EQ(find(r, "numa1.max_wakeup_ms")->max, 200);
}

TEST(StallJudge, ANodeWhoseThreadsNeverRanFails) {
  std::vector<NodeObservations> nodes{{0, {healthy(0), healthy(1)}},
                                      {1, {never_ran(2), never_ran(3)}}};
  auto r = judge_stall(nodes, 1200ms, stall_bounds());
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.target, "numa1");
  EXPECT_EQ(r.reason,
            "no CPU of NUMA node 1 ran a pinned thread for 1200 ms: cores locked or starved "
            "(check dmesg for soft lockups / RCU stalls)");
  ASSERT_TRUE(find(r, "numa1.max_wakeup_ms"));
  EXPECT_DOUBLE_EQ(find(r, "numa1.max_wakeup_ms")->value, 1200);
  EXPECT_TRUE(find(r, "numa0.p99_wakeup_ms"));
}

TEST(StallJudge, SomeCpusOfANodeNeverRan) {
  std::vector<NodeObservations> nodes{{0, {healthy(0), never_ran(1), healthy(2), never_ran(3)}}};
  auto r = judge_stall(nodes, 1200ms, stall_bounds());
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.target, "numa0");
  EXPECT_NE(r.reason.find("CPU 1, 3 of NUMA node 0 did not run a pinned thread for 1200 ms"),
            std::string::npos)
      << r.reason;
}

TEST(StallJudge, StuckAndLateThreadsAreJudgedByMaxWakeup) {
  auto stuck = healthy(1);
  stuck.stuck_ms = 800;  // ran, then never woke again before the parent stopped waiting
  std::vector<NodeObservations> nodes{{0, {healthy(0), stuck}}, {1, {healthy(2, 3.0)}}};
  auto r = judge_stall(nodes, 1200ms, stall_bounds());
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.target, "numa0,numa1");
  EXPECT_NE(r.reason.find("numa0.max_wakeup_ms 800 ms is above the fail bound 200"),
            std::string::npos)
      << r.reason;
  EXPECT_NE(r.reason.find("numa1.max_wakeup_ms 30 ms is above the warn bound 20"),
            std::string::npos)
      << r.reason;
}

TEST(StallJudge, UnstartableAndMemoryOnlyNodes) {
  auto refused = never_ran(4);
  refused.start_error = "start a thread pinned to CPU 4: Invalid argument";
  std::vector<NodeObservations> nodes{{0, {healthy(0)}}, {1, {refused}}, {2, {}}};
  auto r = judge_stall(nodes, 1000ms, stall_bounds());
  EXPECT_EQ(r.outcome, Outcome::unverified);
  EXPECT_EQ(r.target, "numa1");
  EXPECT_NE(r.reason.find("could not start a pinned thread on any CPU of NUMA node 1"),
            std::string::npos);
  EXPECT_EQ(judge_stall({}, 1000ms, stall_bounds()).outcome, Outcome::unverified);
}

TEST(ActiveChecks, StallOnThisMachineReportsEveryNode) {
  ActiveOptions o;
  o.stall_window = 300ms;
  const auto begin = std::chrono::steady_clock::now();
  auto r = check_cpu_stall(o, table());
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(took, 2s) << "window 300 ms plus a bounded margin";
  auto nodes = read_numa_nodes(cmax::core::HostRoot("/"));
  ASSERT_TRUE(nodes);
  for (const auto& n : *nodes) {
    if (n.cpus.empty()) continue;
    auto name = "numa" + std::to_string(n.id);
    ASSERT_TRUE(find(r, name + ".max_wakeup_ms")) << name << ": " << r.summary << " / " << r.reason;
    EXPECT_GE(find(r, name + ".max_wakeup_ms")->value, 0);
  }
  EXPECT_NE(r.outcome, Outcome::unverified) << r.reason;
  EXPECT_EQ(r.reason.find("ran a pinned thread"), std::string::npos) << r.reason;
  EXPECT_EQ(r.category, cmax::audit::Category::reliability);
  std::cout << "[stall] " << r.summary << " -> " << cmax::audit::to_string(r.outcome) << " "
            << r.reason << "\n";
}

TEST(ActiveChecks, CpuThroughputMeasuresEveryCpu) {
  auto r = check_cpu_throughput(ActiveOptions{}, table());
  EXPECT_NE(r.outcome, Outcome::unverified) << r.reason;
  std::size_t per_cpu = 0;
  for (const auto& m : r.measurements)
    if (m.name.starts_with("cpu") && m.name.ends_with(".mops")) {
      ++per_cpu;
      EXPECT_GT(m.value, 1.0) << m.name;
    }
  EXPECT_EQ(per_cpu, online_cpus());
  ASSERT_TRUE(find(r, "slowest_core_fraction"));
  EXPECT_GT(find(r, "slowest_core_fraction")->value, 0);
  EXPECT_LE(find(r, "slowest_core_fraction")->value, 1.0);
  EXPECT_EQ(find(r, "slowest_core_fraction")->min, 0.7);
  EXPECT_LT(r.duration_s, 5);
  std::cout << "[cpu] " << r.summary << " -> " << cmax::audit::to_string(r.outcome) << " "
            << r.reason << "\n";
}

TEST(ActiveChecks, MemoryBandwidthOnThisMachine) {
  auto r = check_memory_bandwidth(ActiveOptions{}, table());
  ASSERT_TRUE(find(r, "triad_gbps")) << r.reason;
  EXPECT_GT(find(r, "triad_gbps")->value, 0.1);
  EXPECT_GT(find(r, "copy_gbps")->value, 0.1);
  EXPECT_EQ(r.id, "memory.bandwidth");
  EXPECT_FALSE(r.reason.empty());
  if (find(r, "ceiling_gbps")) {
    EXPECT_NE(r.outcome, Outcome::unverified);
  } else {
    // A VM (or no permission to read SMBIOS): measured, never passed.
    EXPECT_EQ(r.outcome, Outcome::unverified);
    EXPECT_NE(r.reason.find("no DIMM population readable ("), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("bandwidth measured, not judged"), std::string::npos);
  }
  std::cout << "[memory] " << r.summary << " -> " << cmax::audit::to_string(r.outcome) << " "
            << r.reason << "\n";
}

TEST(ActiveChecks, MemoryCeilingFromAFixtureHost) {
  // The host root supplies the SMBIOS entries (one DDR4-3200 DIMM: a 25.6 GB/s ceiling), the online
  // CPUs and the free memory; the arrays are streamed on this machine. So the verdict is judged
  // (not unverified) whatever this machine measures.
  cmax::test::TempHost h;
  std::string rec(0x28, '\0');
  rec[0] = 17, rec[1] = 0x28;
  rec[0x0A] = 64;                      // data width
  rec[0x0C] = 0x00, rec[0x0D] = 0x40;  // 16384 MiB
  rec[0x10] = 1, rec[0x11] = 2;        // locator, bank locator
  rec[0x12] = 0x1A;                    // DDR4
  rec[0x15] = static_cast<char>(3200 & 0xFF), rec[0x16] = static_cast<char>(3200 >> 8);
  rec[0x20] = rec[0x15], rec[0x21] = rec[0x16];
  rec += std::string("DIMM_A1") + '\0' + "P0_Node0_Channel0_Dimm0" + '\0' + '\0';
  h.write("/sys/firmware/dmi/entries/17-0/raw", rec);
  h.write("/sys/devices/system/cpu/online", "0\n");
  h.write("/proc/meminfo", "MemTotal:  16384000 kB\nMemAvailable:  8192000 kB\n");
  ActiveOptions o;
  o.host_root = h.dir().string();
  auto r = check_memory_bandwidth(o, table());
  ASSERT_TRUE(find(r, "ceiling_gbps")) << r.reason;
  EXPECT_DOUBLE_EQ(find(r, "ceiling_gbps")->value, 25.6);
  ASSERT_TRUE(find(r, "fraction_of_ceiling"));
  EXPECT_EQ(find(r, "fraction_of_ceiling")->min, 0.4);
  EXPECT_NE(r.outcome, Outcome::unverified) << r.reason;
  EXPECT_EQ(r.target, "1 DIMM, 1 channel x 3200 MT/s x 8 B (channels from locators)");
  EXPECT_NE(r.reason.find("1 threads, 3 arrays x 64 MiB"), std::string::npos) << r.reason;
}
