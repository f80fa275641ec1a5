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
#include <variant>

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
      clock_(&clock),
      client_(std::make_shared<KubeClient>(options_, /*keep_alive=*/true)) {}

Result<KubernetesScheduler::Reply> KubernetesScheduler::request(std::string_view method,
                                                                const std::string& path,
                                                                std::string_view content_type,
                                                                const std::string& body,
                                                                std::string_view accept) {
  // A bad URL fails here, before any socket is opened.
  if (!endpoint_) return Unexpected<Error>{endpoint_.error()};
  ++requests_;
  auto r = client_->send(method, path, content_type, body, kMaxBodyBytes, accept);
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
  std::string rv;  // where the next watch starts; empty: read the node first
  while (!stop.stop_requested()) {
    if (rv.empty()) {
      auto n = read_node(node);
      if (!n) return fail_on("watch", node, n.error());
      if (!n->state.out_of_service()) return std::optional<NodeState>{std::move(n->state)};
      rv = n->resource_version;
    }
    auto path = fmt::format("/api/v1/nodes?fieldSelector=metadata.name%3D{}&watch=1&allowWatchBookmarks=true"
                            "&resourceVersion={}&timeoutSeconds={}",
                            node, kube::encode_query_value(rv), options_.watch_timeout.count());
    std::optional<NodeState> back;
    std::optional<Error> broken;
    bool gone = false;
    ++requests_;
    auto end = client_->watch(
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
          if (e->node && !e->node->state.out_of_service()) {
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
                                             const std::string& extra_selector,
                                             const std::function<void(const std::vector<NodeState>&)>& on_page) {
  const std::string selector = pool_and(options_.pool_selector, extra_selector);
  std::string next;
  for (int page = 1;; ++page) {
    if (page > kMaxListPages)
      return fail("{} {}: more than {} pages of {} nodes: narrow pool_selector", action, node, kMaxListPages,
                  kListPageSize);
    std::string path = "/api/v1/nodes?";
    if (!selector.empty()) path += "labelSelector=" + kube::encode_query_value(selector) + "&";
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
  if (options_.pool_selector.empty()) return count_pool_pages(action, node);  // one request: the server says
  // With a selector the server gives no remainingItemCount: the count is paged. An agent that
  // counted keeps the total in a Lease for pool_total_ttl; the others read that one object.
  const std::string collection =
      "/apis/coordination.k8s.io/v1/namespaces/" + kube::encode_query_value(options_.breaker_namespace) + "/leases";
  const std::string name =
      fmt::format("{}-{}-total", options_.breaker_lease, kube::breaker_pool_key(options_.pool_selector));
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_->now().time_since_epoch()).count();
  const auto ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.pool_total_ttl).count();
  std::optional<kube::PoolTotal> cached;
  bool exists = false;
  if (auto got = request("GET", collection + "/" + name, {}, {}); got && is_success(got->status)) {
    exists = true;
    cached = kube::parse_pool_total(got->body);
    if (cached && now_ms - cached->counted_ms < ttl_ms && cached->counted_ms <= now_ms + ttl_ms) return cached->total;
  }
  auto total = count_pool_pages(action, node);
  if (!total || options_.dry_run) return total;
  // Kept for the others; a conflict (another agent just wrote it) or a refusal changes nothing here.
  const auto body = kube::pool_total_json(name, options_.breaker_namespace, *total, now_ms, node,
                                          cached ? cached->resource_version : std::string());
  if (exists && cached) (void)request("PUT", collection + "/" + name, "application/json", body);
  else if (!exists) (void)request("POST", collection, "application/json", body);
  return total;
}

Result<int> KubernetesScheduler::count_pool_pages(std::string_view action, std::string_view node) {
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
  // Only the nodes that can be held are read whole: those carrying cmax's label, which every hold
  // cmax makes sets (no cmax that held without it was released). Each is judged as before (cordon
  // or cmax's taint, with cmax's reason), so a stale label counts nothing. A cordon with cmax's
  // reason and no label (typed by hand) is not cmax's. The reply grows with the held nodes, not
  // with the pool; one label-selected list is all the API server filters per decision.
  std::set<std::string> seen;
  auto judge = [&](const std::vector<NodeState>& page) {
    for (const auto& n : page) {
      if (!seen.insert(n.name).second || !sched::held_by_cmax(n)) continue;
      ++c.held;
      c.held_nodes.push_back(n.name);
      if (n.name == node) c.node_held = true;
    }
  };
  if (auto r = list_nodes(kAction, node, std::string(kube::kHeldLabel), judge); !r) return Unexpected<Error>{r.error()};
  auto total = count_pool(kAction, node);
  if (!total) return Unexpected<Error>{total.error()};
  c.total = *total;
  return c;
}

Result<Claim> KubernetesScheduler::claim_hold(std::string_view node, const PoolCount& pool, int limit) {
  constexpr std::string_view kAction = "claim a fleet-breaker slot for";
  constexpr int kRounds = 6;           // list the slots, try the ones that may be taken; again when all were lost
  constexpr int kTriesPerRound = 8;
  if (auto r = kube::check_node_name(node); !r) return fail_on(kAction, node, r.error());
  if (options_.dry_run) return Claim{true, false, "dry run: no slot claimed"};
  if (pool.node_held) return Claim{true, true, "already held: its slot is taken"};
  const std::string key = kube::breaker_pool_key(options_.pool_selector);
  const std::string ns = kube::encode_query_value(options_.breaker_namespace);
  const std::string collection = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases";
  const std::string prefix = fmt::format("{}-{}-", options_.breaker_lease, key);
  const std::string where = fmt::format("{}/{}N", options_.breaker_namespace, prefix);
  const int ttl_s = static_cast<int>(options_.claim_ttl.count());
  const auto ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.claim_ttl).count();
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_->now().time_since_epoch()).count();
  };
  auto not_exact = [&](const Reply& r, std::string_view method) {
    return Claim{true, false,
                 fmt::format("fleet breaker not exact (read-then-act): {} leases {}: {} {}; grant the Role of "
                             "deploy/kubernetes/cmaxd.yaml (leases get, list, create, update in {})",
                             method, where, r.status, r.reason, options_.breaker_namespace)};
  };
  auto granted = [&](int index) {
    return Claim{true, true, fmt::format("slot {} of {} in {} (lease {}{})", index, limit, pool.pool, prefix, index)};
  };
  // Create slot `index`: taken (true), lost to another agent (false), or an answer to stop on.
  auto create = [&](int index) -> Result<std::variant<bool, Claim>> {
    auto r = request("POST", collection, "application/json",
                     kube::breaker_slot_json(prefix + std::to_string(index), options_.breaker_namespace, key, node,
                                             now_ms(), ttl_s));
    if (!r) return fail_on(kAction, node, r.error());
    if (r->status == 409) return std::variant<bool, Claim>{false};
    if (r->status == 403 || r->status == 404) return std::variant<bool, Claim>{not_exact(*r, "POST")};
    if (!is_success(r->status))
      return fail_on(kAction, node, http_error("POST", collection, r->status, r->reason, r->body, options_));
    return std::variant<bool, Claim>{true};
  };
  const int unnamed = std::max(0, pool.held - static_cast<int>(pool.held_nodes.size()));
  if (limit <= 0 || pool.held + 1 > limit)
    return Claim{false, true, fmt::format("fleet circuit breaker: cmax holds {} of {} nodes in {} (limit {})", pool.held,
                                          pool.total, pool.pool, limit)};
  // First, the slot this node's name hashes to: a burst far below the limit costs one request each.
  const int preferred = static_cast<int>(std::hash<std::string_view>{}(node) % static_cast<std::size_t>(limit));
  auto first = create(preferred);
  if (!first) return Unexpected<Error>{first.error()};
  if (auto* c = std::get_if<Claim>(&*first)) return *c;
  if (std::get<bool>(*first)) return granted(preferred);

  thread_local std::mt19937 rng(std::random_device{}());
  const std::string list_path =
      collection + "?labelSelector=" + kube::encode_query_value(fmt::format("{}={}", kube::kSlotPoolLabel, key));
  for (int round = 1; round <= kRounds; ++round) {
    auto listed = request("GET", list_path, {}, {});
    if (!listed) return fail_on(kAction, node, listed.error());
    if (listed->status == 403 || listed->status == 404) return not_exact(*listed, "GET");
    if (!is_success(listed->status))
      return fail_on(kAction, node, http_error("GET", list_path, listed->status, listed->reason, listed->body, options_));
    auto slots = kube::parse_breaker_slots(listed->body);
    if (!slots) return fail("{} {}: GET {}: {}", kAction, node, list_path, slots.error().message);
    std::erase_if(*slots, [&](const kube::BreakerSlot& s) { return s.name.rfind(prefix, 0) != 0; });
    auto v = kube::view_slots(*slots, node, pool.held_nodes, unnamed, limit, now_ms(), ttl_ms);
    if (v.mine) return Claim{true, true, fmt::format("already claimed in {} (leases {}N)", pool.pool, prefix)};
    if (v.count + 1 > limit) {
      std::vector<std::string> claimed;
      for (const auto& h : v.live_holders)
        if (!std::count(pool.held_nodes.begin(), pool.held_nodes.end(), h)) claimed.push_back(h);
      return Claim{false, true,
                   fmt::format("fleet circuit breaker: cmax holds {} and other agents have claimed {} of {} nodes in {} "
                               "(limit {}; leases {}N{})",
                               pool.held, v.count - pool.held, pool.total, pool.pool, limit, prefix,
                               claimed.empty() ? std::string() : fmt::format(", claimed by {}", fmt::join(claimed, ", ")))};
    }
    // Free names and stale claims, in random order: agents at once spread over them.
    std::vector<std::pair<int, const kube::BreakerSlot*>> tries;
    for (int i : v.free) tries.emplace_back(i, nullptr);
    for (const auto& s : v.stale) tries.emplace_back(s.index, &s);
    std::shuffle(tries.begin(), tries.end(), rng);
    if (tries.size() > static_cast<std::size_t>(kTriesPerRound)) tries.resize(kTriesPerRound);
    for (const auto& [index, stale] : tries) {
      if (!stale) {
        auto c = create(index);
        if (!c) return Unexpected<Error>{c.error()};
        if (auto* claim = std::get_if<Claim>(&*c)) return *claim;
        if (std::get<bool>(*c)) return granted(index);
        continue;
      }
      // A stale claim is replaced on its resourceVersion: of two agents, one wins.
      const std::string path = collection + "/" + kube::encode_query_value(stale->name);
      auto r = request("PUT", path, "application/json",
                       kube::breaker_slot_json(stale->name, options_.breaker_namespace, key, node, now_ms(), ttl_s,
                                               stale->resource_version));
      if (!r) return fail_on(kAction, node, r.error());
      if (r->status == 409 || r->status == 404) continue;
      if (r->status == 403) return not_exact(*r, "PUT");
      if (!is_success(r->status))
        return fail_on(kAction, node, http_error("PUT", path, r->status, r->reason, r->body, options_));
      return granted(index);
    }
  }
  return fail("{} {}: other agents took every free slot of {} in each of {} rounds; too many agents at once: retry",
              kAction, node, where, kRounds);
}

}  // namespace cmax::sched
