#pragma once
// Discrete-event replay of a trace through a Fleet: arrivals in trace order, finishes at the times
// the fleet's timing model gives, one policy at a time. Pure: trace and config in, numbers out.

#include <cstdint>
#include <vector>

#include "endpoint/fleet.h"
#include "endpoint/trace.h"

namespace cmax::endpoint {

/// Dollars per million tokens.
struct PriceSheet {
  double input_per_mtok = 0.25;
  double cached_input_per_mtok = 0.025;  ///< 0.1x input, as the large providers price cache reads
  double output_per_mtok = 1.0;
};

struct SimConfig {
  FleetConfig fleet;
  /// Arrivals are divided by this: 2 replays the trace twice as fast (twice the load).
  double time_scale = 1.0;
  PriceSheet prices;
};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
};
/// Nearest-rank percentiles of `values` (sorted in place); zeros when empty.
Percentiles percentiles(std::vector<double>& values);

struct Cost {
  double input_usd = 0, cached_input_usd = 0, output_usd = 0, total_usd = 0;
  /// Effective input price at this token hit rate h: (1 - h) x input + h x cached_input.
  double input_per_mtok_effective = 0;
  /// The same with no cache hit (h = 0), for the ratio.
  double total_usd_no_cache = 0;
};

struct PolicyResult {
  Policy policy = Policy::kRoundRobin;
  std::uint64_t requests = 0;
  std::uint64_t prompt_blocks = 0, cached_blocks = 0;
  std::uint64_t input_tokens = 0, cached_tokens = 0, output_tokens = 0;
  double hit_rate = 0;            ///< cached_blocks / prompt_blocks
  double token_hit_rate = 0;      ///< cached_tokens / input_tokens (what the bill sees)
  double theoretical_hit_rate = 0;
  Percentiles ttft_s, e2e_s, queue_s;
  std::vector<std::uint64_t> replica_requests;
  std::vector<double> replica_busy_s;  ///< prefill engine busy time per replica
  double load_imbalance = 0;           ///< max / mean of replica_requests (1 = even)
  double busy_imbalance = 0;           ///< max / mean of replica_busy_s
  std::uint64_t evictions = 0;
  double makespan_s = 0;               ///< last finish
  Cost cost;
};

/// Block hit rate of one global infinite cache over the trace: block i of a request is a hit when
/// some earlier request had the same first i+1 blocks. The upper bound for any policy.
double theoretical_hit_rate(const Trace& trace);

/// How many of a trace's first requests it takes for the upper-bound hit rate over them to stay
/// within `tolerance` (relative) of the rate over the whole trace: the steady state a benchmark
/// must reach for its hit rate to speak for the trace. A trace's opening requests find an empty
/// cache, so a short prefix always understates what the trace allows (the Mooncake
/// conversation trace: 3.7% over its first 92 requests, 36.6% over all 12,031).
struct SteadyState {
  std::size_t requests = 0;   ///< the prefix length; 0 for an empty trace
  double whole_rate = 0;      ///< theoretical_hit_rate over the whole trace
  double prefix_rate = 0;     ///< over the first `requests`
};
SteadyState steady_state(const Trace& trace, double tolerance = 0.10);

/// Replays `trace` with `config.fleet` (its policy). `theoretical` is stored in the result as is
/// (compute it once with theoretical_hit_rate for several policies).
PolicyResult simulate(const Trace& trace, const SimConfig& config, double theoretical);

/// The price arithmetic for a token hit rate.
Cost price(std::uint64_t input_tokens, std::uint64_t cached_tokens, std::uint64_t output_tokens, const PriceSheet& prices);

}  // namespace cmax::endpoint
