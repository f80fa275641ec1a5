#pragma once
// --warmup N: requests before the measured run, not counted and not written.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loadgen/bench_options.h"
#include "loadgen/http_client.h"
#include "loadgen/runner.h"

namespace cmax::loadgen {

struct WarmupResult {
  std::uint64_t requests = 0, succeeded = 0;
  int concurrency = 0;
  double duration_s = 0;
  std::uint32_t prompt_tokens_each = 0;
};

/// Sends o.warmup unique prompts (seeded apart from the run, sharing nothing with it, so they warm
/// the server without priming the cache the run measures) of the run's sizes with --fixed, else
/// 512 prompt and 16 output tokens, at the first level's concurrency (8 for a rate or a trace).
WarmupResult run_warmup(const BenchOptions& o, HttpEngine& engine, const RunConfig& rc, const std::atomic<bool>* stop);

}  // namespace cmax::loadgen
