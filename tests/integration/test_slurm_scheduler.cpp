// SlurmScheduler against a real Slurm cluster of four nodes on this machine
// (tests/support/slurm_cluster.h): drain, idempotency, resume, someone else's drain, dry run,
// reboot, and a controller that is not there.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <thread>

#include "sched/slurm.h"
#include "support/slurm_cluster.h"

using namespace cmax::sched;
using cmax::test::SlurmCluster;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool in_service(const NodeState& s) { return s.base == "IDLE" && s.flags.empty(); }

class SlurmSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable())
      GTEST_SKIP() << "no Slurm test cluster here: " << *why;
    // RebootProgram=/bin/true: Slurm accepts reboots; the node waits for a reboot that never comes.
    auto c = SlurmCluster::start({.nodes = 4, .extra_conf = {"RebootProgram=/bin/true"}});
    ASSERT_TRUE(c) << c.error().message;
    cluster_ = std::move(*c);
  }

  SlurmScheduler scheduler(bool dry_run = false) {
    return SlurmScheduler({cluster_->conf_path(), 5s, dry_run});
  }

  NodeState state(std::string_view node) {
    auto s = cluster_->state(node);
    EXPECT_TRUE(s) << s.error().message;
    return s ? *s : NodeState{};
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

}  // namespace

TEST_F(SlurmSchedulerTest, DrainIsVisibleAtOnceIsIdempotentAndResumes) {
  auto s = scheduler();
  auto t0 = Clock::now();
  auto drained = s.drain("n1", "Xid 79 (integration test)");
  double call_ms = ms_since(t0);
  ASSERT_TRUE(drained) << drained.error().message;
  EXPECT_TRUE(drained->changed);
  EXPECT_EQ(drained->argv, drain_argv(s.options(), "n1", "cmax: Xid 79 (integration test)"));
  auto seen = cluster_->wait_for(
      "n1", [](const NodeState& n) { return n.drain_flag(); }, 5s);
  double visible_ms = ms_since(t0);
  ASSERT_TRUE(seen) << seen.error().message;
  std::cout << "[ measure  ] drain(): " << call_ms
            << " ms (state read + scontrol update); DRAIN visible in "
            << "`scontrol show node` " << visible_ms << " ms after the call began\n";
  EXPECT_EQ(seen->state, "IDLE+DRAIN");
  EXPECT_TRUE(seen->drained());
  EXPECT_EQ(seen->reason, "cmax: Xid 79 (integration test)");
  EXPECT_EQ(seen->reason_user, "root");

  // Again, with another reason: nothing runs, so Slurm keeps the first reason.
  auto again = s.drain("n1", "Xid 48");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_TRUE(again->argv.empty());
  EXPECT_EQ(again->note, "already drained: cmax: Xid 79 (integration test)");
  EXPECT_EQ(state("n1").reason, "cmax: Xid 79 (integration test)");

  t0 = Clock::now();
  auto resumed = s.resume("n1", Force::kNo);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_TRUE(resumed->changed);
  // Right after resume Slurm may show IDLE+NOT_RESPONDING until slurmd registers again.
  auto idle = cluster_->wait_for("n1", in_service, 15s);
  ASSERT_TRUE(idle) << idle.error().message;
  std::cout << "[ measure  ] resume() -> IDLE: " << ms_since(t0) << " ms\n";
  EXPECT_EQ(idle->reason, "");
  auto noop = s.resume("n1", Force::kNo);
  ASSERT_TRUE(noop) << noop.error().message;
  EXPECT_FALSE(noop->changed);
}

TEST_F(SlurmSchedulerTest, SomeoneElsesDrainIsLeftAlone) {
  auto direct = cluster_->scontrol({"update", "NodeName=n2", "State=DRAIN", "Reason=maintenance"});
  ASSERT_TRUE(direct && direct->exit_code == 0) << (direct ? direct->err : direct.error().message);
  auto before = state("n2");
  ASSERT_EQ(before.state, "IDLE+DRAIN");

  auto s = scheduler();
  auto resumed = s.resume("n2", Force::kNo);
  ASSERT_FALSE(resumed);
  EXPECT_EQ(resumed.error().message.rfind(
                "resume n2: IDLE+DRAIN with reason \"maintenance\", not set by cmax", 0),
            0u)
      << resumed.error().message;
  auto drained = s.drain("n2", "Xid 79");
  ASSERT_TRUE(drained) << drained.error().message;
  EXPECT_FALSE(drained->changed);
  EXPECT_FALSE(s.reboot("n2", "Xid 79"));

  auto after = state("n2");
  EXPECT_EQ(after.state, "IDLE+DRAIN");
  EXPECT_EQ(after.reason, "maintenance");
  EXPECT_EQ(after.reason_time, before.reason_time);

  auto forced = s.resume("n2", Force::kYes);
  ASSERT_TRUE(forced) << forced.error().message;
  auto idle = cluster_->wait_for("n2", in_service, 15s);
  EXPECT_TRUE(idle) << idle.error().message;
}

TEST_F(SlurmSchedulerTest, DryRunDrainReturnsTheArgvAndLeavesTheNodeIdle) {
  auto s = scheduler(/*dry_run=*/true);
  auto a = s.drain("n3", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->dry_run);
  EXPECT_EQ(a->argv, (std::vector<std::string>{"scontrol", "update", "NodeName=n3", "State=DRAIN",
                                               "Reason=cmax: Xid 79"}));
  auto r = s.reboot("n3", "Xid 79");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->dry_run);
  std::this_thread::sleep_for(200ms);
  auto n3 = state("n3");
  EXPECT_EQ(n3.state, "IDLE");
  EXPECT_EQ(n3.reason, "");
}

TEST_F(SlurmSchedulerTest, RebootIsRequestedOnce) {
  auto s = scheduler();
  auto r = s.reboot("n4", "Xid 79 GPU has fallen off the bus");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->changed);
  auto n4 = state("n4");
  EXPECT_TRUE(n4.has_flag("REBOOT_REQUESTED") || n4.has_flag("REBOOT_ISSUED")) << n4.state;
  EXPECT_TRUE(n4.drain_flag()) << n4.state;
  EXPECT_EQ(n4.reason.rfind("cmax: Xid 79 GPU has fallen off the bus", 0), 0u) << n4.reason;

  auto again = s.reboot("n4", "Xid 79 GPU has fallen off the bus");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_NE(again->note.find("reboot already pending"), std::string::npos) << again->note;
}

TEST_F(SlurmSchedulerTest, UnreachableControllerIsAnErrorWithinTheTimeout) {
  // The cluster's own slurm.conf, pointed at a port where nothing listens.
  std::ifstream in(cluster_->conf_path());
  std::string conf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int dead_port = cluster_->controller_port() + static_cast<int>(cluster_->node_names().size()) + 1;
  conf = std::regex_replace(conf, std::regex("SlurmctldPort=[0-9]+"),
                            "SlurmctldPort=" + std::to_string(dead_port));
  auto path = cluster_->dir() / "unreachable.conf";
  std::ofstream(path) << conf;

  SlurmScheduler s({path.string(), 1500ms, false});
  auto t0 = Clock::now();
  auto st = s.node_state("n1");
  double state_ms = ms_since(t0);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message.rfind("state of n1: scontrol timed out after 1500 ms", 0), 0u)
      << st.error().message;
  EXPECT_LT(state_ms, 3000);
  t0 = Clock::now();
  auto d = s.drain("n1", "Xid 79");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message.rfind("drain n1: scontrol timed out", 0), 0u) << d.error().message;
  EXPECT_LT(ms_since(t0), 3000);
  std::cout << "[ measure  ] unreachable controller: node_state() gave up after " << state_ms
            << " ms\n";
}

TEST_F(SlurmSchedulerTest, PoolCountSeesCmaxHoldsInThePartition) {
  auto s = scheduler();
  auto before = s.held_by_cmax("n3");
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->pool, "partition batch");
  EXPECT_EQ(before->total, 4);
  EXPECT_EQ(before->held, 0);
  ASSERT_TRUE(s.drain("n1", "Xid 79 (pool count)"));
  ASSERT_TRUE(cluster_->wait_for("n1", [](const NodeState& n) { return n.drain_flag(); }, 5s));
  auto after = s.held_by_cmax("n3");
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->held, 1);
  EXPECT_FALSE(after->node_held);
  auto self = s.held_by_cmax("n1");
  ASSERT_TRUE(self);
  EXPECT_TRUE(self->node_held);
}
