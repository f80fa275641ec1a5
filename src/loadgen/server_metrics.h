#pragma once
// The engine's own prefix-cache accounting, read from its Prometheus /metrics (text exposition
// 0.0.4): vLLM's counters (`vllm:prefix_cache_queries_total` / `_hits_total`, in tokens; before
// v0.10 `vllm:gpu_prefix_cache_queries_total` / `_hits_total`) and SGLang's gauge
// (`sglang:cache_hit_rate`, also with the `sglang_` prefix). cmax endpoint bench reads it before
// and after each level and sets the server's hit rate beside the one the responses report. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace cmax::loadgen {

struct EngineCacheMetrics {
  /// vLLM: tokens looked up in the prefix cache and tokens found, summed over label sets.
  std::optional<double> queries, hits;
  std::string family;  ///< the names read: "vllm", "vllm (gpu_ names)", "sglang"; "" none
  /// SGLang: the engine's own hit rate gauge (its recent window, not a counter).
  std::optional<double> sglang_hit_rate;
  bool any() const { return queries.has_value() || sglang_hit_rate.has_value(); }
};

/// Reads the families above from a /metrics body; lines it cannot read are skipped.
EngineCacheMetrics parse_engine_metrics(std::string_view text);

}  // namespace cmax::loadgen
