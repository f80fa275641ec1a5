#pragma once
// Fan-out on Kubernetes: one collect Pod per GPU node (kube_manifest.h), created through the API
// server, watched until it ends, its log read back as the node's document, then deleted.
//
// Per node: the node list says NotReady or Unknown -> not_scheduled, not tried (the kubelet would
// not start the pod). Cordoned or held by cmax -> tried all the same: spec.nodeName bypasses the
// scheduler, so a cordon does not keep the pod off, and the detail says the node is cordoned.
// POST the pod; GET it every 200 ms, growing to 1 s, until Succeeded or Failed or the node timeout;
// GET its log (the collect document; stderr lines around it are dropped); DELETE it, always: on
// success, failure, timeout and error alike (a failed DELETE is added to the detail, with the
// `kubectl delete` to run).
//   ok           Succeeded and the log holds a JSON object
//   failed       Failed with a container exit code (reason, code, termination message), or
//                Succeeded without a document, or the pod vanished
//   unreachable  the kubelet refused it (Failed before any container ran: OutOfcpu,
//                NodeAffinity...), Pending Unschedulable, or its node lost
//   timeout      still Pending or Running at the node timeout (or the overall deadline), or the
//                pod's activeDeadlineSeconds ended it (DeadlineExceeded)
//
// The credentials need, in the namespace: pods create, get, delete and pods/log get; cluster-wide:
// nodes list. A create refused with 400, 401, 403, 404 or 422 is the same for every node: the run
// stops there with an error naming the request and the RBAC rule or fix, and no node results are
// made up (pods already created are deleted).

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/fanout.h"
#include "cluster/kube_manifest.h"
#include "core/result.h"
#include "sched/kubernetes.h"

namespace cmax::cluster {

/// One request the fan-out sends, or in a dry run would send.
struct KubeRequest {
  std::string method;
  std::string path;  ///< with its query
  std::string body;  ///< JSON; empty for GET and DELETE
};

struct KubeFanoutOptions {
  /// API URL, token, CA and per-request timeout (KubernetesOptions::in_cluster() inside a pod).
  /// Its dry_run and pool_selector are not used.
  sched::KubernetesOptions api;
  /// run_id, namespace, image, collect args; node_timeout is set from node_timeout below.
  CollectSpec pod;
  /// Label selector the nodes are listed with (GET /api/v1/nodes?labelSelector=...); empty: all.
  std::string node_selector = std::string(kDefaultGpuSelector);
  /// These nodes instead of a selector, in this order; a name the cluster lacks is reported
  /// unreachable.
  std::vector<std::string> nodes;
  /// From a pod's creation to its end; also its activeDeadlineSeconds (rounded up).
  std::chrono::milliseconds node_timeout{std::chrono::seconds(120)};
  /// The whole run, listing included; a node not started by then is reported timeout.
  std::chrono::milliseconds deadline{std::chrono::seconds(900)};
  /// Pods alive at once (1..1024).
  int max_in_flight = 64;
  /// Lists the nodes (read-only), then reports every request it would send to `on_dry_run` and
  /// creates nothing; each node is reported not_scheduled with detail "dry run".
  bool dry_run = false;
  std::function<void(const KubeRequest&)> on_dry_run;
  /// Largest log read back per node (limitBytes of the log request).
  std::size_t max_log_bytes = 16u << 20;
};

/// Runs the collect on every node and returns one NodeOutput per node, in list order (selector:
/// by name). `on_node` is called once per node as it finishes, from the fan-out's worker threads,
/// one call at a time. An error only when the run as a whole cannot go on: bad options, the node
/// list unreadable, or a create refused for reasons every node shares (403 and the like). Blocks
/// for at most options.deadline plus one request timeout.
Result<std::vector<NodeOutput>> kube_fanout(const KubeFanoutOptions& options,
                                            const NodeCallback& on_node);

/// The collect document in a pod's log: the whole trimmed log when it is one JSON object, else the
/// first line-start '{' whose text to the end (or whose line alone) is one (stderr lines before or
/// after it). nullopt when the log holds none.
std::optional<std::string> document_from_log(std::string_view log);

}  // namespace cmax::cluster
