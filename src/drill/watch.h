#pragma once
// The drill's watcher: polls the scheduler black-box (on Slurm the target node's state, and a
// reservation, partition or job when one is watched; on Kubernetes the Node and its pods) from the injection on, until every stage it waits for is seen or timed out. The
// timings come from drill/timeline.h over what it observed.

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/result.h"
#include "drill/scontrol_session.h"
#include "drill/timeline.h"
#include "sched/kubernetes.h"
#include "sched/slurm.h"

namespace cmax::drill {

struct WatchOptions {
  std::string node;                        ///< the target
  std::optional<std::string> reservation;  ///< e.g. a REPLACE_DOWN reservation holding spares
  std::optional<std::string> partition;    ///< a partition a spare may be added to
  std::optional<std::string> job;          ///< a job running on the target that may be requeued
  std::optional<std::string> workload;     ///< Kubernetes: a label selector of pods that may be rescheduled
  std::chrono::milliseconds poll{5};       ///< pause between polls; each poll's own time adds to it
  StageTimeouts timeouts;
  bool wait_return = false;  ///< keep polling after the other stages for "returned" (an operator's resume)
  /// Other targets are drilled at the same time against the same reservation: only the target
  /// leaving it is its replacement (compute_stages' shared_watch).
  bool shared_watch = false;
  /// The remediation is a reboot: reboot_requested, down, rebooted and returned are awaited too.
  bool reboot_flow = false;
  /// Whether `stage` is one this watch waits for.
  bool awaits(Stage stage) const {
    switch (stage) {
      case Stage::kDetected:
      case Stage::kDrained: return true;
      case Stage::kReplaced: return watches_replacement();
      case Stage::kReturned: return wait_return || reboot_flow;
      default: return reboot_flow;
    }
  }
  /// True when "replaced" can be seen: a reservation, partition or job is watched.
  bool watches_replacement() const { return reservation || partition || job || workload; }
};

/// One way of reading the target (and what else is watched) once. Two run at once, staggered
/// (watch() below), so each must be independent of the other.
class Poller {
 public:
  virtual ~Poller() = default;
  /// Reads the target once: the drill's baseline and each poll. t_start and t_end are relative to
  /// `t0`. An error when the node cannot be read.
  virtual Result<Observation> observe(const WatchOptions& options, std::chrono::steady_clock::time_point t0) = 0;
  /// Another poller like this one, with its own connection, for the second, staggered loop.
  virtual std::unique_ptr<Poller> another() const = 0;
};

/// Polls Slurm through one long-lived scontrol (drill/scontrol_session.h), restarting it when it
/// dies or stalls. Reads the target, and the reservation, partition and job watched, in one round
/// trip.
class SlurmPoller final : public Poller {
 public:
  explicit SlurmPoller(sched::SlurmOptions options) : options_(std::move(options)) {}
  Result<Observation> observe(const WatchOptions& options, std::chrono::steady_clock::time_point t0) override;
  std::unique_ptr<Poller> another() const override { return std::make_unique<SlurmPoller>(options_); }
  const sched::SlurmOptions& options() const { return options_; }

 private:
  sched::SlurmOptions options_;
  std::optional<ScontrolSession> session_;
};

/// Polls a Kubernetes API server: the Node and the pods bound to it (two GETs), folded by
/// drill/kube_view.h. The taints the node carries at its first observation (the baseline) are
/// not a drain. Reservation, partition and job are Slurm's: not watched here.
class KubePoller final : public Poller {
 public:
  explicit KubePoller(sched::KubernetesOptions options) : options_(options), api_(std::move(options)) {}
  Result<Observation> observe(const WatchOptions& options, std::chrono::steady_clock::time_point t0) override;
  std::unique_ptr<Poller> another() const override;

 private:
  sched::KubernetesOptions options_;
  sched::KubernetesScheduler api_;
  std::optional<std::vector<std::string>> taints_before_;
};

/// Polls with two staggered pollers (each its own scontrol session; `poller` is one of them) from
/// now until the stages it waits for (detected, drained, replaced when a reservation, partition
/// or job is watched, returned when asked) are all seen, or their timeouts pass, or `stop` is requested. A
/// poll that fails (slurmctld briefly unreachable) is skipped and counted in `failed_polls`; the
/// observations so far are always returned.
std::vector<Observation> watch(Poller& poller, const WatchOptions& options, const Observation& baseline,
                               std::chrono::steady_clock::time_point t0, std::stop_token stop, int& failed_polls);

/// `scontrol -o show reservation NAME` through `slurm`'s options (conf, timeout).
Result<sched::Reservation> read_reservation(const sched::SlurmOptions& options, const std::string& name);

}  // namespace cmax::drill
