// Real nccl-tests and rccl-tests logs posted publicly (tests/golden/nccl/3NN_*, sources and the
// verdict each thread supports in SOURCES-3xx.md): every one parses, its peak is the file's, the
// sizes its thread names are found, the healthy ones have no finding, and what has nothing to judge
// is incomplete, never pass.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "nccl/analyze.h"
#include "nccl/parse.h"
#include "nccl/reference.h"

namespace cmax::nccl {
namespace {

namespace fs = std::filesystem;

std::string golden_text(const std::string& prefix) {
  const fs::path dir = fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  ADD_FAILURE() << "no golden file " << prefix;
  return {};
}

struct Case {
  std::string prefix;
  std::string collective;
  std::string verdict;
  double peak;                   ///< max busbw over both placements, as the file prints it
  std::vector<std::pair<std::string, std::uint64_t>> findings;  ///< kind, size; empty: none
  /// What the thread states and the log does not show, declared as `cmax nccl analyze --gpu
  /// --nodes --fabric` would: "" / 0 for none.
  std::string gpu = "";
  int nodes = 0;
  std::string fabric = "";
};

const std::vector<Case> kCases = {
    // GCP A3 (TCPX), 2 nodes: the in-place 1 GiB row is 51.9 against ~87 around it.
    {"301_", "all_reduce", "warn", 90.05, {{"placement_disagreement", 1u << 30}}},
    // A3 Mega, healthy: no NCCL INFO NET line, so no InfiniBand reference fails it.
    {"302_", "all_reduce", "pass", 338.82, {}},
    {"303_", "all_reduce", "pass", 315.91, {}},   // MI300X, rccl, 1 node
    {"305_", "all_reduce", "pass", 369.08, {}},   // MI355X, no nThread line, no footer
    {"307_", "all_reduce", "pass", 123.11, {}},   // GH200 Slingshot (CSCS docs), healthy
    // GH200 with the CXI hook disabled: 6 GB/s against 123; the small sizes are slower per
    // operation than larger ones.
    {"308_", "all_reduce", "fail", 6.07, {{"collapse", 512}, {"dip", 32u << 20}}},
    {"309_", "all_reduce", "pass", 22.88, {}},    // v2.18 header with unalign
    {"310_", "all_reduce", "pass", 78.33, {}},    // p4de EFA, srun-prefixed
    {"311_", "all_reduce", "pass", 437.89, {}},   // p5 EFA, MPI-prefixed, elided rows
    {"312_", "all_reduce", "pass", 483.35, {}},   // trailing spaces
    {"313_", "all_reduce", "pass", 369.86, {}},   // p5en, elided rows
    // rccl issue 1490: "All gather performance seems low": 70 ms an operation at 2 MiB.
    {"314_", "all_gather", "fail", 1.26, {{"collapse", 2u << 20}}},
    // nccl issue 1453: "[0]" tags inside rows; busbw collapses from 29.5 to 5.3 at 64 MiB.
    {"315_", "all_reduce", "fail", 29.50, {{"slow_first_size", 1u << 20}, {"collapse", 64u << 20}}},
    {"317_", "all_gather", "incomplete", 0.22, {}},   // old format, small sizes only
    {"319_", "all_reduce", "pass", 361.17, {}},       // MI300X AI-NIC RoCE, the tail only
    {"321_", "all_reduce", "incomplete", 6.90, {}},   // old format, cut before 1 MiB
    {"324_", "alltoall", "pass", 6.34, {}},           // rccl alltoall: in-place #wrong N/A
    {"325_", "alltoall", "incomplete", 2.31, {}},     // indented MPI tags, cut at 512 KiB
    {"326_", "all_gather", "pass", 7.32, {}},         // old all_gather: no redop column
    // nccl issue 1435 (GPU-pair asymmetry, not size): a linear-step all_gather, 16-112 MiB.
    {"320_", "all_gather", "pass", 144.59, {}},
    // rccl PR 2075: the tail of a broadcast, named only by "# Collective test concluded".
    {"323_", "broadcast", "pass", 7.18, {}},
    // rccl-tests --output_format json: one object a line (rccl-tests PR 93's sample, 1-4 KiB).
    {"328_", "all_reduce", "incomplete", 0.31, {}},
    // CoreWeave's GB200 NVL72 rack example: the paste keeps only "Rank 71" (device 3: 4 GPUs a
    // tray, 18 trays); rows from 512 MiB. Offered as an example; no fabric line, no reference.
    {"340_", "all_reduce", "pass", 846.82, {}},
    // Azure ND H200 v5, one 16 GiB size with -g 8: 480.1, above Azure's 431 bar.
    {"341_", "all_reduce", "pass", 480.26, {}},
    // reduce_scatter on 2 nodes, cut at 512 B (the index's cut): nothing to judge.
    {"342_", "unknown", "incomplete", 0.01, {}},
    // nccl-tests issue 319: the tail of a 2-node H100 run with 8x CX-7 400G (the thread's words),
    // flat at 44 GB/s; the maintainer: "up to ~396GB/s with the RING protocol".
    {"343_", "all_reduce", "fail", 44.41, {{"below_reference", 1u << 30}}, "NVIDIA H100 80GB HBM3", 2, "IB"},
    // The same tail with nothing declared: no GPU in the log, so no reference; its curve is clean.
    {"343_", "all_reduce", "pass", 44.41, {}},
};

// Pastes with a header and no rows: an error that says so, never an empty pass.
TEST(NcclFieldLogs, HeadersWithoutRowsAreAnErrorThatSaysSo) {
  for (const char* prefix : {"344_", "345_", "346_"}) {
    SCOPED_TRACE(prefix);
    auto parsed = parse_nccl_tests(golden_text(prefix));
    ASSERT_FALSE(parsed.has_value());
    EXPECT_NE(parsed.error().message.find("but no rows"), std::string::npos) << parsed.error().message;
  }
}

TEST(NcclFieldLogs, ElidedRanksGiveTheNodeCountFromTheLastRanksDevice) {
  auto parsed = parse_nccl_tests(golden_text("340_"));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->runs.front().ranks, 72);
  EXPECT_EQ(parsed->runs.front().nodes, 18);
}

TEST(NcclFieldLogs, EveryLogParsesAndIsJudgedAsItsThreadSays) {
  auto refs = builtin_references();
  ASSERT_TRUE(refs);
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.prefix);
    auto parsed = parse_nccl_tests(golden_text(c.prefix));
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_FALSE(parsed->runs.empty());
    cmax::nccl::Run run = parsed->runs.front();
    if (!c.gpu.empty()) run.gpu_model = c.gpu;
    if (c.nodes > 0) run.nodes = c.nodes;
    if (!c.fabric.empty()) run.fabric = c.fabric;
    EXPECT_EQ(collective_name(run.collective), c.collective);
    auto a = analyze_run(run, *refs);
    EXPECT_NEAR(a.peak_busbw_gbps, c.peak, 0.006);
    if (c.prefix == "328_") {
      EXPECT_EQ(run.ranks, 4);  // its "gpus"
    }
    std::string got;
    for (const auto& an : a.anomalies) got += fmt::format(" {}@{}", an.kind, an.size_bytes);
    EXPECT_EQ(a.verdict, c.verdict) << got;
    EXPECT_EQ(a.anomalies.size(), c.findings.size()) << got;
    for (const auto& [kind, size] : c.findings) {
      bool found = false;
      for (const auto& an : a.anomalies) found |= an.kind == kind && an.size_bytes == size;
      EXPECT_TRUE(found) << kind << " at " << size << " not found:" << got;
    }
  }
}

}  // namespace
}  // namespace cmax::nccl
