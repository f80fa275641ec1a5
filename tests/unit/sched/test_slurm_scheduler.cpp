// SlurmScheduler against a stand-in scontrol (a script that prints a canned node line and records
// every other call): the argv it runs, idempotency, dry run, refusals and error text. The real
// scontrol is exercised in tests/integration/test_slurm_scheduler.cpp.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "sched/slurm.h"
#include "support/temp_host.h"

using namespace cmax::sched;
using namespace std::chrono_literals;

namespace {

constexpr const char* kFakeScontrol = R"(#!/bin/sh
dir=$(dirname "$0")
[ -f "$dir/sleep" ] && sleep 10
echo "$SLURM_CONF $SLURM_TIME_FORMAT" > "$dir/env"
if [ "$2" = "show" ]; then echo "$*" >> "$dir/shows"; cat "$dir/show"; exit 0; fi
for a in "$@"; do printf '%s|' "$a"; done >> "$dir/calls"
echo >> "$dir/calls"
[ -f "$dir/fail" ] && { cat "$dir/fail" >&2; exit 1; }
exit 0
)";

class FakeSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.write("/scontrol", kFakeScontrol);
    ::chmod((host_.dir() / "scontrol").c_str(), 0755);
    show("NodeName=n1 State=IDLE");
  }
  void show(std::string_view line) { host_.write("/show", line); }
  std::string file(const char* name) {
    std::ifstream in(host_.dir() / name);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  std::string calls() { return file("calls"); }
  SlurmScheduler scheduler(bool dry_run = false) {
    return SlurmScheduler(
        {"/etc/cmax-test/slurm.conf", 2000ms, dry_run, (host_.dir() / "scontrol").string()});
  }

  cmax::test::TempHost host_;
};

}  // namespace

TEST_F(FakeSlurm, DrainRunsScontrolUpdateWithThePrefixedReason) {
  auto s = scheduler();
  auto a = s.drain("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->changed);
  EXPECT_FALSE(a->dry_run);
  EXPECT_EQ(calls(), "update|NodeName=n1|State=DRAIN|Reason=cmax: Xid 79|\n");
  EXPECT_EQ(a->argv, drain_argv(s.options(), "n1", "cmax: Xid 79"));
  EXPECT_EQ(file("env"), "/etc/cmax-test/slurm.conf standard\n");
}

TEST_F(FakeSlurm, DrainOfADrainedNodeRunsNothing) {
  show("NodeName=n1 State=IDLE+DRAIN Reason=cmax: Xid 79 [root@2026-12-02T18:00:00]");
  auto a = scheduler().drain("n1", "Xid 48");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->changed);
  EXPECT_TRUE(a->argv.empty());
  EXPECT_EQ(a->note, "already drained: cmax: Xid 79");
  EXPECT_EQ(calls(), "");
}

TEST_F(FakeSlurm, DryRunReportsTheArgvAndRunsNothing) {
  auto s = scheduler(/*dry_run=*/true);
  auto d = s.drain("n1", "Xid 79");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->dry_run);
  EXPECT_TRUE(d->changed);
  EXPECT_EQ(d->argv.at(1), "update");
  auto r = s.reboot("n1", "Xid 79");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->argv, (std::vector<std::string>{s.options().scontrol, "reboot", "ASAP",
                                               "nextstate=RESUME", "reason=cmax: Xid 79", "n1"}));
  show("NodeName=n1 State=IDLE+DRAIN Reason=cmax: Xid 79 [root@2026-12-02T18:00:00]");
  auto u = s.resume("n1", Force::kNo);
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->argv, resume_argv(s.options(), "n1"));
  EXPECT_EQ(calls(), "");
}

TEST_F(FakeSlurm, ResumeRefusesSomeoneElsesDrainUnlessForced) {
  show("NodeName=n1 State=IDLE+DRAIN Reason=maintenance [alice@2026-12-02T18:00:00]");
  auto s = scheduler();
  auto r = s.resume("n1", Force::kNo);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(
                "resume n1: IDLE+DRAIN with reason \"maintenance\", not set by cmax", 0),
            0u)
      << r.error().message;
  EXPECT_EQ(calls(), "");
  auto forced = s.resume("n1", Force::kYes);
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_EQ(calls(), "update|NodeName=n1|State=RESUME|\n");
}

TEST_F(FakeSlurm, ErrorsNameTheActionAndTheNode) {
  host_.write("/fail", "slurm_update error: Invalid node state specified\n");
  auto d = scheduler().drain("n1", "Xid 79");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message,
            "drain n1: scontrol exited 1: slurm_update error: Invalid node state specified");

  show("NodeName=n2 State=IDLE");
  auto other = scheduler().node_state("n1");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message, "state of n1: scontrol answered for node n2");

  show("Node n1 not found");
  EXPECT_FALSE(scheduler().reboot("n1", "Xid 79"));
}

TEST_F(FakeSlurm, BadInputRunsNothing) {
  auto s = scheduler();
  auto hostlist = s.drain("n[1-4]", "Xid 79");
  ASSERT_FALSE(hostlist);
  EXPECT_EQ(hostlist.error().message.rfind("drain n[1-4]: ", 0), 0u) << hostlist.error().message;
  EXPECT_FALSE(s.drain("n1", ""));
  EXPECT_FALSE(s.reboot("n1", "a\nb"));
  EXPECT_EQ(file("env"), "");  // scontrol never started
}

TEST_F(FakeSlurm, AHungScontrolEndsAtTheTimeout) {
  host_.write("/sleep", "");
  SlurmScheduler s({"", 300ms, false, (host_.dir() / "scontrol").string()});
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.node_state("n1");
  auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("state of n1: scontrol timed out after 300 ms"),
            std::string::npos)
      << r.error().message;
  EXPECT_LT(wall, 3s);
}

TEST(SlurmScheduler, MissingScontrolIsAnErrorNamingIt) {
  SlurmScheduler s({"", 1000ms, false, "/nonexistent/scontrol"});
  auto r = s.drain("n1", "Xid 79");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("drain n1: run /nonexistent/scontrol"), std::string::npos)
      << r.error().message;
}

TEST_F(FakeSlurm, TheFleetReadStandsInForTheNextDrainsStateReadOnce) {
  show("NodeName=n1 State=IDLE Partitions=gpu");
  auto s = scheduler();
  auto pool = s.held_by_cmax("n1");
  ASSERT_TRUE(pool) << pool.error().message;
  EXPECT_EQ(pool->pool, "partition gpu");
  EXPECT_EQ(pool->total, 1);
  ASSERT_TRUE(s.drain("n1", "Xid 79"));
  EXPECT_EQ(file("shows"), "-o show node\n") << "the drain read the node's state again";
  ASSERT_TRUE(s.drain("n1", "Xid 79"));  // used once: this one reads
  EXPECT_EQ(file("shows"), "-o show node\n-o show node n1\n");
}

TEST(EffectiveSlurmConf, TheFlagThenTheEnvironmentAndAMissingFileSaidAtOnce) {
  cmax::test::TempHost t;
  const auto conf = (t.dir() / "slurm.conf").string();
  std::ofstream(conf) << "ClusterName=x\n";
  ::unsetenv("SLURM_CONF");
  auto none = cmax::sched::effective_slurm_conf("");
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, "") << "Slurm's own default";
  auto flag = cmax::sched::effective_slurm_conf(conf);
  ASSERT_TRUE(flag);
  EXPECT_EQ(*flag, conf);
  ::setenv("SLURM_CONF", conf.c_str(), 1);
  auto env = cmax::sched::effective_slurm_conf("");
  ASSERT_TRUE(env);
  EXPECT_EQ(*env, conf) << "an exported SLURM_CONF passes to every child";
  ::setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
  auto missing = cmax::sched::effective_slurm_conf("");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("$SLURM_CONF names /nonexistent/slurm.conf"), std::string::npos)
      << missing.error().message;
  auto dir = cmax::sched::effective_slurm_conf(t.dir().string());
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message.find("a directory"), std::string::npos) << dir.error().message;
  ::unsetenv("SLURM_CONF");
}
