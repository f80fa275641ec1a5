#pragma once
// The nccl-tests loop over sizes and placements on top of a Backend: warm up, time `iters` calls
// between a barrier and completion, combine the ranks' times, check, and print the table on rank 0.

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "apps/cmax-collbench/backend.h"
#include "apps/cmax-collbench/ops.h"

namespace cmax::collbench {

/// How the ranks' per-iteration times combine into the printed time (nccl-tests' -a).
enum class TimeAggregate { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

struct BenchOptions {
  Op op = Op::kAllReduce;
  Dtype dtype = Dtype::kFloat;
  RedOp redop = RedOp::kSum;
  int root = 0;
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 128u << 20;
  std::size_t step_bytes = 1u << 20;
  std::size_t step_factor = 2;  ///< > 1: multiply; else add step_bytes
  int warmup_iters = 5;
  int iters = 20;
  bool check = true;
  TimeAggregate aggregate = TimeAggregate::kAverage;
  std::string tool_version;
};

/// What the run found, the same on every rank.
struct BenchSummary {
  std::int64_t rows_with_wrong = 0;  ///< placements with #wrong > 0 ("Out of bounds values")
  double avg_busbw_gbps = 0;
};

/// Runs the whole table over `comm`; rank 0 writes nccl-tests' text to `out` and flushes each row.
/// Collective: every rank of comm calls it with the same options. Throws BackendError.
BenchSummary run_bench(const BenchOptions& opt, Backend& backend, MPI_Comm comm, std::FILE* out);

}  // namespace cmax::collbench
