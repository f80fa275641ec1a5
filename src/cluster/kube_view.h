#pragma once
// The Kubernetes cluster view of `cmax run --harness kubernetes`: what the API server says about
// the cluster as a whole, which no node's own collect can see.
//
//   orchestration.kube.topology        topology-aware placement: Kueue TAS Topology objects,
//                                      Volcano HyperNodes, NVIDIA NVLink cliques
//                                      (nvidia.com/gpu.clique) or rack/block network labels on
//                                      every selected node; zone and region alone are not enough
//   monitoring.kube.dcgm_exporter      a dcgm-exporter DaemonSet whose pods are ready on the GPU
//                                      nodes
//   security.kube.dcgm_exporter.floor  its image tag "<DCGM>-<exporter>-<os>" judged by the same
//                                      check and floors as a host's dcgm-exporter
//   security.kube.nodes_proxy.holders  every subject a ClusterRoleBinding gives get on nodes/proxy
//                                      (the kubelet API of every node: exec into any pod); the
//                                      cluster's own system: identities are listed, not failed
//
// Read-only: GETs of nodes, DaemonSets, ClusterRoles, ClusterRoleBindings and the two topology
// APIs. A list the credentials may not read makes its finding unverified, never a pass. The
// judges are pure functions of the API's answers.

#include <string>
#include <string_view>
#include <vector>

#include "audit/floors.h"
#include "audit/model.h"
#include "core/clock.h"
#include "core/result.h"
#include "sched/kube_client.h"

namespace cmax::cluster {

/// One node as the view reads it: name and labels.
struct KubeViewNode {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
};

/// What the API server answered to the view's GETs (a reply, or the transport error).
struct KubeViewAnswers {
  Result<sched::KubeReply> nodes;                 ///< GET /api/v1/nodes (the selected ones)
  Result<sched::KubeReply> kueue_topologies;      ///< GET .../kueue.x-k8s.io/VERSION/topologies
  Result<sched::KubeReply> volcano_hypernodes;    ///< GET .../topology.volcano.sh/VERSION/hypernodes
  Result<sched::KubeReply> daemonsets;            ///< GET /apis/apps/v1/daemonsets
  Result<sched::KubeReply> clusterroles;          ///< GET .../rbac.authorization.k8s.io/v1/clusterroles
  Result<sched::KubeReply> clusterrolebindings;   ///< GET .../rbac.authorization.k8s.io/v1/clusterrolebindings
};

/// Pure: the topology finding. `selected` names the nodes the run collected on (empty: every node
/// in the list).
audit::Finding judge_kube_topology(const KubeViewAnswers& a, const std::vector<std::string>& selected);

/// Pure: dcgm-exporter's DaemonSet and whether its pods are ready on as many nodes as the run
/// selected (`gpu_nodes`).
audit::Finding judge_dcgm_exporter_daemonset(const KubeViewAnswers& a, std::size_t gpu_nodes);

/// Pure: dcgm-exporter's release from its image tag against the floors.
audit::Finding judge_dcgm_exporter_floor(const KubeViewAnswers& a, const audit::Floors& floors,
                                         const core::Clock& clock);

/// Pure: who ClusterRoleBindings give get on nodes/proxy.
audit::Finding judge_nodes_proxy_holders(const KubeViewAnswers& a);

/// "DCGM EXPORTER" from a dcgm-exporter image reference ("nvcr.io/nvidia/k8s/dcgm-exporter:
/// 4.2.3-4.1.3-ubuntu22.04" -> "4.2.3", "4.1.3"), or nullopt when the tag does not follow NVIDIA's
/// "<DCGM>-<exporter>-<os>" grammar (latest, a digest, a truncated tag): never half a reading.
std::optional<std::pair<std::string, std::string>> dcgm_exporter_tag_versions(std::string_view image);

/// Asks the API server (each GET bounded by the client's timeout) and judges. Never fails.
std::vector<audit::Finding> run_kube_view(const sched::KubeClient& client, const std::vector<std::string>& selected,
                                          const audit::Floors& floors, const core::Clock& clock);

}  // namespace cmax::cluster
