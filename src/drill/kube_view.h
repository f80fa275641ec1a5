#pragma once
// A Kubernetes node as a drill sees it, black-box: whatever marks the node (a cordon, any
// controller's taint, a problem condition such as node-problem-detector's, NotReady) and whether
// workload pods still run on it, folded into the NodeState the drill's timeline reads. Pure: the
// Node and PodList JSON in, a value out; no I/O.
//
//   base    DOWN when the Ready condition is not True; else ALLOCATED when a workload pod (not a
//           DaemonSet's, not a static mirror pod, phase neither Succeeded nor Failed) is bound to
//           the node, IDLE when none is.
//   flags   DRAIN when cordoned (spec.unschedulable) or carrying a NoSchedule or NoExecute taint
//           whose key the node did not carry before the drill (a GPU pool's dedicated taint is
//           not a drain); NOT_RESPONDING when Ready is Unknown.
//   reason  what marks the node, in a fixed order: "cordoned", each new taint "taint
//           key=value:Effect", each problem condition "condition Type=Status (Reason)" (any
//           condition but Ready and CmaxHealthy that is True; Ready or CmaxHealthy that is not
//           True). A problem condition alone is a detection without a drain, as the timeline's
//           "a new reason" rule sees it.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/node_state.h"

namespace cmax::drill {

struct KubeView {
  sched::NodeState state;
  std::vector<std::string> taint_keys;  ///< every taint's key, to ignore as "before the drill"
  int workload_pods = 0;
};

/// Where a workload's pods run, for the drill's "replaced" on Kubernetes: the pods a label selector
/// names (GET /api/v1/pods?labelSelector=...), counted when Running and not being deleted (no
/// deletionTimestamp), on the target and elsewhere.
struct KubeWorkload {
  std::string selector;
  int on_target = 0;
  int elsewhere = 0;
  std::vector<std::string> elsewhere_nodes;  ///< sorted, each once
};

/// `pods_json` a PodList; anything else is an error.
Result<KubeWorkload> kube_workload(std::string_view pods_json, std::string_view target, std::string_view selector);

/// `node_json` a Node object (GET /api/v1/nodes/NAME), `pods_json` a PodList of the pods bound to
/// it (GET /api/v1/pods?fieldSelector=spec.nodeName=NAME); taints whose key is in
/// `taints_before` do not count. Anything that is not a Node or a PodList is an error.
Result<KubeView> kube_view(std::string_view node_json, std::string_view pods_json,
                           const std::vector<std::string>& taints_before);

}  // namespace cmax::drill
