#pragma once
// What busbw a platform should reach: a table of published peak bus bandwidths per GPU, collective
// and node count (data/nccl_reference.json, schema cmax.nccl-reference/1, embedded at build time),
// and the lookup that picks the entry a run is judged against. Pure: no I/O.
//
// Only numbers with a public source go into the table (docs CONTEXT, section NCCL): nccl-tests
// issue 309 for 8x400G H100 clusters, Azure's pass bars for ND H100 v5 and ND H200 v5.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "nccl/run.h"

namespace cmax::nccl {

/// One table entry. Either number may be absent but not both.
struct Reference {
  std::string gpu;     ///< matched as a whole word inside Run::gpu_model, case-insensitive: "H100"
  std::string fabric;  ///< "8x400G IB", "NVLink (intra-node)": its class (reference_fabric) must match the run's
  std::string collective;  ///< collective_name(): "all_reduce"
  int min_nodes = 1;       ///< inclusive node-count range the numbers hold for
  int max_nodes = 1;       ///< inclusive; kAnyNodes when the source gives no upper bound
  /// Which setup the numbers are for: "default" (NCCL's own choices), "ring" (NCCL_ALGO=Ring),
  /// "tuned" (see note), "azure" (Azure's acceptance bars: only for runs on Azure, asked by name).
  std::string variant = "default";
  std::optional<double> expected_busbw_gbps;  ///< the plateau a healthy platform reaches
  std::optional<double> pass_bar_gbps;        ///< a hard acceptance bar: below it fails
  std::string source;                         ///< "nccl-tests issue 309"
  std::string note;                           ///< "NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2"
};

/// max_nodes of an entry whose source names no upper bound.
inline constexpr int kAnyNodes = 1 << 20;

/// The table in `json` (schema cmax.nccl-reference/1). Errors name `origin`, the entry and the
/// field, and say what to change.
Result<std::vector<Reference>> parse_references(std::string_view json, std::string_view origin);

/// The NICs a node has in `r`'s fabric ("8x400G IB": 8); 0 when the text does not say.
int reference_nics(const Reference& r);

/// The built-in table (data/nccl_reference.json).
Result<std::vector<Reference>> builtin_references();

/// The entry `run` is judged against: same variant, same GPU (a whole word of gpu_model,
/// case-insensitive), same collective, node count inside the range; among several, an exact node
/// count beats a range, then the first in the table; a multi-node run whose log shows its NIC
/// count (Run::nics) matches only entries of that count or none stated. nullptr when the GPU or
/// the node count is unknown or nothing matches. The pointer points into `refs`.
const Reference* find_reference(const std::vector<Reference>& refs, const Run& run,
                                std::string_view variant = "default");

}  // namespace cmax::nccl
