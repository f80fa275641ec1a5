#pragma once
// When did each stage of a provider's reaction to an injected fault happen, as far as polling
// Slurm can tell? Pure: observations in, stage timings out; no clock, no I/O.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/slurm_reservation.h"
#include "drill/kube_view.h"
#include "drill/slurm_objects.h"
#include "sched/node_state.h"

namespace cmax::drill {

/// One poll of Slurm. Times are on a steady clock relative to the injection (t = 0).
struct Observation {
  std::chrono::microseconds t_start{0};  ///< when the first scontrol call of this poll began
  std::chrono::microseconds t_end{0};    ///< when the last one returned
  sched::NodeState target;               ///< the node the fault was injected into
  /// The watched reservation; nullopt when none is watched or its scontrol call failed this time
  /// (then reservation stages learn nothing from this poll).
  std::optional<sched::Reservation> reservation;
  /// The watched partition (a spare may join it), the same way.
  std::optional<Partition> partition;
  /// The watched job (it may be requeued onto another node), the same way.
  std::optional<Job> job;
  /// Kubernetes: where the watched workload's pods run (a label selector), the same way.
  std::optional<KubeWorkload> workload;
};

/// The stages. compute_stages reports detected, drained, replaced, returned; with a reboot flow
/// timed, reboot_requested, down and rebooted come between drained and replaced.
enum class Stage { kDetected, kDrained, kReplaced, kReturned, kRebootRequested, kDown, kRebooted };
/// "detected", "drained", "replaced", "returned", "reboot_requested", "down", "rebooted".
std::string_view stage_name(Stage stage);

/// ok: reached within its threshold; slow: reached after it; never: not reached by the stage's
/// timeout; pending: not reached, but the polls ended before the timeout; skipped: not measurable
/// (replaced with no reservation, partition or job to watch).
enum class Verdict { kOk, kSlow, kNever, kPending, kSkipped };
/// "ok", "slow", "never", "pending", "skipped".
std::string_view verdict_name(Verdict verdict);

/// How long each stage may take, from the injection, and still be "ok"; none: any time is ok.
struct StageThresholds {
  std::optional<std::chrono::milliseconds> detected = std::chrono::seconds(60);
  std::optional<std::chrono::milliseconds> drained = std::chrono::seconds(300);
  std::optional<std::chrono::milliseconds> replaced = std::chrono::seconds(900);
  std::optional<std::chrono::milliseconds> returned;
};

/// How long after the injection a stage is still waited for; first seen later counts as never.
struct StageTimeouts {
  std::chrono::milliseconds detected = std::chrono::minutes(15);
  std::chrono::milliseconds drained = std::chrono::minutes(30);
  std::chrono::milliseconds replaced = std::chrono::minutes(30);
  std::chrono::milliseconds returned = std::chrono::minutes(60);
};

/// One stage's timing. The event happened in (lower_ms, at_ms]: after the last poll that still saw
/// it not happen began (or after the injection), and before the first poll that saw it returned.
struct StageResult {
  Stage stage = Stage::kDetected;
  std::string name;             ///< stage_name(stage)
  bool reached = false;         ///< seen within the timeout; the times below are 0 when not
  std::size_t observation = 0;  ///< index of the first observation that saw it, when reached
  double at_ms = 0;             ///< first seen: t_end of that observation
  double lower_ms = 0;          ///< t_start of the last earlier poll that saw it not happen, or 0
  double uncertainty_ms = 0;    ///< at_ms - lower_ms
  Verdict verdict = Verdict::kNever;
  std::optional<double> threshold_ms;  ///< the threshold the verdict used; nullopt when none
  /// What the first poll that saw it saw, for "replaced": "spare1 joined reservation drill", "job
  /// 12 requeued (restart 1) onto n2", "n4 joined partition batch"; "" otherwise.
  std::string how;
};

/// Times the four stages against the target's state before the drill (`baseline`):
///  detected: DRAIN or DOWN newly set, or a reason that differs from the baseline's;
///  drained: newly drained (DRAIN set and nothing running, NodeState::drained());
///  replaced: whichever watched source shows it first: a node not in the baseline's reservation is
///  in it, or the target left it; a node not in the baseline's partition is in it; the baseline's
///  job (running on the target) runs again on nodes without the target, requeued or moved; on
///  Kubernetes, the watched workload's pods that ran on the target run elsewhere (the Running
///  pods off the target are at least as many as all of them were before);
///  returned: after detection, the target is in service again (IDLE, MIXED or ALLOCATED, with no
///  DRAIN, NOT_RESPONDING, REBOOT_* or POWER* flag).
/// A flapping state counts when first seen. Observations must be in order of t_start, each with
/// t_start >= 0 and t_end >= t_start; a target already drained or down in the baseline, or a
/// watched job not running on the target in the baseline, is an error, since no stage could be
/// seen. `shared_watch`: other targets are drilled at the same time against the same reservation,
/// so a node joining it may have replaced any of them: only the target leaving the reservation
/// counts as its replacement. `reboot_flow`: the remediation is a reboot, and three more stages
/// are timed (each within the returned timeout):
///  reboot_requested: REBOOT_REQUESTED or REBOOT_ISSUED set (scontrol reboot, or a provider's own
///  flow through it);
///  down: the node out while it reboots: DOWN, NOT_RESPONDING or REBOOT_ISSUED;
///  rebooted: slurmd registered again with a BootTime later than the baseline's (a new boot; slurmd
///  runs the HealthCheckProgram once before it registers).
/// Deterministic.
Result<std::vector<StageResult>> compute_stages(const Observation& baseline,
                                                const std::vector<Observation>& observations,
                                                const StageThresholds& thresholds = {},
                                                const StageTimeouts& timeouts = {}, bool shared_watch = false,
                                                bool reboot_flow = false);

}  // namespace cmax::drill
