// cmax-collbench's formatter against lines of real nccl-tests output (tests/golden/nccl/02_*.txt,
// nccl-tests 2.13-2.16 layout), its nccl-tests conventions, and its check data.

#include <gtest/gtest.h>

#include <cstring>

#include "apps/cmax-collbench/data.h"
#include "apps/cmax-collbench/format.h"
#include "apps/cmax-collbench/ops.h"

namespace cmax::collbench {
namespace {

TEST(CollbenchFormat, ColumnHeaderIsNcclTestsByteForByte) {
  EXPECT_EQ(format_column_header(),
            "#\n"
            "#                                                              out-of-place           "
            "            in-place  "
            "        \n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong  "
            "   time   algbw   "
            "busbw #wrong\n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
            "   (us)  (GB/s)  "
            "(GB/s)       \n");
}

TEST(CollbenchFormat, RowsMatchNcclTests) {
  EXPECT_EQ(format_row({8, 2, "float", "sum", -1}, {83.42, 0.0001, 0.0002, 0},
                       {34.75, 0.0001, 0.0002, 0}),
            "           8             2     float     sum      -1    83.42    0.00    0.00      0  "
            "  34.75    0.00    "
            "0.00      0\n");
  EXPECT_EQ(format_row({256, 64, "float", "sum", -1}, {107.5, 0.0024, 0.0046, 0},
                       {35.82, 0.0071, 0.0134, 0}),
            "         256            64     float     sum      -1    107.5    0.00    0.00      0  "
            "  35.82    0.01    "
            "0.01      0\n");
  EXPECT_EQ(format_row({2147483648, 536870912, "float", "sum", -1}, {11508, 186.61, 361.56, 0},
                       {11501, 186.72, 361.77, 0}),
            "  2147483648     536870912     float     sum      -1    11508  186.61  361.56      0  "
            "  11501  186.72  "
            "361.77      0\n");
}

TEST(CollbenchFormat, WrongAndUncheckedColumns) {
  std::string row = format_row({64, 16, "int32", "none", 0}, {12.5, 0.01, 0.01, 3},
                               {12.5, 0.01, 0.01, std::nullopt});
  EXPECT_EQ(row,
            "          64            16     int32    none       0    12.50    0.01    0.01      3  "
            "  12.50    0.01    "
            "0.01    N/A\n");
}

TEST(CollbenchFormat, TimeColumnFollowsNcclTestsThresholds) {
  EXPECT_EQ(format_time_us(0.5), "   0.50");
  EXPECT_EQ(format_time_us(99.99), "  99.99");
  EXPECT_EQ(format_time_us(100.0), "  100.0");
  EXPECT_EQ(format_time_us(9999.94), " 9999.9");
  // Below the 10000 threshold "%7.1f" still rounds up, as in nccl-tests.
  EXPECT_EQ(format_time_us(9999.99), "10000.0");
  EXPECT_EQ(format_time_us(10000.0), "  10000");
  EXPECT_EQ(format_time_us(90986.4), "  90986");
  EXPECT_EQ(format_time_us(1041974.0), "1041974");
}

TEST(CollbenchFormat, FooterMatchesNcclTests) {
  EXPECT_EQ(format_footer(0, 107.51),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 107.51 \n#\n");
  EXPECT_EQ(format_footer(2, 0.507636),
            "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 0.507636 \n#\n");
}

TEST(CollbenchFormat, HeaderAndRankLines) {
  RunHeader h{"0.1.0", "mpi", "Open MPI 4.1.4", "all_reduce_perf", 8, 17179869184ull, 2, true, 5,
              20,      1};
  EXPECT_EQ(format_run_header(h),
            "# cmax-collbench version 0.1.0 backend mpi (Open MPI 4.1.4)\n"
            "# Collective test starting: all_reduce_perf\n"
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n"
            "#\n"
            "# Using devices\n");
  h.step = 1048576;
  h.step_is_factor = false;
  EXPECT_NE(format_run_header(h).find(" step: 1048576(bytes) "), std::string::npos);
  EXPECT_EQ(format_rank_line({0, 0, 13919, "pt01", 0, "0000:04:00", "NVIDIA H100 80GB HBM3"}),
            "#  Rank  0 Group  0 Pid  13919 on       pt01 device  0 [0000:04:00] NVIDIA H100 80GB "
            "HBM3\n");
  EXPECT_EQ(format_rank_line({12, 0, 2352196, "Node1", 3, "0000:00:00", "CPU (x86_64, 16 cores)"}),
            "#  Rank 12 Group  0 Pid 2352196 on      Node1 device  3 [0000:00:00] CPU (x86_64, 16 "
            "cores)\n");
}

TEST(CollbenchOps, CountsAndBandwidthAsNcclTests) {
  // 14_*.txt: alltoall, 4 ranks, 524288000 B of float at 3245.27 us -> count 32768000, 161.55 /
  // 121.17 GB/s.
  Counts a = coll_counts(Op::kAlltoall, 524288000 / 4, 4);
  EXPECT_EQ(a.param, 32768000u);
  EXPECT_EQ(row_size_bytes(a, 4), 524288000u);
  double alg = alg_bw_gbps(Op::kAlltoall, a.param, 4, 4, 3245.27e-6);
  EXPECT_NEAR(alg, 161.55, 0.005);
  EXPECT_NEAR(alg * bus_factor(Op::kAlltoall, 4), 121.17, 0.005);
  // 02_*.txt: all_reduce, 32 ranks, 1073741824 B at 5808.8 us -> 184.85 / 358.14 GB/s.
  Counts r = coll_counts(Op::kAllReduce, 268435456, 32);
  alg = alg_bw_gbps(Op::kAllReduce, r.param, 4, 32, 5808.8e-6);
  EXPECT_NEAR(alg, 184.85, 0.005);
  EXPECT_NEAR(alg * bus_factor(Op::kAllReduce, 32), 358.14, 0.005);
  // all_gather: size is the gathered whole, count the per-rank block; sizes round down to n blocks.
  Counts g = coll_counts(Op::kAllGather, 10, 4);
  EXPECT_EQ(g.send, 2u);
  EXPECT_EQ(g.recv, 8u);
  EXPECT_EQ(g.param, 2u);
  EXPECT_EQ(row_size_bytes(g, 4), 32u);
  Counts s = coll_counts(Op::kReduceScatter, 10, 4);
  EXPECT_EQ(s.send, 8u);
  EXPECT_EQ(s.recv, 2u);
  EXPECT_DOUBLE_EQ(alg_bw_gbps(Op::kReduceScatter, s.param, 4, 4, 1e-6), 32.0 / 1e3);
  EXPECT_DOUBLE_EQ(bus_factor(Op::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Op::kSendRecv, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Op::kReduceScatter, 8), 7.0 / 8);
}

TEST(CollbenchOps, NamesSizesAndSweeps) {
  EXPECT_EQ(parse_op("/opt/nccl-tests/build/all_reduce_perf"), Op::kAllReduce);
  EXPECT_EQ(parse_op("alltoall"), Op::kAlltoall);
  EXPECT_EQ(parse_op("reduce"), std::nullopt);
  EXPECT_EQ(parse_size("128M"), 134217728u);
  EXPECT_EQ(parse_size("8"), 8u);
  EXPECT_EQ(parse_size("1k"), 1024u);
  EXPECT_EQ(parse_size("1MB"), std::nullopt);
  EXPECT_EQ(parse_size(""), std::nullopt);
  EXPECT_EQ(sweep_sizes(8, 64, 0, 2), (std::vector<std::size_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(1024, 3000, 1024, 1), (std::vector<std::size_t>{1024, 2048}));
  EXPECT_EQ(redop_column(Op::kAlltoall, RedOp::kSum), "none");
  EXPECT_EQ(redop_column(Op::kSendRecv, RedOp::kMax), "max");
  EXPECT_EQ(root_column(Op::kBroadcast, 2), 2);
  EXPECT_EQ(root_column(Op::kAllReduce, 2), -1);
}

// The expected outputs agree with a direct simulation of each collective over every rank's input.
std::vector<float> as_floats(const std::vector<std::byte>& b) {
  std::vector<float> f(b.size() / sizeof(float));
  std::memcpy(f.data(), b.data(), b.size());
  return f;
}

TEST(CollbenchData, ExpectedMatchesSimulatedCollectives) {
  const int n = 3;
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAlltoall, Op::kSendRecv,
                Op::kBroadcast}) {
    Plan plan{op, Dtype::kFloat, RedOp::kSum, 1, coll_counts(op, 12, n)};
    std::vector<std::vector<float>> in;
    for (int r = 0; r < n; ++r) in.push_back(as_floats(make_input(plan, r, n)));
    const std::size_t p = plan.counts.param;
    for (int r = 0; r < n; ++r) {
      std::vector<float> want(plan.counts.recv);
      for (std::size_t i = 0; i < want.size(); ++i) {
        switch (op) {
          case Op::kAllReduce:
            for (int q = 0; q < n; ++q) want[i] += in[q][i];
            break;
          case Op::kAllGather:
            want[i] = in[i / p][i % p];
            break;
          case Op::kReduceScatter:
            for (int q = 0; q < n; ++q) want[i] += in[q][r * p + i];
            break;
          case Op::kAlltoall:
            want[i] = in[i / p][r * p + i % p];
            break;
          case Op::kSendRecv:
            want[i] = in[(r + n - 1) % n][i];
            break;
          case Op::kBroadcast:
            want[i] = in[1][i];
            break;
        }
      }
      EXPECT_EQ(as_floats(make_expected(plan, r, n)), want) << op_name(op) << " rank " << r;
    }
  }
}

TEST(CollbenchData, CountWrong) {
  Plan plan{Op::kAllReduce, Dtype::kInt32, RedOp::kMax, 0, coll_counts(Op::kAllReduce, 8, 2)};
  auto want = make_expected(plan, 0, 2);
  auto got = want;
  EXPECT_EQ(count_wrong(Dtype::kInt32, got, want), 0);
  got[0] = std::byte{0x7f};
  got[12] = std::byte{0x7f};
  EXPECT_EQ(count_wrong(Dtype::kInt32, got, want), 2);
  got.resize(got.size() - 4);  // the missing last element counts as wrong too
  EXPECT_EQ(count_wrong(Dtype::kInt32, got, want), 3);
}

}  // namespace
}  // namespace cmax::collbench
