#pragma once
// The Kubernetes objects of a collect run, rendered as JSON text (kubectl and the API server take
// JSON as they take YAML; JSON is YAML 1.2). Pure: no I/O, deterministic output.
//
// A collect Pod runs `cmax collect --host-root /host --json` once on one node: pinned there by
// spec.nodeName, so the scheduler is bypassed and a cordon does not keep it off (a NotReady node is
// not tried at all, see kube_fanout.h); tolerating every taint, so a node held by cmax or tainted
// for GPUs still runs it; privileged with hostPID and hostNetwork, the host's / read-only at /host,
// NVIDIA_VISIBLE_DEVICES=all so the NVIDIA runtime hands it the driver without taking a GPU from
// the node's allocatable ones; restartPolicy Never and activeDeadlineSeconds = the node timeout, so
// the kubelet ends it even when the controller that created it has gone.
//
// The DaemonSet is for operators who apply the objects themselves (`cmax run --render-manifest`):
// an init container runs the same collect on every node that matches a nodeSelector, and a pause
// container holds the pod so it is not restarted; the documents are read with
// `kubectl logs -l cmax.io/run=<id> -c collect --prefix`.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::cluster {

/// Labels on every object of a run: app.kubernetes.io/name=cmax, cmax.io/run=<run id>.
inline constexpr std::string_view kAppLabel = "app.kubernetes.io/name";
inline constexpr std::string_view kRunLabel = "cmax.io/run";
/// The node selector of GPU nodes that NVIDIA's GPU feature discovery labels.
inline constexpr std::string_view kDefaultGpuSelector = "nvidia.com/gpu.present=true";
/// Longest pod or DaemonSet name rendered: a DNS-1123 label, so it also serves as a hostname.
inline constexpr std::size_t kMaxObjectName = 63;

/// What every object of a collect run holds.
struct CollectSpec {
  std::string run_id;  ///< lower-case letters, digits and '-' (check_run_id); labels and names
  std::string ns = "default";  ///< namespace of the pods
  std::string image;           ///< an image holding `cmax` on its PATH
  std::string image_pull_policy = "IfNotPresent";
  std::vector<std::string> collect_args;                  ///< appended after `--json`
  std::chrono::seconds node_timeout{120};                 ///< activeDeadlineSeconds of each pod
  std::string pause_image = "registry.k8s.io/pause:3.9";  ///< DaemonSet's holding container
};

/// Ok when `run_id` is 1..40 of [a-z0-9-], alphanumeric at both ends (a label value that leaves
/// room for the node in a pod name).
Result<void> check_run_id(std::string_view run_id);

/// Ok when `ns` is a namespace name (DNS-1123 label: [a-z0-9-], alphanumeric ends, at most 63).
Result<void> check_namespace(std::string_view ns);

/// "cmax-collect-<run id>-<node>": lower-cased, characters other than [a-z0-9.-] as '-', at most
/// kMaxObjectName; a longer one is cut and ends in '-' and 8 hex digits of a hash of run id and
/// node, so two nodes never share a name. Deterministic.
std::string collect_pod_name(std::string_view run_id, std::string_view node);

/// The Pod (apiVersion v1) that collects on `node`, as JSON text. The spec is not checked here:
/// check_run_id and check_namespace first.
std::string render_collect_pod(const CollectSpec& spec, std::string_view node);

/// The DaemonSet (apps/v1) "cmax-collect-<run id>" that collects once on every node matching
/// `node_selector` ("key=value[,key=value...]", equality only: a nodeSelector). An error names a
/// selector term that is not key=value.
Result<std::string> render_collect_daemonset(const CollectSpec& spec,
                                             std::string_view node_selector);

}  // namespace cmax::cluster
