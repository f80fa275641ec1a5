// parse_nccl_tests: every golden log in tests/golden/nccl/ parsed to exact facts, then the variants
// the goldens do not carry (MPI prefixes, N/A, JSON, timestamps), bad input and truncation.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "nccl/parse.h"

namespace fs = std::filesystem;
using cmax::nccl::Collective;
using cmax::nccl::parse_nccl_tests;
using cmax::nccl::ParsedLog;
using cmax::nccl::Row;
using NcclRun = cmax::nccl::Run;  // "Run" inside a TEST body names testing::Test::Run

namespace {

std::string golden(const std::string& prefix) {
  const fs::path dir = fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  ADD_FAILURE() << "no golden file " << prefix << "* in " << dir;
  return {};
}

ParsedLog parse_ok(const std::string& text) {
  auto r = parse_nccl_tests(text);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : ParsedLog{};
}

const Row* row_at(const NcclRun& run, std::uint64_t size) {
  for (const auto& r : run.rows)
    if (r.size_bytes == size) return &r;
  ADD_FAILURE() << "no row of size " << size;
  return nullptr;
}

bool has_warning(const std::vector<std::string>& w, const std::string& needle) {
  return std::any_of(w.begin(), w.end(),
                     [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

bool same_row(const Row& a, const Row& b) {
  auto same = [](const cmax::nccl::Measure& x, const cmax::nccl::Measure& y) {
    return x.time_us == y.time_us && x.algbw_gbps == y.algbw_gbps && x.busbw_gbps == y.busbw_gbps &&
           x.wrong == y.wrong;
  };
  return a.size_bytes == b.size_bytes && a.count == b.count && a.type == b.type &&
         a.redop == b.redop && a.root == b.root && same(a.out_of_place, b.out_of_place) &&
         a.in_place.has_value() == b.in_place.has_value() &&
         (!a.in_place || same(*a.in_place, *b.in_place)) && a.line == b.line;
}

const char* kH100 = "NVIDIA H100 80GB HBM3";

}  // namespace

TEST(NcclParseGolden, File01TwoNodesSixteenRanks) {
  auto log = parse_ok(golden("01_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.ranks, 16);
  EXPECT_FALSE(r.ranks_inferred);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"bm-h100-01", "bm-h100-02"}));
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.rank_info.at(9).pci, "0000:3b:00");
  EXPECT_EQ(r.rank_info.at(9).device, 1);
  EXPECT_EQ(r.nccl_version, "2.26.2+cuda12.8");
  EXPECT_EQ(r.collective, Collective::kAllReduce);  // no test line: sum and 2(n-1)/n
  EXPECT_EQ(r.test, "all_reduce_perf");
  EXPECT_EQ(r.header.rfind("# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184", 0), 0u);
  ASSERT_EQ(r.rows.size(), 32u);
  EXPECT_EQ(r.rows.front().size_bytes, 8u);
  EXPECT_EQ(r.rows.back().size_bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.busbw_gbps, 469.21);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.time_us, 68652);
  EXPECT_EQ(r.rows.front().root, -1);
  EXPECT_EQ(r.rows.front().out_of_place.wrong, 0.0);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.old_format);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 139.56);
  EXPECT_EQ(r.out_of_bounds, 0u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();  // every busbw checks out at 16 ranks
}

TEST(NcclParseGolden, File02FourNodesWithTheTwoMibDip) {
  auto log = parse_ok(golden("02_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.ranks, 32);
  EXPECT_EQ(r.nodes, 4);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"pt01", "spt01", "spt02", "pt02"}));
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.nccl_version, "2.26.2+cuda12.8");
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  EXPECT_EQ(r.first_line, 2u);  // "Run-1 Starting command" only marks the boundary
  ASSERT_EQ(r.rows.size(), 32u);
  EXPECT_EQ(r.rows.front().size_bytes, 8u);
  EXPECT_EQ(r.rows.back().size_bytes, 17179869184u);
  const Row* dip = row_at(r, 2097152);
  ASSERT_NE(dip, nullptr);
  EXPECT_DOUBLE_EQ(dip->out_of_place.busbw_gbps, 21.24);
  ASSERT_TRUE(dip->in_place.has_value());
  EXPECT_DOUBLE_EQ(dip->in_place->busbw_gbps, 30.74);
  EXPECT_DOUBLE_EQ(dip->out_of_place.algbw_gbps, 10.96);
  EXPECT_EQ(dip->line, 60u);
  const Row* big = row_at(r, 2147483648);  // >= 10000 us prints without decimals
  ASSERT_NE(big, nullptr);
  EXPECT_DOUBLE_EQ(big->out_of_place.time_us, 11508);
  EXPECT_DOUBLE_EQ(big->in_place->time_us, 11501);
  EXPECT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 107.51);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_TRUE(log.warnings.empty());
}

TEST(NcclParseGolden, File04TwoOfEightNodes) {
  auto log = parse_ok(golden("04_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"0666a154", "b749a9b0"}));
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.nccl_version, "");  // not printed in this log
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  ASSERT_EQ(r.rows.size(), 14u);
  EXPECT_EQ(r.rows.front().size_bytes, 1048576u);
  EXPECT_EQ(r.rows.back().size_bytes, 8589934592u);
  EXPECT_DOUBLE_EQ(r.rows.front().out_of_place.busbw_gbps, 21.08);
  EXPECT_DOUBLE_EQ(r.rows.back().in_place->busbw_gbps, 466.65);
  EXPECT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 276.999);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST(NcclParseGolden, File08OldFormatWithNcclInfoInsideTheTable) {
  auto log = parse_ok(golden("08_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_TRUE(r.old_format);
  EXPECT_EQ(r.rank_info.size(), 0u);
  EXPECT_EQ(r.ranks, 16);  // busbw/algbw = 1.875 = 2(n-1)/n
  EXPECT_TRUE(r.ranks_inferred);
  EXPECT_EQ(r.nodes, 0);
  EXPECT_TRUE(r.hosts.empty());
  EXPECT_EQ(r.gpu_model, "");
  EXPECT_EQ(r.nccl_version, "");
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  ASSERT_EQ(r.rows.size(), 6u);
  EXPECT_EQ(r.rows.front().size_bytes, 8388608u);
  EXPECT_EQ(r.rows.back().size_bytes, 268435456u);
  EXPECT_FALSE(r.rows.front().root.has_value());
  EXPECT_DOUBLE_EQ(r.rows.front().out_of_place.wrong.value_or(-1), 5e-07);
  const Row* cliff = row_at(r, 67108864);
  ASSERT_NE(cliff, nullptr);
  EXPECT_DOUBLE_EQ(cliff->out_of_place.busbw_gbps, 19.10);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.time_us, 11812);
  EXPECT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 25.6327);
  // The NCCL INFO line is skipped silently; 5e-07 errors are float rounding, not failures.
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST(NcclParseGolden, File11PartialStartsMidTable) {
  auto log = parse_ok(golden("11_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_FALSE(r.old_format);  // 13 fields: the root column is there
  EXPECT_EQ(r.ranks, 16);
  EXPECT_TRUE(r.ranks_inferred);
  EXPECT_EQ(r.nodes, 0);
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  EXPECT_EQ(r.header, "");
  ASSERT_EQ(r.rows.size(), 10u);
  EXPECT_EQ(r.rows.front().size_bytes, 1048576u);
  EXPECT_EQ(r.rows.back().size_bytes, 536870912u);
  EXPECT_EQ(r.rows.front().root, -1);
  EXPECT_DOUBLE_EQ(row_at(r, 134217728)->out_of_place.busbw_gbps, 227.14);
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.avg_busbw_reported.has_value());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "truncated: no footer after line 10");
}

TEST(NcclParseGolden, File14NewHeaderAlltoallOutOfPlaceOnly) {
  auto log = parse_ok(golden("14_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.tests_version, "2.17.8");
  EXPECT_EQ(r.test, "alltoall_perf");
  EXPECT_EQ(r.collective, Collective::kAllToAll);
  EXPECT_EQ(r.nccl_version, "2.28.3");  // from nccl-library=22803: no "NCCL version" line
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"Node1"}));
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.first_line, 1u);
  ASSERT_EQ(r.rows.size(), 1u);
  const Row& row = r.rows[0];
  EXPECT_EQ(row.size_bytes, 524288000u);
  EXPECT_EQ(row.count, 32768000u);
  EXPECT_EQ(row.redop, "none");
  EXPECT_EQ(row.root, -1);
  EXPECT_DOUBLE_EQ(row.out_of_place.time_us, 3245.27);
  EXPECT_DOUBLE_EQ(row.out_of_place.busbw_gbps, 121.17);
  EXPECT_FALSE(row.out_of_place.wrong.has_value());
  EXPECT_FALSE(row.in_place.has_value());
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(has_warning(r.warnings, "truncated: no footer after line 14"));
  EXPECT_EQ(r.warnings.size(), 1u);  // 161.55 x 3/4 = 121.16: within rounding
}

TEST(NcclParseGolden, File15OldFormatAllReduceThenBlankRedopAlltoall) {
  auto log = parse_ok(golden("15_"));
  ASSERT_EQ(log.runs.size(), 2u);
  const NcclRun& ar = log.runs[0];
  EXPECT_TRUE(ar.old_format);
  EXPECT_EQ(ar.collective, Collective::kAllReduce);
  // busbw/algbw = 1.970 at 2.2 GB/s fits 55 to 88 ranks at 2 decimals: not guessed.
  EXPECT_EQ(ar.ranks, 0);
  EXPECT_FALSE(ar.ranks_inferred);
  EXPECT_TRUE(has_warning(ar.warnings, "ranks not inferred"));
  ASSERT_EQ(ar.rows.size(), 2u);
  EXPECT_EQ(ar.rows.front().size_bytes, 268435456u);
  EXPECT_EQ(ar.rows.back().size_bytes, 536870912u);
  EXPECT_DOUBLE_EQ(ar.rows.front().out_of_place.time_us, 122131);
  EXPECT_DOUBLE_EQ(ar.rows.front().out_of_place.busbw_gbps, 4.33);
  EXPECT_TRUE(ar.complete);
  EXPECT_DOUBLE_EQ(ar.avg_busbw_reported.value_or(0), 4.32178);

  const NcclRun& a2a = log.runs[1];
  EXPECT_TRUE(a2a.old_format);
  EXPECT_EQ(a2a.collective, Collective::kAllToAll);  // blank redop, busbw < algbw
  EXPECT_EQ(a2a.test, "alltoall_perf");
  EXPECT_EQ(a2a.ranks, 0);  // no row reaches 1 GB/s
  ASSERT_EQ(a2a.rows.size(), 2u);
  EXPECT_EQ(a2a.rows[0].redop, "");
  EXPECT_EQ(a2a.rows[0].type, "float");
  EXPECT_EQ(a2a.rows[0].count, 1048576u);
  EXPECT_DOUBLE_EQ(a2a.rows[0].out_of_place.time_us, 520935);
  EXPECT_DOUBLE_EQ(a2a.rows[1].in_place->time_us, 1041299);
  EXPECT_DOUBLE_EQ(a2a.rows[0].in_place->wrong.value_or(-1), 1.0);
  EXPECT_TRUE(a2a.complete);
  EXPECT_DOUBLE_EQ(a2a.avg_busbw_reported.value_or(0), 0.507636);
  // The in-place error 1e+00 is far above float rounding: named for both sizes.
  EXPECT_TRUE(has_warning(a2a.warnings, "error 1 at size 268435456 (in-place)"));
  EXPECT_TRUE(has_warning(a2a.warnings, "error 1 at size 536870912 (in-place)"));
  EXPECT_FALSE(has_warning(a2a.warnings, "out-of-place"));
  EXPECT_EQ(a2a.first_line, 11u);  // its column header
  EXPECT_EQ(ar.first_line, 3u);
}

TEST(NcclParseGolden, File18SrunPrefixedWithoutFooter) {
  auto log = parse_ok(golden("18_"));
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  ASSERT_EQ(r.rows.size(), 32u);  // every "0: " line read
  EXPECT_EQ(r.rows.front().size_bytes, 8u);
  EXPECT_EQ(r.rows.back().size_bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.busbw_gbps, 487.09);
  EXPECT_DOUBLE_EQ(r.rows.back().in_place->busbw_gbps, 487.26);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place.time_us, 66132);
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  EXPECT_EQ(r.ranks, 16);  // 487.09 / 259.78 = 1.875
  EXPECT_TRUE(r.ranks_inferred);
  EXPECT_EQ(r.nodes, 0);
  EXPECT_FALSE(r.old_format);
  EXPECT_FALSE(r.complete);  // the sample stops before the footer
  EXPECT_FALSE(r.avg_busbw_reported.has_value());
  EXPECT_EQ(r.first_line, 1u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "truncated: no footer after line 34");
}

TEST(NcclParse, MpiTagOutputPrefixAndNcclInfoVersion) {
  const std::string text =
      "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n"
      "[1,0]<stdout>:#  Rank  0 Group  0 Pid  1 on nodeA device  0 [0000:04:00] NVIDIA H200\n"
      "[1,1]<stdout>:#  Rank  1 Group  0 Pid  2 on nodeB device  0 [0000:04:00] NVIDIA H200\n"
      "nodeA:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n"
      "[1,0]<stdout>:           8             2     float     sum      -1    10.00    2.00    2.00 "
      "     0    10.00    2.00    2.00      0\n"
      "[1,0]<stdout>:          16             4     float     sum      -1    10.00    4.00    4.00 "
      "     0    10.00    4.00    4.00    N/A\n"
      "[1,0]<stdout>:# Out of bounds values : 0 OK\n"
      "[1,0]<stdout>:# Avg bus bandwidth    : 3 \n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.gpu_model, "NVIDIA H200");
  EXPECT_EQ(r.nccl_version, "2.21.5+cuda12.4");
  EXPECT_EQ(r.header.rfind("# nThread 1", 0), 0u);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].in_place->wrong, std::nullopt);  // N/A
  EXPECT_EQ(r.rows[1].out_of_place.wrong, 0.0);
  EXPECT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 3);
  // Two ranks: all_reduce's factor is 1, so the collective can't be told from the rows.
  EXPECT_EQ(r.collective, Collective::kUnknown);
}

TEST(NcclParse, BareRankPrefixAndOldRankLineWithoutGroup) {
  const std::string text =
      "[0] #   Rank  0 Pid  4242 on v100a device  0 [0x1a] Tesla V100-SXM2-32GB\n"
      "[0] #   Rank  1 Pid  4243 on v100a device  1 [0x1b] Tesla V100-SXM2-32GB\n"
      "[0] #       size         count    type   redop     time   algbw   busbw  error     time   "
      "algbw   busbw  error\n"
      "[0]      1048576        262144   float     sum    100.0   10.49   10.49  5e-07    100.0   "
      "10.49   10.49  5e-07\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  ASSERT_EQ(r.rank_info.size(), 2u);
  EXPECT_EQ(r.rank_info[1].pci, "0x1b");
  EXPECT_EQ(r.rank_info[1].host, "v100a");
  EXPECT_EQ(r.rank_info[1].device, 1);
  EXPECT_EQ(r.gpu_model, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(r.nodes, 1);
  EXPECT_TRUE(r.old_format);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_FALSE(r.rows[0].root.has_value());
  EXPECT_FALSE(r.complete);
}

TEST(NcclParse, BusbwMismatchIsWarnedWithSizeAndBothValues) {
  const std::string text =
      "#  Rank  0 Group  0 Pid  1 on a device  0 [0000:04:00] GPU\n"
      "#  Rank  1 Group  0 Pid  2 on a device  1 [0000:05:00] GPU\n"
      "#  Rank  2 Group  0 Pid  3 on b device  0 [0000:04:00] GPU\n"
      "#  Rank  3 Group  0 Pid  4 on b device  1 [0000:05:00] GPU\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    100.0   10.00   15.00      0    "
      "100.0   10.00   17.00      0\n"
      "     2097152        524288     float     sum      -1    100.0    0.05    0.30      0    "
      "100.0   20.00   30.00      3\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 20\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.collective, Collective::kAllReduce);  // 1.5 = 2(4-1)/4
  EXPECT_EQ(r.ranks, 4);
  // 10.00 x 1.5 = 15.00 for out-of-place; in-place printed 17.00.
  EXPECT_TRUE(has_warning(
      r.warnings,
      "busbw mismatch at size 1048576 (in-place, line 6): printed 17.00 GB/s, but algbw "
      "10.00 x 1.5000 (all_reduce on 4 ranks) = 15.00"));
  EXPECT_FALSE(has_warning(r.warnings, "(out-of-place, line 6)"));
  EXPECT_FALSE(has_warning(r.warnings, "(out-of-place, line 7)"));  // algbw 0.05 is all rounding
  EXPECT_TRUE(has_warning(r.warnings, "3 wrong results at size 2097152 (in-place)"));
  EXPECT_EQ(r.warnings.size(), 2u);
}

TEST(NcclParse, TwoRunBlocksAndAHeaderThatCutsATable) {
  const std::string row =
      "     1048576        262144     float     sum      -1    100.0   10.00   18.75      0    "
      "100.0   10.00   18.75      0\n";
  const std::string cols =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  const std::string text =
      "Run-1 Starting command at x\n# nccl-tests version 2.17.8 nccl-headers=22803 "
      "nccl-library=22803\n"
      "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8\n" +
      cols + row + row +
      "# nccl-tests version 2.17.8 nccl-headers=22803 nccl-library=22803\n"
      "# Collective test starting: reduce_scatter_perf\n# nThread 1 nGpus 1 minBytes 9\n" +
      cols + row +
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 18.75 OK\n# Collective test "
      "concluded: x\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].collective, Collective::kAllReduce);
  EXPECT_EQ(log.runs[0].rows.size(), 2u);
  EXPECT_FALSE(log.runs[0].complete);
  EXPECT_TRUE(has_warning(log.runs[0].warnings, "truncated: no footer after line 7"));
  EXPECT_EQ(log.runs[0].ranks, 16);
  EXPECT_TRUE(log.runs[0].ranks_inferred);
  EXPECT_EQ(log.runs[1].test, "reduce_scatter_perf");
  EXPECT_EQ(log.runs[1].collective, Collective::kReduceScatter);
  EXPECT_EQ(log.runs[1].header, "# nThread 1 nGpus 1 minBytes 9");
  EXPECT_EQ(log.runs[1].first_line, 8u);
  EXPECT_TRUE(log.runs[1].complete);
  EXPECT_EQ(log.runs[1].rows.size(), 1u);
  EXPECT_FALSE(log.runs[1].ranks_inferred);  // 1.875 is no (n-1)/n
}

TEST(NcclParse, TimestampColumnsAndExponentTimes) {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong  timestamp\n"
      "  1073741824     268435456     float     sum      -1  1.2e+05    8.95   16.78      0  "
      "1.2e+05    8.95   16.78      0  2025-05-22 07:36:17\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_EQ(log.runs[0].rows.size(), 1u);
  EXPECT_DOUBLE_EQ(log.runs[0].rows[0].out_of_place.time_us, 1.2e5);
  EXPECT_DOUBLE_EQ(log.runs[0].rows[0].in_place->busbw_gbps, 16.78);
}

TEST(NcclParse, GarbageInsideATableIsSkippedWithBoundedWarnings) {
  std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  text +=
      "           8             2     float     sum      -1    10.00    0.00    0.00      0    "
      "10.00    0.00    0.00      0\n";
  for (int i = 0; i < 250; ++i)
    text += "segfault in the middle of the table " + std::to_string(i) + "\n";
  text += "host:1:1 [0] NCCL WARN NET/IB : Got completion with error\n";
  text +=
      "          16             4     float     sum      -1    10.00    0.00    0.00      0    "
      "10.00    0.00    0.00      0\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.rows.size(), 2u);
  // truncation + 100 kept + one summary line for the other 150
  ASSERT_EQ(r.warnings.size(), 102u);
  EXPECT_EQ(r.warnings.back(), "... and 150 more warnings");
  EXPECT_TRUE(has_warning(
      r.warnings, "line 3: skipped, not a table row: segfault in the middle of the table 0"));
  EXPECT_FALSE(has_warning(r.warnings, "NCCL WARN"));
}

TEST(NcclParse, AbsurdNumbersAreRejectedPerRow) {
  const std::string cols =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  const std::string text = cols +
                           "  9000000000000000000         2     float     sum      -1    10.00    "
                           "1.00    1.00      0    10.00    1.00    1.00      0\n"
                           "          -8             2     float     sum      -1    10.00    1.00  "
                           "  1.00      0    10.00    1.00    1.00      0\n"
                           "           8             2     float     sum      -1      nan    1.00  "
                           "  1.00      0    10.00    1.00    1.00      0\n"
                           "           8             2     float     sum      -1    10.00   -1.00  "
                           "  1.00      0    10.00    1.00    1.00      0\n"
                           "          16             4     float     sum      -1    10.00    1.00  "
                           "  1.00      0    10.00    1.00    1.00      0\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].size_bytes, 16u);
  EXPECT_TRUE(
      has_warning(r.warnings, "line 2: skipped, size 9000000000000000000 is above 1e18 bytes"));
  EXPECT_TRUE(has_warning(r.warnings, "line 3: skipped, size '-8' is not a byte count"));
  EXPECT_TRUE(has_warning(r.warnings, "line 4: skipped, out-of-place time nan"));
  EXPECT_TRUE(has_warning(r.warnings, "line 5: skipped, out-of-place algbw -1"));
}

TEST(NcclParse, NoTableIsAnErrorThatSaysWhy) {
  auto empty = parse_nccl_tests("");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().message, "no nccl-tests table found: the input is empty");

  auto prose = parse_nccl_tests("hello\nworld\n");
  ASSERT_FALSE(prose.has_value());
  EXPECT_EQ(prose.error().message.rfind("no nccl-tests table found: none of 2 lines", 0), 0u);

  auto header_only = parse_nccl_tests(
      "# nThread 1 nGpus 1 minBytes 8\n#  Rank  0 Group  0 Pid 1 on a device 0 [0000:01:00] GPU\n"
      "a:1:1 [0] NCCL WARN Cuda failure 'out of memory'\n");
  ASSERT_FALSE(header_only.has_value());
  EXPECT_NE(header_only.error().message.find("a header at line 1 but no rows"), std::string::npos);

  auto json_other = parse_nccl_tests(R"({"kind": "Node", "items": [1, 2]})");
  ASSERT_FALSE(json_other.has_value());
  EXPECT_NE(json_other.error().message.find("no \"results\" array"), std::string::npos);

  auto json_cut = parse_nccl_tests(R"({"version": 1, "results": [{"size": 8,)");
  ASSERT_FALSE(json_cut.has_value());
  EXPECT_NE(json_cut.error().message.find("does not parse"), std::string::npos);

  auto deep = parse_nccl_tests(std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_FALSE(deep.has_value());
  EXPECT_NE(deep.error().message.find("nested deeper"), std::string::npos);
}

TEST(NcclParse, RandomBytesNeverCrashAndNeverInventRows) {
  std::mt19937 rng(1234);
  std::size_t errors = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bytes(1 + rng() % 2000, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    auto r = parse_nccl_tests(bytes);
    if (!r) {
      ++errors;
      EXPECT_EQ(r.error().message.rfind("no nccl-tests table found", 0), 0u) << r.error().message;
    }
  }
  EXPECT_EQ(errors, 300u);
}

TEST(NcclParse, TruncationAtEveryByteYieldsAnErrorOrAPrefix) {
  for (const char* name : {"02_", "15_", "08_"}) {
    const std::string full_text = golden(name);
    auto full = parse_nccl_tests(full_text);
    ASSERT_TRUE(full.has_value());
    std::size_t ok = 0;
    for (std::size_t n = 0; n <= full_text.size(); ++n) {
      auto cut = parse_nccl_tests(std::string_view(full_text).substr(0, n));
      if (!cut) continue;
      ++ok;
      ASSERT_LE(cut->runs.size(), full->runs.size()) << name << " cut at " << n;
      for (std::size_t i = 0; i < cut->runs.size(); ++i) {
        const auto& a = cut->runs[i].rows;
        const auto& b = full->runs[i].rows;
        ASSERT_LE(a.size(), b.size()) << name << " cut at " << n;
        // Every row but the one the cut may have split equals the full parse's row.
        const bool last_run = i + 1 == cut->runs.size();
        for (std::size_t j = 0; j < a.size(); ++j) {
          if (last_run && j + 1 == a.size()) {
            EXPECT_EQ(a[j].line, b[j].line) << name << " cut at " << n;
            continue;
          }
          ASSERT_TRUE(same_row(a[j], b[j])) << name << " cut at " << n << " row " << j;
        }
        if (!last_run) {
          EXPECT_EQ(a.size(), b.size());
        }
      }
      if (n == full_text.size()) {
        EXPECT_EQ(cut->runs.back().rows.size(), full->runs.back().rows.size());
      }
    }
    EXPECT_GT(ok, full_text.size() / 2) << name;
  }
}

TEST(NcclParse, NcclTestsJsonDocument) {
  // The shape nccl-tests' -J writes (src/util.cu): devices under config, padded root strings.
  const std::string text = R"({"version":1,"start_time":"2025-05-22 07:36:17",
    "args":["./build/all_reduce_perf","-b","8","-J","out.json"],"env":[],"nccl_version":22602,
    "config":{"nthreads":1,"ngpus":1,"minimum_bytes":8,"maximum_bytes":16,"step_factor":2,
      "devices":[
        {"rank":0,"group":0,"pid":1,"hostname":"n1","device":0,"device_hex":"0000:04:00","device_info":"NVIDIA H100 80GB HBM3"},
        {"rank":1,"group":0,"pid":2,"hostname":"n1","device":1,"device_hex":"0000:05:00","device_info":"NVIDIA H100 80GB HBM3"},
        {"rank":2,"group":0,"pid":3,"hostname":"n2","device":0,"device_hex":"0000:04:00","device_info":"NVIDIA H100 80GB HBM3"},
        {"rank":3,"group":0,"pid":4,"hostname":"n2","device":1,"device_hex":"0000:05:00","device_info":"NVIDIA H100 80GB HBM3"}]},
    "results":[
      {"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
       "out_of_place":{"time":10.5,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0},
       "in_place":{"time":10.1,"alg_bw":0.0,"bus_bw":0.0,"nwrong":null},"actual_iterations":20,"experiment_name":""},
      {"size":1048576,"count":262144,"type":"float","redop":"sum","root":"    -1",
       "out_of_place":{"time":100.0,"alg_bw":10.49,"bus_bw":15.73,"nwrong":0.0},
       "in_place":{"time":100.0,"alg_bw":10.49,"bus_bw":19.0,"nwrong":2.0}},
      {"size":2097152,"count":524288,"type":"float","redop":"sum","root":"    -1",
       "out_of_place":{"time":"nan","alg_bw":10.49,"bus_bw":15.73,"nwrong":0.0}}],
    "out_of_bounds":{"count":0,"okay":"true"},
    "average_bus_bandwidth":{"bandwidth":7.86,"okay":"unchecked"},"errors":[],"end_time":"x"})";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  EXPECT_EQ(r.test, "all_reduce_perf");
  EXPECT_EQ(r.collective, Collective::kAllReduce);
  EXPECT_EQ(r.nccl_version, "2.26.2");
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.gpu_model, kH100);
  EXPECT_EQ(r.rank_info[2].pci, "0000:04:00");
  ASSERT_EQ(r.rows.size(), 2u);  // the "nan" time row is rejected
  EXPECT_EQ(r.rows[0].root, -1);
  EXPECT_EQ(r.rows[0].redop, "sum");
  EXPECT_EQ(r.rows[0].in_place->wrong, std::nullopt);
  EXPECT_DOUBLE_EQ(r.rows[1].out_of_place.busbw_gbps, 15.73);
  EXPECT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.avg_busbw_reported.value_or(0), 7.86);
  EXPECT_EQ(r.out_of_bounds, 0u);
  EXPECT_TRUE(has_warning(r.warnings, "run 1 row 3: skipped"));
  EXPECT_TRUE(has_warning(r.warnings, "busbw mismatch at size 1048576 (in-place"));
  EXPECT_TRUE(has_warning(r.warnings, "2 wrong results at size 1048576 (in-place)"));
  EXPECT_EQ(r.warnings.size(), 3u);
}

TEST(NcclParse, JsonFlatRowsArrayWithoutFooterIsTruncated) {
  const std::string text = R"([{"size_bytes":1048576,"count":262144,"type":"float","redop":"none",
      "oop_time":50,"oop_algbw":20.0,"oop_busbw":17.5,"oop_wrong":"N/A",
      "ip_time":50,"ip_algbw":20.0,"ip_busbw":17.5,"ip_wrong":0}])";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclRun& r = log.runs[0];
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_FALSE(r.rows[0].out_of_place.wrong.has_value());
  ASSERT_TRUE(r.rows[0].in_place.has_value());
  EXPECT_EQ(r.rows[0].in_place->wrong, 0.0);
  EXPECT_EQ(r.collective, Collective::kAllToAll);  // none, 0.875 = (8-1)/8
  EXPECT_EQ(r.ranks, 8);
  EXPECT_TRUE(r.ranks_inferred);
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(has_warning(r.warnings, "truncated"));
}

// Issue 25's launcher prefixes and pastes, applied to a real log (golden 01: 2 nodes, 16 ranks).
TEST(NcclParsePrefixes, PaddedSrunLabelsRayTagsAndElidedRanks) {
  const std::string text = golden("01_");
  const auto base = parse_ok(text);
  ASSERT_FALSE(base.runs.empty());
  const auto& want = base.runs.front();
  auto each_line = [&](auto&& f) {
    std::string out;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) out += f(line, n++) + "\n";
    return out;
  };
  // srun --label with 10 or more tasks pads the rank: " 0: ".
  auto padded = parse_ok(each_line([](const std::string& l, int) { return " 0: " + l; }));
  ASSERT_FALSE(padded.runs.empty()) << "no nccl-tests table found in a ' 0: ' labelled log";
  EXPECT_EQ(padded.runs.front().rows.size(), want.rows.size());
  EXPECT_EQ(padded.runs.front().ranks, want.ranks);
  // Ray/SkyPilot's worker tag before Open MPI's tag.
  auto ray = parse_ok(each_line([](const std::string& l, int) { return "(head, rank=0, pid=3808) [1,0]<stdout>:" + l; }));
  ASSERT_FALSE(ray.runs.empty());
  EXPECT_EQ(ray.runs.front().rows.size(), want.rows.size());
  EXPECT_EQ(ray.runs.front().ranks, want.ranks);
  // A paste that keeps Rank 0, Rank 1 and the last rank: the highest rank printed counts.
  auto elided = parse_ok(each_line([](const std::string& l, int) {
    auto at = l.find("#  Rank ");
    if (at == std::string::npos) return l;
    int rank = std::stoi(l.substr(at + 8));
    return rank <= 1 || rank == 15 ? l : (rank == 2 ? std::string("#  ......") : std::string());
  }));
  ASSERT_FALSE(elided.runs.empty());
  EXPECT_EQ(elided.runs.front().ranks, 16);
  EXPECT_TRUE(has_warning(elided.runs.front().warnings, "ranks elided")) << elided.runs.front().warnings.size();
}

TEST(NcclParsePrefixes, CollbenchBackendIsRead) {
  auto log = parse_ok("# cmax-collbench version 0.1.0 backend mpi (Open MPI 4.1.4)\n" + golden("01_"));
  ASSERT_FALSE(log.runs.empty());
  EXPECT_EQ(log.runs.front().backend, "mpi");
  EXPECT_EQ(parse_ok(golden("01_")).runs.front().backend, "");
}

TEST(NcclParsePrefixes, TheFabricComesFromNcclInfoNetLines) {
  const std::string table = golden("01_");
  auto with = [&](const std::string& info) { return parse_ok(info + "\n" + table).runs.front().fabric; };
  EXPECT_EQ(with("node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ibp26s0:10.0.0.1<0>"), "IB");
  EXPECT_EQ(with("node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"), "RoCE");
  EXPECT_EQ(with("node1:1234:1234 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"), "EFA");
  EXPECT_EQ(with("node1:1234:1234 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)"), "Slingshot");
  EXPECT_EQ(with("a3mega:99:99 [0] NCCL INFO NET/FasTrak : Using 8 NICs"), "TCPX");
  EXPECT_EQ(with("node1:1234:1234 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"), "Socket");
  EXPECT_EQ(parse_ok(table).runs.front().fabric, "");
  // The NICs the NET/IB line lists (the OOB interface after ';' is not one).
  auto nics = [&](const std::string& info) { return parse_ok(info + "\n" + table).runs.front().nics; };
  EXPECT_EQ(nics("node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ibp26s0:10.0.0.1<0>"), 2);
  EXPECT_EQ(nics("n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB "
                 "[4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [7]mlx5_7:1/IB [RO]; OOB eth0:10.0.0.1<0>"), 8);
  EXPECT_EQ(nics("node1:1234:1234 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"), 0);
  EXPECT_EQ(parse_ok(table).runs.front().nics, 0);
}

TEST(NcclParsePrefixes, ARowCutInsideItsInPlaceHalfKeepsItsOutOfPlaceHalf) {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "   134217728      33554432     float     sum      -1   1303.5  102.97  193.07      0   1301.2  103.15\n"
      "   268435456      67108864     float     sum      -1   2510.1  106.94  200.52      0   2509.8  106.96  200.55      0\n";
  auto log = parse_ok(text);
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_EQ(log.runs[0].rows.size(), 2u);
  EXPECT_DOUBLE_EQ(log.runs[0].rows[0].out_of_place.busbw_gbps, 193.07);
  EXPECT_FALSE(log.runs[0].rows[0].in_place.has_value());
  EXPECT_TRUE(has_warning(log.runs[0].warnings, "out-of-place half is read"));
}

// The two forms of the Rank lines' device column, from real logs in tests/golden/gpu_tools (each
// an excerpt that ends before its table, so one row of the table's own layout is appended here to
// make it a run): NCCL's newer "[0002:00:01]" (PCI domain:bus:device) and the older "[0x16]"
// (bus number only).
TEST(ParseNcclTests, DeviceColumnInBothForms) {
  auto excerpt = [](const std::string& name) {
    std::ifstream in(fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "gpu_tools" / name);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str() +
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
           "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
           "   134217728      33554432     float     sum      -1    981.2  136.79  239.38      0    979.1  137.08  239.89      0\n";
  };
  auto h100 = cmax::nccl::parse_nccl_tests(excerpt("nccl-tests_issue294-h100-busid-excerpt.txt"));
  ASSERT_TRUE(h100) << h100.error().message;
  ASSERT_EQ(h100->runs.size(), 1u);
  const auto& r = h100->runs[0];
  ASSERT_GE(r.rank_info.size(), 12u);
  EXPECT_EQ(r.rank_info[0].pci, "0002:00:01");
  EXPECT_EQ(r.rank_info[0].host, "h100-2");
  EXPECT_EQ(r.rank_info[0].gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.nodes, 2);

  auto rtx = cmax::nccl::parse_nccl_tests(excerpt("nccl-tests_nccl-1530-rtx4090-hexbus-excerpt.txt"));
  ASSERT_TRUE(rtx) << rtx.error().message;
  ASSERT_EQ(rtx->runs.size(), 1u);
  const auto& q = rtx->runs[0];
  ASSERT_EQ(q.rank_info.size(), 8u);
  EXPECT_EQ(q.rank_info[0].pci, "0x16");
  EXPECT_EQ(q.rank_info[0].device, 0);
  EXPECT_EQ(q.rank_info[7].device, 7);
  EXPECT_EQ(q.gpu_model, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(q.nodes, 1);
  EXPECT_EQ(q.ranks, 8);
}
