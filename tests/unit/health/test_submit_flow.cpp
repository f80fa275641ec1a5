// The `cmax check --submit [--wait]` flow (health/submit_flow.h) against a fake Slurm and a fake
// clock: an earlier job of ours waited for first, a job per scope, one wait deadline shared by the
// jobs, Ctrl-C cancelling them, the two jobs' results merged; and the flow's pure helpers.

#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "health/submit_flow.h"

namespace cmax::health {
namespace {

using namespace std::chrono_literals;

const std::string kOkN1 = R"({"schema":"cmax.check.active/1","node":"n1","healthy":true,"results":[{"id":"cpu","outcome":"pass"}]})";
const std::string kOkS1 = R"({"schema":"cmax.check.active/1","node":"spare1","healthy":true,"results":[{"id":"cpu","outcome":"pass"}]})";

// Slurm as the flow sees it. Each wait takes `wait_takes` of fake time (capped by its timeout) and
// ends COMPLETED, or is cancelled at its timeout or when *stop is set, as wait_for_job does.
struct FakeSlurm final : SubmitBackend {
  std::vector<std::string> queued;
  std::map<std::string, SubmitOutcome> by_scope;  // reservation -> what submit_active says
  std::map<std::string, std::vector<NodeResultFile>> results;
  std::chrono::seconds wait_takes{10};
  std::chrono::steady_clock::time_point t{};
  std::vector<std::string> calls;

  Result<std::vector<std::string>> queued_check_jobs(const SubmitOptions&) override {
    calls.push_back("squeue");
    return queued;
  }
  Result<SubmitOutcome> submit_active(const SubmitOptions& o) override {
    calls.push_back(fmt::format("sbatch[{}]{}", o.reservation, o.force ? " force" : ""));
    auto it = by_scope.find(o.reservation);
    if (it == by_scope.end()) return fail("sinfo: slurmctld not responding");
    return it->second;
  }
  Result<std::string> wait_for_job(const SubmitOptions&, std::string_view id, std::chrono::seconds timeout,
                                   const std::atomic<bool>* stop) override {
    calls.push_back(fmt::format("wait {} {}s", id, timeout.count()));
    if (stop && stop->load()) return std::string("RUNNING when cmax was interrupted and cancelled it");
    if (wait_takes >= timeout) {
      t += timeout;
      return fmt::format("RUNNING when cmax stopped waiting after {} s and cancelled it", timeout.count());
    }
    t += wait_takes;
    return std::string("COMPLETED");
  }
  std::vector<NodeResultFile> read_node_results(const std::string& dir, std::string_view id) override {
    calls.push_back(fmt::format("read {} {}", dir, id));
    return results[std::string(id)];
  }
  std::chrono::steady_clock::time_point now() const override { return t; }
};

SubmitOutcome submitted(std::string id, std::vector<std::string> nodes) {
  SubmitOutcome o;
  o.submitted = true;
  o.job_id = std::move(id);
  o.nodes = std::move(nodes);
  o.plan.sbatch_argv = {"sbatch", "/out/cmax-check.sh"};
  o.plan.script_path = "/out/cmax-check.sh";
  o.plan.script = "#!/bin/sh\n";
  return o;
}

SubmitFlowOptions two_scopes() {
  SubmitFlowOptions o;
  o.submit.output_dir = "/out";
  o.scopes = {"", "train"};
  o.wait = true;
  o.wait_timeout = 100s;
  return o;
}

TEST(SubmitFlow, TwoJobsAreWaitedForUnderOneDeadlineAndTheirResultsMerged) {
  FakeSlurm slurm;
  slurm.by_scope[""] = submitted("12", {"spare1"});
  slurm.by_scope["train"] = submitted("13", {"n1"});
  slurm.results["12"] = {{"a.out", kOkS1, ""}};
  slurm.results["13"] = {{"b.out", kOkN1, ""}};
  slurm.wait_takes = 70s;
  std::vector<std::string> seen;
  SubmitFlowHooks hooks;
  hooks.on_submitted = [&](const SubmittedJob& j) { seen.push_back("submitted " + j.outcome.job_id + " " + j.scope); };
  hooks.on_scopes_done = [&](const std::vector<std::string>& notes) { seen.push_back(fmt::format("notes {}", notes.size())); };
  hooks.before_wait = [&] { seen.push_back("wait"); };
  auto r = run_submit_flow(two_scopes(), slurm, hooks);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(seen, (std::vector<std::string>{"submitted 12 ", "submitted 13 train", "notes 0", "wait"}));
  // The second job waits only for what is left of the one deadline (100 s - 70 s), then is cancelled.
  EXPECT_EQ(slurm.calls, (std::vector<std::string>{"squeue", "sbatch[]", "sbatch[train] force", "wait 12 100s",
                                                    "read /out 12", "wait 13 30s", "read /out 13"}));
  ASSERT_EQ(r->parts.size(), 2u);
  EXPECT_EQ(r->parts[0].job_end, "COMPLETED");
  EXPECT_EQ(r->parts[1].job_end, "RUNNING when cmax stopped waiting after 30 s and cancelled it");
  EXPECT_EQ(r->parts[1].reservation, "train");
  ASSERT_TRUE(r->merged);
  EXPECT_TRUE(r->merged->healthy) << "both nodes reported a pass";
  auto doc = nlohmann::json::parse(r->merged->document);
  EXPECT_EQ(doc["job"], "12,13");
  EXPECT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(describe_job_ends(r->parts),
            "12 COMPLETED, 13 RUNNING when cmax stopped waiting after 30 s and cancelled it");
}

TEST(SubmitFlow, APastDeadlineStillGivesEachJobASecondToBeCancelledIn) {
  FakeSlurm slurm;
  slurm.by_scope[""] = submitted("12", {"spare1"});
  slurm.by_scope["train"] = submitted("13", {"n1"});
  slurm.wait_takes = 500s;  // the first wait uses the whole deadline
  auto r = run_submit_flow(two_scopes(), slurm);
  ASSERT_TRUE(r);
  EXPECT_EQ(slurm.calls[5], "wait 13 1s");
  EXPECT_FALSE(r->merged->healthy) << "no node reported: unverified, never a pass";
}

TEST(SubmitFlow, AStopRequestCancelsTheJobsWaitedFor) {
  FakeSlurm slurm;
  slurm.by_scope[""] = submitted("12", {"spare1"});
  slurm.by_scope["train"] = submitted("13", {"n1"});
  std::atomic<bool> stop{false};
  auto o = two_scopes();
  o.stop = &stop;
  SubmitFlowHooks hooks;
  hooks.before_wait = [&] { stop.store(true); };  // Ctrl-C as the wait begins
  auto r = run_submit_flow(o, slurm, hooks);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->parts.size(), 2u);
  for (const auto& p : r->parts) EXPECT_EQ(p.job_end, "RUNNING when cmax was interrupted and cancelled it");
  EXPECT_FALSE(r->merged->healthy);
}

TEST(SubmitFlow, AnEarlierJobOfOursIsWaitedForBeforeOursIsSubmitted) {
  FakeSlurm slurm;
  slurm.queued = {"7"};
  slurm.by_scope[""] = submitted("12", {"spare1"});
  auto o = two_scopes();
  o.scopes = {""};
  o.wait_timeout = 50s;
  std::vector<std::string> queued;
  SubmitFlowHooks hooks;
  hooks.on_queued = [&](const std::string& id) { queued.push_back(id); };
  auto r = run_submit_flow(o, slurm, hooks);
  ASSERT_TRUE(r);
  EXPECT_EQ(queued, std::vector<std::string>{"7"});
  EXPECT_EQ(slurm.calls[1], "wait 7 50s");
  EXPECT_EQ(slurm.calls[2], "sbatch[]");
  // --force (or no --wait) does not look for earlier jobs.
  FakeSlurm forced;
  forced.queued = {"7"};
  forced.by_scope[""] = submitted("12", {"spare1"});
  o.submit.force = true;
  ASSERT_TRUE(run_submit_flow(o, forced));
  EXPECT_EQ(forced.calls.front(), "sbatch[] force");
}

TEST(SubmitFlow, NothingSubmittedIsAnErrorOnlyWhenWaiting) {
  FakeSlurm slurm;
  SubmitOutcome none;
  none.note = "no idle node";
  slurm.by_scope[""] = none;
  slurm.by_scope["train"] = none;
  auto o = two_scopes();
  auto r = run_submit_flow(o, slurm);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--wait: nothing was submitted, so there are no results: no idle node; no idle node");
  o.wait = false;
  auto r2 = run_submit_flow(o, slurm);
  ASSERT_TRUE(r2);
  EXPECT_TRUE(r2->jobs.empty());
  EXPECT_EQ(r2->notes.size(), 2u);
  EXPECT_FALSE(r2->merged);
  o.scopes.clear();
  EXPECT_FALSE(run_submit_flow(o, slurm)) << "no scope: no node to check";
}

TEST(SubmitFlow, ADryRunPlansEveryScopeAndWaitsForNothing) {
  FakeSlurm slurm;
  slurm.by_scope[""] = submitted("", {"spare1"});
  slurm.by_scope["train"] = submitted("", {"n1"});
  auto o = two_scopes();
  o.submit.dry_run = true;
  std::vector<std::string> planned;
  SubmitFlowHooks hooks;
  hooks.on_planned = [&](const SubmittedJob& j) { planned.push_back(describe_plan(j.outcome)); };
  auto r = run_submit_flow(o, slurm, hooks);
  ASSERT_TRUE(r);
  EXPECT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0], "# \nsbatch /out/cmax-check.sh\n# /out/cmax-check.sh:\n#!/bin/sh\n");
  EXPECT_TRUE(r->jobs.empty());
  EXPECT_EQ(slurm.calls, (std::vector<std::string>{"sbatch[]", "sbatch[train]"})) << "a plan is not a job to force past";
}

TEST(SubmitFlow, TheNodesArgvAndTheMessages) {
  EXPECT_EQ(node_check_args({{"cpu", "memory"}, 60, "", 2000, 256, 200, ""}),
            (std::vector<std::string>{"--checks", "cpu,memory", "--check-timeout-s", "60"}));
  EXPECT_EQ(node_check_args({{"storage"}, 1.5, "/scratch", 10, 8, 4, "/etc/t.json"}),
            (std::vector<std::string>{"--checks", "storage", "--check-timeout-s", "1.5", "--path", "/scratch",
                                      "--metadata-files", "10", "--seq-mib", "8", "--fsync-count", "4",
                                      "--thresholds", "/etc/t.json"}));
  EXPECT_EQ(describe_submitted({submitted("13", {"n1", "n2"}), "train"}, "/out"),
            "job 13 on 2 idle nodes of reservation train (n1,n2); results in /out/cmax-check-<host>-13-<task>.out");
  EXPECT_EQ(describe_submitted({submitted("12", {"spare1"}), ""}, "/out"),
            "job 12 on 1 idle node (spare1); results in /out/cmax-check-<host>-12-<task>.out");
  EXPECT_GE(job_time_for_groups({"cpu", "gpu"}, 60s, 600s), job_time_for_groups({"cpu"}, 60s, 600s));
}

}  // namespace
}  // namespace cmax::health
