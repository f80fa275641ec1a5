#include "nccl/run.h"

#include <array>
#include <utility>

namespace cmax::nccl {
namespace {

constexpr std::array<std::pair<Collective, std::string_view>, 10> kNames = {{
    {Collective::kAllReduce, "all_reduce"},
    {Collective::kAllGather, "all_gather"},
    {Collective::kReduceScatter, "reduce_scatter"},
    {Collective::kAllToAll, "alltoall"},
    {Collective::kBroadcast, "broadcast"},
    {Collective::kReduce, "reduce"},
    {Collective::kSendRecv, "sendrecv"},
    {Collective::kGather, "gather"},
    {Collective::kScatter, "scatter"},
    {Collective::kHyperCube, "hypercube"},
}};

}  // namespace

std::string_view collective_name(Collective c) {
  for (const auto& [k, name] : kNames)
    if (k == c) return name;
  return "unknown";
}

Collective collective_from_name(std::string_view name) {
  // "./build/all_reduce_perf" and "all_reduce_perf_mpi" name the same test.
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (auto perf = name.find("_perf"); perf != std::string_view::npos) name = name.substr(0, perf);
  for (const auto& [k, n] : kNames)
    if (name == n) return k;
  if (name == "allreduce") return Collective::kAllReduce;
  if (name == "allgather") return Collective::kAllGather;
  if (name == "reducescatter") return Collective::kReduceScatter;
  if (name == "all_to_all" || name == "alltoallv") return Collective::kAllToAll;
  return Collective::kUnknown;
}

double busbw_factor(Collective c, int ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter: return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
    case Collective::kHyperCube: return 1.0;
    case Collective::kUnknown: return 0;
  }
  return 0;
}

}  // namespace cmax::nccl
