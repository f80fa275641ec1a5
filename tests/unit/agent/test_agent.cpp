// The agent end to end on this machine's real /dev/kmsg, with a recording Scheduler in place of
// Slurm (the real scontrol path is tests/integration/test_cmaxd.cpp). Tests share the ring buffer,
// so each injects faults on a PCI address of its own and asserts only about that address.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "agent/agent.h"
#include "agent/event_log.h"
#include "probes/probe.h"
#include "signals/drill_marker.h"
#include "support/kmsg.h"
#include "unit/agent/agent_fixture.h"

namespace cmax::agent {
namespace {

using namespace std::chrono_literals;
using test::DevkmsgUnlimited;
using test::unique_pci;

void write_kmsg(const std::string& line) { ASSERT_TRUE(test::write_kmsg(line)); }

// Records every call; the first `fail_first` calls fail as an unreachable controller would.
class RecordingScheduler final : public sched::Scheduler {
 public:
  struct Call {
    std::string verb, node, reason;
  };
  int fail_first = 0;
  std::atomic<int> attempts{0};
  /// What held_by_cmax answers (the fleet breaker's input); drains add to `pool.held`.
  sched::PoolCount pool{"partition test", 0, 100, false};

  /// What node_state answers: drained (someone else's, or still ours) or in service.
  std::atomic<bool> drained_now{false};
  /// false: drains find the node already drained and change nothing.
  std::atomic<bool> drains_change{true};
  /// true: the scheduler pushes changes (wait_in_service), as Kubernetes' watch does.
  bool watch = false;
  std::atomic<int> state_reads{0}, watches{0};

  bool watches_resume() const override { return watch; }
  Result<std::optional<sched::NodeState>> wait_in_service(std::string_view node, std::stop_token stop) override {
    ++watches;
    while (!stop.stop_requested()) {  // the contract, not a network: the state flips in memory
      if (!drained_now) return std::optional<sched::NodeState>{state_of(node)};
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::optional<sched::NodeState>{};
  }
  Result<sched::NodeState> node_state(std::string_view node) override {
    ++state_reads;
    return state_of(node);
  }
  sched::NodeState state_of(std::string_view node) const {
    sched::NodeState s;
    s.name = std::string(node);
    s.base = "IDLE";
    s.state = drained_now ? "IDLE+DRAIN" : "IDLE";
    if (drained_now) s.flags = {"DRAIN"};
    return s;
  }
  Result<sched::Action> drain(std::string_view node, std::string_view reason) override {
    auto r = record("drain", node, reason);
    if (r) r->changed = drains_change;
    return r;
  }
  Result<sched::Action> resume(std::string_view node, sched::Force) override { return record("resume", node, ""); }
  Result<sched::Action> reboot(std::string_view node, std::string_view reason) override {
    return record("reboot", node, reason);
  }
  Result<sched::PoolCount> held_by_cmax(std::string_view) override {
    std::lock_guard lock(mu_);
    return pool;
  }
  std::vector<Call> calls_about(const std::string& needle) {
    std::lock_guard lock(mu_);
    std::vector<Call> out;
    for (const auto& c : calls_)
      if (c.reason.find(needle) != std::string::npos || (c.verb == "resume" && needle.empty())) out.push_back(c);
    return out;
  }
  std::size_t resumes() {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& c : calls_) n += c.verb == "resume";
    return n;
  }

 private:
  Result<sched::Action> record(std::string verb, std::string_view node, std::string_view reason) {
    ++attempts;
    std::lock_guard lock(mu_);
    if (fail_first > 0) {
      --fail_first;
      return fail("{} {}: scontrol: Unable to contact slurm controller (connect failure)", verb, node);
    }
    if (verb != "resume") ++pool.held;
    calls_.push_back(Call{std::move(verb), std::string(node), std::string(reason)});
    sched::Action a;
    a.changed = true;
    return a;
  }
  std::mutex mu_;
  std::vector<Call> calls_;
};

using testing_support::catalog;
using testing_support::eventually;
using testing_support::Fixture;

TEST(Agent, AFloodOfOneXidDrainsOnce) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  Fixture fx;
  RecordingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  // Level 4: levels 0-3 also go to this VM's serial console, 2 ms a line.
  const std::string line = fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci);
  for (int i = 0; i < 500; ++i) write_kmsg(line);
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); })) << "no drain for " << pci;
  std::this_thread::sleep_for(300ms);  // room for a second drain, which must not come
  run.request_stop();
  run.join();
  auto calls = sched.calls_about(pci);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "drain");
  EXPECT_EQ(calls[0].node, "n1");
  EXPECT_EQ(calls[0].reason.rfind("cmax: Xid 79 " + pci, 0), 0u) << calls[0].reason;
  auto last = fx.log->last_action("n1|xid|79|" + pci);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "done");
  EXPECT_GE(agent.stats().signals.load(), 500u);
}

TEST(Agent, ARestartNeitherForgetsNorDrainsTwice) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  Fixture fx;
  RecordingScheduler sched;
  const std::string pci = unique_pci();
  const std::string line = fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci);
  {
    Agent agent(fx.options(), catalog(), *fx.log, sched);
    std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
    for (int i = 0; i < 100; ++i) write_kmsg(line);
    ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  }
  for (int i = 0; i < 100; ++i) write_kmsg(line);  // while no agent runs
  {
    Agent agent(fx.options(), catalog(), *fx.log, sched);
    std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
    ASSERT_TRUE(eventually([&] { return agent.stats().signals.load() >= 100; }))
        << "the restarted agent did not read the records written while it was down";
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(sched.calls_about(pci).size(), 1u);
}

TEST(Agent, RetriesWhileTheControllerIsUnreachable) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  sched.fail_first = 2;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  run.request_stop();
  run.join();
  EXPECT_EQ((*fx.log->last_action("n1|xid|79|" + pci))->status, "done");
}

TEST(Agent, AStopDuringRetriesEndsPromptlyAndKeepsTheActionPending) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  sched.fail_first = 1000;  // the controller never answers
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  write_kmsg(fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return sched.attempts.load() >= 2; }));  // backing off between attempts
  auto t0 = std::chrono::steady_clock::now();
  run.request_stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "shutdown waited out the backoff";
  auto last = fx.log->last_action("n1|xid|79|" + pci);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "pending");  // the next start carries it out
}

TEST(Agent, TheBreakerRefusesPastItsLimitAndSaysSo) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  auto o = fx.options();
  o.breaker_max_actions = 1;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string a = unique_pci(), b = unique_pci();
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", a));
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(a).empty(); }));
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", b));
  ASSERT_TRUE(eventually([&] {
    auto last = fx.log->last_action("n1|xid|79|" + b);
    return last && *last && (*last)->status == "refused";
  }));
  run.request_stop();
  run.join();
  EXPECT_TRUE(sched.calls_about(b).empty());
  EXPECT_NE((*fx.log->last_action("n1|xid|79|" + b))->detail.find("circuit breaker"), std::string::npos);
  EXPECT_GE(agent.stats().actions_refused.load(), 1u);
}

TEST(Agent, KernelOnlyIgnoresInjectedLinesForActions) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  auto o = fx.options();
  o.act_on = Origins::kernel;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return agent.stats().userspace_ignored.load() >= 1; }));
  run.request_stop();
  run.join();
  EXPECT_TRUE(sched.calls_about(pci).empty());
  auto last = fx.log->last_action("n1|xid|79|" + pci);
  ASSERT_TRUE(last);
  EXPECT_FALSE(*last);
}

// A probe that hands out what the test queues, as NVML or sysfs would report it.
class QueueProbe final : public probes::Probe {
 public:
  explicit QueueProbe(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Result<std::vector<probes::Finding>> poll(std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    ++polls;
    if (fail_next) {
      fail_next = false;
      return fail("read {}: the library went away", name_);
    }
    return std::exchange(queued_, {});
  }
  void push(probes::Finding f) {
    std::lock_guard lock(mu_);
    queued_.push_back(std::move(f));
  }
  std::atomic<int> polls{0};
  std::atomic<bool> fail_next{false};

 private:
  std::string name_;
  std::mutex mu_;
  std::vector<probes::Finding> queued_;
};

TEST(Agent, ProbeFindingsDrainAndTheirRecoveryResumes) {
  if (::access("/dev/kmsg", R_OK) != 0) GTEST_SKIP() << "needs /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  auto probe = std::make_unique<QueueProbe>("ib");
  QueueProbe* ib = probe.get();
  ASSERT_TRUE(agent.add_probe(std::move(probe), 20ms, 10ms));
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string port = fmt::format("mlx5_{}/1", std::random_device{}() % 100000);
  ib->push({signals::Kind::ib_port_down, 1, port, "state DOWN, phys_state Polling", false,
            "ib: " + port + ": state ACTIVE -> DOWN"});
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(port).empty(); })) << "no drain for " << port;
  ib->push({signals::Kind::ib_port_up, 1, port, "state ACTIVE, phys_state LinkUp", false,
            "ib: " + port + ": state DOWN -> ACTIVE"});
  ASSERT_TRUE(eventually([&] { return sched.resumes() >= 1; })) << "the port came back; no resume";
  ib->fail_next = true;
  ASSERT_TRUE(eventually([&] { return agent.stats().probes[0].errors.load() >= 1; }));
  ASSERT_TRUE(eventually([&] { return ib->polls.load() >= 5; })) << "a failed poll stopped the probe";
  run.request_stop();
  run.join();
  auto calls = sched.calls_about(port);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "drain");
  EXPECT_EQ(calls[0].reason.rfind("cmax: ib_port_down " + port, 0), 0u) << calls[0].reason;
  EXPECT_EQ(agent.stats().probes[0].name, "ib");
  EXPECT_EQ(agent.stats().probes[0].findings.load(), 2u);
  auto last = fx.log->last_action("n1|ib_port_down|1|" + port);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->verb, "resume");
}

TEST(Agent, AnNvmlXidAndTheKernelsLineForOneGpuAreOneIncident) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  auto probe = std::make_unique<QueueProbe>("nvml");
  QueueProbe* nvml = probe.get();
  ASSERT_TRUE(agent.add_probe(std::move(probe), 20ms, 10ms));
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  nvml->push({signals::Kind::xid, 79, pci + ".0", "GPU-0", false, "nvml: GPU " + pci + ".0: Xid 79"});
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  write_kmsg(fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return agent.stats().signals.load() >= 2; }));
  std::this_thread::sleep_for(200ms);
  run.request_stop();
  run.join();
  EXPECT_EQ(sched.calls_about(pci).size(), 1u);
  EXPECT_EQ(agent.stats().incidents.load(), 1u) << "the kernel's line opened a second incident";
}

TEST(Agent, TheFleetBreakerRefusesWhenThePoolIsAtItsLimit) {
  if (::access("/dev/kmsg", R_OK) != 0) GTEST_SKIP() << "needs /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  sched.pool = {"partition gpu", 1, 10, false};  // another node's agent already drained one of ten
  auto o = fx.options();
  o.fleet_max_percent = 10;
  Agent agent(o, catalog(), *fx.log, sched);
  auto probe = std::make_unique<QueueProbe>("fs");
  QueueProbe* fs = probe.get();
  ASSERT_TRUE(agent.add_probe(std::move(probe), 20ms, 10ms));
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string mount = fmt::format("/lustre/t{}", std::random_device{}());
  fs->push({signals::Kind::fs_hung, -1, mount, "stat did not return within 5000 ms", false, "fs: " + mount + " hung"});
  ASSERT_TRUE(eventually([&] { return agent.stats().actions_refused.load() >= 1; }));
  run.request_stop();
  run.join();
  EXPECT_TRUE(sched.calls_about(mount).empty());
  auto last = fx.log->last_action("n1|fs_hung|-1|" + mount);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "refused");
  EXPECT_NE((*last)->detail.find("fleet circuit breaker: cmax already holds 1 of 10 nodes in partition gpu"),
            std::string::npos)
      << (*last)->detail;
}

TEST(FleetBreaker, LimitsByPercentWithAFloorOfOneAndByCount) {
  using sched::PoolCount;
  EXPECT_FALSE(fleet_refusal(PoolCount{"p", 0, 4, false}, 10, 0));    // 10% of 4 rounds to 0: one allowed
  EXPECT_TRUE(fleet_refusal(PoolCount{"p", 1, 4, false}, 10, 0));
  EXPECT_FALSE(fleet_refusal(PoolCount{"p", 1, 20, false}, 10, 0));   // limit 2
  EXPECT_TRUE(fleet_refusal(PoolCount{"p", 2, 20, false}, 10, 0));
  EXPECT_TRUE(fleet_refusal(PoolCount{"p", 2, 100, false}, 10, 2));   // 10 by percent, 2 by count
  EXPECT_FALSE(fleet_refusal(PoolCount{"p", 5, 10, true}, 10, 0));    // the node is already held
  EXPECT_FALSE(fleet_refusal(PoolCount{"p", 50, 100, false}, 0, 0));  // both off
  auto why = fleet_refusal(PoolCount{"partition gpu", 3, 24, false}, 10, 0);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "fleet circuit breaker: cmax already holds 3 of 24 nodes in partition gpu (limit 10% of 24 = 2 nodes)");
}

std::string drill_id() { return fmt::format("{:04x}", std::random_device{}() & 0xffff); }

// A drill's marker and its lines (signals/drill_marker.h) as cmax drill writes them.
std::vector<std::string> drill_lines(const std::string& id, const std::string& pci, double until_unix) {
  const std::string xid = fmt::format("NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.", pci);
  return {"<6>" + signals::format_drill_begin(id, "xid79", "n1", until_unix, {xid}) + "\n", "<3>" + xid + "\n"};
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(AgentDrills, ALiveDrillIsActedOnAndTheReasonNamesIt) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  Fixture fx;
  RecordingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string id = drill_id(), pci = unique_pci();
  std::this_thread::sleep_for(100ms);  // past the backlog
  for (const auto& l : drill_lines(id, pci, unix_now() + 600)) write_kmsg(l);
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  run.request_stop();
  run.join();
  auto calls = sched.calls_about(pci);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].reason.ends_with(" [drill " + id + "]")) << calls[0].reason;
  EXPECT_GE(agent.stats().drill_lines.load(), 1u);
}

TEST(AgentDrills, AnEndedDrillsLinesAreNotActedOnEvenWhenReadLater) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  Fixture fx;
  RecordingScheduler sched;
  // Written before the agent starts: the backlog holds the drill's begin, its line and its end,
  // and a second drill that is still running.
  const std::string ended = drill_id(), running = drill_id(), a = unique_pci(), b = unique_pci();
  for (const auto& l : drill_lines(ended, a, unix_now() + 600)) write_kmsg(l);
  write_kmsg("<6>" + signals::format_drill_end(ended) + "\n");
  for (const auto& l : drill_lines(running, b, unix_now() + 600)) write_kmsg(l);
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(b).empty(); })) << "the running drill is acted on";
  // A tagged line of the ended drill, now: still not acted on.
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=cmaxdrill-{}, GPU has fallen off the bus.\n", a, ended));
  ASSERT_TRUE(eventually([&] { return agent.stats().drill_lines_ended.load() >= 2; }))
      << "ended " << agent.stats().drill_lines_ended.load() << " drill lines " << agent.stats().drill_lines.load();
  run.request_stop();
  run.join();
  EXPECT_TRUE(sched.calls_about(a).empty()) << "a drill that ended takes the node out no more";
}

TEST(AgentBreaker, AnAlreadyDrainedNodeIsUnchangedAndNotCounted) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  sched.drains_change = false;
  auto o = fx.options();
  o.breaker_max_actions = 1;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string a = unique_pci(), b = unique_pci();
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", a));
  ASSERT_TRUE(eventually([&] {
    auto last = fx.log->last_action("n1|xid|79|" + a);
    return last && *last && (*last)->status == "unchanged";
  }));
  sched.drains_change = true;
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", b));
  ASSERT_TRUE(eventually([&] {
    auto last = fx.log->last_action("n1|xid|79|" + b);
    return last && *last && (*last)->status != "pending";
  }));
  run.request_stop();
  run.join();
  EXPECT_EQ((*fx.log->last_action("n1|xid|79|" + b))->status, "done") << "the no-op did not use up the breaker";
}

TEST(AgentResumeWatch, AResumeSomeoneElseMadeIsRecorded) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  auto o = fx.options();
  o.resume_watch = 50ms;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  sched.drained_now = true;  // held, as the drain leaves it
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(agent.stats().resumes_observed.load(), 0u) << "still held: nothing to record";
  sched.drained_now = false;  // an operator resumed it
  ASSERT_TRUE(eventually([&] { return agent.stats().resumes_observed.load() == 1; }));
  std::this_thread::sleep_for(200ms);
  run.request_stop();
  run.join();
  EXPECT_EQ(agent.stats().resumes_observed.load(), 1u) << "recorded once";
  auto rows = fx.log->actions_for("n1");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].verb, "resume");
  EXPECT_EQ((*rows)[0].status, "done");
  EXPECT_NE((*rows)[0].reason.find("resumed by someone else"), std::string::npos);
  EXPECT_EQ(sched.resumes(), 0u) << "nothing was asked of the scheduler";
}

// A short hold (a drill, an operator's quick resume) is read at the steady interval: SLA
// accounting ends its outage within resume_watch of the resume (issue 35's defect 4).
TEST(AgentResumeWatch, AShortHoldIsReadAtTheSteadyInterval) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  auto o = fx.options();
  o.resume_watch = 20ms;  // resume_watch_steady stays at its 5 minutes
  o.resume_watch_max = 160ms;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  sched.drained_now = true;
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  const int at_hold = sched.state_reads.load();
  std::this_thread::sleep_for(1000ms);
  EXPECT_GE(sched.state_reads.load() - at_hold, 25) << "every 20 ms, not doubling";
  sched.drained_now = false;
  const auto resumed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return agent.stats().resumes_observed.load() == 1; }));
  const double seen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - resumed).count();
  EXPECT_LT(seen_ms, 100);
  run.request_stop();
  run.join();
}

// Issue 37: the node faults that are not the GPU through cmaxd's passive path. A read-only
// filesystem drains, naming its device; a cgroup's OOM and an ACCESS_REG failure are watched, not
// acted on; the config retunes a kind (actions.kinds) and the same line then changes nothing.
TEST(AgentNodeFaults, TheFamiliesActAsTheCatalogSaysAndTheConfigRetunesThem) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  const std::string tag = unique_pci().substr(5, 2) + unique_pci().substr(8, 2);  // a fresh device name
  const std::string fs = "cmx" + tag + "a";
  {
    Fixture fx;
    RecordingScheduler sched;
    Agent agent(fx.options(), catalog(), *fx.log, sched);
    std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
    write_kmsg(fmt::format("<4>Memory cgroup out of memory: Killed process 4{} (train-{}) total-vm:1000kB, anon-rss:900kB, "
                           "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:64kB oom_score_adj:0\n", tag, tag));
    write_kmsg(fmt::format("<4>mlx5_core 0000:{}:00.0: mlx5_cmd_out_err:808:(pid 1585): ACCESS_REG(0x805) op_mod(0x1) "
                           "failed, status bad parameter(0x3), syndrome (0x1e5585), err(-22)\n", tag.substr(0, 2)));
    write_kmsg(fmt::format("<2>EXT4-fs ({}): Remounting filesystem read-only\n", fs));
    ASSERT_TRUE(eventually([&] { return !sched.calls_about(fs).empty(); })) << "no drain for the read-only " << fs;
    std::this_thread::sleep_for(300ms);
    run.request_stop();
    run.join();
    auto calls = sched.calls_about(fs);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].verb, "drain");
    EXPECT_NE(calls[0].reason.find("fs_readonly"), std::string::npos) << calls[0].reason;
    EXPECT_TRUE(sched.calls_about("train-" + tag).empty()) << "a cgroup's OOM is the job's: no drain";
    EXPECT_TRUE(sched.calls_about("ACCESS_REG").empty()) << "an ACCESS_REG failure is watched";
    EXPECT_GE(agent.stats().incidents.load(), 3u) << "all three are recorded";
  }
  {
    Fixture fx;
    RecordingScheduler sched;
    signals::Catalog tuned = catalog();
    auto applied = tuned.apply_config(R"({"schema": "cmax.signals-config/1", "actions": {"kinds": {"fs_readonly": "monitor"}}})", "test");
    ASSERT_TRUE(applied) << applied.error().message;
    Agent agent(fx.options(), tuned, *fx.log, sched);
    std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
    const std::string fs2 = "cmx" + tag + "b";
    write_kmsg(fmt::format("<2>EXT4-fs ({}): Remounting filesystem read-only\n", fs2));
    ASSERT_TRUE(eventually([&] { return agent.stats().incidents.load() >= 1; }));
    std::this_thread::sleep_for(300ms);
    run.request_stop();
    run.join();
    EXPECT_TRUE(sched.calls_about(fs2).empty()) << "retuned to monitor: no drain";
  }
}

// Issue 36: a long hold on a scheduler without a watch (Slurm) is read ever less often, up to
// resume_watch_max; a fault it acted on that recurs while held is read at once.
TEST(AgentResumeWatch, ALongHoldIsReadLessOftenAndARecurrenceReadsAtOnce) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  auto o = fx.options();
  o.resume_watch = 20ms;
  o.resume_watch_steady = 0ms;  // the doubling from the first read (5 minutes in cmaxd)
  o.resume_watch_max = 160ms;
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const std::string pci = unique_pci();
  sched.drained_now = true;
  const std::string line = fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci);
  write_kmsg(line);
  ASSERT_TRUE(eventually([&] { return !sched.calls_about(pci).empty(); }));
  const int at_hold = sched.state_reads.load();
  std::this_thread::sleep_for(1500ms);
  // Waits of 20, 40, 80, then 160 ms: about 4 + 1200/160 = 11 reads in 1.5 s, where a fixed
  // 20 ms poll makes 75.
  const int held_reads = sched.state_reads.load() - at_hold;
  EXPECT_GE(held_reads, 5) << "still read while held";
  EXPECT_LE(held_reads, 16) << "the wait doubles up to resume_watch_max";
  // Resumed by someone else, then the same fault again: read at once, not after up to 160 ms.
  sched.drained_now = false;
  const int before = sched.state_reads.load();
  const auto written = std::chrono::steady_clock::now();
  write_kmsg(line);
  ASSERT_TRUE(eventually([&] { return agent.stats().resumes_observed.load() == 1; }));
  const auto seen_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - written).count();
  EXPECT_LT(seen_ms, 120) << "woken by the recurrence, not the next read 160 ms on";
  EXPECT_LE(sched.state_reads.load() - before, 2) << "one read, woken by the recurrence";
  std::printf("[ measure  ] held 1.5 s: %d state reads (fixed 20 ms poll: 75); resume seen %.1f ms after the recurrence\n",
              held_reads, seen_ms);
  run.request_stop();
  run.join();
  // SLA accounting reads the resume at the read that saw it; the row says how late that may be.
  auto rows = fx.log->actions_for("n1");
  ASSERT_TRUE(rows);
  ASSERT_FALSE(rows->empty());
  EXPECT_NE(rows->back().reason.find(" s before this read"), std::string::npos) << rows->back().reason;
}

// Issue 36: with a scheduler that watches (Kubernetes), the held node is not polled: one watch,
// the resume recorded once, and no state read at all while idle or holding.
TEST(AgentResumeWatch, AWatchingSchedulerIsNotPolled) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  Fixture fx;
  RecordingScheduler sched;
  sched.watch = true;
  auto o = fx.options();
  o.resume_watch = 20ms;  // a poll would read the state 10 times in the 200 ms below
  Agent agent(o, catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sched.watches.load(), 0) << "idle: nothing watched";
  const std::string pci = unique_pci();
  sched.drained_now = true;
  write_kmsg(fmt::format("<3>NVRM: Xid (PCI:{}): 79, pid=1, name=t, GPU has fallen off the bus.\n", pci));
  ASSERT_TRUE(eventually([&] { return sched.watches.load() == 1; })) << "holding: one watch";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(agent.stats().resumes_observed.load(), 0u);
  sched.drained_now = false;
  ASSERT_TRUE(eventually([&] { return agent.stats().resumes_observed.load() == 1; }));
  std::this_thread::sleep_for(100ms);
  run.request_stop();
  run.join();
  EXPECT_EQ(sched.state_reads.load(), 0) << "never polled";
  EXPECT_EQ(sched.watches.load(), 1) << "not watched again once it is back";
  EXPECT_EQ(agent.stats().resumes_observed.load(), 1u);
}

// The rater's dirty-inode incident on a live agent: soft lockups on one NUMA node's cores, then
// blocked tasks, a Lustre eviction and the storage probe failing. cmaxd drains once, for the CPU
// lockup; the storage probe's finding is its child, not a second drain for a storage fault.
TEST(AgentRootCause, TheDirtyInodeDeadlockDrainsOnceForTheCpuLockup) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  DevkmsgUnlimited unlimited;
  Fixture fx;
  RecordingScheduler sched;
  Agent agent(fx.options(), catalog(), *fx.log, sched);
  std::jthread run([&](std::stop_token st) { EXPECT_TRUE(agent.run(st)); });
  const int tag = static_cast<int>(std::random_device{}() % 90000) + 10000;
  for (int cpu = 24; cpu < 28; ++cpu)
    write_kmsg(fmt::format("<4>watchdog: BUG: soft lockup - CPU#{} stuck for 23s! [kworker/{}:1:{}]\n", cpu, cpu, tag + cpu));
  ASSERT_TRUE(eventually([&] { return !sched.calls_about("soft_lockup").empty(); })) << "no drain for the lockup";
  write_kmsg(fmt::format("<3>INFO: task python3:{} blocked for more than 120 seconds.\n", tag));
  write_kmsg("<3>LustreError: 167-0: scratch-MDT0000-mdc-ffff9a7c0a2b4000: This client was evicted by scratch-MDT0000; "
             "in progress operations using this service will fail.\n");
  probes::Finding hung;
  hung.kind = signals::Kind::fs_hung;
  hung.device = fmt::format("/lustre-{}", tag);
  hung.text = fmt::format("fs: {} did not answer statfs within 5 s", hung.device);
  agent.observe("fs", hung);
  std::this_thread::sleep_for(400ms);  // room for a second drain, which must not come
  run.request_stop();
  run.join();
  auto lockup = sched.calls_about("soft_lockup");
  ASSERT_EQ(lockup.size(), 1u);
  EXPECT_EQ(lockup[0].verb, "drain");
  EXPECT_TRUE(sched.calls_about("fs_hung").empty()) << "the storage probe drained on its own";
  EXPECT_TRUE(sched.calls_about(hung.device).empty());
}

}  // namespace
}  // namespace cmax::agent
