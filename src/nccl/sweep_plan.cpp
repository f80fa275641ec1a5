#include "nccl/sweep_plan.h"

#include <algorithm>
#include <charconv>
#include <limits>

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
    if (!o.hosts.empty()) {
      std::string w;
      for (int i = 0; i < nodes; ++i) w += fmt::format("{}{}", i ? "," : "", o.hosts[static_cast<std::size_t>(i)]);
      a.insert(a.end(), {"-w", w});
    }
    if (!o.reservation.empty()) a.push_back("--reservation=" + o.reservation);
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

std::optional<std::uint64_t> parse_size_bytes(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end == text.data()) return std::nullopt;
  std::string_view rest(end, static_cast<std::size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (rest.size() == 1) {
    switch (rest[0]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: return std::nullopt;
    }
  } else if (!rest.empty()) {
    return std::nullopt;
  }
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

std::uint64_t HostMemoryPlan::largest_fitting() const {
  if (ranks_here <= 0) return 0;
  const std::uint64_t per = budget_bytes / (2 * static_cast<std::uint64_t>(ranks_here));
  if (per < 1024) return 0;
  std::uint64_t p = 1024;
  while (p * 2 <= per) p *= 2;
  return p;
}

HostMemoryPlan plan_host_memory(const SweepOptions& o, std::uint64_t max_bytes, std::uint64_t available_bytes) {
  HostMemoryPlan m;
  int most_nodes = 1;
  for (int n : o.node_counts) most_nodes = std::max(most_nodes, n);
  const bool all_here = o.launcher == Launcher::kMpirun && o.hosts.empty();
  m.ranks_here = (all_here ? most_nodes : 1) * o.ranks_per_node;
  m.max_bytes = max_bytes;
  const auto ranks = static_cast<std::uint64_t>(std::max(0, m.ranks_here));
  m.needed_bytes = max_bytes > std::numeric_limits<std::uint64_t>::max() / 2 / std::max<std::uint64_t>(1, ranks)
                       ? std::numeric_limits<std::uint64_t>::max()
                       : ranks * 2 * max_bytes;
  m.budget_bytes = available_bytes / 2;
  return m;
}

std::vector<SweepStep> plan_sweep(const SweepOptions& o) {
  std::vector<SweepStep> steps;
  for (int nodes : o.node_counts) {
    if (nodes < 1) continue;
    if (!o.hosts.empty() && nodes > static_cast<int>(o.hosts.size())) continue;
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
