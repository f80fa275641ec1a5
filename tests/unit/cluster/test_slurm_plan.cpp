// The pure Slurm side of a cluster run (cluster/slurm_plan.h): sinfo's node list, which node
// states srun can start work on, the exact srun argv, and what srun's error lines say.

#include <gtest/gtest.h>

#include <algorithm>
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
  for (const char* s : {"allocated", "allocated+"}) {
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

TEST(NotSchedulable, ACompletingNodeGetsNoSallocAdvice) {
  // No allocation can be had on a completing node (a job's processes still ending, or a slurmd
  // lost mid-job): the advice is where to look, not salloc.
  EXPECT_FALSE(not_schedulable(node("completing"), true));
  auto out = not_schedulable(node("completing"), false);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, NodeStatus::not_scheduled);
  EXPECT_EQ(out->detail.find("salloc"), std::string::npos) << out->detail;
  EXPECT_NE(out->detail.find("still ending (state completing)"), std::string::npos) << out->detail;
  EXPECT_NE(out->detail.find("squeue -t CG"), std::string::npos) << out->detail;
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
                                         "--immediate=5",
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

  // --immediate is the queue wait, not the node timeout: a step Slurm queues ends in seconds.
  auto immediate_of = [](std::chrono::milliseconds t) {
    SrunOptions o;
    o.node_timeout = 600s;
    o.queue_wait = t;
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

namespace {

cmax::sched::Reservation reservation(std::string name, std::vector<std::string> nodes, std::vector<std::string> users,
                                     std::string state = "ACTIVE") {
  cmax::sched::Reservation r;
  r.name = std::move(name);
  r.nodes = std::move(nodes);
  r.node_cnt = static_cast<int>(r.nodes.size());
  r.users = std::move(users);
  r.state = std::move(state);
  r.end_time = "2026-12-05T15:04:21";
  return r;
}

std::vector<SinfoNode> six(std::string reserved_state = "reserved") {
  return {{"n1", reserved_state, "none"}, {"n2", reserved_state, "none"}, {"n3", reserved_state, "none"},
          {"n4", reserved_state, "none"}, {"spare1", "idle", "none"},      {"spare2", "idle", "none"}};
}

SrunOptions plan_options() {
  SrunOptions o;
  o.collect_argv = {"/usr/bin/cmax", "collect", "--frame"};
  return o;
}

}  // namespace

TEST(PlanSrun, ReservedNodesAreAskedInsideTheirReservationBesideTheIdleOnes) {
  // The rater's trial cluster: n[1-4] in a REPLACE_DOWN reservation, two idle spares.
  PlanInput in{six(), {reservation("train", {"n1", "n2", "n3", "n4"}, {"root"})}, "", "root"};
  auto plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->skipped.empty());
  EXPECT_EQ(plan->nodes, (std::vector<std::string>{"n1", "n2", "n3", "n4", "spare1", "spare2"}));
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].reservation, "");
  EXPECT_EQ(plan->groups[0].nodes, (std::vector<std::string>{"spare1", "spare2"}));
  EXPECT_EQ(std::count(plan->groups[0].argv.begin(), plan->groups[0].argv.end(), "--reservation=train"), 0);
  EXPECT_EQ(plan->groups[1].reservation, "train");
  EXPECT_EQ(plan->groups[1].nodes, (std::vector<std::string>{"n1", "n2", "n3", "n4"}));
  EXPECT_EQ(std::count(plan->groups[1].argv.begin(), plan->groups[1].argv.end(), "--reservation=train"), 1);
  EXPECT_EQ(std::count(plan->groups[1].argv.begin(), plan->groups[1].argv.end(), "--nodelist=n1,n2,n3,n4"), 1);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_NE(plan->notes[0].find("reservation train"), std::string::npos);
}

TEST(PlanSrun, AMaintReservationThatAdmitsUsIsAsked) {
  PlanInput in{six("maint"), {reservation("rating", {"n1", "n2", "n3", "n4"}, {"root", "alice"})}, "", "alice"};
  auto plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->skipped.empty());
  EXPECT_EQ(plan->nodes.size(), 6u);
}

TEST(PlanSrun, AReservationThatDoesNotAdmitTheUserIsTheReasonItsNodesAreNotAsked) {
  PlanInput in{six(), {reservation("train", {"n1", "n2", "n3", "n4"}, {"alice", "bob"})}, "", "root"};
  auto plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->skipped.size(), 4u);
  EXPECT_EQ(plan->skipped[0].status, NodeStatus::not_scheduled);
  EXPECT_NE(plan->skipped[0].detail.find("held by reservation train (Users=alice,bob), which does not admit root"),
            std::string::npos)
      << plan->skipped[0].detail;
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].nodes, (std::vector<std::string>{"spare1", "spare2"}));

  // "-bob" excludes only bob.
  in.reservations = {reservation("train", {"n1", "n2", "n3", "n4"}, {"-bob"})};
  plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->skipped.empty());
  in.user = "bob";
  plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->skipped.size(), 4u);
}

TEST(PlanSrun, InactiveReservationsDoNotGroupNodes) {
  PlanInput in{six("idle"), {reservation("later", {"n1"}, {"root"}, "INACTIVE")}, "", "root"};
  auto plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].nodes.size(), 6u);
}

TEST(PlanSrun, AnExplicitReservationLimitsTheRunToItsNodes) {
  PlanInput in{six(), {reservation("train", {"n1", "n2", "n3", "n4"}, {"root"})}, "train", "root"};
  auto plan = plan_srun(in, plan_options());
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].reservation, "train");
  ASSERT_EQ(plan->skipped.size(), 2u);
  EXPECT_EQ(plan->skipped[0].detail, "not in reservation train (--reservation)");

  in.reservation = "nope";
  plan = plan_srun(in, plan_options());
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("reservation nope is not active"), std::string::npos);
}

TEST(PlanSrun, InsideAnAllocationReservationsDoNotMatter) {
  auto o = plan_options();
  o.overlap = true;
  PlanInput in{six("allocated"), {reservation("train", {"n1", "n2", "n3", "n4"}, {"alice"})}, "", "root"};
  auto plan = plan_srun(in, o);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].nodes.size(), 6u);
  EXPECT_EQ(std::count(plan->groups[0].argv.begin(), plan->groups[0].argv.end(), "--overlap"), 1);
}

TEST(ParseSrunQueued, TheJobIdOfAQueuedStep) {
  EXPECT_EQ(parse_srun_queued("srun: job 2 queued and waiting for resources"), "2");
  EXPECT_EQ(parse_srun_queued("srun: job 123456 queued and waiting for resources\r\n"), "123456");
  EXPECT_FALSE(parse_srun_queued("srun: job  queued and waiting for resources"));
  EXPECT_FALSE(parse_srun_queued("srun: job 2 has been allocated resources"));
  EXPECT_FALSE(parse_srun_queued("0: srun: job x queued and waiting for resources"));
}

TEST(ParseSrunUnavailable, NodesHeldByOthersAreQueuedNotFailed) {
  // Both forms seen on Slurm 22.05: after --immediate ran out, and at once.
  EXPECT_EQ(parse_srun_unavailable("srun: error: Unable to allocate resources: Requested nodes are busy"),
            "Requested nodes are busy");
  EXPECT_EQ(parse_srun_unavailable(
                "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)"),
            "Required node not available (down, drained or reserved)");
  EXPECT_FALSE(parse_srun_unavailable("srun: error: Unable to allocate resources: Access denied to requested reservation"));
  EXPECT_FALSE(parse_srun_unavailable("srun: error: Unable to allocate resources: Invalid partition name specified"));
  EXPECT_TRUE(is_reservation_refusal("srun: error: Unable to allocate resources: Access denied to requested reservation"));
  EXPECT_TRUE(is_reservation_refusal("srun: error: Problem using reservation"));
  EXPECT_FALSE(is_reservation_refusal("srun: error: Unable to allocate resources: Requested nodes are busy"));
}
