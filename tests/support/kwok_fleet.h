#pragma once
// A simulated GPU fleet on the tests' real control plane (support/kube_cluster.h), and real cmaxd
// agents for some of its nodes.
//
// KwokFleet registers N Node objects shaped like HGX nodes (allocatable nvidia.com/gpu 8, rack and
// NVLink-domain labels) and runs KWOK v0.8.0 (built by tests/kube/build_kwok.sh into BUILD/kube)
// against the API server as the admin: KWOK's own node-initialize Stage makes them Ready and its
// node-heartbeat-with-lease Stage keeps them so, renewing one Lease per node in kube-node-lease
// every lease_seconds / 4 (the kubelet's own rule). No controller-manager runs, so the
// not-ready taint admission puts on a new node stays, as on any KWOK cluster without one; cmax
// ignores taints that are not its own.
//
// FleetAgents starts one cmaxd process per given node, as the least-privilege ServiceAccount of
// deploy/kubernetes/cmaxd.yaml, each reading its own FIFO of kernel-log records instead of this
// machine's /dev/kmsg, so that a test can fault any subset of them in the same instant.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "support/daemon.h"
#include "support/kube_cluster.h"

namespace cmax::test {

struct KwokFleetSpec {
  int nodes = 1000;
  /// Node Lease duration; KWOK renews each Lease every quarter of it (the kubelet's default is
  /// 40 s: renewal every 10 s). The fleet tests state a slower rate so that two cores can carry
  /// the heartbeats of thousands of nodes beside the measurement.
  int lease_seconds = 240;
  int nodes_per_rack = 32;
  int nodes_per_nvlink_domain = 18;  ///< GB200 NVL72: 18 trays of 4 GPUs; labelled nvidia.com/gpu.clique
  int register_threads = 8;
  std::chrono::seconds ready_timeout{600};
};

class KwokFleet {
 public:
  /// Why KWOK cannot run here (build_kwok.sh said why, or it is not built), or nullopt.
  static std::optional<std::string> unavailable();
  /// Registers the nodes, starts KWOK, waits until every node is Ready as KWOK set it.
  static Result<std::unique_ptr<KwokFleet>> start(const KubeCluster& kube, const KwokFleetSpec& spec);
  ~KwokFleet();
  KwokFleet(const KwokFleet&) = delete;
  KwokFleet& operator=(const KwokFleet&) = delete;

  /// "kwok-00042": node i of the fleet.
  static std::string node_name(int i);
  int size() const { return spec_.nodes; }
  double register_seconds() const { return register_s_; }  ///< POSTing the Node objects
  double ready_seconds() const { return ready_s_; }        ///< KWOK started -> every node Ready
  bool running() { return kwok_ && kwok_->running(); }
  std::string log_tail() const;

 private:
  explicit KwokFleet(const KubeCluster& kube, KwokFleetSpec spec) : kube_(kube), spec_(spec) {}
  const KubeCluster& kube_;
  KwokFleetSpec spec_;
  std::optional<Daemon> kwok_;
  double register_s_ = 0, ready_s_ = 0;
};

struct FleetAgentSpec {
  std::string cmaxd;               ///< the cmaxd binary
  std::vector<std::string> nodes;  ///< one cmaxd each
  double fleet_max_percent = 100;
  std::string pool_selector;       ///< --kube-pool-selector ("" : the whole cluster, as deployed)
  std::filesystem::path dir;       ///< FIFOs, event logs, stderr logs
  std::chrono::seconds ready_timeout{60};
};

class FleetAgents {
 public:
  /// Makes a FIFO per node and starts a cmaxd per node on it; waits until each says it reads.
  static Result<std::unique_ptr<FleetAgents>> start(const KubeCluster& kube, const FleetAgentSpec& spec);
  ~FleetAgents();
  FleetAgents(const FleetAgents&) = delete;
  FleetAgents& operator=(const FleetAgents&) = delete;

  std::size_t size() const { return spec_.nodes.size(); }
  const std::string& node(std::size_t i) const { return spec_.nodes[i]; }
  /// Writes a fatal Xid 79 record to agent i's FIFO, stamped now; returns when it is written.
  Result<void> fault(std::size_t i);
  /// Agent i's stderr (its JSON log lines).
  std::string log(std::size_t i) const;
  std::filesystem::path log_path(std::size_t i) const;
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
