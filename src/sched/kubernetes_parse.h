#pragma once
// The JSON side of KubernetesScheduler, pure: a Node object -> NodeState and the fields cmax
// patches, a NodeList page -> NodeStates, and the request bodies cmax sends. No I/O; nlohmann::json
// stays in the .cpp.

#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/node_state.h"

namespace cmax::sched::kube {

/// Taint key of a node cmax holds out of service (drain); effect NoSchedule.
inline constexpr std::string_view kUnhealthyTaint = "cmax.io/unhealthy";
/// Taint key of a node cmax wants rebooted; effect NoExecute (or NoSchedule, see
/// KubernetesOptions).
inline constexpr std::string_view kRebootTaint = "cmax.io/reboot-required";
/// Annotation holding cmax's full reason ("cmax: Xid 79 ..."): the mark that cmax holds the node.
inline constexpr std::string_view kReasonAnnotation = "cmax.io/reason";
/// Annotation "true" when cmax set spec.unschedulable, so resume uncordons only its own cordon.
inline constexpr std::string_view kCordonedAnnotation = "cmax.io/cordoned";
/// Set on a node while cmax holds it, removed with the hold: the fleet breaker lists the nodes
/// that carry it (a label selector) instead of the whole pool.
inline constexpr std::string_view kHeldLabel = "cmax.io/held";
/// Node condition cmax sets in status, next to the kubelet's and node-problem-detector's.
inline constexpr std::string_view kConditionType = "CmaxHealthy";
/// Condition reasons: a fault cmax holds the node for, a reboot it asks for, a resume.
inline constexpr std::string_view kFaultReason = "CmaxFault";
inline constexpr std::string_view kRebootReason = "CmaxRebootRequired";
inline constexpr std::string_view kResumedReason = "CmaxResumed";

/// Content types of the two PATCHes: JSON Patch (RFC 6902) on the node, strategic merge on status.
inline constexpr std::string_view kJsonPatch = "application/json-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";

/// Where the API server is: from KubernetesOptions::api_url.
struct ApiEndpoint {
  bool tls = true;
  std::string host;  ///< without IPv6 brackets
  int port = 443;
  std::string base_path;  ///< "" or a proxy prefix like "/k8s/clusters/c-1", no trailing '/'
};

/// Parses "https://host[:port][/prefix]"; "http://" only to a loopback host (127.0.0.0/8,
/// localhost, [::1]), for tests: a token must never cross a network in clear text.
Result<ApiEndpoint> parse_api_url(std::string_view url);

/// The API URL inside a pod from KUBERNETES_SERVICE_HOST and _PORT: "https://[fd00::1]:443".
Result<std::string> in_cluster_url(std::string_view host, std::string_view port);

/// Ok when `node` is a Kubernetes node name (DNS-1123 subdomain: lower-case letters, digits, '-'
/// and '.', alphanumeric at both ends, at most 253): safe to put in a URL path as is.
Result<void> check_node_name(std::string_view node);

/// `s` percent-encoded for a query value: everything but A-Z a-z 0-9 - . _ ~ becomes %XX.
std::string encode_query_value(std::string_view s);

/// `reason` (its "cmax: " prefix dropped) as a taint value: runs of characters other than
/// A-Z a-z 0-9 - _ . become one '-', alphanumeric at both ends, at most 63 characters; may be "".
std::string taint_value(std::string_view reason);

/// One entry of spec.taints.
struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

/// A node as cmax reads it: the NodeState the policy decides on, and what a patch must know.
struct Node {
  /// base READY / NOTREADY / UNKNOWN from the Ready condition; flags DRAIN (cordoned, or a cmax
  /// taint on it), NOT_RESPONDING (Ready is Unknown), REBOOT_REQUESTED (cmax's reboot taint);
  /// reason cmax's annotation when cmax holds it, "cordoned" when someone else did.
  NodeState state;
  std::string resource_version;
  /// spec as read, serialized ("" when the object had none): what a patch tests, so that a change
  /// to the node's labels, annotations or status by someone else is no conflict, while one to its
  /// taints or cordon is.
  std::string spec_json;
  bool unschedulable = false;
  bool has_annotations = false;  ///< metadata.annotations exists (JSON Patch adds into it)
  bool has_labels = false;       ///< metadata.labels exists
  bool held_label = false;       ///< cmax.io/held is set
  std::optional<std::string> reason_annotation;  ///< cmax.io/reason, when set
  bool cordoned_by_cmax = false;                 ///< cmax.io/cordoned is "true"
  bool has_taints = false;                       ///< spec.taints exists
  std::vector<Taint> taints;                     ///< spec.taints in order
  std::string condition_status;  ///< CmaxHealthy's status ("True", "False"); "" when absent
};

/// A Node object (GET /api/v1/nodes/{name}) -> Node; an error for anything that is not one.
Result<Node> parse_node(std::string_view json);

/// One page of a NodeList (GET /api/v1/nodes?limit=...).
struct NodePage {
  std::vector<NodeState> nodes;
  std::string continue_token;  ///< metadata.continue; "" on the last page
};

/// A NodeList object -> its nodes' states and the token for the next page.
Result<NodePage> parse_node_list(std::string_view json);

/// How many objects one page of a list holds, and how many more the server says remain: a NodeList
/// or a PartialObjectMetadataList (Accept ...;as=PartialObjectMetadataList), whose items are only
/// metadata. remainingItemCount is set by the API server only for lists without selectors.
struct ListCount {
  std::size_t items = 0;
  std::optional<std::int64_t> remaining;  ///< metadata.remainingItemCount
  std::string continue_token;             ///< metadata.continue; "" on the last page
};
Result<ListCount> parse_list_count(std::string_view json);

/// One event of a Node watch (GET /api/v1/nodes?watch=1..., one JSON object a line).
struct WatchEvent {
  std::string type;              ///< ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
  std::string resource_version;  ///< the object's metadata.resourceVersion: where a new watch resumes
  std::optional<Node> node;      ///< the Node, for ADDED, MODIFIED and DELETED
  int error_code = 0;            ///< ERROR: the Status's code (410 Gone: resume from a fresh read)
  std::string error_message;     ///< ERROR: the Status's message
};
/// A watch event line -> the event; an error for a line that is not one (or a Node event whose
/// object is not a Node).
Result<WatchEvent> parse_node_watch_event(std::string_view line);

/// The fleet breaker's slots (coordination.k8s.io/v1 Leases in the breaker's namespace): a pool
/// whose limit is L has slot names PREFIX-0 .. PREFIX-(L-1); an agent takes one by creating it
/// (the API server lets one create of a name succeed) or, when its holder is no longer held and its
/// claim is older than the TTL, by replacing it on its resourceVersion. So at most L agents hold a
/// slot at once, and no agent drains without one.
inline constexpr std::string_view kSlotPoolLabel = "cmax.io/breaker-pool";
struct BreakerSlot {
  std::string name;
  int index = -1;                ///< the number after the last '-'; -1 when the name has none
  std::string holder;            ///< spec.holderIdentity: the node that claimed it
  std::int64_t acquired_ms = 0;  ///< spec.acquireTime, ms since the epoch (0: unreadable)
  std::string resource_version;
};
/// A LeaseList of slots -> its slots (items that are not readable slots are skipped).
Result<std::vector<BreakerSlot>> parse_breaker_slots(std::string_view json);
/// A slot Lease for `holder`, acquired at `acquired_ms`; with `resource_version` for a replace.
std::string breaker_slot_json(std::string_view name, std::string_view ns, std::string_view pool_key,
                              std::string_view holder, std::int64_t acquired_ms, int duration_s,
                              std::string_view resource_version = {});
/// The short key of a pool selector in slot names and labels: "all" without one, else 8 hex digits
/// of its FNV-1a hash.
std::string breaker_pool_key(std::string_view pool_selector);

/// A pool's node count as an agent last counted it, kept in the Lease
/// breaker_lease-<pool key>-total (annotations cmax.io/pool-total and cmax.io/pool-counted-at, ms
/// since the epoch), so that other agents read one small object instead of paging through the
/// pool's metadata (what a pool selector costs: the server gives no remainingItemCount then).
inline constexpr std::string_view kPoolTotalAnnotation = "cmax.io/pool-total";
inline constexpr std::string_view kPoolCountedAtAnnotation = "cmax.io/pool-counted-at";
struct PoolTotal {
  int total = 0;
  std::int64_t counted_ms = 0;
  std::string resource_version;
};
/// A Lease -> its pool total; nullopt when the annotations are missing or unreadable.
std::optional<PoolTotal> parse_pool_total(std::string_view json);
/// The Lease for `total`, counted by `holder` at `counted_ms`; with `resource_version` for a replace.
std::string pool_total_json(std::string_view name, std::string_view ns, int total, std::int64_t counted_ms,
                            std::string_view holder, std::string_view resource_version = {});

/// What the slots say for `node`: whether it holds one already, how many nodes the breaker counts
/// (live slot holders and held nodes, once each, plus held nodes it could not name), and which slot
/// indices below `limit` it may try: free ones, and stale ones (holder not held, older than the TTL).
struct SlotView {
  bool mine = false;
  int count = 0;
  std::vector<std::string> live_holders;  ///< sorted
  std::vector<int> free;                  ///< indices with no slot object
  std::vector<BreakerSlot> stale;         ///< slots that may be replaced
};
SlotView view_slots(const std::vector<BreakerSlot>& slots, std::string_view node,
                    const std::vector<std::string>& held_nodes, int held_unnamed, int limit, std::int64_t now_ms,
                    std::int64_t ttl_ms);


/// The message of a Kubernetes Status object (an error answer); nullopt when `json` is not one.
std::optional<std::string> status_message(std::string_view json);

/// What a hold marks the node for.
enum class Hold { kFault, kReboot };

/// The JSON Patch that holds `node` for `reason` (full, with prefix): first a "test" that spec is
/// still as read (and, when the node had no annotations, a "test" of null that it still has none,
/// since adding the whole map would replace one written meanwhile); cordon (and cmax.io/cordoned "true") unless already cordoned;
/// cmax's taint of this kind replaced (key `kUnhealthyTaint` NoSchedule, or `kRebootTaint` with
/// `reboot_effect`, its timeAdded `now_utc`); cmax.io/reason set. Other taints are not touched.
std::string hold_patch(const Node& node, std::string_view reason, Hold hold,
                       std::string_view reboot_effect, std::string_view now_utc);

/// The JSON Patch that undoes cmax's hold: the same tests as hold_patch; both cmax taints and both
/// annotations removed; spec.unschedulable removed when `uncordon`. Other taints are not touched.
std::string release_patch(const Node& node, bool uncordon);

/// The strategic merge patch of /status that sets condition CmaxHealthy (merged by type): status
/// "True"/"False", `reason`, `message`, lastHeartbeatTime `now_utc`, and lastTransitionTime
/// `now_utc` when the status changes from `previous_status`.
std::string condition_patch(std::string_view status, std::string_view reason,
                            std::string_view message, std::string_view previous_status,
                            std::string_view now_utc);

}  // namespace cmax::sched::kube
