#include "nccl/recipe.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::nccl {
namespace {

// Variables that, set for a whole node in nccl.conf, force every job off NCCL's own choice.
constexpr std::array<std::string_view, 11> kOverrides = {
    "NCCL_ALGO",       "NCCL_PROTO",       "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE",   "NCCL_SHM_DISABLE", "NCCL_NET",
    "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_CROSS_NIC", "NCCL_SOCKET_IFNAME", "NCCL_P2P_LEVEL"};

bool is_name(std::string_view k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

std::map<std::string, std::string> parse_nccl_conf(std::string_view text, std::vector<std::string>* bad) {
  std::map<std::string, std::string> out;
  std::size_t n = 0;
  for (auto raw : core::split_lines(text)) {
    ++n;
    auto line = core::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    auto eq = line.find('=');
    auto key = eq == std::string_view::npos ? line : core::trim(line.substr(0, eq));
    if (eq == std::string_view::npos || !is_name(key)) {
      if (bad) bad->push_back(fmt::format("{}: {}", n, core::clip(line, 80)));
      continue;
    }
    out[std::string(key)] = std::string(core::trim(line.substr(eq + 1)));
  }
  return out;
}

std::vector<RecipeFinding> check_recipe(const RecipeInput& in) {
  std::vector<RecipeFinding> out;
  std::vector<std::string> bad;
  const auto conf = parse_nccl_conf(in.nccl_conf, &bad);
  for (const auto& b : bad)
    out.push_back({"warn", "", fmt::format("{} line {}: not KEY=VALUE; NCCL ignores it, so it does not do what its author meant",
                                           in.nccl_conf_path, b)});
  auto set_anywhere = [&](const std::string& k) -> const std::string* {
    if (auto e = in.env.find(k); e != in.env.end()) return &e->second;
    if (auto c = conf.find(k); c != conf.end()) return &c->second;
    return nullptr;
  };
  for (const auto& [k, v] : conf) {
    if (std::find(kOverrides.begin(), kOverrides.end(), k) == kOverrides.end()) continue;
    if (k == "NCCL_NVLS_ENABLE" && v != "0") continue;
    auto env = in.env.find(k);
    out.push_back({"warn", k,
                   env == in.env.end()
                       ? fmt::format("{} sets {}={} for every job on the node: NCCL no longer picks its own; remove it "
                                     "unless a measured reason is written next to it",
                                     in.nccl_conf_path, k, v)
                       : fmt::format("{} sets {}={}, overridden in this run's environment by {}={}; jobs without it get "
                                     "the file's value",
                                     in.nccl_conf_path, k, v, k, env->second)});
  }
  const bool roce = std::any_of(in.link_layers.begin(), in.link_layers.end(),
                                [](const std::string& l) { return l == "Ethernet"; });
  if (roce && !set_anywhere("NCCL_IB_GID_INDEX"))
    out.push_back({"warn", "NCCL_IB_GID_INDEX",
                   "RoCE ports (link_layer Ethernet) and no NCCL_IB_GID_INDEX in the environment or nccl.conf: pin "
                   "the RoCE v2 GID (commonly 3; `show_gids` lists them), or a wrong pick halves bandwidth or hangs"});
  if (in.max_nodes >= 8) {
    const std::string* qps = set_anywhere("NCCL_IB_QPS_PER_CONNECTION");
    if (qps == nullptr || core::parse_uint(*qps).value_or(1) < 2)
      out.push_back({"info", "NCCL_IB_QPS_PER_CONNECTION",
                     fmt::format("{} nodes and NCCL_IB_QPS_PER_CONNECTION {}: on a large Clos fabric 2 or more QPs "
                                 "spread flows over ECMP paths (8 nodes: 320.7 -> 391 GB/s all_reduce with "
                                 "NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2, nccl-tests issue 309)",
                                 in.max_nodes, qps ? "= " + *qps : std::string("unset"))});
  }
  if (const std::string* dbg = set_anywhere("NCCL_DEBUG"); dbg && (*dbg == "TRACE"))
    out.push_back({"info", "NCCL_DEBUG", "NCCL_DEBUG=TRACE slows every collective; measure with WARN or VERSION"});
  return out;
}

}  // namespace cmax::nccl
