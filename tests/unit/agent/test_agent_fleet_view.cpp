// What an SRE team alerts on and asks of an agent (issue 39), end to end on this machine's real
// /dev/kmsg with a recording Scheduler, as test_agent.cpp: every repeat of a fault is counted per
// device and the open-incident gauge returns to 0 once the node is back in service (dcgm-exporter
// #500, #190); a node still booting is not drained for its boot lines (NVSentinel #1423); `cmaxd
// clear` (an audited row in the event log) makes the running agent forget after a repair (GPUd
// #1072); and the metrics render those series.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "agent/agent.h"
#include "agent/event_log.h"
#include "agent/metrics.h"
#include "sched/scheduler.h"
#include "support/kmsg.h"
#include "unit/agent/agent_fixture.h"

namespace cmax::agent {
namespace {

using namespace std::chrono_literals;

// The scheduler contract in memory: drains hold the node until `resume_by_operator`.
class HoldingScheduler final : public sched::Scheduler {
 public:
  std::atomic<bool> drained{false};
  std::atomic<int> drains{0};
  Result<sched::NodeState> node_state(std::string_view node) override {
    sched::NodeState s;
    s.name = std::string(node);
    s.base = "IDLE";
    s.state = drained ? "IDLE+DRAIN" : "IDLE";
    if (drained) s.flags = {"DRAIN"};
    return s;
  }
  Result<sched::Action> drain(std::string_view, std::string_view) override {
    ++drains;
    drained = true;
    sched::Action a;
    a.changed = true;
    return a;
  }
  Result<sched::Action> resume(std::string_view, sched::Force) override {
    drained = false;
    sched::Action a;
    a.changed = true;
    return a;
  }
  Result<sched::Action> reboot(std::string_view n, std::string_view r) override { return drain(n, r); }
  Result<sched::PoolCount> held_by_cmax(std::string_view) override { return sched::PoolCount{"p", 0, 100, false}; }
};

using testing_support::catalog;
using testing_support::eventually;

// The shared fixture with this file's defaults: a fast resume watch and no boot grace.
struct Fixture : testing_support::Fixture {
  AgentOptions options() {
    AgentOptions o = testing_support::Fixture::options();
    o.resume_watch = 30ms;
    o.boot_grace = 0s;
    return o;
  }
};

std::string xid79(const std::string& pci) {
  return fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci);
}

// The value of one exposition line that starts with `series` ("name{labels}"), or -1.
double metric(const AgentStats& s, const std::string& series) {
  const std::string text = render_metrics(s, "n1");
  const auto at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 1));
}

double uptime_s() {
  std::ifstream in("/proc/uptime");
  double up = 0;
  in >> up;
  return up;
}

TEST(AgentFleetView, RepeatsAreCountedAndTheOpenGaugeClearsWhenTheNodeIsBack) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  test::DevkmsgUnlimited unlimited;
  Fixture fx;
  HoldingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = test::unique_pci();
  const std::string device = fmt::format("node=\"n1\",kind=\"xid\",code=\"79\",device=\"{}\"", pci);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(eventually([&] { return metric(agent.stats(), "cmaxd_incident_lines_total{" + device + "}") == 3; }))
      << render_metrics(agent.stats(), "n1");
  EXPECT_EQ(metric(agent.stats(), "cmaxd_device_incidents_total{" + device + "}"), 1);  // one incident, three lines
  ASSERT_TRUE(eventually([&] { return metric(agent.stats(), "cmaxd_node_held{node=\"n1\"}") == 1; }));
  const std::string open = fmt::format("cmaxd_incident_open{{node=\"n1\",kind=\"xid\",device=\"{}\"}}", pci);
  EXPECT_EQ(metric(agent.stats(), open), 1);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_node_actions_total{node=\"n1\",verb=\"drain\",status=\"done\"}"), 1);
  EXPECT_GT(metric(agent.stats(), "cmaxd_last_incident_timestamp_seconds{node=\"n1\"}"), 1.7e9);
  // Repaired and resumed by an operator: the gauge goes back to 0, the counters stay.
  sched.drained = false;
  ASSERT_TRUE(eventually([&] { return metric(agent.stats(), open) == 0; })) << render_metrics(agent.stats(), "n1");
  EXPECT_EQ(metric(agent.stats(), "cmaxd_node_held{node=\"n1\"}"), 0);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_resumes_observed_total{node=\"n1\"}"), 1);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_incident_lines_total{" + device + "}"), 3);
  // The same fault again within the dedup window after an operator's resume: counted (the
  // counter misses no repeat), not acted on (the operator's resume stands; `cmaxd clear` is how a
  // repair says otherwise), so the gauge stays at 0.
  ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(eventually([&] { return metric(agent.stats(), "cmaxd_incident_lines_total{" + device + "}") == 4; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(metric(agent.stats(), open), 0);
  EXPECT_EQ(sched.drains.load(), 1);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_device_incidents_total{" + device + "}"), 1);  // the same incident, repeated
}

TEST(AgentFleetView, ANodeStillBootingIsNotDrainedForItsBootLines) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  test::DevkmsgUnlimited unlimited;
  Fixture fx;
  HoldingScheduler sched;
  auto o = fx.options();
  // This machine has been up for a while: a grace longer than its uptime makes every line a boot line.
  o.boot_grace = std::chrono::seconds(static_cast<long long>(uptime_s()) + 3600);
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = test::unique_pci();
  ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(eventually([&] { return agent.stats().boot_deferred.load() == 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sched.drains.load(), 0);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_boot_grace{node=\"n1\"}"), 1);
  EXPECT_EQ(metric(agent.stats(), "cmaxd_boot_deferred_total{node=\"n1\"}"), 1);
  // Recorded all the same: the incident is in the event log and counted.
  EXPECT_EQ(metric(agent.stats(),
                   fmt::format("cmaxd_device_incidents_total{{node=\"n1\",kind=\"xid\",code=\"79\",device=\"{}\"}}", pci)),
            1);
}

TEST(AgentFleetView, ClearAfterARepairIsAuditedAndTheNextFaultActsAtOnce) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  test::DevkmsgUnlimited unlimited;
  Fixture fx;
  HoldingScheduler sched;
  auto o = fx.options();
  o.resume_watch = 0ms;  // nobody watches: only the clear can make the agent forget
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = test::unique_pci();
  ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(eventually([&] { return sched.drains.load() == 1; }));
  sched.drained = false;  // the GPU was replaced and the node resumed, which this agent does not watch
  // Without a clear the same fault inside the dedup window is not acted on again.
  ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(sched.drains.load(), 1);
  // `cmaxd clear`: a row in the agent's own event log, from another connection, as the CLI writes it.
  {
    auto other = EventLog::open(fx.db);
    ASSERT_TRUE(other);
    ASSERT_TRUE(other->record_clear("n1", "GPU replaced, RMA 1234", 1.8e9));
  }
  ASSERT_TRUE(eventually([&] { return agent.stats().clears.load() == 1; }));
  EXPECT_EQ(metric(agent.stats(), fmt::format("cmaxd_incident_open{{node=\"n1\",kind=\"xid\",device=\"{}\"}}", pci)), 0);
  auto rows = fx.log->last_clear();
  ASSERT_TRUE(rows && *rows);
  EXPECT_EQ((*rows)->verb, "clear");
  EXPECT_EQ((*rows)->status, "done");
  EXPECT_EQ((*rows)->reason, "GPU replaced, RMA 1234");
  ASSERT_TRUE(test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(eventually([&] { return sched.drains.load() == 2; })) << "the fault after the clear must act";
}

TEST(AgentFleetView, DeviceSeriesAreBoundedAndLabelsEscaped) {
  DeviceSeries s;
  for (std::size_t i = 0; i < DeviceSeries::kMaxSeries + 10; ++i)
    s.line(DeviceKey{"xid", "79", fmt::format("0000:{:02x}:{:02x}.0", i / 256, i % 256)}, true);
  auto snap = s.snapshot();
  EXPECT_EQ(snap.lines.size(), DeviceSeries::kMaxSeries + 1);  // the rest under "_other"
  bool other = false;
  for (const auto& [k, v] : snap.lines)
    if (k.device == "_other") other = v == 10;
  EXPECT_TRUE(other);
  EXPECT_EQ(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace cmax::agent
