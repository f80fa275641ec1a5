#pragma once
// What one `cmax endpoint bench` run is asked to do, as plain values (no flag library), and the
// checks and translations that turn them into the run loop's configuration. Pure.

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "loadgen/metrics.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"

namespace cmax::loadgen {

/// Every setting of a bench run; the defaults are the command's.
struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8000/v1";
  std::string model, provider;
  std::string api = "chat";  ///< chat, completions or messages
  bool no_stream = false, no_usage = false, ignore_eos = false;
  std::string http = "auto", ca_file, transport = "auto";
  std::string api_key_env = "OPENAI_API_KEY";  ///< named in the preflight's refusal message
  std::string api_key_file;
  bool no_cache_control = false;     ///< Messages API turns carry no cache mark
  std::vector<std::string> headers;  ///< "Name: value", sent on every request
  std::string extra_body;            ///< a JSON object merged into every request body
  bool session_user = false;         ///< the session id in the body's `user`
  std::string session_header;        ///< the session id in this header
  // workload
  std::string trace;    ///< a Mooncake JSONL trace
  std::string prompts;  ///< ShareGPT JSON or JSONL (loadgen/prompt_file.h)
  bool multiturn = false, fixed = false;
  MultiTurnConfig mt;
  FixedConfig fx;
  std::uint32_t max_tokens = 0;
  std::uint32_t shared_prefix_tokens = 800;
  bool shared_prefix_given = false;  ///< --fixed shares nothing unless it is given
  // schedule
  std::string concurrency;  ///< "1,2,4,8"; "" = that default
  double rate = 0;
  bool trace_timestamps = false;
  double trace_speed = 1;
  std::size_t requests_per_level = 0;
  int max_inflight = 1000;
  // limits
  std::size_t max_requests = 0;
  double duration_s = 0, timeout_s = 600, stall_timeout_s = 60, connect_timeout_s = 10;
  int retries = 2;
  Slo slo;
  // money
  std::string prices, price_provider;
  double reference_hit_rate = -1, monthly_mtok = 0;  ///< -1: 0.99, or what the prompts sent allow when less
  int theory_block_tokens = 16;
  std::string out;  ///< the run directory; "" = the environment's default
  bool json = false, no_preflight = false, dry_run = false, no_server_metrics = false;
  std::size_t warmup = 0;    ///< requests sent first and not counted
  bool flush_cache = false;  ///< empty the server's prefix cache before each level
  double max_error_share = 0.1;
  int wake_interval_us = 1000, coalesce_from = 128;
  std::uint64_t seed = 1;
  std::string seed_source = "--seed";  ///< or "fresh"
  // the capacity search
  std::string capacity;  ///< "", "concurrency" or "rate"
  double capacity_start = 1;
  double capacity_max = 0;  ///< 0: 1024 streams, or 1000 requests/s
  double capacity_attainment = 0.9;
  int capacity_repeats = 3;
  std::size_t capacity_requests = 0;  ///< per measurement; 0: max(50, 4 x concurrency) or max(20, 5 s of the rate)
};

/// A comma list of concurrency levels (1..100000 each), or an error naming the bad part.
Result<std::vector<int>> parse_levels(const std::string& spec);

/// The run loop's configuration (model still unset) from checked options; `header_names` gets the
/// names of `headers`. Errors are usage errors, in the order the options are checked, each saying
/// what to give instead.
Result<RunConfig> bench_run_config(const BenchOptions& o, std::vector<std::string>& header_names);

}  // namespace cmax::loadgen
