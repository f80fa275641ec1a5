#pragma once
// --capacity: the highest concurrency or request rate at which --capacity-attainment of the
// requests meet every SLO given (loadgen/capacity.h), each measurement a fresh run of the
// workload at one load; and capacity.json (cmax.endpoint.capacity/1), which records it.

#include <string>
#include <vector>

#include "loadgen/bench_options.h"
#include "loadgen/bench_sink.h"
#include "loadgen/capacity.h"
#include "loadgen/http_client.h"
#include "loadgen/metrics.h"
#include "loadgen/runner.h"

namespace cmax::loadgen {

/// One measurement of the search.
struct CapacityMeasurement {
  double load = 0;
  Summary summary;
  bool pass = false;  ///< summary.goodput_share >= the attainment goal
};

struct CapacityRun {
  bool by_rate = false;  ///< rate (requests/s), else concurrency (streams)
  CapacityConfig config;
  CapacityResult result;
  std::vector<CapacityMeasurement> measurements;  ///< in measuring order
};

/// The search config the options ask for (defaults: max 1024 streams or 1000 requests/s). Pure.
CapacityConfig capacity_config(const BenchOptions& o);

/// Runs the search; each measurement sends o.capacity_requests (else max(50, 4 x concurrency) or
/// max(20, 5 s of the rate)) of a fresh --fixed or --multiturn workload through `hooks`. Stops
/// when hooks.stop is set. `sink` (may be null) hears each load.
CapacityRun run_capacity(const BenchOptions& o, HttpEngine& engine, const RunConfig& rc, const RunHooks& hooks,
                         BenchSink* sink);

/// capacity.json's text (2-space JSON, no trailing newline). Pure.
std::string capacity_document(const BenchOptions& o, const CapacityRun& run, const std::string& model,
                              const std::string& cmax_version, const std::vector<std::string>& warnings);

}  // namespace cmax::loadgen
