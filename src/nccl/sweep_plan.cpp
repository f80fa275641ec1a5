#include "nccl/sweep_plan.h"

#include <fmt/format.h>

namespace cmax::nccl {
namespace {

std::vector<std::string> variant_env(const std::string& variant) {
  std::vector<std::string> env{"NCCL_DEBUG=VERSION"};
  if (variant == "network") env.insert(env.end(), {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"});
  if (variant == "ring") env.emplace_back("NCCL_ALGO=Ring");
  return env;
}

std::vector<std::string> program(const SweepOptions& o, const std::string& test) {
  std::vector<std::string> p;
  if (!o.tests_dir.empty()) {
    p.push_back(o.tests_dir + "/" + test + "_perf");
  } else {
    p = {o.collbench, "--op", test};
  }
  p.insert(p.end(), {"-b", o.min_bytes, "-e", o.max_bytes, "-f", o.step_factor, "-n", std::to_string(o.iters), "-w",
                     std::to_string(o.warmup), "-c", "1"});
  if (!o.tests_dir.empty()) p.insert(p.end(), {"-g", "1"});  // one GPU per rank
  return p;
}

std::vector<std::string> launch(const SweepOptions& o, int nodes, const std::vector<std::string>& env) {
  std::vector<std::string> a;
  const int ranks = nodes * o.ranks_per_node;
  if (o.launcher == Launcher::kSrun) {
    a = {o.srun, "-N", std::to_string(nodes), "--ntasks-per-node", std::to_string(o.ranks_per_node), "--mpi=pmix"};
  } else {
    a = {o.mpirun, "-np", std::to_string(ranks)};
    std::string hosts;
    for (int i = 0; i < nodes; ++i)
      hosts += fmt::format("{}{}:{}", i ? "," : "", o.hosts.empty() ? "localhost" : o.hosts[i], o.ranks_per_node);
    if (o.hosts.empty()) hosts = fmt::format("localhost:{}", ranks);
    a.insert(a.end(), {"--host", hosts});
    for (const auto& e : env) a.insert(a.end(), {"-x", e});
  }
  a.insert(a.end(), o.launcher_args.begin(), o.launcher_args.end());
  return a;
}

}  // namespace

std::vector<SweepStep> plan_sweep(const SweepOptions& o) {
  std::vector<SweepStep> steps;
  for (int nodes : o.node_counts) {
    if (nodes < 1) continue;
    if (o.launcher == Launcher::kMpirun && !o.hosts.empty() && nodes > static_cast<int>(o.hosts.size())) continue;
    for (const auto& test : o.tests) {
      std::vector<std::string> variants{"golden"};
      if (test == "all_reduce" && o.network_variant && nodes > 1) variants.emplace_back("network");
      if (test == "all_reduce" && o.ring_variant && nodes == 2) variants.emplace_back("ring");
      for (const auto& v : variants) {
        SweepStep s;
        s.test = test;
        s.nodes = nodes;
        s.variant = v;
        s.env = variant_env(v);
        s.argv = launch(o, nodes, s.env);
        auto p = program(o, test);
        s.argv.insert(s.argv.end(), p.begin(), p.end());
        s.log_name = fmt::format("{}-{}n-{}.log", test, nodes, v);
        steps.push_back(std::move(s));
      }
    }
  }
  return steps;
}

}  // namespace cmax::nccl
