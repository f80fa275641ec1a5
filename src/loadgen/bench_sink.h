#pragma once
// Where a bench run reports while it runs (the command's terminal, a test's log): progress, the
// capacity search's current load, and --dry-run's bodies. Every method has a do-nothing default.

#include <cstdint>
#include <string>
#include <string_view>

#include "loadgen/runner.h"

namespace cmax::loadgen {

/// Called on the bench's thread.
class BenchSink {
 public:
  virtual ~BenchSink() = default;
  /// The run loop's progress, at most four times a second.
  virtual void progress(const Progress&) {}
  /// The capacity search starts a measurement at `load` ("concurrency" or "rate").
  virtual void capacity_load(std::string_view /*dimension*/, double /*load*/) {}
  /// The run or the search is over: a progress line may be cleared.
  virtual void progress_done() {}
  /// --dry-run with a seed drawn fresh: said once, before the bodies.
  virtual void dry_run_seed(std::uint64_t /*seed*/) {}
  /// --dry-run: one request body that would be sent, in order.
  virtual void dry_run_body(const std::string& /*body*/) {}
};

}  // namespace cmax::loadgen
