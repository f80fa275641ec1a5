#pragma once
// What `cmax endpoint serve` answers a router or a metrics scraper about its own state: the
// endpoints real inference engines serve beside the OpenAI API, so that a real router (SGLang's
// sglang-router and its successor smg, vllm-router) and Prometheus-reading schedulers (llm-d) can
// treat it as one of theirs. Pure: each body is a function of a snapshot of the fleet.
//
//   GET /server_info, /get_server_info   SGLang's server info (served_model_name, tp/dp size,
//                                        max_running_requests, max_total_num_tokens, page_size);
//                                        no model_path or tokenizer_path, so a router does not try to
//                                        download a tokenizer
//   GET /model_info, /get_model_info     SGLang's model info (is_generation, model_type)
//   GET /get_load                        SGLang's per-rank load list: [{dp_rank, num_reqs,
//                                        num_waiting_reqs, num_tokens}] (sglang-router's power_of_two
//                                        sums num_tokens)
//   GET /v1/loads                        SGLang's load snapshot as smg reads it (WorkerLoadResponse:
//                                        dp_rank_count, loads[] with num_running_reqs,
//                                        num_waiting_reqs, num_used_tokens, token_usage, ...)
//   GET /metrics                         Prometheus text: vLLM's families (num_requests_running/
//                                        waiting, kv_cache_usage_perc and the older
//                                        gpu_cache_usage_perc, prefix_cache_hits/queries_total and
//                                        the older gpu_prefix_cache_* names) and SGLang's
//                                        (num_running_reqs, num_queue_reqs, token_usage,
//                                        cache_hit_rate, cache_config_info)
//
// Each replica of the fleet is one data-parallel rank. A request counts as running while it holds a
// decode slot and as waiting while it queues for one (the model's max_concurrent).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmax::endpoint {

/// One replica (data-parallel rank) now.
struct RankLoad {
  int running = 0;                 ///< admitted and unfinished, decoding or queued for a slot
  std::size_t used_blocks = 0;     ///< prefix-cache blocks held
  std::size_t capacity_blocks = 0; ///< the cache's capacity in blocks
};

/// The fleet and its counters now.
struct WorkerSnapshot {
  std::string model;
  int block_tokens = 16;
  int max_concurrent = 64;  ///< decode slots per replica
  std::vector<RankLoad> ranks;
  std::uint64_t requests = 0;           ///< completion requests admitted since start
  std::uint64_t prompt_tokens = 0;      ///< prompt tokens of those (the prefix cache's queries)
  std::uint64_t cached_tokens = 0;      ///< of them, found in the cache (its hits)
  std::uint64_t completion_tokens = 0;  ///< tokens generated
  std::string version = "0.0.0";        ///< cmax's
};

std::string server_info_json(const WorkerSnapshot& s);
std::string model_info_json(const WorkerSnapshot& s);
/// SGLang's GET /get_load.
std::string get_load_json(const WorkerSnapshot& s);
/// SGLang's GET /v1/loads, as smg reads it. `timestamp` is RFC 3339.
std::string v1_loads_json(const WorkerSnapshot& s, const std::string& timestamp);
/// Prometheus text exposition (version 0.0.4) of both engines' families.
std::string metrics_text(const WorkerSnapshot& s);

}  // namespace cmax::endpoint
