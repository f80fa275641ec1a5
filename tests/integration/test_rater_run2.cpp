// Issue 35, as a new user met it on the six-node local Slurm trial (n1-n4 in the REPLACE_DOWN
// reservation `train`, spare1 and spare2 idle, SLURM_CONF exported, `cmax run` started on the login
// node): the stages that measure hardware must measure the trial's own nodes, a run directory is
// one run's, the plan's budget is said and kept, and the run's lines say what happened.

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "core/process.h"
#include "support/daemon.h"
#include "support/slurm_cluster.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using cmax::test::SlurmCluster;

using cmax::test::cmax_run;
using cmax::test::read_json;
using cmax::test::slurp;

constexpr auto stage_of = cmax::test::campaign_stage;

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class RaterRun2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm test cluster here: " << *why;
    auto c = SlurmCluster::start_trial();
    ASSERT_TRUE(c) << c.error().message;
    cluster_ = std::move(*c);
    env_ = {"SLURM_CONF=" + cluster_->conf_path()};
  }

  // A plan of the named stages with the given args, as a user's --plan FILE.
  fs::path plan(const std::string& name, const json& stages) {
    const fs::path p = cluster_->dir() / (name + ".plan.json");
    std::ofstream(p) << json{{"schema", "cmax.plan/1"}, {"name", name}, {"stages", stages}}.dump(2);
    return p;
  }

  static json small_nccl(std::vector<std::string> extra = {}, std::string max_bytes = "64K", std::string iters = "2") {
    std::vector<std::string> args{"-e", max_bytes, "-n", iters, "-w", "1", "--no-network-variant", "--no-ring-variant",
                                  "--step-timeout-s", "60"};
    args.insert(args.end(), extra.begin(), extra.end());
    return {{"id", "nccl"}, {"kind", "nccl"}, {"budget_s", 300}, {"min_s", 20}, {"args", args}};
  }

  std::unique_ptr<SlurmCluster> cluster_;
  std::vector<std::string> env_;
};

}  // namespace

// Problem 1: outside an allocation the sweep ran `mpirun --host localhost:8` on the login node,
// labelled 2n/4n. Now its steps go through srun inside the trial's reservation, on its nodes, the
// dry run names them, and a node count the trial cannot give is dropped at plan time.
TEST_F(RaterRun2, NcclRunsThroughSrunOnTheTrialsNodesInsideItsReservation) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#else
  const fs::path dir = cluster_->dir() / "rating-nccl";
  auto dry = cmax_run({"run", "--plan", "standard", "--dry-run", "--out", dir.string()}, env_, 60s);
  ASSERT_EQ(dry.code, 0) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("--launcher srun --reservation train --host n1 --host n2 --host n3 --host n4"), std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("the trial's nodes n1,n2,n3,n4 (reservation train)"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("localhost"), std::string::npos) << dry.out;

  auto p = plan("nccl", json::array({small_nccl({"--node-counts", "1,2,8", "--tests", "all_reduce"})}));
  auto dry8 = cmax_run({"run", "--plan", p.string(), "--dry-run", "--out", dir.string()}, env_, 60s);
  EXPECT_NE(dry8.out.find("node count 8 dropped: 4 nodes are reachable"), std::string::npos) << dry8.out;

  auto r = cmax_run({"run", "--plan", p.string(), "--out", dir.string()}, env_, 300s);
  ASSERT_TRUE(fs::exists(dir / "nccl.json")) << r.out << r.err << slurp(dir / "logs" / "nccl.log");
  auto doc = read_json(dir / "nccl.json");
  EXPECT_EQ(doc["sweep"]["launcher"], "srun") << doc["sweep"].dump(2);
  EXPECT_EQ(doc["sweep"]["reservation"], "train");
  std::set<int> counts;
  bool one_node_measured = false;
  for (const auto& s : doc["sweep"]["steps"]) {
    counts.insert(s["nodes"].get<int>());
    const auto argv = s["argv"].get<std::vector<std::string>>();
    ASSERT_FALSE(argv.empty());
    EXPECT_EQ(fs::path(argv.front()).filename(), "srun") << s.dump();
    EXPECT_TRUE(contains(argv, "--reservation=train")) << s.dump();
    EXPECT_TRUE(contains(argv, s["nodes"] == 1 ? "n1" : "n1,n2")) << s.dump();
    if (s["nodes"] == 1 && !s.contains("error")) one_node_measured = true;
  }
  EXPECT_EQ(counts, (std::set<int>{1, 2})) << doc["sweep"].dump(2);
  EXPECT_TRUE(one_node_measured) << doc["sweep"].dump(2);
  // The ranks ran on the trial's node, as its Rank lines name it (Slurm's node name in a step).
  bool on_n1 = false;
  for (const auto& run : doc["runs"])
    for (const auto& h : run.value("hosts", json::array()))
      if (h == "n1") on_n1 = true;
  EXPECT_TRUE(on_n1) << doc["runs"].dump(2).substr(0, 3000);
#endif
}

// Problem 2: the active stage tested only the idle spares, and storage was skipped silently. Now a
// job inside the trial's reservation checks its nodes, another the spares, and storage is tested
// on the run directory's filesystem, which the plan says.
TEST_F(RaterRun2, ActiveChecksRunOnTheTrialsNodesAndTheSparesWithStorage) {
  const fs::path dir = cluster_->dir() / "rating-active";
  auto p = plan("active", json::array({{{"id", "active"},
                                        {"kind", "active"},
                                        {"budget_s", 240},
                                        {"min_s", 20},
                                        {"args", {"--checks", "storage,cpu", "--metadata-files", "50", "--seq-mib", "4",
                                                  "--fsync-count", "5", "--check-timeout-s", "60"}}}}));
  auto dry = cmax_run({"run", "--plan", p.string(), "--dry-run", "--out", dir.string()}, env_, 60s);
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("the trial's nodes n1,n2,n3,n4 (reservation train) and idle spares spare1,spare2"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("storage (" + (dir / "active").string() + ": the run directory's filesystem"),
            std::string::npos)
      << dry.out;

  auto r = cmax_run({"run", "--plan", p.string(), "--out", dir.string()}, env_, 300s);
  auto doc = read_json(dir / "check-active.json");
  ASSERT_TRUE(doc.is_object()) << r.out << r.err << slurp(dir / "logs" / "active.log");
  ASSERT_EQ(doc["jobs"].size(), 2u) << doc.dump(2).substr(0, 2000);
  std::set<std::string> reservations, nodes;
  for (const auto& j : doc["jobs"]) {
    reservations.insert(j["reservation"].get<std::string>());
    for (const auto& n : j["nodes"]) nodes.insert(n.get<std::string>());
  }
  EXPECT_EQ(reservations, (std::set<std::string>{"", "train"}));
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2", "n3", "n4", "spare1", "spare2"}));
  bool storage_on_n1 = false;
  for (const auto& res : doc["results"])
    if (res.value("category", "") == "storage" && res.value("target", "").rfind("n1:", 0) == 0) storage_on_n1 = true;
  EXPECT_TRUE(storage_on_n1) << doc["results"].dump(2).substr(0, 3000);
}

// Problem 3: `cmax run --resume DIR` while DIR's run was going started a second run into it.
TEST_F(RaterRun2, ASecondRunOnABusyRunDirectoryIsRefusedWithItsHolder) {
  const fs::path dir = cluster_->dir() / "rating-lock";
  auto p = plan("lock", json::array({{{"id", "active"},
                                      {"kind", "active"},
                                      {"budget_s", 120},
                                      {"args", {"--checks", "cpu", "--check-timeout-s", "30"}}}}));
  std::vector<std::string> argv{CMAX_BIN, "run", "--plan", p.string(), "--out", dir.string()};
  auto first = cmax::test::Daemon::start(argv, env_, cluster_->dir() / "first-run.log");
  ASSERT_TRUE(first) << first.error().message;
  // Until its first stage is running (campaign.json says so).
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    auto c = read_json(dir / "campaign.json");
    if (c.is_object() && c["stages"][0].value("status", "") == "running") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(read_json(dir / "campaign.json")["stages"][0].value("status", ""), "running");
  auto second = cmax_run({"run", "--resume", dir.string()}, env_, 30s);
  EXPECT_EQ(second.code, 3) << second.err;
  EXPECT_NE(second.err.find("is in use by another cmax run (pid " + std::to_string(first->pid())), std::string::npos)
      << second.err;
  auto third = cmax_run({"run", "--plan", p.string(), "--out", dir.string(), "--overwrite"}, env_, 30s);
  EXPECT_EQ(third.code, 3) << third.err;
  EXPECT_NE(third.err.find("is in use by another cmax run"), std::string::npos) << third.err;
  // The first run is untouched and ends on its own.
  const auto end = std::chrono::steady_clock::now() + 150s;
  while (first->running() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(first->running());
  EXPECT_EQ(read_json(dir / "campaign.json")["resumes"], 0);
  // Free again once it ended.
  auto after = cmax_run({"run", "--resume", dir.string()}, env_, 60s);
  EXPECT_NE(after.code, -2);
  EXPECT_EQ(after.err.find("in use by another cmax run"), std::string::npos) << after.err;
}

// Problem 7: a --budget too small made every stage "not fit" blaming the stages before it, said
// nothing of what the plan needs, took the directory, and --resume ignored a new --budget.
TEST_F(RaterRun2, ABudgetTooSmallSaysWhatThePlanNeedsAndResumeTakesANewBudget) {
  const fs::path dir = cluster_->dir() / "rating-budget";
  auto tiny = cmax_run({"run", "--plan", "standard", "--budget", "10s", "--out", dir.string()}, env_, 60s);
  EXPECT_EQ(tiny.code, 3) << tiny.err;
  EXPECT_NE(tiny.err.find("--budget 10 s holds no stage: the plan needs"), std::string::npos) << tiny.err;
  EXPECT_NE(tiny.err.find("(about 5 min"), std::string::npos) << tiny.err;
  EXPECT_FALSE(fs::exists(dir / "campaign.json")) << "the directory stays free for the next try";

  // Audit fits, the sweep does not; then --resume with a larger budget runs the sweep.
  auto p = plan("budget", json::array({{{"id", "scan"}, {"kind", "scan"}, {"budget_s", 60}, {"min_s", 10}},
                                       {{"id", "sla"}, {"kind", "sla"}, {"budget_s", 60}, {"min_s", 30}}}));
  auto fit = cmax_run({"run", "--plan", p.string(), "--budget", "20s", "--out", dir.string()}, env_, 120s);
  auto c = read_json(dir / "campaign.json");
  ASSERT_TRUE(c.is_object()) << fit.err;
  const json* sla = stage_of(c, "sla");
  ASSERT_TRUE(sla);
  // sla is skipped anyway (no contract): only stages that can run count, so scan gets the budget.
  EXPECT_EQ(stage_of(c, "scan")->value("status", ""), "done") << fit.err;
  EXPECT_EQ(stage_of(c, "scan")->value("budget_s", 0), 20);
  auto resumed = cmax_run({"run", "--resume", dir.string(), "--budget", "10m"}, env_, 120s);
  c = read_json(dir / "campaign.json");
  EXPECT_EQ(c["facts"]["budget_s"], 600) << resumed.err;

  auto p2 = plan("budget2", json::array({{{"id", "scan"}, {"kind", "scan"}, {"budget_s", 60}, {"min_s", 10}},
                                        {{"id", "scan2"}, {"kind", "scan"}, {"budget_s", 60}, {"min_s", 30}}}));
  const fs::path dir2 = cluster_->dir() / "rating-budget2";
  auto part = cmax_run({"run", "--plan", p2.string(), "--budget", "20s", "--out", dir2.string()}, env_, 120s);
  c = read_json(dir2 / "campaign.json");
  ASSERT_TRUE(c.is_object()) << part.err;
  EXPECT_EQ(stage_of(c, "scan2")->value("status", ""), "skipped");
  EXPECT_NE(stage_of(c, "scan2")->value("reason", "").find("need 40 s at least"), std::string::npos)
      << stage_of(c, "scan2")->dump();
  EXPECT_NE(stage_of(c, "scan2")->value("todo", "").find("--budget 40 s or more"), std::string::npos);
  auto more = cmax_run({"run", "--resume", dir2.string(), "--budget", "10m"}, env_, 120s);
  c = read_json(dir2 / "campaign.json");
  EXPECT_EQ(stage_of(c, "scan2")->value("status", ""), "done") << more.err;
  EXPECT_EQ(stage_of(c, "scan")->value("attempts", 0), 1) << "a finished stage is not run again";
  EXPECT_NE(more.err.find("scan2 ("), std::string::npos) << more.err;
}

// Problem 9: every exit 3 was printed as "findings", the last line was the report's path, the
// CPU-fabric label ignored --stage-arg, and a resumed sweep measured its finished steps again.
TEST_F(RaterRun2, StageLinesSayWhatHappenedAndAResumedSweepKeepsItsFinishedSteps) {
  const fs::path dir = cluster_->dir() / "rating-lines";
  // An endpoint nobody listens on: the endpoint stage exits 3 (environment).
  auto p = plan("lines", json::array({{{"id", "endpoint"}, {"kind", "endpoint"}, {"budget_s", 60}}}));
  auto r = cmax_run({"run", "--plan", p.string(), "--endpoint", "http://127.0.0.1:9/v1", "--out", dir.string()}, env_, 120s);
  auto c = read_json(dir / "campaign.json");
  ASSERT_TRUE(c.is_object()) << r.err;
  const json* ep = stage_of(c, "endpoint");
  ASSERT_TRUE(ep);
  EXPECT_EQ(ep->value("exit_code", 0), 3) << ep->dump(2);
  EXPECT_EQ(r.err.find("findings"), std::string::npos) << r.err;
  EXPECT_NE(ep->value("error", "").find("exit 3 (usage or environment)"), std::string::npos) << ep->dump(2);
  EXPECT_EQ(ep->value("error", "").find("report"), std::string::npos) << ep->dump(2);
  EXPECT_NE(ep->value("last_line", "").find("127.0.0.1:9"), std::string::npos) << ep->dump(2);

#ifdef CMAX_COLLBENCH_BIN
  auto dry = cmax_run({"run", "--plan", "standard", "--stage-arg", "nccl=--max-bytes=8M", "--dry-run", "--out",
                       (cluster_->dir() / "rating-dry").string()},
                      env_, 60s);
  EXPECT_NE(dry.out.find("CPU fabric: to 8M, 2 ranks a node"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("to 64 MiB"), std::string::npos) << dry.out;

  // A sweep interrupted after its first step: --resume keeps that step and records the time spent.
  const fs::path sdir = cluster_->dir() / "rating-sweep";
  // Steps of a few seconds each, so that the interrupt lands inside the sweep.
  auto sp = plan("sweep", json::array({small_nccl({"--node-counts", "1", "--tests",
                                                   "all_reduce,all_gather,reduce_scatter,alltoall,sendrecv"},
                                                  "32M", "20")}));
  // As Ctrl-C at a terminal: SIGINT to cmax run's process group.
  cmax::core::ProcessSpec spec{{CMAX_BIN, "run", "--plan", sp.string(), "--out", sdir.string()}, 300s, 1u << 20, env_};
  auto child = cmax::core::Child::spawn(spec);
  ASSERT_TRUE(child) << child.error().message;
  auto drop = [](std::string_view) {};
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < until &&
         slurp(sdir / "logs" / "nccl.log").find("[1/5] all_reduce-1n-golden: ") == std::string::npos) {
    child->pump(50ms, drop, drop);
    if (child->wait_exit(0ms)) break;
  }
  ASSERT_NE(slurp(sdir / "logs" / "nccl.log").find("[1/5] all_reduce-1n-golden: "), std::string::npos)
      << slurp(sdir / "logs" / "nccl.log");
  child->signal_group(SIGINT);
  std::optional<int> status;
  const auto t_int = std::chrono::steady_clock::now();
  while (!status && std::chrono::steady_clock::now() - t_int < 60s) {
    if (!child->pump(100ms, drop, drop)) std::this_thread::sleep_for(20ms);
    status = child->wait_exit(0ms);
  }
  ASSERT_TRUE(status) << "cmax run did not end within 60 s of SIGINT";
  auto before = read_json(sdir / "campaign.json");
  ASSERT_EQ(stage_of(before, "nccl")->value("status", ""), "interrupted") << before.dump(2);
  auto resumed = cmax_run({"run", "--resume", sdir.string()}, env_, 300s);
  auto after = read_json(sdir / "campaign.json");
  const json* st = stage_of(after, "nccl");
  ASSERT_TRUE(st);
  EXPECT_GT(st->value("interrupted_s", 0.0), 0.0) << st->dump(2);
  EXPECT_EQ(st->value("attempts", 0), 2);
  auto nccl = read_json(sdir / "nccl.json");
  EXPECT_GE(nccl.value("kept_steps", 0), 1) << nccl["sweep"].dump(2).substr(0, 2000) << resumed.err;
  EXPECT_NE(slurp(sdir / "logs" / "nccl.log").find("kept from the earlier sweep"), std::string::npos);
#endif
}

// Problem 8: a slurmd killed before the run left cmax's own aborted collect job COMPLETING on the
// healthy spare too, and the active stage then failed with "no idle node" and no cause. Now the
// trial's nodes are still checked, and the spares' note names each busy node's state and the job
// still completing.
TEST_F(RaterRun2, ADeadSlurmdLeavesTheActiveStageSayingWhyTheSparesAreBusy) {
  ASSERT_TRUE(cluster_->stop_slurmd("spare1"));
  const fs::path dir = cluster_->dir() / "rating-dead";
  auto p = plan("dead", json::array({{{"id", "audit"}, {"kind", "audit"}, {"budget_s", 120}, {"min_s", 10}},
                                     {{"id", "active"},
                                      {"kind", "active"},
                                      {"budget_s", 180},
                                      {"args", {"--checks", "cpu", "--check-timeout-s", "30"}}}}));
  auto r = cmax_run({"run", "--plan", p.string(), "--node-timeout-s", "8", "--out", dir.string()}, env_, 300s);
  auto c = read_json(dir / "campaign.json");
  ASSERT_TRUE(c.is_object()) << r.err;
  const std::string log = slurp(dir / "logs" / "active.log");
  auto doc = read_json(dir / "check-active.json");
  ASSERT_TRUE(doc.is_object()) << log;
  std::set<std::string> checked;
  for (const auto& j : doc["jobs"])
    for (const auto& n : j["nodes"]) checked.insert(n.get<std::string>());
  EXPECT_TRUE(checked.count("n1") && checked.count("n4")) << "the trial's nodes are checked whatever the spares do\n" << log;
  if (!checked.count("spare2")) {
    // The spares' job was not submitted: the note says why, node by node.
    EXPECT_NE(log.find("not idle: "), std::string::npos) << log;
    EXPECT_NE(log.find("spare1 "), std::string::npos) << log;
  }
  EXPECT_FALSE(checked.count("spare1")) << "a node whose slurmd is dead is not idle";
}
