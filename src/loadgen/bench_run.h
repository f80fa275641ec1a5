#pragma once
// One `cmax endpoint bench` run, sequenced: options -> workload -> (--dry-run: the bodies) ->
// prices -> client -> preflight -> run directory -> (--capacity: the search) | warmup, then the
// levels with a cache flush and /metrics reads around each -> findings -> bench.json and friends.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "loadgen/bench_options.h"
#include "loadgen/bench_sink.h"
#include "loadgen/capacity_run.h"
#include "loadgen/origin_client.h"
#include "loadgen/pricing.h"
#include "loadgen/runner.h"

namespace cmax::loadgen {

/// An API key and where it came from ("env:NAME", "file:PATH", "none"); the key is never printed.
struct ApiKey {
  std::string value;
  std::string source = "none";
};

/// What a bench run uses from outside: the network, time, the key, the progress line, the stop flag.
struct BenchEnv {
  EngineFactory make_engine;         ///< empty: HttpEngine::create
  const core::Clock* clock = nullptr;  ///< stamps the run (started_at, the default directory); null: system
  const std::atomic<bool>* stop = nullptr;  ///< set (SIGINT): stop sending, write what finished
  BenchSink* sink = nullptr;         ///< may be null
  /// Reads the key (after --dry-run, which needs none); empty: no key.
  std::function<Result<ApiKey>()> api_key;
  /// The run directory when o.out is empty, from a stamp like "20261202T122122Z-endpoint-bench".
  std::function<std::string(std::string_view stamp)> default_run_dir;
  std::string cmax_version;
  /// A measured hit rate this far above the prompts' theoretical rate means a warm cache.
  double hit_above_achievable_tolerance = 0.02;
};

/// What a bench run produced, for the command to render.
struct BenchOutcome {
  enum class Kind { kDryRun, kBench, kCapacity };
  Kind kind = Kind::kBench;
  std::string dir;    ///< the run directory
  std::string model;  ///< as sent
  std::vector<std::string> warnings;
  std::string document;  ///< bench.json or capacity.json, as written (without the final newline)
  // kBench
  RunResult result;
  std::optional<Bill> bill;
  std::string workload_source, workload_plan;
  std::string warm_warning;  ///< "" unless the cache was warm before the run
  // kCapacity
  CapacityRun capacity;
};

/// Runs the bench `o` asks for and writes its run directory (requests.jsonl as requests finish,
/// then bench.json, bench.csv, the SVG; or capacity.json). Errors are usage or environment errors
/// (a bad option, an unreadable file, the endpoint down or refusing the key, an unwritable
/// directory), each saying what to do. An interrupted run is an outcome, not an error.
Result<BenchOutcome> run_endpoint_bench(BenchOptions o, const BenchEnv& env);

/// True when more than `max_share` of the requests the endpoint was judged on (those cmax did not
/// cancel itself) failed. Pure.
bool too_many_errors(const Summary& overall, double max_share);

}  // namespace cmax::loadgen
