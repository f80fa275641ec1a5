#pragma once
// Scheduler on Kubernetes: the node agent talks to the API server with its pod's service account.
//
// What cmax does to a Node (all of it visible in `kubectl describe node`):
//   drain    cordon (spec.unschedulable=true) unless already cordoned; taint
//            cmax.io/unhealthy=<short reason>:NoSchedule; annotations cmax.io/reason="cmax:
//            <reason>" and, only when cmax set the cordon, cmax.io/cordoned="true"; node condition
//            CmaxHealthy=False, reason CmaxFault, message the reason. Running pods are not evicted:
//            like Slurm's drain, work in progress finishes. Evict them with `kubectl drain` if
//            needed.
//   reboot   Kubernetes has no reboot API. cmax cordons and annotates as for drain, taints
//            cmax.io/reboot-required=<short reason>:NoExecute (evicting pods that do not tolerate
//            it; NoSchedule with reboot_evicts=false) and sets CmaxHealthy=False reason
//            CmaxRebootRequired. A reboot controller must act on that: the site's own, watching the
//            taint or condition, or kured given a --reboot-sentinel-command that tests for it.
//            After the reboot, `resume` returns the node to service; nothing here does it by
//            itself.
//   resume   only a node cmax holds (cmax.io/reason starts with "cmax: "), unless forced: removes
//            both cmax taints and both annotations, sets CmaxHealthy=True reason CmaxResumed (when
//            the node has that condition), and uncordons only when cmax.io/cordoned says cmax
//            cordoned it (forced: also a node someone else cordoned). Other taints and annotations
//            are never touched.
//
// NodeState: base READY / NOTREADY / UNKNOWN from the Ready condition; flag DRAIN when cordoned or
// carrying a cmax taint (a cmax taint keeps pods off even after a hand `kubectl uncordon`),
// NOT_RESPONDING when Ready is Unknown, REBOOT_REQUESTED with the reboot taint; reason cmax's
// annotation, or "cordoned" for someone else's cordon, so policy.h tells the two holds apart.
//
// Taints are a list, which a strategic merge patch would replace whole, so spec and metadata
// change through one JSON Patch whose first op tests that spec is still as cmax read it (and, for a
// node without annotations, that it still has none: a "test" of null): a taint or cordon change made by
// someone else since cmax read the node fails the patch (422) instead of being lost, and cmax reads
// the node again and retries, a bounded number of times; a label, annotation or status write by
// another controller (the kubelet, node-feature-discovery) is no conflict at all. Conditions merge
// by type, so status takes a strategic merge patch of /status, sent after the node's patch: when
// it fails, the error says the node is patched already (cordoned and tainted) and only the
// condition is missing.
//
// The service account needs get, list and patch on nodes and patch on nodes/status (a
// ClusterRole; deploy/kubernetes/cmaxd.yaml). The token file is read on every request, since
// bound service-account tokens rotate.

#include <chrono>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "sched/kubernetes_parse.h"
#include "sched/scheduler.h"

namespace cmax::sched {

class KubeClient;

/// How KubernetesScheduler reaches the API server.
struct KubernetesOptions {
  /// "https://10.96.0.1:443" (a path prefix is kept: "https://proxy/k8s/clusters/c-1"). Plain
  /// "http://" is refused except to a loopback host (127.0.0.0/8, localhost, [::1]), for tests.
  std::string api_url;
  /// Bearer token, read before every request; empty path: no Authorization header.
  std::string token_path = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  /// Bearer token given inline (a kubeconfig's user.token); used only when token_path is empty.
  /// Never logged.
  std::string token;
  /// CA bundle the API server's certificate must verify against (https only).
  std::string ca_path = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  /// CA bundle given inline as PEM (a kubeconfig's certificate-authority-data); when set it is used
  /// instead of ca_path.
  std::string ca_pem;
  /// Connect, read and write timeout of each request; a call makes a few requests.
  std::chrono::milliseconds timeout{5000};
  /// Mutating calls still GET the node, then report the PATCHes in Action::argv without sending.
  bool dry_run = false;
  /// Label selector of the pool held_by_cmax counts ("pool=a100", "gpu in (h100,h200)"); empty:
  /// every node in the cluster.
  std::string pool_selector;
  /// Effect of the reboot taint: NoExecute (pods leave now) when true, else NoSchedule (running
  /// pods finish first, like Slurm's `reboot ASAP`).
  bool reboot_evicts = true;
  /// The Leases the fleet breaker's agents take their slots through (claim_hold): namespace and
  /// name prefix, and how long a claim counts before the node shows as held (or the drain failed).
  std::string breaker_namespace = "cmax-system";
  std::string breaker_lease = "cmax-fleet-breaker";
  std::chrono::seconds claim_ttl{120};
  /// With a pool selector, how long a pool's node count (kept in the Lease
  /// breaker_lease-<pool key>-total by the agent that counted it) is used before it is counted again.
  std::chrono::seconds pool_total_ttl{600};
  /// How long one watch of a held node (wait_in_service) lasts before it is opened again from
  /// where it stopped: a held node costs one request per this, an idle agent none.
  std::chrono::seconds watch_timeout{600};
  /// The User-Agent of every request ("cmax/VERSION" when empty): cmaxd names its node in it, so
  /// that the API server's audit log tells the agents apart.
  std::string user_agent;

  /// Options for a pod: api_url from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
  static Result<KubernetesOptions> in_cluster();
  /// As in_cluster(), from the two values given (an IPv6 host gets brackets).
  static Result<KubernetesOptions> in_cluster(std::string_view service_host,
                                              std::string_view service_port);
};

/// Scheduler over the Kubernetes API. Each call makes one GET, then for a change one JSON Patch of
/// the node and one strategic merge patch of its status (more GETs and JSON Patches when the node
/// changes under it, at most kMaxTries each), each request bounded by options.timeout. Action::argv
/// lists each request sent (dry run: that would be sent) as method, path, body:
/// {"PATCH", "/api/v1/nodes/n1", "[...]", "PATCH", "/api/v1/nodes/n1/status", "{...}"}; the
/// first is application/json-patch+json, the second application/strategic-merge-patch+json.
/// Errors name the action, node, request, HTTP status and the API's message, then what to do.
/// Not thread-safe; cheap to construct; opens one connection per request.
class KubernetesScheduler final : public Scheduler {
 public:
  /// How many times a patch is tried when the node changed since it was read (409/422).
  static constexpr int kMaxTries = 6;

  /// Uses the system clock for condition and taint times.
  explicit KubernetesScheduler(KubernetesOptions options);
  /// `clock` stamps condition and taint times; it must outlive the scheduler.
  KubernetesScheduler(KubernetesOptions options, const core::Clock& clock);

  Result<NodeState> node_state(std::string_view node) override;
  Result<Action> drain(std::string_view node, std::string_view reason) override;
  Result<Action> resume(std::string_view node, Force force) override;
  Result<Action> reboot(std::string_view node, std::string_view reason) override;
  /// Lists the nodes options.pool_selector picks (all without one), 500 a page, and counts those
  /// cmax holds (cordoned or carrying a cmax taint, with a "cmax: " reason).
  Result<PoolCount> held_by_cmax(std::string_view node) override;
  /// Through slot Leases breaker_namespace/breaker_lease-<pool key>-<i>, i < `limit` (see
  /// kube::BreakerSlot): first a create of the slot the node's name hashes to (one request when the
  /// burst is far below the limit); when that name is taken, a list of the pool's slots, then creates
  /// of free names and replaces of stale claims on their resourceVersion, in random order. Held
  /// nodes and live claims together never pass `limit`. Leases this agent may not read or write
  /// (403, 404 on the API) grant the slot as read-then-act did, not exact, saying why.
  Result<Claim> claim_hold(std::string_view node, const PoolCount& pool, int limit) override;
  bool watches_resume() const override { return true; }
  /// One GET of the node, then a watch of it alone (fieldSelector metadata.name), opened again
  /// every options.watch_timeout from the last resourceVersion (after a 410, from a new GET). Safe
  /// beside the other calls: every request has its own connection.
  Result<std::optional<NodeState>> wait_in_service(std::string_view node, std::stop_token stop) override;

  /// GET `path` ("/api/v1/pods?fieldSelector=...", encoded by the caller) read-only: the body of a
  /// 2xx answer, or an error naming the request, status and the API's message.
  Result<std::string> get(const std::string& path);

  const KubernetesOptions& options() const { return options_; }

 private:
  struct Reply {
    int status = 0;
    std::string reason;  ///< HTTP reason phrase
    std::string body;
  };

  Result<Reply> request(std::string_view method, const std::string& path,
                        std::string_view content_type, const std::string& body,
                        std::string_view accept = "application/json");
  /// The nodes of the pool that `extra_selector` and the pool selector pick, listed page by page;
  /// each page is handed to `on_page`.
  Result<void> list_nodes(std::string_view action, std::string_view node, const std::string& extra_selector,
                          const std::function<void(const std::vector<NodeState>&)>& on_page);
  /// How many nodes the pool has, read as metadata only: one object and the server's
  /// remainingItemCount when it gives one (no selector); with a selector the count another agent
  /// kept in the pool's total Lease while it is younger than pool_total_ttl, else pages of metadata
  /// (then kept there).
  Result<int> count_pool(std::string_view action, std::string_view node);
  /// The count itself, page by page.
  Result<int> count_pool_pages(std::string_view action, std::string_view node);
  Result<kube::Node> read_node(std::string_view node);
  Result<Action> hold(std::string_view action, std::string_view node, std::string_view reason,
                      kube::Hold kind);

  KubernetesOptions options_;
  Result<kube::ApiEndpoint> endpoint_;
  const core::Clock* clock_;
  std::shared_ptr<KubeClient> client_;  ///< one kept-alive connection for the calls; a watch opens its own
  std::atomic<std::uint64_t> requests_{0}, bytes_received_{0};

 public:
  /// What this scheduler asked of the API server so far: requests and answer bytes (for the
  /// fleet-scale measurements: the cost of one decision against the size of the pool).
  std::uint64_t requests_sent() const { return requests_.load(); }
  std::uint64_t bytes_received() const { return bytes_received_.load(); }
};

}  // namespace cmax::sched
