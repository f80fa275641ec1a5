// KubernetesScheduler: node reads and patches over sched::KubeClient (kube_client.cpp holds
// cpp-httplib); JSON stays in kubernetes_parse.cpp.

#include "sched/kubernetes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "core/strings.h"
#include "sched/kube_client.h"
#include "sched/policy.h"


namespace cmax::sched {
namespace {

using std::chrono::milliseconds;

constexpr std::size_t kMaxBodyBytes = 64u << 20;  // one NodeList page of 500 fat nodes fits
constexpr int kListPageSize = 500;
constexpr int kMaxListPages = 200;  // 100,000 nodes
constexpr milliseconds kConflictBackoff{10};

// The wait before try `attempt` + 1 after a conflict: 10 ms doubling, times a random factor in
// [1, 2) so that cmax and a writer on a fixed period do not meet again at the same instant (what
// client-go's wait.Backoff jitter is for). At most ~0.6 s over kMaxTries.
milliseconds conflict_backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  return milliseconds(static_cast<long>(kConflictBackoff.count() * (1 << (attempt - 1)) * jitter(rng)));
}

const core::SystemClock kSystemClock;

Unexpected<Error> fail_on(std::string_view action, std::string_view node, const Error& e) {
  return fail("{} {}: {}", action, node, e.message);
}

Action unchanged(std::string note) {
  Action a;
  a.note = std::move(note);
  return a;
}

std::string node_path(std::string_view node) { return fmt::format("/api/v1/nodes/{}", node); }

bool is_success(int status) { return status >= 200 && status < 300; }

/// 409 from storage, 422 from a failed "test" op: the node changed since it was read.
bool is_conflict(int status) { return status == 409 || status == 422; }


std::string_view reason_phrase(int status, std::string_view given) {
  if (!given.empty()) return given;
  switch (status) {
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    default:
      return "";
  }
}

/// What an operator does about an HTTP error, by status and request.
std::string what_to_do(int status, std::string_view method, std::string_view path,
                       const KubernetesOptions& options) {
  bool list = path.find('?') != std::string_view::npos;
  bool status_sub = path.ends_with("/status");
  switch (status) {
    case 401:
      return fmt::format("the API server refused the token in {}: is it the pod's current token?",
                         options.token_path);
    case 403:
      return fmt::format("give the service account {} on {} (deploy/kubernetes/cmaxd.yaml)",
                         method == "GET" ? (list ? "list" : "get") : "patch",
                         status_sub ? "nodes/status" : "nodes");
    case 404:
      return list ? std::string("is api_url the API server?")
                  : std::string(
                        "no such node in this cluster: use the name `kubectl get nodes` prints");
    case 409:
    case 422:
      // Only the node's JSON Patch is retried on these; a status patch is not guarded.
      if (status_sub) return std::string();
      return fmt::format("the node changed while cmax patched it, {} tries: try again",
                         KubernetesScheduler::kMaxTries);
    case 429:
      return "the API server is throttling cmax: try again later";
    default:
      return status >= 500 ? std::string("the API server is failing: try again later")
                           : std::string();
  }
}

Error http_error(std::string_view method, const std::string& path, int status,
                 std::string_view reason, const std::string& body,
                 const KubernetesOptions& options) {
  auto message = kube::status_message(body);
  std::string text = message ? *message : core::clip(core::trim(body), 300);
  std::string out =
      fmt::format("{} {}: {} {}", method, path, status, reason_phrase(status, reason));
  if (!text.empty()) out += ": " + text;
  auto todo = what_to_do(status, method, path, options);
  if (!todo.empty()) out += ": " + todo;
  return Error{std::move(out)};
}

void describe(Action& a, std::string_view method, const std::string& path,
              const std::string& body) {
  a.argv.emplace_back(method);
  a.argv.push_back(path);
  a.argv.push_back(body);
}

}  // namespace

Result<KubernetesOptions> KubernetesOptions::in_cluster() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return in_cluster(host ? host : "", port ? port : "");
}

Result<KubernetesOptions> KubernetesOptions::in_cluster(std::string_view service_host,
                                                        std::string_view service_port) {
  auto url = kube::in_cluster_url(service_host, service_port);
  if (!url) return Unexpected<Error>{url.error()};
  KubernetesOptions o;
  o.api_url = std::move(*url);
  return o;
}

KubernetesScheduler::KubernetesScheduler(KubernetesOptions options)
    : KubernetesScheduler(std::move(options), kSystemClock) {}

KubernetesScheduler::KubernetesScheduler(KubernetesOptions options, const core::Clock& clock)
    : options_(std::move(options)),
      endpoint_(kube::parse_api_url(options_.api_url)),
      clock_(&clock) {}

Result<KubernetesScheduler::Reply> KubernetesScheduler::request(std::string_view method,
                                                                const std::string& path,
                                                                std::string_view content_type,
                                                                const std::string& body,
                                                                std::string_view accept) {
  // A bad URL fails here, before any socket is opened.
  if (!endpoint_) return Unexpected<Error>{endpoint_.error()};
  ++requests_;
  auto r = KubeClient(options_).send(method, path, content_type, body, kMaxBodyBytes, accept);
  if (!r) return Unexpected<Error>{r.error()};
  bytes_received_ += r->body.size();
  return Reply{r->status, std::move(r->reason), std::move(r->body)};
}

Result<kube::Node> KubernetesScheduler::read_node(std::string_view node) {
  if (auto r = kube::check_node_name(node); !r) return Unexpected<Error>{r.error()};
  auto path = node_path(node);
  auto r = request("GET", path, {}, {});
  if (!r) return Unexpected<Error>{r.error()};
  if (!is_success(r->status))
    return Unexpected<Error>{http_error("GET", path, r->status, r->reason, r->body, options_)};
  auto n = kube::parse_node(r->body);
  if (!n) return fail("GET {}: {}", path, n.error().message);
  if (n->state.name != node)
    return fail("GET {}: the API server answered for node {}", path, n->state.name);
  return n;
}

Result<std::string> KubernetesScheduler::get(const std::string& path) {
  auto r = request("GET", path, {}, {});
  if (!r) return Unexpected<Error>{r.error()};
  if (!is_success(r->status))
    return Unexpected<Error>{http_error("GET", path, r->status, r->reason, r->body, options_)};
  return std::move(r->body);
}

Result<NodeState> KubernetesScheduler::node_state(std::string_view node) {
  auto n = read_node(node);
  if (!n) return fail_on("state of", node, n.error());
  return std::move(n->state);
}

Result<std::optional<NodeState>> KubernetesScheduler::wait_in_service(std::string_view node, std::stop_token stop) {
  auto in_service = [](const NodeState& st) { return !st.drain_flag() && !st.down(); };
  std::string rv;  // where the next watch starts; empty: read the node first
  while (!stop.stop_requested()) {
    if (rv.empty()) {
      auto n = read_node(node);
      if (!n) return fail_on("watch", node, n.error());
      if (in_service(n->state)) return std::optional<NodeState>{std::move(n->state)};
      rv = n->resource_version;
    }
    auto path = fmt::format("/api/v1/nodes?fieldSelector=metadata.name%3D{}&watch=1&allowWatchBookmarks=true"
                            "&resourceVersion={}&timeoutSeconds={}",
                            node, kube::encode_query_value(rv), options_.watch_timeout.count());
    std::optional<NodeState> back;
    std::optional<Error> broken;
    bool gone = false;
    ++requests_;
    auto end = KubeClient(options_).watch(
        path,
        [&](std::string_view line) {
          auto e = kube::parse_node_watch_event(line);
          if (!e) {
            broken = Error{fmt::format("GET {}: {}", path, e.error().message)};
            return false;
          }
          if (e->type == "ERROR") {
            if (e->error_code == 410) {  // the resourceVersion is too old: read again
              gone = true;
            } else {
              broken = Error{fmt::format("GET {}: the watch ended with error {}: {}", path, e->error_code,
                                         core::clip(e->error_message, 300))};
            }
            return false;
          }
          if (!e->resource_version.empty()) rv = e->resource_version;
          if (e->type == "DELETED") {
            broken = Error{fmt::format("node {} was deleted from the API server", node)};
            return false;
          }
          if (e->node && in_service(e->node->state)) {
            back = std::move(e->node->state);
            return false;
          }
          return true;
        },
        stop, std::chrono::duration_cast<milliseconds>(options_.watch_timeout) + milliseconds(30000));
    if (end) bytes_received_ += end->bytes;
    if (back) return back;
    if (broken) return fail_on("watch", node, *broken);
    if (!end) return fail_on("watch", node, end.error());
    if (!end->error.empty()) {
      if (end->status == 410) {
        rv.clear();
        continue;
      }
      return fail("watch {}: {}", node, end->error);
    }
    if (gone) rv.clear();
  }
  return std::optional<NodeState>{};
}

Result<Action> KubernetesScheduler::hold(std::string_view action, std::string_view node,
                                         std::string_view reason, kube::Hold kind) {
  auto full = cmax_reason(reason);
  if (!full) return fail_on(action, node, full.error());
  auto path = node_path(node);
  auto status_path = path + "/status";
  for (int attempt = 1;; ++attempt) {
    auto n = read_node(node);
    if (!n) return fail_on(action, node, n.error());
    if (kind == kube::Hold::kFault) {
      auto d = decide_drain(n->state);
      if (!d.act) return unchanged(std::move(d.note));
    } else {
      auto d = decide_reboot(n->state);
      if (!d) return fail_on(action, node, d.error());
      if (!d->act) return unchanged(std::move(d->note));
    }

    auto now = core::format_utc(clock_->now());
    auto spec =
        kube::hold_patch(*n, *full, kind, options_.reboot_evicts ? "NoExecute" : "NoSchedule", now);
    auto status = kube::condition_patch(
        "False", kind == kube::Hold::kFault ? kube::kFaultReason : kube::kRebootReason, *full,
        n->condition_status, now);
    Action a;
    a.changed = true;
    a.dry_run = options_.dry_run;
    a.attempts = attempt;
    describe(a, "PATCH", path, spec);
    describe(a, "PATCH", status_path, status);
    if (a.dry_run) return a;

    auto r = request("PATCH", path, kube::kJsonPatch, spec);
    if (!r) return fail_on(action, node, r.error());
    if (is_conflict(r->status) && attempt < kMaxTries) {
      std::this_thread::sleep_for(conflict_backoff(attempt));
      continue;
    }
    if (!is_success(r->status))
      return fail_on(action, node,
                     http_error("PATCH", path, r->status, r->reason, r->body, options_));

    auto s = request("PATCH", status_path, kube::kStrategicMergePatch, status);
    if (!s) return fail_on(action, node, Error{"node patched, but " + s.error().message});
    if (!is_success(s->status))
      return fail_on(
          action, node,
          Error{"node patched, but " +
                http_error("PATCH", status_path, s->status, s->reason, s->body, options_).message});
    return a;
  }
}

Result<Action> KubernetesScheduler::drain(std::string_view node, std::string_view reason) {
  return hold("drain", node, reason, kube::Hold::kFault);
}

Result<Action> KubernetesScheduler::reboot(std::string_view node, std::string_view reason) {
  return hold("reboot", node, reason, kube::Hold::kReboot);
}

Result<Action> KubernetesScheduler::resume(std::string_view node, Force force) {
  auto path = node_path(node);
  auto status_path = path + "/status";
  for (int attempt = 1;; ++attempt) {
    auto n = read_node(node);
    if (!n) return fail_on("resume", node, n.error());
    auto d = decide_resume(n->state, force);
    if (!d) return fail_on("resume", node, d.error());
    if (!d->act) return unchanged(std::move(d->note));

    // cmax lifts its own cordon; someone else's only when forced to resume their hold.
    bool uncordon = n->cordoned_by_cmax || (force == Force::kYes && held_by_others(n->state));
    auto spec = kube::release_patch(*n, uncordon);
    bool set_condition = !n->condition_status.empty() && n->condition_status != "True";
    std::string status;
    Action a;
    a.changed = true;
    a.dry_run = options_.dry_run;
    a.attempts = attempt;
    describe(a, "PATCH", path, spec);
    if (set_condition) {
      status = kube::condition_patch("True", kube::kResumedReason, "cmax resumed the node",
                                     n->condition_status, core::format_utc(clock_->now()));
      describe(a, "PATCH", status_path, status);
    }
    if (a.dry_run) return a;

    auto r = request("PATCH", path, kube::kJsonPatch, spec);
    if (!r) return fail_on("resume", node, r.error());
    if (is_conflict(r->status) && attempt < kMaxTries) {
      std::this_thread::sleep_for(conflict_backoff(attempt));
      continue;
    }
    if (!is_success(r->status))
      return fail_on("resume", node,
                     http_error("PATCH", path, r->status, r->reason, r->body, options_));
    if (!set_condition) return a;

    auto s = request("PATCH", status_path, kube::kStrategicMergePatch, status);
    if (!s) return fail_on("resume", node, Error{"node patched, but " + s.error().message});
    if (!is_success(s->status))
      return fail_on(
          "resume", node,
          Error{"node patched, but " +
                http_error("PATCH", status_path, s->status, s->reason, s->body, options_).message});
    return a;
  }
}

// The pool's selector and `extra` as one label selector ("pool=a,cmax.io/held").
static std::string pool_and(const std::string& pool, const std::string& extra) {
  if (pool.empty()) return extra;
  if (extra.empty()) return pool;
  return pool + "," + extra;
}

Result<void> KubernetesScheduler::list_nodes(std::string_view action, std::string_view node,
                                             const std::string& extra_selector, const std::string& field_selector,
                                             const std::function<void(const std::vector<NodeState>&)>& on_page) {
  const std::string selector = pool_and(options_.pool_selector, extra_selector);
  std::string next;
  for (int page = 1;; ++page) {
    if (page > kMaxListPages)
      return fail("{} {}: more than {} pages of {} nodes: narrow pool_selector", action, node, kMaxListPages,
                  kListPageSize);
    std::string path = "/api/v1/nodes?";
    if (!selector.empty()) path += "labelSelector=" + kube::encode_query_value(selector) + "&";
    if (!field_selector.empty()) path += "fieldSelector=" + kube::encode_query_value(field_selector) + "&";
    path += fmt::format("limit={}", kListPageSize);
    if (!next.empty()) path += "&continue=" + kube::encode_query_value(next);
    auto r = request("GET", path, {}, {});
    if (!r) return fail_on(action, node, r.error());
    if (!is_success(r->status)) return fail_on(action, node, http_error("GET", path, r->status, r->reason, r->body, options_));
    auto list = kube::parse_node_list(r->body);
    if (!list) return fail("{} {}: GET {}: {}", action, node, path, list.error().message);
    on_page(list->nodes);
    if (list->continue_token.empty()) return {};
    next = std::move(list->continue_token);
  }
}

Result<int> KubernetesScheduler::count_pool(std::string_view action, std::string_view node) {
  // Metadata only: a few hundred bytes an object instead of the whole Node.
  constexpr std::string_view kMetadataOnly =
      "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";
  std::string next;
  long long total = 0;
  for (int page = 1;; ++page) {
    if (page > kMaxListPages)
      return fail("{} {}: more than {} pages of {} nodes: narrow pool_selector", action, node, kMaxListPages,
                  kListPageSize);
    std::string path = "/api/v1/nodes?";
    if (!options_.pool_selector.empty())
      path += "labelSelector=" + kube::encode_query_value(options_.pool_selector) + "&";
    // The first page of one object: without a selector the server says how many remain.
    path += fmt::format("limit={}", page == 1 ? 1 : kListPageSize);
    if (!next.empty()) path += "&continue=" + kube::encode_query_value(next);
    auto r = request("GET", path, {}, {}, kMetadataOnly);
    if (!r) return fail_on(action, node, r.error());
    if (!is_success(r->status)) return fail_on(action, node, http_error("GET", path, r->status, r->reason, r->body, options_));
    auto c = kube::parse_list_count(r->body);
    if (!c) return fail("{} {}: GET {}: {}", action, node, path, c.error().message);
    total += static_cast<long long>(c->items);
    if (c->remaining && !c->continue_token.empty()) return static_cast<int>(total + *c->remaining);
    if (c->continue_token.empty()) return static_cast<int>(total);
    next = std::move(c->continue_token);
  }
}

Result<PoolCount> KubernetesScheduler::held_by_cmax(std::string_view node) {
  constexpr std::string_view kAction = "count held nodes around";
  if (auto r = kube::check_node_name(node); !r) return fail_on(kAction, node, r.error());
  PoolCount c;
  c.pool = options_.pool_selector.empty()
               ? std::string("all nodes")
               : fmt::format("nodes matching {}", options_.pool_selector);
  // Only the nodes that can be held are read whole: those carrying cmax's label, and (for holds
  // an older cmax made, before the label) the cordoned ones. Each is judged as before (cordon or
  // cmax's taint, with cmax's reason), so a stale label or someone else's cordon counts nothing.
  // The cost of a decision grows with the held nodes, not with the pool.
  std::set<std::string> seen;
  auto judge = [&](const std::vector<NodeState>& page) {
    for (const auto& n : page) {
      if (!seen.insert(n.name).second || !sched::held_by_cmax(n)) continue;
      ++c.held;
      c.held_nodes.push_back(n.name);
      if (n.name == node) c.node_held = true;
    }
  };
  if (auto r = list_nodes(kAction, node, std::string(kube::kHeldLabel), "", judge); !r) return Unexpected<Error>{r.error()};
  if (auto r = list_nodes(kAction, node, "", "spec.unschedulable=true", judge); !r) return Unexpected<Error>{r.error()};
  auto total = count_pool(kAction, node);
  if (!total) return Unexpected<Error>{total.error()};
  c.total = *total;
  return c;
}

Result<Claim> KubernetesScheduler::claim_hold(std::string_view node, const PoolCount& pool, int limit) {
  constexpr std::string_view kAction = "claim a fleet-breaker slot for";
  constexpr int kMaxClaimTries = 64;
  if (auto r = kube::check_node_name(node); !r) return fail_on(kAction, node, r.error());
  if (options_.dry_run) return Claim{true, false, "dry run: no slot claimed"};
  const std::string ns = kube::encode_query_value(options_.breaker_namespace);
  const std::string collection = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases";
  const std::string path = collection + "/" + kube::encode_query_value(options_.breaker_lease);
  const std::string where = options_.breaker_namespace + "/" + options_.breaker_lease;
  auto not_exact = [&](const Reply& r, std::string_view method) {
    return Claim{true, false,
                 fmt::format("fleet breaker not exact (read-then-act): {} lease {}: {} {}; grant the Role of "
                             "deploy/kubernetes/cmaxd.yaml (leases get, create, update in {})",
                             method, where, r.status, r.reason, options_.breaker_namespace)};
  };
  std::mt19937 jitter(std::random_device{}());
  for (int attempt = 1; attempt <= kMaxClaimTries; ++attempt) {
    if (attempt > 1)  // another agent wrote between our read and our write: let it finish
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(2, 20 + 4 * attempt)(jitter)));
    auto got = request("GET", path, {}, {});
    if (!got) return fail_on(kAction, node, got.error());
    kube::BreakerLease lease;
    if (got->status == 404) {
      auto made = request("POST", collection, "application/json",
                          kube::breaker_lease_json(options_.breaker_lease, options_.breaker_namespace, {}, "cmax",
                                                   static_cast<int>(options_.claim_ttl.count())));
      if (!made) return fail_on(kAction, node, made.error());
      if (made->status == 403 || made->status == 404) return not_exact(*made, "POST");
      if (!is_success(made->status) && made->status != 409)
        return fail_on(kAction, node, http_error("POST", collection, made->status, made->reason, made->body, options_));
      continue;  // made (or another agent made it): read it
    }
    if (got->status == 403) return not_exact(*got, "GET");
    if (!is_success(got->status))
      return fail_on(kAction, node, http_error("GET", path, got->status, got->reason, got->body, options_));
    auto parsed = kube::parse_breaker_lease(got->body);
    if (!parsed) return fail("{} {}: GET {}: {}", kAction, node, path, parsed.error().message);
    lease = std::move(*parsed);
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_->now().time_since_epoch()).count();
    const auto ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.claim_ttl).count();
    // Claims older than the TTL are dropped: the drain shows as held by then, or it failed.
    std::erase_if(lease.claims, [&](const auto& c) { return now_ms - c.second > ttl_ms || c.second > now_ms + ttl_ms; });
    std::set<std::string> counted(pool.held_nodes.begin(), pool.held_nodes.end());
    for (const auto& [n, at] : lease.claims) counted.insert(n);
    const bool mine = counted.count(std::string(node)) > 0 || pool.node_held;
    // Held nodes the pool read could not name (an older scheduler's count) still count.
    const int count = static_cast<int>(counted.size()) + std::max(0, pool.held - static_cast<int>(pool.held_nodes.size()));
    if (!mine && count + 1 > limit) {
      std::vector<std::string> claimed;
      for (const auto& [n, at] : lease.claims)
        if (!std::count(pool.held_nodes.begin(), pool.held_nodes.end(), n)) claimed.push_back(n);
      return Claim{false, true,
                   fmt::format("fleet circuit breaker: cmax holds {} and other agents have claimed {} of {} nodes in {} "
                               "(limit {}; lease {}{})",
                               pool.held, count - pool.held, pool.total, pool.pool, limit, where,
                               claimed.empty() ? std::string() : fmt::format(", claimed by {}", fmt::join(claimed, ", ")))};
    }
    lease.claims[std::string(node)] = now_ms;
    const std::string body = kube::breaker_lease_json(options_.breaker_lease, options_.breaker_namespace, lease,
                                                      std::string(node),
                                                      static_cast<int>(options_.claim_ttl.count()));
    auto put = request("PUT", path, "application/json", body);
    if (!put) return fail_on(kAction, node, put.error());
    if (put->status == 409) continue;  // someone else's claim came first: count again
    if (put->status == 403) return not_exact(*put, "PUT");
    if (!is_success(put->status))
      return fail_on(kAction, node, http_error("PUT", path, put->status, put->reason, put->body, options_));
    return Claim{true, true, fmt::format("slot {} of {} in {} (lease {})", count + (mine ? 0 : 1), limit, pool.pool, where)};
  }
  return fail("{} {}: lease {} changed under every one of {} tries; too many agents at once: retry", kAction, node, where,
              kMaxClaimTries);
}

}  // namespace cmax::sched
