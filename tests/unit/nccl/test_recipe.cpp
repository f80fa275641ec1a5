// check_recipe and plan_sweep: the NCCL environment checks and the sweep's commands.

#include <gtest/gtest.h>

#include <algorithm>

#include "nccl/recipe.h"
#include "nccl/sweep_plan.h"

using cmax::nccl::check_recipe;
using cmax::nccl::Launcher;
using cmax::nccl::parse_nccl_conf;
using cmax::nccl::plan_sweep;
using cmax::nccl::RecipeInput;
using cmax::nccl::SweepOptions;

namespace {

bool has(const std::vector<cmax::nccl::RecipeFinding>& f, const std::string& var, const std::string& level) {
  return std::any_of(f.begin(), f.end(), [&](const auto& x) { return x.variable == var && x.level == level; });
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST(NcclRecipe, ACleanNodeHasNoFindings) {
  RecipeInput in;
  in.link_layers = {"InfiniBand", "InfiniBand"};
  in.max_nodes = 4;
  EXPECT_TRUE(check_recipe(in).empty());
}

TEST(NcclRecipe, NcclConfOverridesAreWarnedAndTheEnvironmentWins) {
  RecipeInput in;
  in.nccl_conf = "# site defaults\nNCCL_ALGO=Ring\nNCCL_IB_HCA=mlx5\nNCCL_NVLS_ENABLE=1\nNCCL_PROTO = Simple\ngarbage line\n";
  in.env = {{"NCCL_PROTO", "LL128"}};
  auto f = check_recipe(in);
  EXPECT_TRUE(has(f, "NCCL_ALGO", "warn"));
  EXPECT_TRUE(has(f, "NCCL_PROTO", "warn"));
  EXPECT_FALSE(has(f, "NCCL_IB_HCA", "warn"));       // choosing NICs is not an override of NCCL's choice
  EXPECT_FALSE(has(f, "NCCL_NVLS_ENABLE", "warn"));  // enabling is the default
  auto proto = std::find_if(f.begin(), f.end(), [](const auto& x) { return x.variable == "NCCL_PROTO"; });
  ASSERT_NE(proto, f.end());
  EXPECT_NE(proto->message.find("overridden in this run's environment by NCCL_PROTO=LL128"), std::string::npos);
  EXPECT_TRUE(std::any_of(f.begin(), f.end(), [](const auto& x) { return x.message.find("line 6") != std::string::npos; }));
  std::vector<std::string> bad;
  auto conf = parse_nccl_conf(in.nccl_conf, &bad);
  EXPECT_EQ(conf.at("NCCL_PROTO"), "Simple");
  EXPECT_EQ(bad.size(), 1u);
}

TEST(NcclRecipe, RoceWithoutAGidIndexAndLargeClosWithoutQps) {
  RecipeInput in;
  in.link_layers = {"Ethernet"};
  in.max_nodes = 16;
  auto f = check_recipe(in);
  EXPECT_TRUE(has(f, "NCCL_IB_GID_INDEX", "warn"));
  EXPECT_TRUE(has(f, "NCCL_IB_QPS_PER_CONNECTION", "info"));
  in.env = {{"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_QPS_PER_CONNECTION", "2"}};
  EXPECT_TRUE(check_recipe(in).empty());
  in.env = {};
  in.nccl_conf = "NCCL_IB_GID_INDEX=3\nNCCL_IB_QPS_PER_CONNECTION=1\n";
  f = check_recipe(in);
  EXPECT_FALSE(has(f, "NCCL_IB_GID_INDEX", "warn"));
  EXPECT_TRUE(has(f, "NCCL_IB_QPS_PER_CONNECTION", "info"));
}

TEST(NcclSweepPlan, MpirunStepsWithVariantsAndEnvironmentForwarded) {
  SweepOptions o;
  o.collbench = "/usr/bin/cmax-collbench";
  o.node_counts = {1, 2, 4};
  o.ranks_per_node = 2;
  o.hosts = {"a", "b"};
  auto steps = plan_sweep(o);
  // 4 nodes are skipped (two hosts); 1 node: five collectives; 2 nodes: five + network + ring.
  ASSERT_EQ(steps.size(), 12u);
  EXPECT_EQ(steps[0].log_name, "all_reduce-1n-golden.log");
  const auto& ring = *std::find_if(steps.begin(), steps.end(), [](const auto& s) { return s.variant == "ring"; });
  EXPECT_EQ(ring.nodes, 2);
  EXPECT_TRUE(contains(ring.env, "NCCL_ALGO=Ring"));
  EXPECT_TRUE(contains(ring.argv, "NCCL_ALGO=Ring"));  // forwarded with -x
  EXPECT_TRUE(contains(ring.argv, "a:2,b:2"));
  EXPECT_TRUE(contains(ring.argv, "4"));  // -np
  EXPECT_EQ(ring.argv[ring.argv.size() - 15], "/usr/bin/cmax-collbench");
  const auto& net = *std::find_if(steps.begin(), steps.end(), [](const auto& s) { return s.variant == "network"; });
  EXPECT_TRUE(contains(net.env, "NCCL_P2P_DISABLE=1"));
}

TEST(NcclSweepPlan, SrunWithNcclTestsBinaries) {
  SweepOptions o;
  o.launcher = Launcher::kSrun;
  o.tests_dir = "/opt/nccl-tests/build";
  o.node_counts = {2};
  o.tests = {"all_gather"};
  o.launcher_args = {"--partition", "gpu"};
  auto steps = plan_sweep(o);
  ASSERT_EQ(steps.size(), 1u);
  const auto& a = steps[0].argv;
  EXPECT_EQ(a[0], "srun");
  EXPECT_TRUE(contains(a, "--mpi=pmix"));
  EXPECT_TRUE(contains(a, "/opt/nccl-tests/build/all_gather_perf"));
  EXPECT_TRUE(contains(a, "gpu"));
  EXPECT_FALSE(contains(a, "-x"));  // srun passes the environment itself
  EXPECT_EQ(a.back(), "1");         // -g 1
}
