#include "endpoint/worker_api.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;

int decoding(const WorkerSnapshot& s, const RankLoad& r) { return std::min(r.running, std::max(1, s.max_concurrent)); }
int waiting(const WorkerSnapshot& s, const RankLoad& r) { return std::max(0, r.running - std::max(1, s.max_concurrent)); }
std::uint64_t used_tokens(const WorkerSnapshot& s, const RankLoad& r) {
  return static_cast<std::uint64_t>(r.used_blocks) * static_cast<std::uint64_t>(std::max(1, s.block_tokens));
}
std::uint64_t total_tokens(const WorkerSnapshot& s, const RankLoad& r) {
  return static_cast<std::uint64_t>(r.capacity_blocks) * static_cast<std::uint64_t>(std::max(1, s.block_tokens));
}
double usage(const RankLoad& r) {
  return r.capacity_blocks == 0 ? 0.0 : static_cast<double>(r.used_blocks) / static_cast<double>(r.capacity_blocks);
}
double hit_rate(const WorkerSnapshot& s) {
  return s.prompt_tokens == 0 ? 0.0 : static_cast<double>(s.cached_tokens) / static_cast<double>(s.prompt_tokens);
}

// A label value escaped as the exposition format asks (backslash, quote, newline).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string server_info_json(const WorkerSnapshot& s) {
  std::uint64_t total = 0;
  for (const auto& r : s.ranks) total += total_tokens(s, r);
  return json{{"served_model_name", s.model},
              {"model_id", s.model},
              {"tp_size", 1},
              {"dp_size", std::max<std::size_t>(1, s.ranks.size())},
              {"pp_size", 1},
              {"max_running_requests", static_cast<std::size_t>(std::max(1, s.max_concurrent)) * std::max<std::size_t>(1, s.ranks.size())},
              {"max_total_num_tokens", total},
              {"page_size", s.block_tokens},
              {"is_embedding", false},
              {"version", "cmax-" + s.version},
              {"load_balance_method", "round_robin"},
              {"disaggregation_mode", "null"}}
      .dump();
}

std::string model_info_json(const WorkerSnapshot& s) {
  return json{{"model_type", "cmax-sim"},
              {"architectures", json::array({"CmaxSimForCausalLM"})},
              {"is_generation", true},
              {"has_image_understanding", false},
              {"has_audio_understanding", false},
              {"served_model_name", s.model}}
      .dump();
}

std::string get_load_json(const WorkerSnapshot& s) {
  json out = json::array();
  for (std::size_t i = 0; i < s.ranks.size(); ++i) {
    const auto& r = s.ranks[i];
    out.push_back({{"dp_rank", i}, {"num_reqs", r.running}, {"num_waiting_reqs", waiting(s, r)}, {"num_tokens", used_tokens(s, r)}});
  }
  return out.dump();
}

std::string v1_loads_json(const WorkerSnapshot& s, const std::string& timestamp) {
  json loads = json::array();
  for (std::size_t i = 0; i < s.ranks.size(); ++i) {
    const auto& r = s.ranks[i];
    loads.push_back({{"dp_rank", i},
                     {"num_running_reqs", decoding(s, r)},
                     {"num_waiting_reqs", waiting(s, r)},
                     {"num_waiting_uncached_tokens", 0},
                     {"num_total_reqs", r.running},
                     {"num_used_tokens", used_tokens(s, r)},
                     {"max_total_num_tokens", total_tokens(s, r)},
                     {"token_usage", usage(r)},
                     {"gen_throughput", 0.0},
                     {"cache_hit_rate", hit_rate(s)},
                     {"utilization", usage(r)},
                     {"max_running_requests", std::max(1, s.max_concurrent)}});
  }
  return json{{"timestamp", timestamp}, {"dp_rank_count", s.ranks.size()}, {"loads", loads}}.dump();
}

std::string metrics_text(const WorkerSnapshot& s) {
  const std::string m = label(s.model);
  std::string out;
  auto per_rank = [&](const char* name, const char* type, const char* help, const char* rank_label, auto value) {
    family(out, name, type, help);
    for (std::size_t i = 0; i < s.ranks.size(); ++i)
      out += fmt::format("{}{{{}=\"{}\",model_name=\"{}\"}} {}\n", name, rank_label, i, m, value(s.ranks[i]));
  };
  auto total = [&](const char* name, const char* type, const char* help, const std::string& labels, auto value) {
    family(out, name, type, help);
    out += fmt::format("{}{{{}}} {}\n", name, labels, value);
  };
  const std::string vllm_labels = fmt::format("engine=\"0\",model_name=\"{}\"", m);
  // vLLM (V1 engine names; the older gpu_* names beside them, as vLLM kept both for a release).
  per_rank("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", "engine",
           [&](const RankLoad& r) { return decoding(s, r); });
  per_rank("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", "engine",
           [&](const RankLoad& r) { return waiting(s, r); });
  per_rank("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", "engine",
           [&](const RankLoad& r) { return usage(r); });
  per_rank("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage (older name).", "engine",
           [&](const RankLoad& r) { return usage(r); });
  total("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.",
        vllm_labels, s.prompt_tokens);
  total("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", vllm_labels,
        s.cached_tokens);
  total("vllm:gpu_prefix_cache_queries_total", "counter", "GPU prefix cache queries, in tokens (older name).", vllm_labels,
        s.prompt_tokens);
  total("vllm:gpu_prefix_cache_hits_total", "counter", "GPU prefix cache hits, in tokens (older name).", vllm_labels,
        s.cached_tokens);
  total("vllm:gpu_prefix_cache_hit_rate", "gauge", "GPU prefix cache block hit rate (V0 engine name).", vllm_labels,
        hit_rate(s));
  total("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", vllm_labels, s.prompt_tokens);
  total("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", vllm_labels,
        s.completion_tokens);
  // SGLang.
  per_rank("sglang:num_running_reqs", "gauge", "The number of running requests.", "dp_rank",
           [&](const RankLoad& r) { return decoding(s, r); });
  per_rank("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", "dp_rank",
           [&](const RankLoad& r) { return waiting(s, r); });
  per_rank("sglang:num_used_tokens", "gauge", "The number of used tokens.", "dp_rank",
           [&](const RankLoad& r) { return used_tokens(s, r); });
  per_rank("sglang:token_usage", "gauge", "The token usage.", "dp_rank", [&](const RankLoad& r) { return usage(r); });
  total("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", fmt::format("model_name=\"{}\"", m), hit_rate(s));
  total("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", fmt::format("model_name=\"{}\"", m),
        s.prompt_tokens);
  total("sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.", fmt::format("model_name=\"{}\"", m),
        s.cached_tokens);
  std::size_t pages = 0;
  for (const auto& r : s.ranks) pages += r.capacity_blocks;
  total("sglang:cache_config_info", "gauge", "Information of cache_config.",
        fmt::format("model_name=\"{}\",num_pages=\"{}\",page_size=\"{}\"", m, pages, s.block_tokens), 1);
  return out;
}

}  // namespace cmax::endpoint
