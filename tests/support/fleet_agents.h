#pragma once
// Real cmaxd agents for simulated nodes on one machine: one cmaxd process per node, each reading
// its own FIFO of kernel-log records instead of this machine's /dev/kmsg, so that a test can fault
// any subset of them in the same instant. The scheduler they act on is the caller's (a KWOK fleet
// on the real kube-apiserver, or many slurmd under one slurmctld).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "support/daemon.h"

namespace cmax::test {

/// The whole file, or "" when it cannot be read (a log not written yet).
std::string read_text(const std::filesystem::path& p);
/// The last `n` characters of `text` (a log's tail for a failure message).
std::string last_chars(const std::string& text, std::size_t n = 3000);
/// The integer in environment variable `name` (the fleet tests' sizes), else `fallback`.
int env_int(const char* name, int fallback);

/// CPU seconds (user + system) a process has used so far; 0 when it cannot be read.
double process_cpu_seconds(pid_t pid);
/// Its resident memory now, MiB; 0 when it cannot be read.
double process_rss_mib(pid_t pid);

struct FleetAgentSpec {
  std::string cmaxd;               ///< the cmaxd binary
  std::vector<std::string> nodes;  ///< one cmaxd each
  double fleet_max_percent = 100;
  std::vector<std::string> scheduler_args;  ///< --scheduler and how to reach it (KwokFleet::agent_args, ...)
  std::filesystem::path dir;       ///< FIFOs, event logs, stderr logs
  std::chrono::seconds ready_timeout{60};
};

class FleetAgents {
 public:
  /// Makes a FIFO per node and starts a cmaxd per node on it; waits until each says it reads.
  static Result<std::unique_ptr<FleetAgents>> start(const FleetAgentSpec& spec);
  ~FleetAgents();
  FleetAgents(const FleetAgents&) = delete;
  FleetAgents& operator=(const FleetAgents&) = delete;

  std::size_t size() const { return spec_.nodes.size(); }
  const std::string& node(std::size_t i) const { return spec_.nodes[i]; }
  /// Writes a fatal Xid 79 record of the GPU at `pci` to agent i's FIFO, stamped now; returns when
  /// it is written. Another GPU is another incident (the same one's later lines are its repeats).
  Result<void> fault(std::size_t i, std::string_view pci = "0000:1b:00");
  /// Agent i's stderr (its JSON log lines).
  std::string log(std::size_t i) const;
  std::filesystem::path log_path(std::size_t i) const;
  /// Their process ids.
  std::vector<pid_t> pids() const;
  /// Agents that are still running.
  std::size_t running();
  /// Stops every agent (SIGKILL; the event log is WAL-safe).
  void stop();

 private:
  explicit FleetAgents(FleetAgentSpec spec) : spec_(std::move(spec)) {}
  FleetAgentSpec spec_;
  std::vector<Daemon> daemons_;
  std::vector<int> fifo_fds_;
  std::vector<std::uint64_t> seqs_;  ///< the last record's seq, per FIFO
};

}  // namespace cmax::test
