#pragma once
// bench.json (cmax.endpoint.bench/1, docs/schemas/endpoint-bench.md) from a finished run, and the
// files beside it: bench.csv and, for a sweep, ttft_vs_concurrency.svg.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "loadgen/bench_options.h"
#include "loadgen/bench_workload.h"
#include "loadgen/origin_client.h"
#include "loadgen/pricing.h"
#include "loadgen/runner.h"
#include "loadgen/server_metrics.h"
#include "loadgen/warmup.h"

namespace cmax::loadgen {

/// The server's /metrics as read before and after each level (index = the schedule's level).
struct ServerScrapes {
  std::string origin, why_not;
  std::vector<std::optional<EngineCacheMetrics>> before, after;
};

/// What bench.json says beyond the options and the run's result.
struct BenchFacts {
  std::chrono::system_clock::time_point started_at;
  std::string cmax_version, model, http, transport;
  std::string api_key_source;             ///< "env:NAME", "file:PATH" or "none"; never the key
  std::vector<std::string> header_names;  ///< names only: a header may carry a credential
  RunConfig rc;
  const BenchWorkload* workload = nullptr;
  double reference_hit_rate = 0.99;
  std::string reference_source;
  bool warm_cache = false;  ///< measured above what the prompts sent allow
  std::optional<PriceSheet> sheet;
  std::optional<Bill> bill;
  std::optional<WarmupResult> warmup;
  std::vector<CacheFlush> flushes;
  std::optional<ServerScrapes> scrapes;  ///< unset: /metrics was not read (--no-server-metrics)
};

/// bench.json's text (2-space JSON, no trailing newline). When the server counts prefix-cache hits
/// the responses do not report, a warning saying which flag is missing is added to `warnings`.
std::string bench_document(const BenchOptions& o, const BenchFacts& facts, const RunResult& result,
                           std::vector<std::string>& warnings);

/// Writes DIR/bench.json (`document` and a newline), DIR/bench.csv and, with more than one level,
/// DIR/ttft_vs_concurrency.svg labelled `label`. Errors name the file.
Result<void> write_bench_files(const std::string& dir, const std::string& document, const RunResult& result,
                               const std::string& label);

}  // namespace cmax::loadgen
