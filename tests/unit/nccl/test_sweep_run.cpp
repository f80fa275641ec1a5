// The sweep's orchestration (nccl/sweep_run.h) with a fake launcher that answers each step with a
// canned nccl-tests log from tests/golden/nccl: what lands in the run directory, a failed step kept
// as a partial result, a stop request, --resume.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nccl/sweep_run.h"

using namespace cmax;
using namespace cmax::nccl;
namespace fs = std::filesystem;

namespace {

std::string golden(const std::string& name) {
  std::ifstream in(fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SweepStep step(int nodes, const std::string& prog) {
  const std::string name = fmt::format("all_reduce-{}n-golden", nodes);
  return {"all_reduce", nodes, "golden", {"mpirun", "-np", std::to_string(nodes * 8), prog}, {"NCCL_DEBUG=VERSION"},
          name + ".log"};
}

struct SweepRunTest : ::testing::Test {
  fs::path dir;
  SweepRunOptions o;
  std::vector<Reference> refs;
  std::vector<std::string> launched;
  std::map<std::string, std::string> out_of;  // program -> stdout

  void SetUp() override {
    dir = fs::path(::testing::TempDir()) / fmt::format("cmax-sweep-run-{}-{}", ::getpid(),
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    o.dir = dir.string();
    o.plan.node_counts = {2, 4};
    o.steps = {step(2, "two"), step(4, "four")};
    o.step_timeout = std::chrono::seconds(30);
    auto r = builtin_references();
    ASSERT_TRUE(r);
    refs = *r;
    out_of["two"] = golden("01_nccl-tests-309_h100_2node_16gpu_allreduce_default_nvlstree.txt");
    out_of["four"] = golden("02_nccl-tests-309_h100_4node_32gpu_allreduce_default.txt");
  }
  void TearDown() override { fs::remove_all(dir); }

  StepLauncher canned() {
    return [this](const core::ProcessSpec& spec) -> Result<StepOutcome> {
      launched.push_back(spec.argv.back());
      EXPECT_EQ(spec.timeout, std::chrono::seconds(30));
      EXPECT_EQ(spec.extra_env, std::vector<std::string>{"NCCL_DEBUG=VERSION"});
      StepOutcome s;
      s.result.exit_code = 0;
      s.result.out = out_of.at(spec.argv.back());
      s.result.wall = std::chrono::milliseconds(1500);
      return s;
    };
  }
  nlohmann::json report() { return nlohmann::json::parse(slurp(dir / "nccl.json")); }
};

}  // namespace

TEST_F(SweepRunTest, EveryStepsLogChartAndTheReportLandInTheRunDirectory) {
  std::vector<std::string> started, done;
  SweepHooks hooks;
  hooks.on_start = [&](std::size_t i, std::size_t n, const SweepStep& s) {
    started.push_back(fmt::format("{}/{} {}", i + 1, n, s.log_name));
  };
  hooks.on_done = [&](std::size_t, std::size_t, const SweepStepRecord& r) {
    done.push_back(fmt::format("{} {:.1f} {}", r.step, r.wall_s, r.error.empty() ? "ok" : r.error));
  };
  const auto r = run_sweep(o, refs, canned(), hooks);
  EXPECT_EQ(launched, (std::vector<std::string>{"two", "four"}));
  EXPECT_EQ(started, (std::vector<std::string>{"1/2 all_reduce-2n-golden.log", "2/2 all_reduce-4n-golden.log"}));
  EXPECT_EQ(done, (std::vector<std::string>{"all_reduce-2n-golden 1.5 ok", "all_reduce-4n-golden 1.5 ok"}));
  EXPECT_FALSE(r.interrupted);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].label, "all_reduce-2n-golden");
  EXPECT_EQ(r.runs[1].run.nodes, 4);
  for (const char* f : {"all_reduce-2n-golden.log", "all_reduce-4n-golden.log", "all_reduce-2n-golden.svg",
                        "all_reduce-4n-golden.svg", "nccl.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "all_reduce-2n-golden.log.stderr")) << "nothing on stderr, no file";
  EXPECT_EQ(slurp(dir / "all_reduce-4n-golden.log"), out_of["four"]);
  EXPECT_EQ(slurp(dir / "nccl.json"), r.report + "\n");
  const auto j = report();
  EXPECT_EQ(j["schema"], "cmax.nccl/1");
  EXPECT_EQ(j["exit_code"], r.exit_code);
  EXPECT_EQ(j["run_dir"], o.dir);
  EXPECT_EQ(j["sweep"]["launcher"], "mpirun");
  ASSERT_EQ(j["sweep"]["steps"].size(), 2u);
  EXPECT_EQ(j["sweep"]["steps"][1]["argv"], o.steps[1].argv);
  EXPECT_EQ(j["sweep"]["steps"][1]["exit_code"], 0);
  EXPECT_DOUBLE_EQ(j["sweep"]["steps"][1]["wall_s"].get<double>(), 1.5);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["step"], "all_reduce-2n-golden");
  EXPECT_EQ(j["kept_steps"], 0);
}

TEST_F(SweepRunTest, AFailedLaunchAndAFailedStepAreKeptAsAPartialResult) {
  o.steps.push_back(step(8, "missing"));
  auto inner = canned();
  std::vector<std::string> done;
  SweepHooks hooks;
  hooks.on_done = [&](std::size_t, std::size_t, const SweepStepRecord& r) { done.push_back(r.step); };
  auto launch = [&](const core::ProcessSpec& spec) -> Result<StepOutcome> {
    if (spec.argv.back() == "missing") return fail("spawn mpirun: No such file or directory");
    if (spec.argv.back() == "four") {
      StepOutcome s;
      s.result.exit_code = 1;
      s.result.err = "  ORTE was unable to reach node n4\n";
      return s;
    }
    return inner(spec);
  };
  const auto r = run_sweep(o, refs, launch, hooks);
  EXPECT_EQ(r.exit_code, kSweepPartial);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].error, "");
  EXPECT_EQ(r.steps[1].error, "exited 1; mpirun said: ORTE was unable to reach node n4");
  EXPECT_EQ(r.steps[2].error, "spawn mpirun: No such file or directory");
  EXPECT_EQ(done, (std::vector<std::string>{"all_reduce-2n-golden", "all_reduce-4n-golden"}))
      << "a launch that never started is recorded, not reported as done";
  EXPECT_EQ(r.runs.size(), 1u) << "the measured step is still analysed";
  EXPECT_EQ(slurp(dir / "all_reduce-4n-golden.log.stderr"), "  ORTE was unable to reach node n4\n");
  EXPECT_FALSE(fs::exists(dir / "all_reduce-8n-golden.log"));
  const auto j = report();
  EXPECT_EQ(j["exit_code"], kSweepPartial);
  EXPECT_EQ(j["sweep"]["steps"][2]["error"], "spawn mpirun: No such file or directory");
  EXPECT_FALSE(j["sweep"]["steps"][2].contains("exit_code"));
}

TEST_F(SweepRunTest, AStepOnFewerHostsThanAskedIsJudgedOnTheHostsItRanOn) {
  out_of["four"] = out_of["two"];  // a "4-node" step whose ranks ran on 2 hosts
  std::vector<std::string> warnings;
  SweepHooks hooks;
  hooks.on_warning = [&](const std::string& s, const std::string& w) { warnings.push_back(s + ": " + w); };
  const auto r = run_sweep(o, refs, canned(), hooks);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("all_reduce-4n-golden: asked for 4 node(s), the ranks ran on 2 host(s)"), std::string::npos)
      << warnings[0];
  EXPECT_EQ(report()["sweep"]["steps"][1]["ran_on_hosts"].size(), 2u);
}

TEST_F(SweepRunTest, AStopRequestEndsTheSweepAndWhatWasMeasuredIsWritten) {
  std::atomic<bool> stop{false};
  o.stop = &stop;
  auto inner = canned();
  auto launch = [&](const core::ProcessSpec& spec) {
    stop.store(true);  // Ctrl-C while the first step runs; it still finishes
    return inner(spec);
  };
  const auto r = run_sweep(o, refs, launch);
  EXPECT_EQ(launched, std::vector<std::string>{"two"});
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.exit_code, kSweepPartial);
  EXPECT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(report()["interrupted"], true);
}

TEST_F(SweepRunTest, ResumeKeepsTheStepsAnEarlierSweepFinished) {
  o.resume = true;
  auto inner = canned();
  bool fail_four = true;
  auto first = [&](const core::ProcessSpec& spec) -> Result<StepOutcome> {
    if (spec.argv.back() == "four" && fail_four) {
      StepOutcome s;
      s.result.timed_out = true;
      return s;
    }
    return inner(spec);
  };
  auto r1 = run_sweep(o, refs, first);
  EXPECT_NE(r1.steps[1].error.find("timed out after 30 s"), std::string::npos) << r1.steps[1].error;
  launched.clear();
  fail_four = false;
  std::vector<std::string> kept;
  SweepHooks hooks;
  hooks.on_done = [&](std::size_t, std::size_t, const SweepStepRecord& r) {
    if (r.kept) kept.push_back(r.step);
  };
  auto r2 = run_sweep(o, refs, first, hooks);
  EXPECT_EQ(launched, std::vector<std::string>{"four"}) << "only the step that did not finish runs again";
  EXPECT_EQ(kept, std::vector<std::string>{"all_reduce-2n-golden"});
  EXPECT_EQ(r2.kept, 1u);
  EXPECT_EQ(r2.runs.size(), 2u);
  const auto j = report();
  EXPECT_EQ(j["kept_steps"], 1);
  EXPECT_EQ(j["sweep"]["steps"][0]["kept"], true);
}
