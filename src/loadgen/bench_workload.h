#pragma once
// The bench's workload from its options: a Mooncake trace (sized to reach its own steady-state
// hit rate unless told how much to send), a prompt file, --fixed or --multiturn.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "endpoint/simulate.h"
#include "loadgen/bench_options.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"

namespace cmax::loadgen {

struct BenchWorkload {
  std::unique_ptr<Workload> workload;
  std::string kind;    ///< "mooncake", "sharegpt", "jsonl", "fixed", "multiturn"
  std::string source;  ///< what it was made from, for the report
  std::string plan;    ///< how much of a trace is sent, and why; "" when all that was asked
  double trace_theory = -1;        ///< the trace's theoretical hit rate over what will be sent
  std::size_t trace_requests = 0;  ///< requests in the trace; 0 for no trace
  endpoint::SteadyState steady;    ///< the trace's steady state
};

/// Reads the trace or prompt file (errors name the file and say what to do) and builds the
/// workload. Settles what the options leave open, in `o` (max_requests, fx, mt: what the report
/// and the capacity search use) and `rc` (max_requests, requests_per_level). Skipped entries and
/// trace oddities go to `warnings`.
Result<BenchWorkload> make_bench_workload(BenchOptions& o, RunConfig& rc, std::vector<std::string>& warnings);

}  // namespace cmax::loadgen
