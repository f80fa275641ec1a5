#pragma once
// What `cmax drill run` is asked to do (its flags, as values), and the exit codes a drill ends
// with (docs/drills.md).

#include <string>

namespace cmax::drill {

/// Every awaited stage within its threshold.
inline constexpr int kDrillOk = 0;
/// A stage slow or never reached.
inline constexpr int kDrillStageFailed = 1;
/// Usage or environment error (audit::kExitUsage); where it comes before the injection, nothing
/// was injected.
inline constexpr int kDrillEnvError = 3;

struct RunOptions {
  std::string scenario;            ///< scenario id (data/drills.json)
  std::string nodes;               ///< a Slurm hostlist; "" with `rack`
  std::string rack;                ///< a Slurm topology switch or block, or a Kubernetes label selector
  std::string scheduler = "slurm";  ///< "slurm" or "kubernetes"
  std::string slurm_conf;          ///< resolved by the site (sched::effective_slurm_conf)
  std::string reservation, partition, job;  ///< Slurm: what is watched for the replacement
  std::string workload;            ///< Kubernetes: a label selector of pods whose rescheduling is the replacement
  std::string inject = "auto";     ///< "auto", "local" or "srun"
  std::string out;                 ///< run directory; the caller picks the default
  std::string gpu;                 ///< PCI function named in the lines; "" the scenario's default
  std::string kmsg = "/dev/kmsg";  ///< kernel log device for local injection
  std::string drill_id;            ///< "" a random one
  bool yes = false;                ///< inject for real; without it only the plan
  bool wait_return = false, provider_runs_cmax = false;
  bool reboot = false;        ///< the drill requests the reboot once drained
  bool await_reboot = false;  ///< the provider's own reboot flow is timed
  int max_nodes = 2, poll_ms = 5;
  int parallel = 8;  ///< targets drilled at once
  int detect_timeout_s = 900, drain_timeout_s = 1800, replace_timeout_s = 1800, return_timeout_s = 3600;
  int detect_threshold_s = 60, drain_threshold_s = 300, replace_threshold_s = 900;
  double until_unix = 0;  ///< set by the drill: when it is over, for the marker line
  bool kubernetes() const { return scheduler == "kubernetes"; }
};

}  // namespace cmax::drill
