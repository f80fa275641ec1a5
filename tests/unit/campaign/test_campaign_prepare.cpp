// What cmax run works out before and between runs (moved out of apps/cmax, issue 40): the
// --budget text, the Slurm facts from sinfo and scontrol, the harness choice, and --resume's
// reopening and refitting of a saved campaign.

#include <gtest/gtest.h>

#include <algorithm>

#include "campaign/budget_text.h"
#include "campaign/decide.h"
#include "campaign/harness.h"
#include "campaign/plan.h"
#include "campaign/resume.h"
#include "campaign/slurm_facts.h"
#include "campaign/state.h"

namespace cmax::campaign {
namespace {

TEST(CampaignBudgetText, DurationsAndSecondsParseTheRestIsRefused) {
  EXPECT_EQ(parse_budget("3600"), 3600);
  EXPECT_EQ(parse_budget("90m"), 5400);
  EXPECT_EQ(parse_budget("2h"), 7200);
  EXPECT_EQ(parse_budget("1h30m"), 5400);
  EXPECT_EQ(parse_budget("45s"), 45);
  EXPECT_EQ(parse_budget("1h1m1s"), 3661);
  EXPECT_EQ(parse_budget("720h"), 30 * 24 * 3600);
  for (const char* bad : {"", "0", "0m", "-5", "5x", "h", "1.5h", "721h", "m30"})
    EXPECT_FALSE(parse_budget(bad).has_value()) << bad;
}

TEST(CampaignSlurmFacts, SinfoListsEachNodeOnceIdleAndReservedAreFreeGresSaysGpu) {
  Facts f;
  add_sinfo_nodes(f, "n1 idle (null)\nn2 allocated (null)\nn1 idle (null)\nn3 reserved gpu:h100:8\nbad\n"
                     "n4 mixed");
  EXPECT_EQ(f.nodes, (std::vector<std::string>{"n1", "n2", "n3", "n4"}));
  // A node listed twice (in two partitions) is idle twice, as sinfo said.
  EXPECT_EQ(f.idle, (std::vector<std::string>{"n1", "n1", "n3"}));
  EXPECT_TRUE(f.gpu);
  Facts cpu;
  add_sinfo_nodes(cpu, "a idle (null)\n");
  EXPECT_FALSE(cpu.gpu);
}

sched::Reservation reservation(std::string name, std::vector<std::string> nodes, std::vector<std::string> flags,
                               std::vector<std::string> users = {}, std::string state = "ACTIVE") {
  sched::Reservation r;
  r.name = std::move(name);
  r.nodes = std::move(nodes);
  r.node_cnt = static_cast<int>(r.nodes.size());
  r.flags = std::move(flags);
  r.users = std::move(users);
  r.state = std::move(state);
  return r;
}

TEST(CampaignSlurmFacts, TheTrialsNodesAreTheIdleNodesOfUsableReservationsLargestFirst) {
  Facts f;
  f.idle = {"t1", "t2", "t3", "m1", "o1", "i1"};
  const std::vector<sched::Reservation> list = {
      reservation("small", {"t1", "busy"}, {}),
      reservation("big", {"t2", "t3", "t1"}, {}),
      reservation("maint", {"m1"}, {"MAINT"}),
      reservation("others", {"o1"}, {}, {"bob"}),
      reservation("later", {"i1"}, {}, {}, "INACTIVE"),
  };
  note_trial_nodes(f, list, "alice");
  EXPECT_EQ(f.trial_reservations, (std::vector<std::string>{"big", "small"}));
  EXPECT_EQ(f.trial_nodes, (std::vector<std::string>{"t2", "t3", "t1"}));
  EXPECT_EQ(f.trial_nccl_nodes, (std::vector<std::string>{"t2", "t3", "t1"}));

  Facts none;
  note_trial_nodes(none, list, "alice");  // nothing idle
  EXPECT_TRUE(none.trial_reservations.empty());
  EXPECT_TRUE(none.trial_nccl_nodes.empty());
}

TEST(CampaignSlurmFacts, ADrillTargetComesFromAReplaceDownReservationOnlyWhenAllowed) {
  const std::vector<sched::Reservation> list = {
      reservation("plain", {"p1"}, {}),
      reservation("theirs", {"x1"}, {"REPLACE_DOWN"}, {"bob"}),
      reservation("spares", {"s1", "s2"}, {"REPLACE_DOWN"}),
  };
  Facts off;
  EXPECT_TRUE(note_drill_target(off, list, "alice").empty());
  EXPECT_TRUE(off.drill_node.empty());

  Facts f;
  f.allow_disruptive = true;
  auto notes = note_drill_target(f, list, "alice");
  EXPECT_EQ(f.reservation, "spares");
  EXPECT_EQ(f.drill_node, "s1");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("node s1 in reservation spares"), std::string::npos) << notes[0];

  Facts named;  // the user's own node is kept; only the spares are filled in
  named.allow_disruptive = true;
  named.drill_node = "n7";
  note_drill_target(named, list, "alice");
  EXPECT_EQ(named.drill_node, "n7");
  EXPECT_EQ(named.reservation, "spares");

  Facts elsewhere;  // a named reservation that is not a REPLACE_DOWN one names no node
  elsewhere.allow_disruptive = true;
  elsewhere.reservation = "plain";
  EXPECT_TRUE(note_drill_target(elsewhere, list, "alice").empty());
  EXPECT_TRUE(elsewhere.drill_node.empty());
}

TEST(CampaignHarness, SlurmInAnAllocationOrWithEverythingElseStandaloneSaysWhatIsMissing) {
  HarnessSigns in_job;
  in_job.job_id = "42";
  auto p = pick_harness(in_job);
  EXPECT_EQ(p.harness, "slurm");
  EXPECT_EQ(p.why, "inside Slurm allocation 42");

  HarnessSigns all{"", "/etc/slurm/slurm.conf", false, true, true, true};
  p = pick_harness(all);
  EXPECT_EQ(p.harness, "slurm");
  EXPECT_EQ(p.why, "sinfo and srun on PATH and /etc/slurm/slurm.conf readable");

  HarnessSigns bare{"", "/etc/slurm/slurm.conf", false, false, false, false};
  p = pick_harness(bare);
  EXPECT_EQ(p.harness, "standalone");
  EXPECT_EQ(p.why, "no Slurm cluster found: sinfo is not on PATH, srun is not on PATH, /etc/slurm/slurm.conf is not "
                   "readable (and SLURM_CONF is not set)");

  HarnessSigns named{"", "/x/slurm.conf", true, false, true, true};
  p = pick_harness(named);
  EXPECT_EQ(p.harness, "standalone");
  EXPECT_EQ(p.why, "no Slurm cluster found: /x/slurm.conf is not readable");
}

TEST(CampaignHarness, ANamedSlurmConfThatDoesNotExistIsAnError) {
  auto signs = read_harness_signs("/nonexistent/cmax-test/slurm.conf");
  EXPECT_FALSE(signs);
}

Campaign standard_campaign(std::optional<int> budget_s) {
  auto plan = load_plan("standard");
  EXPECT_TRUE(plan) << plan.error().message;
  Facts f;
  f.harness = "standalone";
  f.nodes = {"here"};
  f.cmax = "/usr/bin/cmax";
  f.out = "/tmp/run";
  f.collbench = "/usr/bin/cmax-collbench";
  f.budget_s = budget_s;
  Campaign c;
  c.facts = f;
  for (auto& d : decide(*plan, f)) c.stages.push_back({std::move(d)});
  return c;
}

TEST(CampaignResume, WhatDidNotFinishRunsAgainScoreAndReportAlwaysAndASweepResumes) {
  Campaign c = standard_campaign(std::nullopt);
  std::size_t nccl = c.stages.size();
  for (std::size_t i = 0; i < c.stages.size(); ++i) {
    auto& st = c.stages[i];
    if (!st.decision.run) st.status = Status::skipped;
    else if (st.decision.kind == Kind::nccl) {
      st.status = Status::interrupted;
      nccl = i;
    } else if (st.decision.in_process || i == 0) st.status = Status::done;
    else st.status = Status::failed;
  }
  ASSERT_LT(nccl, c.stages.size());
  const auto finished = reopen_stages(c);
  ASSERT_EQ(finished.size(), c.stages.size());
  for (std::size_t i = 0; i < c.stages.size(); ++i) {
    const auto& st = c.stages[i];
    SCOPED_TRACE(st.decision.id);
    if (!st.decision.run) {
      EXPECT_EQ(st.status, Status::skipped);
    } else if (i == 0 && !st.decision.in_process) {
      EXPECT_EQ(st.status, Status::done);
      EXPECT_TRUE(finished[i]);
    } else {
      EXPECT_EQ(st.status, Status::pending);
      EXPECT_FALSE(finished[i]);
    }
  }
  const auto& argv = c.stages[nccl].decision.argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--resume"), 1);
  reopen_stages(c);  // --resume is added once however often the sweep is resumed
  c.stages[nccl].status = Status::interrupted;
  reopen_stages(c);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--resume"), 1);
}

TEST(CampaignResume, ANewBudgetRefitsWhatIsLeftAndBringsBackWhatAnEarlierOneLeftOut) {
  Campaign c = standard_campaign(1);
  const bool some_left_out = std::any_of(c.stages.begin(), c.stages.end(),
                                         [](const StageState& st) { return st.decision.over_budget; });
  ASSERT_TRUE(some_left_out);
  for (auto& st : c.stages)
    if (!st.decision.run) st.status = Status::skipped;
  const auto finished = reopen_stages(c);
  refit_stages(c, 30 * 24 * 3600, finished);
  EXPECT_EQ(c.facts.budget_s, 30 * 24 * 3600);
  for (const auto& st : c.stages) {
    SCOPED_TRACE(st.decision.id);
    EXPECT_FALSE(st.decision.over_budget);
    if (st.decision.run) EXPECT_EQ(st.status, Status::pending);
  }
  // And a budget too small for anything skips what is pending.
  refit_stages(c, 1, finished);
  for (const auto& st : c.stages)
    if (st.decision.over_budget) EXPECT_EQ(st.status, Status::skipped) << st.decision.id;
}

}  // namespace
}  // namespace cmax::campaign
