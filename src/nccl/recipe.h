#pragma once
// Checks the NCCL environment a sweep (or a training job) will run with against the golden recipe:
// what /etc/nccl.conf overrides, what the environment sets, and what the fabric needs. Pure: the
// caller reads the files and the environment; values in, findings out.
//
// Rules (docs/nccl.md):
//   - /etc/nccl.conf (or $NCCL_CONF_FILE) setting a variable that forces an algorithm, a protocol or
//     disables a transport (NCCL_ALGO, NCCL_PROTO, NCCL_IB_DISABLE, NCCL_P2P_DISABLE,
//     NCCL_SHM_DISABLE, NCCL_NET, NCCL_NVLS_ENABLE=0, NCCL_COLLNET_ENABLE, NCCL_CROSS_NIC,
//     NCCL_SOCKET_IFNAME) is a "warn": it silently overrides every job on the node; the environment
//     wins over it, so the finding says which one is in effect.
//   - RoCE (a port whose link_layer is Ethernet) without NCCL_IB_GID_INDEX set anywhere: "warn" (NCCL
//     picks a GID by itself since 2.21, but a wrong one on a RoCE v1/v2 mix halves bandwidth or hangs;
//     providers pin it, commonly 3).
//   - 8 nodes or more without NCCL_IB_QPS_PER_CONNECTION >= 2: "info" (on large Clos fabrics more
//     QPs spread flows over ECMP paths; nccl-tests issue 309: 8 nodes 320.7 -> 391 GB/s with
//     NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2).
//   - NCCL_DEBUG=TRACE in the environment or nccl.conf: "info" (slows every collective).
//   - A malformed nccl.conf line: "warn" naming the line.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::nccl {

struct RecipeFinding {
  std::string level;     ///< "warn" or "info"
  std::string variable;  ///< "NCCL_ALGO", or "" for a finding about a file line
  std::string message;   ///< what and what to do
};

struct RecipeInput {
  std::string nccl_conf;                    ///< the file's text; "" when absent
  std::string nccl_conf_path = "/etc/nccl.conf";
  std::map<std::string, std::string> env;   ///< NCCL_* variables of the run's environment
  std::vector<std::string> link_layers;     ///< each IB/RoCE port's link_layer: "InfiniBand", "Ethernet"
  int max_nodes = 1;                        ///< the largest node count the sweep runs
};

/// The NCCL_* settings of an nccl.conf text: "KEY=VALUE" lines, '#' comments, blank lines.
/// Malformed lines are returned in `bad` with their line numbers ("3: garbage").
std::map<std::string, std::string> parse_nccl_conf(std::string_view text, std::vector<std::string>* bad = nullptr);

/// The findings for `in`, in rule order; empty when the recipe holds.
std::vector<RecipeFinding> check_recipe(const RecipeInput& in);

}  // namespace cmax::nccl
