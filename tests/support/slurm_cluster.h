#pragma once
// A real Slurm cluster on 127.0.0.1 for tests: slurmctld and one slurmd per node from Debian's
// packages, in a fresh temporary directory, on free ports. Everything it started goes when it does.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/process.h"
#include "core/result.h"
#include "sched/node_state.h"
#include "support/daemon.h"

namespace cmax::test {

/// The cluster's shape.
struct SlurmClusterOptions {
  int nodes = 4;                                   ///< n1..nN
  int spares = 0;                                  ///< spare1..spareM, in the same partition
  std::chrono::milliseconds ready_timeout{20000};  ///< until every node is idle
  std::vector<std::string> extra_conf;             ///< slurm.conf lines appended
  std::uint64_t seed = 0;                          ///< for the port choice; 0 draws one
  /// Nodes can be rebooted: RebootProgram asks the harness, which kills that node's slurmd, keeps
  /// it down `reboot_down`, and starts a new one in a time namespace whose CLOCK_BOOTTIME starts
  /// at about 0 (unshare --time --boottime), so slurmd reports a new BootTime, as after a real
  /// reboot (Slurm completes a reboot only on a boot later than its request).
  bool reboot = false;
  /// Files written beside slurm.conf before the daemons start (name, content): topology.conf, ...
  std::vector<std::pair<std::string, std::string>> files;
  std::chrono::milliseconds reboot_down{1500};
};

/// A running cluster. Owns its directory and daemons: the destructor kills the daemons (whole
/// process groups) and removes the directory; munged, shared with the machine, is left running.
class SlurmCluster {
 public:
  /// Why no cluster can start here (not root; Slurm or munge not installed), or nullopt.
  static std::optional<std::string> unavailable();
  /// Starts munged if needed, then the cluster, and waits until every node is idle. Retries on
  /// other ports when a daemon dies at start (a port taken by a test running beside this one).
  static Result<std::unique_ptr<SlurmCluster>> start(SlurmClusterOptions options = {});
  /// A rater's trial cluster: n1-n4 in an active REPLACE_DOWN reservation "train" (Users=root,
  /// 600 s) and two idle spares beside it.
  static Result<std::unique_ptr<SlurmCluster>> start_trial();

  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;
  ~SlurmCluster();

  /// The temporary directory holding slurm.conf, state, spools and logs.
  const std::filesystem::path& dir() const { return dir_; }
  std::string conf_path() const { return (dir_ / "slurm.conf").string(); }
  /// n1..nN, then spare1..spareM.
  const std::vector<std::string>& node_names() const { return nodes_; }
  std::uint16_t controller_port() const { return ctld_port_; }

  /// Runs `scontrol args...` against this cluster (SLURM_CONF set), bounded by `timeout`.
  Result<core::ProcessResult> scontrol(
      std::vector<std::string> args,
      std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;
  /// Kills the slurmd of `node` (its whole process group), as a node that dies would lose it.
  /// slurmctld notices only after SlurmdTimeout; until then it still lists the node as usable.
  Result<void> stop_slurmd(std::string_view node);
  /// How many reboots the harness has carried out (RebootProgram requests served).
  int reboots() const { return reboots_.load(); }
  /// The node's state from `scontrol -o show node NODE`.
  Result<sched::NodeState> state(std::string_view node) const;
  /// Polls state(node) every 10 ms until `done` holds; the last state seen, or an error at
  /// `timeout`.
  Result<sched::NodeState> wait_for(std::string_view node,
                                    const std::function<bool(const sched::NodeState&)>& done,
                                    std::chrono::milliseconds timeout) const;

 private:
  SlurmCluster() = default;
  Result<void> launch(const SlurmClusterOptions& options, std::uint64_t seed);
  Result<void> wait_idle(std::chrono::milliseconds timeout);
  std::vector<std::string> env() const {
    return {"SLURM_CONF=" + conf_path(), "SLURM_TIME_FORMAT=standard"};
  }
  void stop_daemons();
  /// Serves RebootProgram's requests (files in dir/reboot-requests) until stopped.
  void serve_reboots(std::stop_token stop, std::chrono::milliseconds down);
  Result<Daemon> start_slurmd(const std::string& node, bool new_boot);

  std::filesystem::path dir_;
  std::vector<std::string> nodes_;
  std::uint16_t ctld_port_ = 0;
  struct Owned {
    Daemon daemon;
    std::filesystem::path log;  ///< the daemon's own log file (SlurmctldLogFile, SlurmdLogFile)
    std::string node;           ///< the slurmd's node; "" for slurmctld
  };
  std::mutex daemons_mu_;  ///< guards daemons_ against the reboot thread
  std::vector<Owned> daemons_;
  std::atomic<int> reboots_{0};
  std::jthread reboot_thread_;  ///< declared last: stopped and joined before the daemons go
  bool retry_ = false;  ///< the last attempt failed in a way other ports may fix
};

}  // namespace cmax::test
