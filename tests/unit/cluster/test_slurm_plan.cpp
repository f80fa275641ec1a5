// The pure Slurm side of a cluster run (cluster/slurm_plan.h): sinfo's node list, which node
// states srun can start work on, the exact srun argv, and what srun's error lines say.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/slurm_plan.h"

using namespace cmax::cluster;
using namespace std::chrono_literals;

namespace {

SinfoNode node(std::string state, std::string reason = "none") { return {"gpu-03", std::move(state), std::move(reason)}; }

}  // namespace

TEST(ParseSinfoNodes, OneNodePerNameInSinfoOrder) {
  // sinfo -h -N -o %N|%T|%E lists a node once per partition it is in.
  const auto nodes = parse_sinfo_nodes(
      "gpu-01|idle|none\n"
      "gpu-02|mixed|none\n"
      "\n"
      "   \n"
      "gpu-01|idle|none\n"
      "gpu-03|drained|Xid 79: GPU fell off the bus | ticket 4411\n"
      "  gpu-04 | down* | Not responding  \r\n");
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[0].name, "gpu-01");
  EXPECT_EQ((*nodes)[0].state, "idle");
  EXPECT_EQ((*nodes)[0].reason, "none");
  EXPECT_EQ((*nodes)[1].name, "gpu-02");
  EXPECT_EQ((*nodes)[1].state, "mixed");
  EXPECT_EQ((*nodes)[2].name, "gpu-03");
  EXPECT_EQ((*nodes)[2].state, "drained");
  EXPECT_EQ((*nodes)[2].reason, "Xid 79: GPU fell off the bus | ticket 4411");  // a '|' in the reason is kept
  EXPECT_EQ((*nodes)[3].name, "gpu-04");
  EXPECT_EQ((*nodes)[3].state, "down*");
  EXPECT_EQ((*nodes)[3].reason, "Not responding");
}

TEST(ParseSinfoNodes, EmptyOutputIsNoNodes) {
  const auto nodes = parse_sinfo_nodes("");
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());
  const auto blank = parse_sinfo_nodes("\n\n  \n");
  ASSERT_TRUE(blank);
  EXPECT_TRUE(blank->empty());
}

TEST(ParseSinfoNodes, MalformedLinesAreErrorsNamingTheLine) {
  auto r = parse_sinfo_nodes("gpu-01|idle|none\ngpu-02 idle none\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "read sinfo output: expected NODE|STATE|REASON, got \"gpu-02 idle none\"");

  r = parse_sinfo_nodes("gpu-01|idle\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "read sinfo output: expected NODE|STATE|REASON, got \"gpu-01|idle\"");

  r = parse_sinfo_nodes("|idle|none\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "read sinfo output: a node without a name or state in \"|idle|none\"");

  r = parse_sinfo_nodes("gpu-01| |none\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "read sinfo output: a node without a name or state in \"gpu-01| |none\"");
}

TEST(NotSchedulable, IdleMixedReservedArePlanned) {
  for (const char* s : {"idle", "mixed", "reserved", "planned", "idle~", "mixed-"}) {
    EXPECT_FALSE(not_schedulable(node(s), false)) << s;
    EXPECT_FALSE(not_schedulable(node(s), true)) << s;
  }
}

TEST(NotSchedulable, AllocatedAndCompletingOnlyInsideAnAllocation) {
  for (const char* s : {"allocated", "completing", "allocated+"}) {
    EXPECT_FALSE(not_schedulable(node(s), true)) << s;  // --overlap: the job's own nodes
    auto out = not_schedulable(node(s), false);
    ASSERT_TRUE(out) << s;
    EXPECT_EQ(out->node, "gpu-03");
    EXPECT_EQ(out->status, NodeStatus::not_scheduled);
    EXPECT_EQ(out->payload, "");
    EXPECT_EQ(out->seconds, 0);
    EXPECT_EQ(out->detail, fmt::format("busy with other jobs (state {}): run cmax inside their allocation (salloc, then "
                                       "cmax run --harness slurm) or when the node is idle",
                                       s));
  }
}

TEST(NotSchedulable, NotRespondingNodes) {
  for (const char* s : {"idle*", "down*", "drained*", "mixed*"}) {
    for (bool overlap : {false, true}) {
      auto out = not_schedulable(node(s), overlap);
      ASSERT_TRUE(out) << s;
      EXPECT_EQ(out->status, NodeStatus::not_scheduled);
      EXPECT_EQ(out->detail, fmt::format("slurmctld reports the node not responding (state {}): its slurmd is down or "
                                         "unreachable",
                                         s));
    }
  }
  auto out = not_schedulable(node("down*", "Not responding"), false);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->detail,
            "slurmctld reports the node not responding (state down*): its slurmd is down or unreachable (reason: Not "
            "responding)");
}

TEST(NotSchedulable, DrainedDrainingMaintDownCarryTheReason) {
  for (const char* s : {"drained", "draining", "maint", "down", "fail", "future", "drained$"}) {
    for (bool overlap : {false, true}) {
      auto out = not_schedulable(node(s), overlap);
      ASSERT_TRUE(out) << s;
      EXPECT_EQ(out->status, NodeStatus::not_scheduled);
      EXPECT_EQ(out->detail, fmt::format("Slurm will not start work there (state {})", s));
    }
  }
  auto out = not_schedulable(node("drained", "Xid 79 on 0000:3b:00 [root@2025-11-22T14:57:01]"), false);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->detail, "Slurm will not start work there (state drained) (reason: Xid 79 on 0000:3b:00 "
                         "[root@2025-11-22T14:57:01])");
  out = not_schedulable(node("draining", ""), false);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->detail, "Slurm will not start work there (state draining)");
}

TEST(SrunArgv, OutsideAnAllocation) {
  SrunOptions o;
  o.collect_argv = {"/opt/cmax/bin/cmax", "collect", "--frame"};
  o.node_timeout = 90s;
  const std::vector<std::string> want = {"srun",
                                         "--nodes=3",
                                         "--ntasks=3",
                                         "--ntasks-per-node=1",
                                         "--nodelist=gpu-01,gpu-02,gpu-07",
                                         "--job-name=cmax-collect",
                                         "--label",
                                         "--kill-on-bad-exit=0",
                                         "--cpus-per-task=1",
                                         "--mpi=none",
                                         "--time=3",
                                         "--immediate=90",
                                         "--",
                                         "/opt/cmax/bin/cmax",
                                         "collect",
                                         "--frame"};
  EXPECT_EQ(srun_argv({"gpu-01", "gpu-02", "gpu-07"}, o), want);
}

TEST(SrunArgv, InsideAnAllocationWithAPartition) {
  SrunOptions o;
  o.collect_argv = {"/usr/bin/cmax", "collect", "--frame", "--node-name", "x y"};
  o.partition = "h100";
  o.job_name = "cmax-t1";
  o.overlap = true;
  o.node_timeout = 60s;
  const std::vector<std::string> want = {"srun",         "--nodes=1",    "--ntasks=1",  "--ntasks-per-node=1",
                                         "--nodelist=n1", "--job-name=cmax-t1", "--label", "--kill-on-bad-exit=0",
                                         "--cpus-per-task=1", "--mpi=none", "--time=2",  "--overlap",
                                         "--partition=h100", "--",        "/usr/bin/cmax", "collect",
                                         "--frame",      "--node-name",  "x y"};
  EXPECT_EQ(srun_argv({"n1"}, o), want);
}

TEST(SrunArgv, TimeLimitInWholeMinutesWithAMinuteToSpare) {
  auto time_of = [](std::chrono::milliseconds t) {
    SrunOptions o;
    o.node_timeout = t;
    for (const auto& a : srun_argv({"n1"}, o))
      if (a.starts_with("--time=")) return a;
    return std::string();
  };
  EXPECT_EQ(time_of(0ms), "--time=1");
  EXPECT_EQ(time_of(1ms), "--time=2");
  EXPECT_EQ(time_of(60000ms), "--time=2");
  EXPECT_EQ(time_of(60001ms), "--time=3");
  EXPECT_EQ(time_of(600s), "--time=11");

  auto immediate_of = [](std::chrono::milliseconds t) {
    SrunOptions o;
    o.node_timeout = t;
    for (const auto& a : srun_argv({"n1"}, o))
      if (a.starts_with("--immediate=")) return a;
    return std::string();
  };
  EXPECT_EQ(immediate_of(500ms), "--immediate=1");
  EXPECT_EQ(immediate_of(2500ms), "--immediate=2");
}

TEST(ParseSrunError, TaskLaunchFailureIsUnreachable) {
  auto ev = parse_srun_error(
      "srun: error: Task launch for StepId=3.0 failed on node n3: Communication connection failure");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->node, "n3");
  EXPECT_EQ(ev->status, NodeStatus::unreachable);
  EXPECT_EQ(ev->detail, "Task launch for StepId=3.0 failed on node n3: Communication connection failure");

  // Older releases print the bare step id; trailing CR/LF are trimmed.
  ev = parse_srun_error("srun: error: Task launch for 1234.0 failed on node gpu-17: Invalid job credential\r\n");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->node, "gpu-17");
  EXPECT_EQ(ev->status, NodeStatus::unreachable);
  EXPECT_EQ(ev->detail, "Task launch for 1234.0 failed on node gpu-17: Invalid job credential");
}

TEST(ParseSrunError, TaskEndingBadlyIsFailed) {
  auto ev = parse_srun_error("srun: error: n3: task 2: Exited with exit code 1");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->node, "n3");
  EXPECT_EQ(ev->status, NodeStatus::failed);
  EXPECT_EQ(ev->detail, "task 2: Exited with exit code 1");

  ev = parse_srun_error("srun: error: n2: task 1: Killed");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->node, "n2");
  EXPECT_EQ(ev->status, NodeStatus::failed);
  EXPECT_EQ(ev->detail, "task 1: Killed");
}

TEST(ParseSrunError, OtherLinesAreNotNodeEvents) {
  for (const char* line : {
           "srun: error: Unable to allocate resources: Requested node configuration is not available",
           "srun: error: Unable to create step for job 3: Requested nodes are busy",
           "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
           "srun: job 3 queued and waiting for resources",
           "srun: warning: can't run 1 processes on 2 nodes, setting nnodes to 1",
           " 3: srun: error: n3: task 2: Exited with exit code 1",  // a task's own output, labelled
           "srun: error: : task 2: Exited with exit code 1",
           "srun: error: Task launch for StepId=3.0 failed on node : no name",
           "srun: error: n3 x: task 2: Killed",
           // Found by fuzz_cluster: a node name is one word.
           "srun: error: Task launch for StepId=3.0 failed on node sk launch for StepId=3.0 failed on node n3: "
           "Communication connection failure",
           "",
           "srun: error: ",
       }) {
    EXPECT_FALSE(parse_srun_error(line)) << line;
  }
}

TEST(IsFatalSrunError, WholeStepFailures) {
  for (const char* line : {
           "srun: error: Unable to allocate resources: Requested node configuration is not available",
           "srun: error: Unable to create step for job 3: Requested nodes are busy",
           "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
           "srun: error: Application launch failed: Communication connection failure",
           "srun: error: Unable to allocate resources: Immediate execution impossible, insufficient priority",
       }) {
    EXPECT_TRUE(is_fatal_srun_error(line)) << line;
  }
  for (const char* line : {
           "srun: error: n3: task 2: Exited with exit code 1",
           "srun: error: n2: task 1: Killed",
           "srun: error: Task launch for StepId=3.0 failed on node n3: Communication connection failure",
           "srun: job 3 queued and waiting for resources",
           "",
       }) {
    EXPECT_FALSE(is_fatal_srun_error(line)) << line;
  }
}
