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
// support/fleet_agents.h runs the real cmaxd agents of some of its nodes (kube_agent_args: as the
// least-privilege ServiceAccount of deploy/kubernetes/cmaxd.yaml).

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
#include "support/fleet_agents.h"
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
  /// cmaxd's arguments for an agent of this fleet: --scheduler kubernetes, the API server, the
  /// cmaxd ServiceAccount's token and the CA.
  std::vector<std::string> agent_args() const;
  double register_seconds() const { return register_s_; }  ///< POSTing the Node objects
  double ready_seconds() const { return ready_s_; }        ///< KWOK started -> every node Ready
  bool running() { return kwok_ && kwok_->running(); }
  pid_t pid() const { return kwok_ ? kwok_->pid() : -1; }
  std::string log_tail() const;

 private:
  explicit KwokFleet(const KubeCluster& kube, KwokFleetSpec spec) : kube_(kube), spec_(spec) {}
  const KubeCluster& kube_;
  KwokFleetSpec spec_;
  std::optional<Daemon> kwok_;
  double register_s_ = 0, ready_s_ = 0;
};

}  // namespace cmax::test
