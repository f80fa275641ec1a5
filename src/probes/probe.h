#pragma once
// What cmaxd's probes report: a Finding is one fault (or recovery) seen by reading a device's
// state rather than a log line: NVML counters, InfiniBand port files in sysfs, a mount that stops
// answering. The agent turns findings into signals of the probe-only kinds (signals/signal.h) and
// correlates them with the kernel log's.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "signals/signal.h"

namespace cmax::probes {

/// One fault or recovery. `text` is what a log line would say, for the event log and reports.
struct Finding {
  signals::Kind kind = signals::Kind::gpu_lost;
  int code = -1;            ///< Xid number for NVML Xid events; a count or port number elsewhere; -1 when none
  std::string device;       ///< PCI bus id ("0000:06:00.0"), "mlx5_0/1" (device/port), or a mount path
  std::string subject;      ///< what else the finding names (GPU UUID, throttle reasons, ...)
  bool fatal = false;       ///< see the kinds in signals/signal.h
  std::string text;         ///< "nvml: GPU 0000:06:00.0: volatile uncorrected ECC errors rose 0 -> 2"
};

/// The finding as the signal engine's Signal; its views point into `f`, which must outlive it.
/// NVML names a GPU "0000:06:00.0" and the kernel's Xid lines "0000:06:00": an Xid's device drops
/// the function, so the same GPU's Xid from both sources joins one incident.
signals::Signal signal_of(const Finding& f);

/// A source of findings, polled by the agent on its own thread. poll() compares what it reads now
/// with what it read last time and reports what changed: a fault that is still there is not
/// reported again, and a fault that went away is reported by its closing kind where one exists
/// (ib_port_up, fs_ok). The first poll reports faults already present. Never blocks longer than
/// `budget` (plus a small constant). Not thread-safe; one thread polls.
class Probe {
 public:
  virtual ~Probe() = default;
  /// "nvml", "ib", "fs": the probe's name in logs and metrics.
  virtual std::string_view name() const = 0;
  /// One reading. An error means the reading failed as a whole (the library vanished, the
  /// sysfs root is unreadable); per-device trouble is a finding or is skipped.
  virtual Result<std::vector<Finding>> poll(std::chrono::milliseconds budget) = 0;
  /// What is wrong with the probe's configuration or surroundings now, that is not a fault of the
  /// node ("/lustre: stat: No such file or directory"): for the log, never for an action.
  virtual std::vector<std::string> problems() const { return {}; }
};

}  // namespace cmax::probes
