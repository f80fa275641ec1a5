// What cmax-collbench's buffers take of one machine (nccl/sweep_plan.h): the sizes nccl-tests
// reads, and the plan that is cut to fit or refused.

#include <gtest/gtest.h>

#include "nccl/sweep_plan.h"

using namespace cmax::nccl;

TEST(SweepMemory, SizesAsNcclTestsReadsThem) {
  EXPECT_EQ(parse_size_bytes("8"), 8u);
  EXPECT_EQ(parse_size_bytes("64K"), 64u << 10);
  EXPECT_EQ(parse_size_bytes("512m"), 512u << 20);
  EXPECT_EQ(parse_size_bytes("8G"), 8ull << 30);
  EXPECT_EQ(parse_size_bytes("2T"), 2ull << 40);
  for (const char* bad : {"", "G", "8GB", "-1", "8 G", "99999999999999999999", "16777216T"})
    EXPECT_FALSE(parse_size_bytes(bad)) << bad;
}

TEST(SweepMemory, EveryRankOfTheLargestNodeCountOnOneMachine) {
  SweepOptions o;
  o.node_counts = {1, 2, 4};
  o.ranks_per_node = 8;
  // The rater's VM: 23 GiB available; the default -e 8G.
  const std::uint64_t avail = 23ull << 30;
  auto m = plan_host_memory(o, 8ull << 30, avail);
  EXPECT_EQ(m.ranks_here, 32) << "mpirun without hosts runs every rank here";
  EXPECT_EQ(m.needed_bytes, 32ull * 2 * (8ull << 30));
  EXPECT_FALSE(m.fits());
  EXPECT_EQ(m.largest_fitting(), 128u << 20) << "11.5 GiB / 64 buffers = 184 MiB: 128 MiB";
  // With hosts given, each machine holds one node's ranks.
  o.hosts = {"a", "b", "c", "d"};
  auto spread = plan_host_memory(o, 512u << 20, avail);
  EXPECT_EQ(spread.ranks_here, 8);
  EXPECT_TRUE(spread.fits());
  // Nothing fits a machine with no memory to spare.
  auto none = plan_host_memory(o, 1u << 20, 1024);
  EXPECT_EQ(none.largest_fitting(), 0u);
}

TEST(SweepPlan, SrunPlacesEachStepOnTheNamedNodesInsideTheReservation) {
  SweepOptions o;
  o.launcher = Launcher::kSrun;
  o.node_counts = {1, 2, 4, 8};
  o.tests = {"all_reduce"};
  o.collbench = "/opt/cmax-collbench";
  o.hosts = {"n1", "n2", "n3", "n4"};
  o.reservation = "train";
  o.network_variant = o.ring_variant = false;
  auto steps = plan_sweep(o);
  ASSERT_EQ(steps.size(), 3u) << "no 8-node step on 4 named nodes";
  auto has = [](const SweepStep& s, const std::string& w) { return std::find(s.argv.begin(), s.argv.end(), w) != s.argv.end(); };
  EXPECT_EQ(steps[0].argv.front(), "srun");
  EXPECT_TRUE(has(steps[0], "n1") && has(steps[0], "--reservation=train"));
  EXPECT_TRUE(has(steps[1], "n1,n2"));
  EXPECT_TRUE(has(steps[2], "n1,n2,n3,n4"));
  // Without hosts srun places the step itself, as before.
  o.hosts.clear();
  o.reservation.clear();
  steps = plan_sweep(o);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_FALSE(has(steps[0], "n1"));
  EXPECT_FALSE(has(steps[0], "--reservation=train"));
}
