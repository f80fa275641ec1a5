#pragma once
// An active check's result: what was measured on this node, against which threshold, and the
// verdict. Shared by the storage, CPU and memory checks (src/health), the GPU checks
// (src/health/gpu) and `cmax collect` / `cmax run`, which carry results from node to controller.
// A check that could not finish in its time limit is a fail with timed_out set (a hung
// filesystem is a finding, not a hang); one that does not apply here (no GPU) is not_applicable;
// one that could not run (no permission, a tool missing) is unverified. Never a silent pass.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/model.h"
#include "core/result.h"

namespace cmax::health {

/// One number a check measured, with the bounds it was judged against (either may be absent).
struct Measurement {
  std::string name;  ///< "p99_stat_us", "write_gbps", "triad_gbps", "tflops"
  double value = 0;
  std::string unit;  ///< "us", "GB/s", "TFLOP/s", "ms", "files/s"
  std::optional<double> min;  ///< a value below fails (or warns, as the check says)
  std::optional<double> max;  ///< a value above fails (or warns)
};

struct CheckResult {
  std::string id;  ///< "storage.metadata", "storage.seq_write", "storage.seq_read", "storage.fsync",
                   ///< "memory.bandwidth", "cpu.throughput", "cpu.stall", "gpu.matmul", "gpu.membw",
                   ///< "gpu.pcie", "gpu.nvlink"
  audit::Category category = audit::Category::reliability;
  audit::Outcome outcome = audit::Outcome::unverified;
  std::string title;    ///< "Shared filesystem metadata latency (import torch pattern)"
  std::string target;   ///< what it ran on: a path, "numa0", "gpu0", "gpu0->gpu1"
  std::string summary;  ///< one line with the numbers, for the terminal
  std::string reason;   ///< why this outcome; always set for fail, warn, not_applicable, unverified
  bool timed_out = false;
  double duration_s = 0;
  std::vector<Measurement> measurements;
};

/// The JSON object for one result (keys in a fixed order; see docs/schemas/check.md).
nlohmann::ordered_json to_json(const CheckResult& r);
/// Reads one result back; errors name the missing or malformed key.
Result<CheckResult> check_from_json(const nlohmann::json& j);
/// The result as an audit finding ("check.<id>[@target]"), so a run directory, the scorecard and
/// the cross-node comparison treat active checks like audit checks.
audit::Finding to_finding(const CheckResult& r);

}  // namespace cmax::health
