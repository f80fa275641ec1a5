#pragma once
// The capacity question: the highest load (closed-loop concurrency, or an open-loop request rate)
// at which a share of requests meets the SLOs. A search over one measured number: double from a
// start until a measurement fails, bisect between the last pass and the first fail to a tolerance,
// then measure both ends of the edge again (noise decides single measurements near it). Pure: the
// caller measures.

#include <functional>
#include <optional>
#include <vector>

namespace cmax::loadgen {

struct CapacityConfig {
  bool integer = true;        ///< concurrency: whole numbers; rate: any positive number
  double start = 1;
  double max = 1024;          ///< never measured above
  double tolerance = 0.05;    ///< bisect until (fail - pass) <= this x pass (and at least 1 apart for integers)
  int repeats = 3;            ///< measurements at each end of the edge, all told
  double attainment = 0.9;    ///< a measurement passes when at least this share of its requests met every SLO
  int max_probes = 40;        ///< a bound on measurements, whatever the noise
};

struct CapacityProbe {
  double load = 0;
  double attainment = 0;  ///< share of the measurement's requests that met every SLO
  bool pass = false;
};

struct CapacityResult {
  /// The highest load measured whose measurements mostly passed, with no lower load's mostly
  /// failing; 0 when even `start` failed.
  double edge = 0;
  /// The lowest load whose measurements mostly failed; -1 when none did (`max` was reached).
  double first_fail = -1;
  bool reached_max = false;
  bool interrupted = false;            ///< the measure callback returned nullopt (stopped)
  std::vector<CapacityProbe> probes;   ///< in measuring order
};

/// `measure(load)` runs one measurement and returns its attainment (share of requests meeting
/// the SLOs), or nullopt to stop the search (interrupted; what was measured is kept).
CapacityResult search_capacity(const CapacityConfig& config, const std::function<std::optional<double>(double)>& measure);

}  // namespace cmax::loadgen
