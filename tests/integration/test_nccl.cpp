// cmax nccl sweep end to end: cmax-collbench (the MPI backend, Debian's Open MPI) run through real
// mpirun on this machine, and through real srun on the local Slurm test cluster, then parsed and
// analysed; and cmax nccl analyze on the real logs in tests/golden/nccl with a broken file beside
// them.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/slurm_cluster.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct Ran {
  int code = -1;
  json report;
  std::string out, err;
};

Ran cmax(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), CMAX_BIN);
  auto r = cmax::core::run_process({args, 240s, 16u << 20, env});
  Ran ran;
  EXPECT_TRUE(r) << r.error().message;
  if (!r) return ran;
  ran.code = r->exit_code;
  ran.out = r->out;
  ran.err = r->err;
  ran.report = json::parse(r->out, nullptr, false);
  return ran;
}

fs::path scratch(const std::string& name) {
  auto d = fs::temp_directory_path() / fmt::format("cmax-nccl-{}-{}", name, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const std::vector<std::string> kCollectives = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"};

// Every step ran, every log parsed to one run of the right collective and rank count, and the
// charts and report landed in the run directory.
void expect_complete_sweep(const Ran& r, const fs::path& dir, int ranks) {
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  EXPECT_EQ(r.report["schema"], "cmax.nccl/1");
  const auto& steps = r.report["sweep"]["steps"];
  ASSERT_EQ(steps.size(), kCollectives.size()) << r.report.dump(2);
  for (const auto& s : steps) EXPECT_FALSE(s.contains("error")) << s.dump(2) << r.err;
  const auto& runs = r.report["runs"];
  ASSERT_EQ(runs.size(), kCollectives.size()) << r.report.dump(2);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i]["collective"], kCollectives[i]);
    EXPECT_EQ(runs[i]["ranks"], ranks);
    EXPECT_FALSE(runs[i]["ranks_inferred"].get<bool>());
    EXPECT_GT(runs[i]["rows"].get<int>(), 10);
    EXPECT_TRUE(runs[i]["complete"].get<bool>());
    EXPECT_GT(runs[i]["peak_busbw_gbps"].get<double>(), 0.0);
    // The benchmark's own average and the analysis' agree: the parser read every row.
    EXPECT_NEAR(runs[i]["avg_busbw_gbps"].get<double>(), runs[i]["avg_busbw_reported"].get<double>(),
                0.02 * runs[i]["avg_busbw_reported"].get<double>() + 0.01);
    ASSERT_TRUE(runs[i]["chart"].is_string());
    EXPECT_TRUE(fs::exists(runs[i]["chart"].get<std::string>()));
  }
  EXPECT_TRUE(fs::exists(dir / "nccl.json"));
  EXPECT_TRUE(fs::exists(dir / "all_reduce-1n-golden.log"));
}

TEST(NcclSweep, CollbenchThroughMpirunIsParsedAndAnalysed) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#else
  if (!cmax::test::find_system_program("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  const auto dir = scratch("mpirun");
  auto r = cmax({"nccl", "sweep", "--collbench", CMAX_COLLBENCH_BIN, "--launcher", "mpirun", "--node-counts", "1",
                 "--ranks-per-node", "4", "-b", "8", "-e", "4M", "-n", "3", "-w", "1", "--out", dir.string(), "--json",
                 "--launcher-arg=--mca", "--launcher-arg=btl", "--launcher-arg=self,vader"});
  expect_complete_sweep(r, dir, 4);
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.err;  // a CPU curve may well have dips: that is a finding
  fs::remove_all(dir);
#endif
}

// Issue 25: a "2-node" step whose ranks all ran on this one host says so, and is judged as one node.
TEST(NcclSweep, AStepThatRanOnOneHostSaysWhereItsRanksRan) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#else
  if (!cmax::test::find_system_program("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  const auto dir = scratch("onehost");
  auto r = cmax({"nccl", "sweep", "--collbench", CMAX_COLLBENCH_BIN, "--launcher", "mpirun", "--node-counts", "1,2",
                 "--ranks-per-node", "2", "-b", "8", "-e", "64K", "-n", "2", "-w", "1", "--tests", "all_reduce", "--out",
                 dir.string(), "--json", "--launcher-arg=--mca", "--launcher-arg=btl", "--launcher-arg=self,vader"});
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  int two_node_steps = 0;
  for (const auto& s : r.report["sweep"]["steps"]) {
    if (s.value("nodes", 0) != 2 || s.contains("error")) continue;
    ++two_node_steps;
    ASSERT_TRUE(s.contains("ran_on_hosts")) << s.dump();
    EXPECT_EQ(s["ran_on_hosts"].size(), 1u) << s.dump();
    EXPECT_NE(s.value("warning", std::string()).find("asked for 2 node(s), the ranks ran on 1 host(s)"), std::string::npos)
        << s.dump();
  }
  EXPECT_GT(two_node_steps, 0) << r.err;
  EXPECT_NE(r.err.find("the ranks ran on 1 host(s)"), std::string::npos) << r.err;
  fs::remove_all(dir);
#endif
}

TEST(NcclSweep, CollbenchThroughSrunOnTheLocalSlurmCluster) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#else
  if (auto why = cmax::test::SlurmCluster::unavailable()) GTEST_SKIP() << *why;
  if (!cmax::test::find_system_program("srun")) GTEST_SKIP() << "srun is not installed";
  auto c = cmax::test::SlurmCluster::start({.nodes = 2});
  ASSERT_TRUE(c) << c.error().message;
  const auto dir = scratch("srun");
  // One node: several slurmd on one host cannot share PMIx's per-step directory (docs/nccl.md).
  auto r = cmax({"nccl", "sweep", "--collbench", CMAX_COLLBENCH_BIN, "--launcher", "srun", "--node-counts", "1",
                 "--ranks-per-node", "2", "-b", "8", "-e", "1M", "-n", "3", "-w", "1", "--out", dir.string(), "--json"},
                {"SLURM_CONF=" + (*c)->conf_path()});
  expect_complete_sweep(r, dir, 2);
  fs::remove_all(dir);
#endif
}

TEST(NcclAnalyze, TheRealLogsAndABrokenFileBesideThem) {
  const fs::path golden = fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl";
  const auto dir = scratch("analyze");
  std::ofstream(dir / "garbage.txt") << "this is not an nccl-tests log\n\x01\x02\x03";
  std::vector<std::string> args{"nccl", "analyze", "--json", "--out", (dir / "out").string()};
  for (const auto& e : fs::directory_iterator(golden))
    if (e.path().extension() == ".txt") args.push_back(e.path().string());
  args.push_back((dir / "garbage.txt").string());
  auto r = cmax(args);
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  EXPECT_EQ(r.code, 1);  // the known dips are anomalies
  bool garbage_error = false;
  for (const auto& f : r.report["files"])
    if (f["file"].get<std::string>().ends_with("garbage.txt")) garbage_error = f.contains("error");
  EXPECT_TRUE(garbage_error) << r.report["files"].dump(2);
  EXPECT_NE(r.err.find("garbage.txt"), std::string::npos);
  auto flagged = [&](const std::string& file_prefix, std::uint64_t size) {
    for (const auto& run : r.report["runs"])
      if (fs::path(run["file"].get<std::string>()).filename().string().starts_with(file_prefix))
        for (const auto& a : run["anomalies"])
          if (a["size_bytes"].get<std::uint64_t>() == size) return true;
    return false;
  };
  EXPECT_TRUE(flagged("02_", 2097152)) << "2 MiB dip";
  EXPECT_TRUE(flagged("08_", 67108864)) << "64 MB cliff";
  EXPECT_TRUE(flagged("11_", 134217728)) << "128 MB dip";
  for (const auto& run : r.report["runs"]) {
    const auto name = fs::path(run["file"].get<std::string>()).filename().string();
    if (name.starts_with("01_") || name.starts_with("04_") || name.starts_with("18_")) {
      EXPECT_TRUE(run["anomalies"].empty()) << name << ": " << run["anomalies"].dump(2);
    }
    ASSERT_TRUE(run["chart"].is_string()) << name;
    EXPECT_TRUE(fs::exists(run["chart"].get<std::string>()));
  }
  EXPECT_TRUE(fs::exists(dir / "out" / "nccl.json"));
  fs::remove_all(dir);
}

}  // namespace
