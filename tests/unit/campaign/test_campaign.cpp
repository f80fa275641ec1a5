// cmax run's campaign (issue 26): plans as data, the decisions for a cluster (skips with reasons,
// disruptive stages gated, the plan fitted into a budget), campaign.json round trips, and a stage
// child stopped at its budget or on Ctrl-C.

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "campaign/decide.h"
#include "campaign/execute.h"
#include "campaign/plan.h"
#include "campaign/run_lock.h"
#include "campaign/state.h"

namespace cmax::campaign {
namespace {

namespace fs = std::filesystem;

const Decision* find(const std::vector<Decision>& v, std::string_view id) {
  for (const auto& d : v)
    if (d.id == id) return &d;
  return nullptr;
}

bool has_arg(const Decision& d, std::string_view a) { return std::find(d.argv.begin(), d.argv.end(), a) != d.argv.end(); }

Facts slurm_facts() {
  Facts f;
  f.harness = "slurm";
  f.harness_why = "test";
  f.nodes = {"n1", "n2", "n3", "n4", "spare1", "spare2"};
  f.idle = {"spare1", "spare2"};
  f.trial_nodes = {"n1", "n2", "n3", "n4"};
  f.trial_reservations = {"train"};
  f.trial_nccl_nodes = f.trial_nodes;
  f.cmax = "/opt/cmax/bin/cmax";
  f.out = "/runs/r1";
  f.collbench = "/opt/cmax/bin/cmax-collbench";
  return f;
}

TEST(CampaignPlan, ThePresetsParseAndGrowInScope) {
  std::size_t last = 0;
  for (auto name : kPresets) {
    auto p = load_plan(name);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->stages.size(), last) << name;
    last = p->stages.size();
    EXPECT_EQ(p->stages.back().kind, Kind::report) << "every plan ends with the report";
  }
  auto full = load_plan("full");
  ASSERT_TRUE(full);
  EXPECT_TRUE(std::any_of(full->stages.begin(), full->stages.end(), [](const StageSpec& s) { return s.kind == Kind::drill; }));
}

TEST(CampaignPlan, ErrorsNameTheFileTheStageAndTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "not a JSON object"},
      {R"({"schema": "cmax.plan/2", "stages": []})", "'schema' must be \"cmax.plan/1\""},
      {R"({"schema": "cmax.plan/1", "stages": []})", "'stages' must be a non-empty array"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "bake"}]})", "'kind' must be one of audit"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit", "budget_s": 0}]})", "'budget_s' must be whole seconds"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit", "budget_s": 10, "min_s": 20}]})", "'min_s' 20 is above"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit"}, {"kind": "audit"}]})", "id 'audit' is used twice"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit", "args": "x"}]})", "'args' must be an array of strings"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit", "budget": 5}]})", "unknown field 'budget'"},
      {R"({"schema": "cmax.plan/1", "stages": [{"kind": "audit", "id": "Bad Id"}]})", "'id' must be 1-40"},
  };
  for (const auto& [text, want] : cases) {
    auto p = parse_plan(text, "mine.json");
    ASSERT_FALSE(p) << text;
    EXPECT_NE(p.error().message.find("mine.json"), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find(want), std::string::npos) << p.error().message;
  }
  auto missing = load_plan("/nonexistent/plan.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("not a preset either (quick, standard, full)"), std::string::npos)
      << missing.error().message;
}

TEST(CampaignDecide, AStandaloneMachineRunsWhatItCanAndSaysWhyNotTheRest) {
  auto plan = load_plan("full");
  ASSERT_TRUE(plan);
  Facts f;
  f.harness = "standalone";
  f.nodes = {"vm"};
  f.cmax = "/usr/bin/cmax";
  f.out = "/runs/x";
  auto d = decide(*plan, f);
  ASSERT_EQ(d.size(), plan->stages.size());
  EXPECT_TRUE(find(d, "audit")->run);
  EXPECT_TRUE(has_arg(*find(d, "audit"), "--no-isolation")) << "the isolation stage owns those checks";
  EXPECT_TRUE(has_arg(*find(d, "isolation"), "--no-metadata")) << "nothing probed that the user did not name";
  EXPECT_TRUE(find(d, "active")->run);
  EXPECT_FALSE(find(d, "nccl")->run);
  EXPECT_NE(find(d, "nccl")->todo.find("--nccl-tests DIR"), std::string::npos);
  EXPECT_FALSE(find(d, "drill")->run);
  EXPECT_NE(find(d, "drill")->reason.find("needs a scheduler"), std::string::npos);
  EXPECT_FALSE(find(d, "endpoint")->run);
  EXPECT_NE(find(d, "endpoint")->todo.find("--endpoint URL"), std::string::npos);
  EXPECT_FALSE(find(d, "sla")->run);
  EXPECT_TRUE(find(d, "score")->run && find(d, "score")->in_process);
  EXPECT_TRUE(find(d, "report")->run && find(d, "report")->in_process);
  for (const auto& x : d)
    if (x.run && !x.in_process) {
      EXPECT_EQ(x.argv.front(), "/usr/bin/cmax");
      EXPECT_TRUE(has_arg(x, "/runs/x")) << x.id << ": every stage writes into the one run directory";
    }
}

TEST(CampaignDecide, TheDrillRunsOnlyWhenAllowedAndNamed) {
  auto plan = load_plan("full");
  ASSERT_TRUE(plan);
  Facts f = slurm_facts();
  auto d = decide(*plan, f);
  EXPECT_FALSE(find(d, "drill")->run);
  EXPECT_TRUE(find(d, "drill")->disruptive);
  EXPECT_NE(find(d, "drill")->todo.find("--allow-disruptive"), std::string::npos);
  f.allow_disruptive = true;
  d = decide(*plan, f);
  EXPECT_FALSE(find(d, "drill")->run) << "allowed but no target";
  EXPECT_NE(find(d, "drill")->todo.find("--drill-node NODE"), std::string::npos) << find(d, "drill")->todo;
  f.drill_node = "n1";
  f.reservation = "train";
  d = decide(*plan, f);
  const Decision* drill = find(d, "drill");
  ASSERT_TRUE(drill->run);
  EXPECT_TRUE(has_arg(*drill, "--yes"));
  EXPECT_TRUE(has_arg(*drill, "n1"));
  EXPECT_TRUE(has_arg(*drill, "train"));
  EXPECT_TRUE(has_arg(*drill, "xid79")) << "the plan's own arguments";
}

TEST(CampaignDecide, SlurmStagesUseTheIdleNodesAndTheNodeCountsTheClusterHas) {
  auto plan = load_plan("standard");
  ASSERT_TRUE(plan);
  Facts f = slurm_facts();
  auto d = decide(*plan, f);
  const Decision* active = find(d, "active");
  ASSERT_TRUE(active->run);
  EXPECT_TRUE(has_arg(*active, "--submit") && has_arg(*active, "--wait"));
  EXPECT_NE(active->targets.find("spare1,spare2"), std::string::npos);
  const Decision* nccl = find(d, "nccl");
  ASSERT_TRUE(nccl->run);
  EXPECT_TRUE(has_arg(*nccl, "1,2,4"));
  EXPECT_TRUE(has_arg(*nccl, "/opt/cmax/bin/cmax-collbench"));
  f.nodes = {"n1", "n2", "n3"};
  f.trial_nodes = f.trial_nccl_nodes = {"n1", "n2", "n3"};
  d = decide(*plan, f);
  EXPECT_TRUE(has_arg(*find(d, "nccl"), "1,2")) << "no 4-node step on 3 nodes";
  EXPECT_NE(find(d, "nccl")->reason.find("node count 4 dropped: 3 nodes are reachable"), std::string::npos)
      << find(d, "nccl")->reason;
  f.idle.clear();
  f.trial_nodes.clear();
  f.trial_nccl_nodes.clear();
  f.trial_reservations.clear();
  d = decide(*plan, f);
  EXPECT_FALSE(find(d, "active")->run);
  EXPECT_NE(find(d, "active")->reason.find("no node is idle"), std::string::npos);
  EXPECT_FALSE(find(d, "nccl")->run) << "an srun sweep on busy nodes would only wait";
  f.nodes = {"n1", "n2", "n3", "n4", "spare1", "spare2"};
  f.idle = {"spare1", "spare2"};
  // With an endpoint, a contract and events: those stages run.
  f.endpoint = "http://127.0.0.1:8000/v1";
  f.contract = "/c.json";
  f.events = "/cmaxd.db";
  d = decide(*plan, f);
  EXPECT_TRUE(find(d, "endpoint")->run);
  EXPECT_TRUE(has_arg(*find(d, "endpoint"), "http://127.0.0.1:8000/v1"));
  EXPECT_TRUE(find(d, "sla")->run);
}

TEST(CampaignDecide, TheBudgetShrinksStagesTogetherAndSkipsWhatNoLongerFits) {
  auto plan = load_plan("standard");
  ASSERT_TRUE(plan);
  Facts f = slurm_facts();
  f.endpoint = "http://127.0.0.1:1/v1";
  const int unbounded = planned_seconds(decide(*plan, f));
  f.budget_s = unbounded;  // fits as it is
  EXPECT_EQ(planned_seconds(decide(*plan, f)), unbounded);
  f.budget_s = 3600;
  auto d = decide(*plan, f);
  int children = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (!d[i].run || d[i].in_process) continue;
    children += d[i].budget_s;
    EXPECT_GE(d[i].budget_s, plan->stages[i].min_s) << d[i].id;
    EXPECT_LE(d[i].budget_s, plan->stages[i].budget_s) << d[i].id;
  }
  EXPECT_LE(children, 3600);
  // Too little for the stages' minimums (355 s in all; sla has no contract here): the last one is
  // skipped, with the reason, and the rest still get at least their min_s.
  f.budget_s = 300;
  d = decide(*plan, f);
  int skipped_for_budget = 0;
  for (const auto& x : d)
    if (!x.run && x.reason.find("does not fit --budget") != std::string::npos) ++skipped_for_budget;
  EXPECT_EQ(skipped_for_budget, 1);
  EXPECT_FALSE(find(d, "endpoint")->run);
  EXPECT_NE(find(d, "endpoint")->reason.find("does not fit --budget 300 s"), std::string::npos);
  EXPECT_TRUE(find(d, "nccl")->run);
  for (std::size_t i = 0; i < d.size(); ++i)
    if (d[i].run && !d[i].in_process) EXPECT_GE(d[i].budget_s, plan->stages[i].min_s) << d[i].id;
  EXPECT_TRUE(find(d, "audit")->run) << "the first stages keep their place";
  EXPECT_TRUE(find(d, "report")->run);
  const Decision* active = find(d, "active");
  if (active->run) {
    EXPECT_TRUE(has_arg(*active, std::to_string(active->budget_s))) << "--wait-timeout-s follows the fitted budget";
  }
}

TEST(CampaignDecide, NcclAndActiveChecksRunOnTheTrialsOwnNodes) {
  auto plan = load_plan("standard");
  ASSERT_TRUE(plan);
  Facts f = slurm_facts();
  auto d = decide(*plan, f);
  const Decision* nccl = find(d, "nccl");
  ASSERT_TRUE(nccl->run);
  std::string words;
  for (const auto& a : nccl->argv) words += " " + a;
  EXPECT_NE(words.find(" --launcher srun --reservation train --host n1 --host n2 --host n3 --host n4"), std::string::npos)
      << words;
  EXPECT_EQ(words.find("localhost"), std::string::npos);
  EXPECT_NE(nccl->targets.find("the trial's nodes n1,n2,n3,n4 (reservation train), node counts 1,2,4"), std::string::npos)
      << nccl->targets;
  const Decision* active = find(d, "active");
  ASSERT_TRUE(active->run);
  EXPECT_TRUE(has_arg(*active, "--reservation") && has_arg(*active, "train"));
  EXPECT_FALSE(has_arg(*active, "--no-free-nodes")) << "the spares are checked too";
  EXPECT_TRUE(has_arg(*active, "/runs/r1/active")) << "storage on the run directory's filesystem";
  EXPECT_NE(active->reason.find("--storage-path DIR"), std::string::npos) << active->reason;
  f.storage_path = "/lustre/scratch";
  d = decide(*plan, f);
  EXPECT_TRUE(has_arg(*find(d, "active"), "/lustre/scratch"));
  // No spare idle: only the trial's nodes.
  f.idle.clear();
  d = decide(*plan, f);
  EXPECT_TRUE(has_arg(*find(d, "active"), "--no-free-nodes"));
  // No reservation: the sweep goes to the free idle nodes; one of them is said to be one node.
  f.trial_nodes.clear();
  f.trial_nccl_nodes.clear();
  f.trial_reservations.clear();
  f.idle = {"spare1"};
  d = decide(*plan, f);
  nccl = find(d, "nccl");
  ASSERT_TRUE(nccl->run);
  EXPECT_FALSE(has_arg(*nccl, "--reservation"));
  EXPECT_TRUE(has_arg(*nccl, "spare1"));
  EXPECT_NE(nccl->reason.find("node counts 2, 4 dropped: 1 node is reachable"), std::string::npos) << nccl->reason;
  EXPECT_NE(nccl->reason.find("one node only"), std::string::npos) << nccl->reason;
  // Kubernetes: a stated skip with what to do; standalone: mpirun here, one node.
  f.harness = "kubernetes";
  d = decide(*plan, f);
  EXPECT_FALSE(find(d, "nccl")->run);
  EXPECT_NE(find(d, "nccl")->todo.find("MPIJob"), std::string::npos);
  f.harness = "standalone";
  d = decide(*plan, f);
  EXPECT_TRUE(has_arg(*find(d, "nccl"), "mpirun"));
  EXPECT_NE(find(d, "nccl")->reason.find("this machine only"), std::string::npos);
  // The CPU-fabric label says what the plan's arguments make it.
  plan->stages[4].args.push_back("--max-bytes=8M");
  d = decide(*plan, f);
  EXPECT_NE(find(d, "nccl")->targets.find("CPU fabric: to 8M, 2 ranks a node"), std::string::npos) << find(d, "nccl")->targets;
  // --prices goes to the endpoint stage.
  f.endpoint = "http://127.0.0.1:8000/v1";
  f.prices = "/p.json";
  d = decide(*plan, f);
  EXPECT_TRUE(has_arg(*find(d, "endpoint"), "--prices") && has_arg(*find(d, "endpoint"), "/p.json"));
}

TEST(CampaignDecide, ABudgetSaysWhatThePlanNeedsAndAResumeRefitsWhatIsLeft) {
  auto plan = load_plan("standard");
  ASSERT_TRUE(plan);
  Facts f = slurm_facts();
  auto d = decide(*plan, f);
  const int needed = minimum_budget_s(d);
  EXPECT_EQ(needed, 30 + 15 + 10 + 120 + 120) << "audit, isolation, scan, active, nccl (endpoint and sla cannot run)";
  f.budget_s = 100;
  d = decide(*plan, f);
  const Decision* nccl = find(d, "nccl");
  EXPECT_FALSE(nccl->run);
  EXPECT_TRUE(nccl->over_budget);
  EXPECT_FALSE(nccl->argv.empty()) << "kept, for a resume with more time";
  EXPECT_NE(nccl->todo.find(fmt::format("--budget {} s or more", needed)), std::string::npos) << nccl->todo;
  EXPECT_EQ(find(d, "audit")->reason.find("does not fit"), std::string::npos);
  // Resume with more: the finished stages keep their budget, the rest is fitted again.
  std::vector<bool> finished(d.size(), false);
  finished[0] = true;  // audit done
  const int audit_budget = find(d, "audit")->budget_s;
  fit_budget(d, 3600, &finished);
  EXPECT_TRUE(find(d, "nccl")->run);
  EXPECT_FALSE(find(d, "nccl")->over_budget);
  EXPECT_EQ(find(d, "nccl")->reason.find("does not fit"), std::string::npos) << find(d, "nccl")->reason;
  EXPECT_EQ(find(d, "audit")->budget_s, audit_budget);
  int left = 0;
  for (std::size_t i = 1; i < d.size(); ++i)
    if (d[i].run && !d[i].in_process) left += d[i].budget_s;
  EXPECT_LE(left, 3600);
  EXPECT_TRUE(has_arg(*find(d, "active"), std::to_string(find(d, "active")->budget_s)));
}

TEST(CampaignExecute, ExitLabelsAndTheLinesThatSayNothing) {
  EXPECT_EQ(exit_label(0), "clean");
  EXPECT_EQ(exit_label(1), "findings");
  EXPECT_EQ(exit_label(2), "findings");
  EXPECT_EQ(exit_label(3), "usage or environment");
  EXPECT_EQ(exit_label(130), "interrupted");
  EXPECT_EQ(exit_label(9), "failed");
  EXPECT_TRUE(says_nothing("report: /runs/r1/report.html"));
  EXPECT_TRUE(says_nothing("Run directory: /runs/r1 (campaign.json)"));
  EXPECT_FALSE(says_nothing("cmax endpoint bench: connect 127.0.0.1:9: connection refused"));
}

TEST(CampaignRunLock, ASecondHolderIsRefusedWithTheFirstsWords) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("cmax-lock-{}", ::getpid());
  fs::remove_all(dir);
  {
    auto a = RunLock::acquire(dir.string(), "pid 1 on login1 since T: cmax run --plan standard");
    ASSERT_TRUE(a) << a.error().message;
    auto b = RunLock::acquire(dir.string(), "pid 2");
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("in use by another cmax run (pid 1 on login1 since T: cmax run --plan standard)"),
              std::string::npos)
        << b.error().message;
    EXPECT_NE(b.error().message.find("--resume " + dir.string()), std::string::npos);
  }
  auto c = RunLock::acquire(dir.string(), "pid 3");
  EXPECT_TRUE(c) << "free once the holder is gone";
  fs::remove_all(dir);
}

TEST(CampaignState, RoundTripsAndReadsBackForResume) {
  auto plan = load_plan("standard");
  ASSERT_TRUE(plan);
  Campaign c;
  c.plan_name = plan->name;
  c.plan_origin = plan->origin;
  c.facts = slurm_facts();
  c.facts.budget_s = 1234;
  c.started_at = "2026-12-05T12:00:00Z";
  for (auto& d : decide(*plan, c.facts)) c.stages.push_back({std::move(d)});
  c.stages[0].status = Status::done;
  c.stages[0].exit_code = 1;
  c.stages[0].seconds = 2.5;
  c.stages[0].log = "logs/audit.log";
  c.stages[3].status = Status::interrupted;
  c.stages[3].error = "interrupted after 3 s";
  c.interrupted = true;
  auto back = campaign_from_json(campaign_to_json(c), "campaign.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(campaign_to_json(*back), campaign_to_json(c));
  EXPECT_EQ(back->facts.budget_s, 1234);
  EXPECT_EQ(back->stages[3].status, Status::interrupted);
  EXPECT_EQ(back->stages[0].decision.argv, c.stages[0].decision.argv);
  auto bad = campaign_from_json(R"({"schema": "cmax.campaign/1", "plan": {}, "facts": {}, "stages": [{"id": "x", "kind": "bake", "status": "done"}]})", "c.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown kind"), std::string::npos);
  EXPECT_FALSE(campaign_from_json("{}", "c.json"));

  const fs::path dir = fs::temp_directory_path() / ("cmax-campaign-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_TRUE(save_campaign(c, dir.string()));
  auto loaded = load_campaign(dir.string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->stages.size(), c.stages.size());
  EXPECT_FALSE(fs::exists(dir / ".campaign.json.tmp"));
  fs::remove_all(dir);
  auto none = load_campaign("/nonexistent");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("--resume needs the run directory"), std::string::npos);
}

Decision shell_stage(std::vector<std::string> argv, int budget_s) {
  Decision d;
  d.id = "t";
  d.run = true;
  d.budget_s = budget_s;
  d.argv = std::move(argv);
  return d;
}

TEST(CampaignExecute, ExitCodesTimeoutsAndStop) {
  const fs::path dir = fs::temp_directory_path() / ("cmax-exec-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ExecuteOptions o;
  o.log_path = (dir / "t.log").string();
  o.grace = std::chrono::milliseconds(500);
  // Findings (exit 1) are a stage that ran to the end; its output is in the log.
  auto r = execute_stage(shell_stage({"/bin/sh", "-c", "echo measured; exit 1"}, 10), o);
  EXPECT_EQ(r.status, Status::done);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.last_line, "measured");
  // Exit 3 (usage, environment) is a failed stage, with its last line in the error.
  r = execute_stage(shell_stage({"/bin/sh", "-c", "echo 'cmax: no such thing' >&2; exit 3"}, 10), o);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.error.find("no such thing"), std::string::npos) << r.error;
  // Past its budget: stopped (SIGINT, then SIGKILL after the grace), within budget + grace.
  const auto t0 = std::chrono::steady_clock::now();
  r = execute_stage(shell_stage({"/bin/sh", "-c", "trap '' INT; sleep 30"}, 1), o);
  EXPECT_EQ(r.status, Status::timed_out);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_NE(r.error.find("budget of 1 s"), std::string::npos) << r.error;
  // Ctrl-C: the stop flag ends the stage as interrupted.
  std::atomic<bool> stop{false};
  o.stop = &stop;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  r = execute_stage(shell_stage({"/bin/sleep", "30"}, 60), o);
  later.join();
  EXPECT_EQ(r.status, Status::interrupted);
  // A command that cannot start is a failed stage, not a crash.
  o.stop = nullptr;
  r = execute_stage(shell_stage({"/nonexistent/cmax"}, 5), o);
  EXPECT_EQ(r.status, Status::failed);
  std::ifstream log(o.log_path);
  std::string first;
  std::getline(log, first);
  EXPECT_NE(first.find("/nonexistent/cmax"), std::string::npos) << "the log starts with the command";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cmax::campaign
