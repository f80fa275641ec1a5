// KubernetesScheduler against a stand-in API server on loopback: an httplib::Server holding Node
// objects that the handlers really change (JSON Patch applied with nlohmann's RFC 6902 patch(),
// status conditions merged by type as a strategic merge does) and recording every request. The
// tests check the exact requests cmax sends, what they do to the node, and the error text. The JSON
// mapping (kubernetes_parse.h) is checked first, as pure functions.

// unit_sched takes no compile flags from cpp-httplib's pkg-config file (cmax_sched links it
// PRIVATE), and httplib.h must see the defines Debian built the library with.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/process.h"
#include "sched/kubernetes.h"
#include "sched/kubernetes_parse.h"
#include "sched/policy.h"
#include "support/fake_kube_api.h"
#include "support/temp_host.h"

using namespace cmax::sched;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// 2026-12-02T12:00:00Z
const std::chrono::system_clock::time_point kNow{std::chrono::seconds{1796212800}};

json status_object(int code, std::string_view reason, std::string_view message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

/// A GPU node as a kubelet reports it: Ready, a foreign taint, a foreign annotation.
json gpu_node(std::string_view name, std::string_view pool = "a100") {
  return json::parse(fmt::format(R"({{
    "kind": "Node", "apiVersion": "v1",
    "metadata": {{"name": "{}", "resourceVersion": "100", "labels": {{"pool": "{}"}},
                  "annotations": {{"node.alpha.kubernetes.io/ttl": "0"}}}},
    "spec": {{"taints": [{{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}}]}},
    "status": {{"conditions": [{{"type": "Ready", "status": "True", "reason": "KubeletReady"}}]}}
  }})",
                                 name, pool));
}

/// Returns once `server` accepts: a stop() before that would be lost and the join would hang.
void wait_running(const httplib::Server& server) {
  for (int i = 0; i < 1000 && !server.is_running(); ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(server.is_running());
}

/// One request as the API server saw it.
struct Seen {
  std::string method;
  std::string target;  ///< path and raw query, as sent
  std::string content_type;
  std::string authorization;
  std::string body;
};

/// A stand-in kube-apiserver: GET/PATCH of nodes and nodes/status, GET of the node list with
/// label selectors (equality and existence) and pages of at most two nodes.
class FakeApi {
 public:
  FakeApi() {
    server_.Get(R"(/api/v1/nodes/([a-z0-9.-]+))",
                [this](const auto& req, auto& res) { get(req, res); });
    server_.Get("/api/v1/nodes", [this](const auto& req, auto& res) { list(req, res); });
    server_.Patch(R"(/api/v1/nodes/([a-z0-9.-]+))",
                  [this](const auto& req, auto& res) { patch(req, res); });
    server_.Patch(R"(/api/v1/nodes/([a-z0-9.-]+)/status)",
                  [this](const auto& req, auto& res) { patch_status(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    wait_running(server_);
  }
  ~FakeApi() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  void put(json node) {
    auto name = node["metadata"]["name"].get<std::string>();
    std::lock_guard lock(mu_);
    nodes_[name] = std::move(node);
  }
  json node(const std::string& name) {
    std::lock_guard lock(mu_);
    return nodes_.at(name);
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  void forget() {
    std::lock_guard lock(mu_);
    seen_.clear();
  }
  /// The next node PATCHes answer `code` with a Status of `message`, and change nothing.
  void refuse_patches(int code, std::string reason, std::string message, int times = 1) {
    std::lock_guard lock(mu_);
    for (int i = 0; i < times; ++i) refusals_.push_back(status_object(code, reason, message));
  }
  /// The next status PATCH answers `code` with a Status of `message`, and changes nothing.
  void refuse_status_patch(int code, std::string reason, std::string message) {
    std::lock_guard lock(mu_);
    status_refusals_.push_back(status_object(code, reason, message));
  }
  /// Runs once on the stored node right after the next GET of it has been answered: someone
  /// else's change between cmax's read and its patch.
  void after_next_get(std::function<void(json&)> change) {
    std::lock_guard lock(mu_);
    after_get_ = std::move(change);
  }

 private:
  void record(const httplib::Request& req) {
    seen_.push_back({req.method, req.target, req.get_header_value("Content-Type"),
                     req.get_header_value("Authorization"), req.body});
  }
  static void answer(httplib::Response& res, int code, const json& body) {
    res.status = code;
    res.set_content(body.dump(), "application/json");
  }
  static void bump(json& node) {
    auto& rv = node["metadata"]["resourceVersion"];
    rv = std::to_string(std::stoi(rv.get<std::string>()) + 1);
  }
  json* find(const std::string& name, httplib::Response& res) {
    auto it = nodes_.find(name);
    if (it != nodes_.end()) return &it->second;
    answer(res, 404, status_object(404, "NotFound", fmt::format("nodes \"{}\" not found", name)));
    return nullptr;
  }

  void get(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    record(req);
    json* n = find(req.matches[1], res);
    if (!n) return;
    answer(res, 200, *n);
    if (after_get_) {
      after_get_(*n);
      bump(*n);
      after_get_ = nullptr;
    }
  }

  void list(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    record(req);
    std::vector<std::pair<std::string, std::string>> want;
    std::string selector = req.get_param_value("labelSelector");
    for (std::size_t at = 0; at < selector.size();) {
      auto comma = std::min(selector.find(',', at), selector.size());
      auto term = selector.substr(at, comma - at);
      auto eq = term.find('=');
      // A bare key asks that the label exist, whatever its value.
      want.emplace_back(term.substr(0, eq), eq == std::string::npos ? std::string("\x01exists") : term.substr(eq + 1));
      at = comma + 1;
    }
    std::size_t start = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
    std::size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 1000;
    limit = std::min<std::size_t>(limit, 2);
    json items = json::array();
    std::size_t index = 0;
    std::string next;
    for (const auto& [name, n] : nodes_) {
      bool match = true;
      for (const auto& [k, v] : want)
        match = match && (v == "\x01exists" ? n["metadata"]["labels"].contains(k)
                                             : n["metadata"]["labels"].value(k, std::string()) == v);
      if (!match) continue;
      if (index >= start && items.size() < limit)
        items.push_back(n);
      else if (index >= start && next.empty())
        next = std::to_string(index);
      ++index;
    }
    answer(res, 200,
           {{"kind", "NodeList"},
            {"apiVersion", "v1"},
            {"metadata", {{"resourceVersion", "999"}, {"continue", next}}},
            {"items", items}});
  }

  void patch(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    record(req);
    json* n = find(req.matches[1], res);
    if (!n) return;
    if (req.get_header_value("Content-Type") != "application/json-patch+json")
      return answer(res, 415, status_object(415, "UnsupportedMediaType", "want json-patch"));
    if (!refusals_.empty()) {
      json refusal = refusals_.front();
      refusals_.pop_front();
      return answer(res, refusal["code"].get<int>(), refusal);
    }
    try {
      json patched = cmax::test::apply_json_patch(*n, json::parse(req.body));
      bump(patched);
      *n = std::move(patched);
      answer(res, 200, *n);
    } catch (const json::exception& e) {
      // What kube-apiserver answers when a JSON Patch op, a "test" among them, fails.
      answer(res, 422,
             status_object(422, "Invalid",
                           std::string("the server rejected our request: ") + e.what()));
    }
  }

  void patch_status(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    record(req);
    json* n = find(req.matches[1], res);
    if (!n) return;
    if (req.get_header_value("Content-Type") != "application/strategic-merge-patch+json")
      return answer(res, 415, status_object(415, "UnsupportedMediaType", "want strategic merge"));
    if (!status_refusals_.empty()) {
      json refusal = status_refusals_.front();
      status_refusals_.pop_front();
      return answer(res, refusal["code"].get<int>(), refusal);
    }
    // status.conditions has patchMergeKey "type": each condition merges into the one of its type.
    auto& conds = (*n)["status"]["conditions"];
    json patch = json::parse(req.body);
    for (const json& c : patch["status"]["conditions"]) {
      auto same = std::find_if(conds.begin(), conds.end(),
                               [&](const json& o) { return o["type"] == c["type"]; });
      if (same == conds.end())
        conds.push_back(c);
      else
        same->update(c);
    }
    bump(*n);
    answer(res, 200, *n);
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::map<std::string, json> nodes_;
  std::vector<Seen> seen_;
  std::deque<json> refusals_;
  std::deque<json> status_refusals_;
  std::function<void(json&)> after_get_;
};

class KubeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(api_.port(), 0);
    host_.write("/token", "token-one\n");
    api_.put(gpu_node("n1"));
  }

  KubernetesOptions options(bool dry_run = false) {
    KubernetesOptions o;
    o.api_url = fmt::format("http://127.0.0.1:{}", api_.port());
    o.token_path = (host_.dir() / "token").string();
    o.ca_path = (host_.dir() / "no-ca.crt").string();
    o.timeout = 2000ms;
    o.dry_run = dry_run;
    return o;
  }
  KubernetesScheduler scheduler(bool dry_run = false) {
    return KubernetesScheduler(options(dry_run), clock_);
  }
  std::vector<std::string> methods() {
    std::vector<std::string> out;
    for (const auto& s : api_.seen()) out.push_back(s.method + " " + s.target);
    return out;
  }
  json taint_keys(const std::string& name) {
    json keys = json::array();
    json n = api_.node(name);
    for (const auto& t : n["spec"]["taints"]) keys.push_back(t["key"]);
    return keys;
  }
  json condition(const std::string& name, std::string_view type) {
    json n = api_.node(name);
    for (const auto& c : n["status"]["conditions"])
      if (c["type"] == type) return c;
    return nullptr;
  }

  FakeApi api_;
  cmax::test::TempHost host_;
  cmax::core::FixedClock clock_{kNow};
};

constexpr const char* kDrainPatch =
    R"([{"op":"test","path":"/spec","value":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu","value":"present"}]}},)"
    R"({"op":"add","path":"/spec/unschedulable","value":true},)"
    R"({"op":"add","path":"/spec/taints/-","value":{"effect":"NoSchedule","key":"cmax.io/unhealthy","value":"Xid-79-GPU-fell-off-the-bus"}},)"
    R"({"op":"add","path":"/metadata/annotations/cmax.io~1cordoned","value":"true"},)"
    R"({"op":"add","path":"/metadata/annotations/cmax.io~1reason","value":"cmax: Xid 79: GPU fell off the bus"},)"
    R"({"op":"add","path":"/metadata/labels/cmax.io~1held","value":"true"}])";

constexpr const char* kDrainStatus =
    R"({"status":{"conditions":[{"lastHeartbeatTime":"2026-12-02T12:00:00Z",)"
    R"("lastTransitionTime":"2026-12-02T12:00:00Z","message":"cmax: Xid 79: GPU fell off the bus",)"
    R"("reason":"CmaxFault","status":"False","type":"CmaxHealthy"}]}})";

}  // namespace

// The JSON mapping, pure.

TEST(KubeParse, ReadyNodeInServiceHasNoFlagsAndNoReason) {
  auto n = kube::parse_node(gpu_node("n1").dump());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->state.name, "n1");
  EXPECT_EQ(n->state.state, "READY");
  EXPECT_TRUE(n->state.flags.empty());
  EXPECT_EQ(n->state.reason, "");
  EXPECT_EQ(n->resource_version, "100");
  EXPECT_FALSE(n->unschedulable);
  ASSERT_EQ(n->taints.size(), 1u);
  EXPECT_EQ(n->taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(n->condition_status, "");
}

TEST(KubeParse, ReadyUnknownIsNotRespondingAndACordonWithoutOurAnnotationIsSomeoneElses) {
  json j = gpu_node("n1");
  j["status"]["conditions"][0]["status"] = "Unknown";
  j["spec"]["unschedulable"] = true;
  auto n = kube::parse_node(j.dump());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->state.state, "UNKNOWN+DRAIN+NOT_RESPONDING");
  EXPECT_TRUE(n->state.not_responding());
  EXPECT_EQ(n->state.reason, "cordoned");
  EXPECT_TRUE(held_by_others(n->state));

  j["status"]["conditions"][0]["status"] = "False";
  EXPECT_EQ(kube::parse_node(j.dump())->state.base, "NOTREADY");
}

TEST(KubeParse, OurAnnotationAndTaintsMakeACmaxHold) {
  json j = gpu_node("n1");
  j["spec"]["unschedulable"] = true;
  j["metadata"]["annotations"]["cmax.io/reason"] = "cmax: Xid 79";
  j["metadata"]["annotations"]["cmax.io/cordoned"] = "true";
  j["spec"]["taints"].push_back({{"key", "cmax.io/reboot-required"}, {"effect", "NoExecute"}});
  j["status"]["conditions"].push_back({{"type", "CmaxHealthy"},
                                       {"status", "False"},
                                       {"lastTransitionTime", "2026-12-02T12:00:00Z"}});
  auto n = kube::parse_node(j.dump());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->state.state, "READY+DRAIN+REBOOT_REQUESTED");
  EXPECT_EQ(n->state.reason, "cmax: Xid 79");
  EXPECT_EQ(n->state.reason_time, "2026-12-02T12:00:00Z");
  EXPECT_TRUE(n->cordoned_by_cmax);
  EXPECT_EQ(n->condition_status, "False");
  EXPECT_FALSE(held_by_others(n->state));

  // Uncordoned by hand while cmax's taint stays: still out of service, still cmax's.
  j["spec"].erase("unschedulable");
  j["metadata"].erase("annotations");
  n = kube::parse_node(j.dump());
  EXPECT_TRUE(n->state.drain_flag());
  EXPECT_EQ(n->state.reason, "cmax: taint cmax.io/reboot-required= (no cmax.io/reason annotation)");
}

TEST(KubeParse, ListCountsReadTheServersRemainingItemCount) {
  auto c = kube::parse_list_count(
      R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9",)"
      R"("continue":"eyJ2","remainingItemCount":9999},"items":[{"metadata":{"name":"n0001"}}]})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->items, 1u);
  EXPECT_EQ(c->remaining, 9999);
  EXPECT_EQ(c->continue_token, "eyJ2");
  auto last = kube::parse_list_count(R"({"kind":"NodeList","metadata":{},"items":[{},{}]})");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->items, 2u);
  EXPECT_FALSE(last->remaining);
  EXPECT_FALSE(kube::parse_list_count(R"({"kind":"PodList","items":[]})"));
  EXPECT_FALSE(kube::parse_list_count("not json"));
  EXPECT_FALSE(kube::parse_list_count(R"({"kind":"NodeList","metadata":{"remainingItemCount":-3}})")->remaining);
}

// Lines as kube-apiserver v1.37 streams them for GET /api/v1/nodes?watch=1&allowWatchBookmarks=true.
TEST(KubeParse, WatchEventsOfANodeAreReadAsTheServerStreamsThem) {
  auto mod = kube::parse_node_watch_event(
      R"({"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"gpu-w","resourceVersion":"4411",)"
      R"("annotations":{"cmax.io/reason":"cmax: Xid 79"}},"spec":{"unschedulable":true,"taints":[{"key":"cmax.io/unhealthy",)"
      R"("value":"Xid-79","effect":"NoExecute"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}})");
  ASSERT_TRUE(mod) << mod.error().message;
  EXPECT_EQ(mod->type, "MODIFIED");
  EXPECT_EQ(mod->resource_version, "4411");
  ASSERT_TRUE(mod->node);
  EXPECT_TRUE(mod->node->state.drain_flag());
  auto back = kube::parse_node_watch_event(
      R"({"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"gpu-w","resourceVersion":"4420"},)"
      R"("spec":{},"status":{"conditions":[{"type":"Ready","status":"True"}]}}})");
  ASSERT_TRUE(back && back->node);
  EXPECT_FALSE(back->node->state.drain_flag());
  auto bookmark = kube::parse_node_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"5000","creationTimestamp":null},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{}}}})");
  ASSERT_TRUE(bookmark) << bookmark.error().message;
  EXPECT_EQ(bookmark->resource_version, "5000");
  EXPECT_FALSE(bookmark->node);
  auto gone = kube::parse_node_watch_event(
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"j("message":"too old resource version: 12 (4411)","reason":"Expired","code":410}})j");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->error_code, 410);
  EXPECT_NE(gone->error_message.find("too old"), std::string::npos);
  EXPECT_FALSE(kube::parse_node_watch_event("not json"));
  EXPECT_FALSE(kube::parse_node_watch_event(R"({"type":"MODIFIED"})"));
  EXPECT_FALSE(kube::parse_node_watch_event(R"({"type":"WHATEVER","object":{}})"));
  EXPECT_FALSE(kube::parse_node_watch_event(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p"}}})"));
}

TEST(KubeParse, TheBreakersSlotsRoundTripAndReadAsTheServerListsThem) {
  const std::string text =
      kube::breaker_slot_json("cmax-fleet-breaker-all-7", "cmax-system", "all", "n0001", 1765076662092, 120, "41");
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["metadata"]["resourceVersion"], "41") << "a replace is conditional on what was read";
  EXPECT_EQ(j["metadata"]["labels"]["cmax.io/breaker-pool"], "all");
  EXPECT_EQ(j["spec"]["acquireTime"], "2025-12-07T03:04:22.092000Z") << "MicroTime, as the API writes it";
  EXPECT_FALSE(nlohmann::json::parse(kube::breaker_slot_json("x-0", "ns", "all", "n", 0, 120))["metadata"].contains(
      "resourceVersion"))
      << "a create carries none";
  nlohmann::json list = {{"kind", "LeaseList"}, {"apiVersion", "coordination.k8s.io/v1"}, {"metadata", {}}};
  list["items"] = {j, nlohmann::json::parse(R"({"metadata":{"name":"cmax-fleet-breaker-all-x","resourceVersion":"3"},
                                                "spec":{"holderIdentity":"n9","acquireTime":"garbage"}})"),
                   nlohmann::json::parse(R"({"metadata":{"name":"cmax-fleet-breaker-all-12","resourceVersion":"5"},
                                                "spec":{"holderIdentity":"n2","acquireTime":"2025-12-07T03:04:22Z"}})"),
                   "not an object"};
  auto slots = kube::parse_breaker_slots(list.dump());
  ASSERT_TRUE(slots) << slots.error().message;
  ASSERT_EQ(slots->size(), 3u);
  EXPECT_EQ((*slots)[0].index, 7);
  EXPECT_EQ((*slots)[0].holder, "n0001");
  EXPECT_EQ((*slots)[0].acquired_ms, 1765076662092);
  EXPECT_EQ((*slots)[0].resource_version, "41");
  EXPECT_EQ((*slots)[1].index, -1) << "a name without a number is no slot index";
  EXPECT_EQ((*slots)[1].acquired_ms, 0) << "an unreadable time is 0, never a young claim";
  EXPECT_EQ((*slots)[2].acquired_ms, 1765076662000);
  EXPECT_FALSE(kube::parse_breaker_slots(R"({"kind":"NodeList","items":[]})"));
  EXPECT_FALSE(kube::parse_breaker_slots("not json"));
  EXPECT_EQ(kube::breaker_pool_key(""), "all");
  EXPECT_EQ(kube::breaker_pool_key("pool=a").size(), 8u);
  EXPECT_NE(kube::breaker_pool_key("pool=a"), kube::breaker_pool_key("pool=b"));
}

TEST(KubeParse, APoolsTotalRoundTripsThroughItsLease) {
  const auto text = kube::pool_total_json("cmax-fleet-breaker-1a2b3c4d-total", "cmax-system", 5000, 1765076662092, "n7", "9");
  auto t = kube::parse_pool_total(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->total, 5000);
  EXPECT_EQ(t->counted_ms, 1765076662092);
  EXPECT_EQ(t->resource_version, "9");
  EXPECT_FALSE(kube::parse_pool_total(R"({"kind":"Lease","metadata":{"annotations":{"cmax.io/pool-total":"12x",)"
                                      R"("cmax.io/pool-counted-at":"1"}}})"));
  EXPECT_FALSE(kube::parse_pool_total(R"({"kind":"Lease","metadata":{"annotations":{"cmax.io/pool-total":"-1",)"
                                      R"("cmax.io/pool-counted-at":"1"}}})"));
  EXPECT_FALSE(kube::parse_pool_total(R"({"kind":"Lease","metadata":{}})"));
  EXPECT_FALSE(kube::parse_pool_total(R"({"kind":"Node"})"));
}

// The count the breaker decides on: live claims (holder held, or claimed within the TTL) and
// held nodes once each; stale claims (holder back in service, claim old) may be replaced.
TEST(KubeParse, SlotViewCountsLiveClaimsAndHeldNodesOnce) {
  const std::int64_t now = 1765076662000, ttl = 120000;
  auto slot = [](int i, std::string holder, std::int64_t at) {
    return kube::BreakerSlot{fmt::format("p-{}", i), i, std::move(holder), at, "1"};
  };
  std::vector<kube::BreakerSlot> slots = {slot(0, "held-a", now - 3600000),   // old, but its node is held: live
                                          slot(1, "young", now - 1000),       // draining now: live
                                          slot(2, "back", now - 3600000),     // resumed since: stale
                                          slot(4, "future", now + 3600000)};  // a clock far ahead: not young
  auto v = kube::view_slots(slots, "me", {"held-a", "held-b"}, 1, 5, now, ttl);
  EXPECT_FALSE(v.mine);
  EXPECT_EQ(v.count, 4) << "held-a, held-b, young, and one held node the read could not name";
  EXPECT_EQ(v.live_holders, (std::vector<std::string>{"held-a", "held-b", "young"}));
  EXPECT_EQ(v.free, (std::vector<int>{3}));
  ASSERT_EQ(v.stale.size(), 2u);
  EXPECT_EQ(v.stale[0].holder, "back");
  EXPECT_EQ(v.stale[1].holder, "future");
  EXPECT_TRUE(kube::view_slots(slots, "young", {}, 0, 5, now, ttl).mine);
  EXPECT_TRUE(kube::view_slots({}, "held-b", {"held-b"}, 0, 5, now, ttl).mine);
  EXPECT_TRUE(kube::view_slots(slots, "me", {}, 0, 2, now, ttl).free.empty()) << "no name at or past the limit";
}

TEST(KubeParse, RejectsWhatIsNotANode) {
  EXPECT_FALSE(kube::parse_node("not json"));
  EXPECT_EQ(kube::parse_node(R"({"kind":"Pod","metadata":{"name":"p"}})").error().message,
            "not a Node object (kind \"Pod\")");
  EXPECT_FALSE(kube::parse_node(R"({"kind":"Node","metadata":{}})"));
  EXPECT_EQ(*kube::status_message(status_object(403, "Forbidden", "no").dump()), "no");
  EXPECT_FALSE(kube::status_message(gpu_node("n1").dump()));
}

TEST(KubeParse, TaintValuesAreLabelSafe) {
  EXPECT_EQ(kube::taint_value("cmax: Xid 79: GPU fell off the bus"), "Xid-79-GPU-fell-off-the-bus");
  EXPECT_EQ(kube::taint_value("cmax: (NVLink) errors!"), "NVLink-errors");
  EXPECT_EQ(kube::taint_value("!!!"), "");
  std::string long_reason(200, 'x');
  EXPECT_EQ(kube::taint_value(long_reason).size(), 63u);
}

TEST(KubeParse, NodeNamesAreDns1123) {
  EXPECT_TRUE(kube::check_node_name("gpu-01.rack3"));
  EXPECT_FALSE(kube::check_node_name("GPU01"));
  EXPECT_FALSE(kube::check_node_name("n1/status"));
  EXPECT_FALSE(kube::check_node_name("n1?x=y"));
  EXPECT_FALSE(kube::check_node_name("-n1"));
  EXPECT_FALSE(kube::check_node_name(""));
  EXPECT_FALSE(kube::check_node_name(std::string(254, 'a')));
}

TEST(KubeParse, QueryValuesArePercentEncoded) {
  EXPECT_EQ(kube::encode_query_value("pool=a100"), "pool%3Da100");
  EXPECT_EQ(kube::encode_query_value("gpu in (h100,h200)"), "gpu%20in%20%28h100%2Ch200%29");
  EXPECT_EQ(kube::encode_query_value("a.b_c-d~e"), "a.b_c-d~e");
}

TEST(KubeParse, ApiUrls) {
  auto e = kube::parse_api_url("https://10.96.0.1:443");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->host, "10.96.0.1");
  EXPECT_EQ(e->port, 443);
  e = kube::parse_api_url("https://[fd00::1]:6443/k8s/clusters/c-1/");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->host, "fd00::1");
  EXPECT_EQ(e->port, 6443);
  EXPECT_EQ(e->base_path, "/k8s/clusters/c-1");
  EXPECT_EQ(kube::parse_api_url("https://kubernetes.default.svc")->port, 443);
  EXPECT_TRUE(kube::parse_api_url("http://127.0.0.1:8080"));
  EXPECT_TRUE(kube::parse_api_url("http://127.8.9.10:8080"));
  EXPECT_TRUE(kube::parse_api_url("http://localhost:8080"));
  EXPECT_TRUE(kube::parse_api_url("http://[::1]:8080"));
  for (const char* bad : {"http://10.0.0.1:8080", "http://127.0.0.1.example.com",
                          "http://128.0.0.1", "ftp://10.0.0.1", "https://", "https://h:0",
                          "https://h:99999", "https://user@h", "https://h/?x"})
    EXPECT_FALSE(kube::parse_api_url(bad)) << bad;
}

TEST(KubeParse, InClusterUrlFromTheServiceEnvironment) {
  auto o = KubernetesOptions::in_cluster("10.96.0.1", "443");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->api_url, "https://10.96.0.1:443");
  EXPECT_EQ(o->token_path, "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(o->ca_path, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
  EXPECT_EQ(KubernetesOptions::in_cluster("fd00::1", "443")->api_url, "https://[fd00::1]:443");
  EXPECT_NE(
      KubernetesOptions::in_cluster("", "443").error().message.find("KUBERNETES_SERVICE_HOST"),
      std::string::npos);
  EXPECT_FALSE(KubernetesOptions::in_cluster("10.96.0.1", "https"));
}

// Against the stand-in API server.

TEST_F(KubeApi, NodeStateReadsTheNodeWithTheBearerToken) {
  auto s = scheduler().node_state("n1");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, "READY");
  auto seen = api_.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/api/v1/nodes/n1");
  EXPECT_EQ(seen[0].authorization, "Bearer token-one");
  EXPECT_EQ(seen[0].body, "");
}

TEST_F(KubeApi, ARotatedTokenIsReadOnTheNextRequest) {
  auto k = scheduler();
  ASSERT_TRUE(k.node_state("n1"));
  host_.write("/token", "token-two");
  ASSERT_TRUE(k.node_state("n1"));
  auto seen = api_.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].authorization, "Bearer token-one");
  EXPECT_EQ(seen[1].authorization, "Bearer token-two");

  std::filesystem::remove(host_.dir() / "token");
  auto s = k.node_state("n1");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find((host_.dir() / "token").string()), std::string::npos)
      << s.error().message;
  EXPECT_EQ(api_.seen().size(), 2u);
}

TEST_F(KubeApi, DrainSendsGetThenAGuardedJsonPatchThenAStatusPatch) {
  auto a = scheduler().drain("n1", "Xid 79: GPU fell off the bus");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->changed);
  EXPECT_FALSE(a->dry_run);
  EXPECT_EQ(a->argv, (std::vector<std::string>{"PATCH", "/api/v1/nodes/n1", kDrainPatch, "PATCH",
                                               "/api/v1/nodes/n1/status", kDrainStatus}));

  auto seen = api_.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/api/v1/nodes/n1");
  EXPECT_EQ(seen[1].method, "PATCH");
  EXPECT_EQ(seen[1].target, "/api/v1/nodes/n1");
  EXPECT_EQ(seen[1].content_type, "application/json-patch+json");
  EXPECT_EQ(seen[1].body, kDrainPatch);
  EXPECT_EQ(seen[2].method, "PATCH");
  EXPECT_EQ(seen[2].target, "/api/v1/nodes/n1/status");
  EXPECT_EQ(seen[2].content_type, "application/strategic-merge-patch+json");
  EXPECT_EQ(seen[2].body, kDrainStatus);
  for (const auto& s : seen) EXPECT_EQ(s.authorization, "Bearer token-one");

  json n = api_.node("n1");
  EXPECT_EQ(n["spec"]["unschedulable"], true);
  EXPECT_EQ(taint_keys("n1"), json({"nvidia.com/gpu", "cmax.io/unhealthy"}));
  EXPECT_EQ(n["metadata"]["annotations"]["cmax.io/reason"], "cmax: Xid 79: GPU fell off the bus");
  EXPECT_EQ(n["metadata"]["annotations"]["cmax.io/cordoned"], "true");
  EXPECT_EQ(n["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"], "0");
  EXPECT_EQ(condition("n1", "CmaxHealthy")["reason"], "CmaxFault");
  EXPECT_EQ(condition("n1", "Ready")["status"], "True");

  auto s = scheduler().node_state("n1");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, "READY+DRAIN");
  EXPECT_EQ(s->reason, "cmax: Xid 79: GPU fell off the bus");
}

TEST_F(KubeApi, DrainOfANodeWithoutTaintsOrAnnotationsAddsTheLists) {
  json bare = gpu_node("n1");
  bare["spec"].erase("taints");
  bare["metadata"].erase("annotations");
  api_.put(bare);
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(taint_keys("n1"), json({"cmax.io/unhealthy"}));
  EXPECT_EQ(api_.node("n1")["metadata"]["annotations"],
            json({{"cmax.io/reason", "cmax: Xid 79"}, {"cmax.io/cordoned", "true"}}));
}

TEST_F(KubeApi, ANodeWithoutAnnotationsIsGuardedByATestOfNullNotTheResourceVersion) {
  json bare = gpu_node("n1");
  bare["metadata"].erase("annotations");
  api_.put(bare);
  // A labeller writes between cmax's read and its patch: no conflict. An annotation someone adds
  // in that window is one (cmax's patch adds the whole map), and survives cmax's retry.
  api_.after_next_get([](json& n) { n["metadata"]["labels"]["feature.node.kubernetes.io/x"] = "1"; });
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->attempts, 1);
  EXPECT_NE(a->argv.at(2).find(R"({"op":"test","path":"/metadata/annotations","value":null})"), std::string::npos)
      << a->argv.at(2);
  EXPECT_EQ(a->argv.at(2).find("resourceVersion"), std::string::npos) << a->argv.at(2);

  ASSERT_TRUE(scheduler().resume("n1", Force::kNo));
  json again = api_.node("n1");
  again["metadata"].erase("annotations");
  api_.put(again);
  api_.after_next_get([](json& n) { n["metadata"]["annotations"] = {{"ops.example.com/owner", "infra"}}; });
  auto b = scheduler().drain("n1", "Xid 48");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->attempts, 2);
  EXPECT_EQ(api_.node("n1")["metadata"]["annotations"].value("ops.example.com/owner", ""), "infra");
  EXPECT_EQ(api_.node("n1")["metadata"]["annotations"].value("cmax.io/reason", ""), "cmax: Xid 48");
}

TEST_F(KubeApi, DrainTwiceSendsNoSecondPatch) {
  auto k = scheduler();
  ASSERT_TRUE(k.drain("n1", "Xid 79"));
  api_.forget();
  auto again = k.drain("n1", "Xid 48");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_TRUE(again->argv.empty());
  EXPECT_EQ(again->note, "already drained: cmax: Xid 79");
  EXPECT_EQ(methods(), std::vector<std::string>{"GET /api/v1/nodes/n1"});
  EXPECT_EQ(api_.node("n1")["metadata"]["annotations"]["cmax.io/reason"], "cmax: Xid 79");
}

TEST_F(KubeApi, SomeoneElsesCordonIsLeftAloneByDrainAndRefusedByResume) {
  json n = gpu_node("n1");
  n["spec"]["unschedulable"] = true;
  api_.put(n);
  auto k = scheduler();

  auto d = k.drain("n1", "Xid 79");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->changed);
  EXPECT_EQ(d->note, "already drained for someone else's reason \"cordoned\"; left as is");

  auto r = k.resume("n1", Force::kNo);
  ASSERT_FALSE(r);
  EXPECT_EQ(
      r.error().message,
      "resume n1: READY+DRAIN with reason \"cordoned\", not set by cmax: cmax resumes only its "
      "own drains; resume it by hand or force it");
  EXPECT_EQ(methods(), (std::vector<std::string>{"GET /api/v1/nodes/n1", "GET /api/v1/nodes/n1"}));
  EXPECT_EQ(api_.node("n1"), n);

  auto rb = k.reboot("n1", "Xid 79");
  ASSERT_FALSE(rb);
  EXPECT_NE(rb.error().message.find("leave it to its owner"), std::string::npos);

  // Forced, resume lifts their cordon and sends no status patch: there is no cmax condition.
  api_.forget();
  auto f = k.resume("n1", Force::kYes);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->argv, (std::vector<std::string>{
                         "PATCH", "/api/v1/nodes/n1",
                         R"([{"op":"test","path":"/spec","value":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu","value":"present"}],"unschedulable":true}},)"
                         R"({"op":"remove","path":"/spec/unschedulable"}])"}));
  EXPECT_EQ(methods(),
            (std::vector<std::string>{"GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"}));
  EXPECT_FALSE(api_.node("n1")["spec"].contains("unschedulable"));
}

TEST_F(KubeApi, ResumeOfOurDrainRemovesOnlyWhatCmaxAdded) {
  auto k = scheduler();
  ASSERT_TRUE(k.drain("n1", "Xid 79"));
  // A taint someone adds while the node is held stays through the resume.
  json n = api_.node("n1");
  n["spec"]["taints"].push_back({{"key", "maintenance"}, {"effect", "NoSchedule"}});
  api_.put(n);
  api_.forget();

  auto r = k.resume("n1", Force::kNo);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(methods(), (std::vector<std::string>{"GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                                                 "PATCH /api/v1/nodes/n1/status"}));
  EXPECT_EQ(api_.seen()[1].body,
            R"([{"op":"test","path":"/spec","value":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu","value":"present"},)"
            R"({"effect":"NoSchedule","key":"cmax.io/unhealthy","value":"Xid-79"},{"effect":"NoSchedule","key":"maintenance"}],)"
            R"("unschedulable":true}},)"
            R"({"op":"remove","path":"/spec/taints/1"},)"
            R"({"op":"remove","path":"/metadata/annotations/cmax.io~1reason"},)"
            R"({"op":"remove","path":"/metadata/annotations/cmax.io~1cordoned"},)"
            R"({"op":"remove","path":"/spec/unschedulable"},)"
            R"({"op":"remove","path":"/metadata/labels/cmax.io~1held"}])");
  EXPECT_EQ(api_.seen()[2].body,
            R"({"status":{"conditions":[{"lastHeartbeatTime":"2026-12-02T12:00:00Z",)"
            R"("lastTransitionTime":"2026-12-02T12:00:00Z","message":"cmax resumed the node",)"
            R"("reason":"CmaxResumed","status":"True","type":"CmaxHealthy"}]}})");

  json after = api_.node("n1");
  EXPECT_EQ(taint_keys("n1"), json({"nvidia.com/gpu", "maintenance"}));
  EXPECT_FALSE(after["spec"].contains("unschedulable"));
  EXPECT_EQ(after["metadata"]["annotations"], json({{"node.alpha.kubernetes.io/ttl", "0"}}));
  EXPECT_EQ(condition("n1", "CmaxHealthy")["status"], "True");

  api_.forget();
  auto again = k.resume("n1", Force::kNo);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->note, "in service (READY); nothing to resume");
  EXPECT_EQ(methods(), std::vector<std::string>{"GET /api/v1/nodes/n1"});
}

TEST_F(KubeApi, ResumeKeepsACordonCmaxDidNotSet) {
  // Someone cordoned the node after cmax tainted it: resume takes cmax's part only.
  ASSERT_TRUE(scheduler().drain("n1", "Xid 79"));
  json n = api_.node("n1");
  n["metadata"]["annotations"].erase("cmax.io/cordoned");
  api_.put(n);
  auto r = scheduler().resume("n1", Force::kNo);
  ASSERT_TRUE(r) << r.error().message;
  json after = api_.node("n1");
  EXPECT_EQ(after["spec"]["unschedulable"], true);
  EXPECT_EQ(taint_keys("n1"), json({"nvidia.com/gpu"}));
  EXPECT_FALSE(after["metadata"]["annotations"].contains("cmax.io/reason"));
}

TEST_F(KubeApi, AConflictOnTheFirstPatchIsRetriedAfterAReRead) {
  api_.refuse_patches(
      409, "Conflict",
      "Operation cannot be fulfilled on nodes \"n1\": the object has been modified");
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(methods(), (std::vector<std::string>{"GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                                                 "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                                                 "PATCH /api/v1/nodes/n1/status"}));
  EXPECT_EQ(api_.node("n1")["spec"]["unschedulable"], true);
  EXPECT_EQ(a->attempts, 2);
}

TEST_F(KubeApi, AChangeBetweenReadAndPatchFailsTheTestOpAndIsNotLost) {
  // Between cmax's GET and its PATCH another controller puts a taint first in the list: an index
  // cmax computed would be stale, so the test of spec as read must stop the first patch.
  ASSERT_TRUE(scheduler().drain("n1", "Xid 79"));
  api_.after_next_get([](json& n) {
    n["spec"]["taints"].insert(
        n["spec"]["taints"].begin(),
        json{{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoExecute"}});
  });
  api_.forget();
  auto r = scheduler().resume("n1", Force::kNo);
  ASSERT_TRUE(r) << r.error().message;
  auto seen = api_.seen();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[1].body.find("unreachable"), std::string::npos) << seen[1].body;
  EXPECT_NE(seen[3].body.find(R"({"op":"test","path":"/spec","value":{"taints":[{"effect":"NoExecute","key":"node.kubernetes.io/unreachable"})"),
            std::string::npos)
      << seen[3].body;
  EXPECT_NE(seen[3].body.find(R"({"op":"remove","path":"/spec/taints/2"})"), std::string::npos)
      << seen[3].body;
  EXPECT_EQ(taint_keys("n1"), json({"node.kubernetes.io/unreachable", "nvidia.com/gpu"}));
}

TEST_F(KubeApi, ALabelOrStatusWriteBetweenReadAndPatchIsNoConflict) {
  // node-feature-discovery relabels, the kubelet writes status: neither touches what cmax builds on.
  api_.after_next_get([](json& n) {
    n["metadata"]["labels"]["feature.node.kubernetes.io/cpu-model"] = "sapphire-rapids";
    n["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  });
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(methods(), (std::vector<std::string>{"GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                                                 "PATCH /api/v1/nodes/n1/status"}));
  EXPECT_EQ(api_.node("n1")["metadata"]["labels"]["feature.node.kubernetes.io/cpu-model"], "sapphire-rapids");
  EXPECT_EQ(a->attempts, 1);
  EXPECT_EQ(api_.node("n1")["spec"]["unschedulable"], true);
}

TEST_F(KubeApi, ConflictsWithoutEndGiveUpAfterKMaxTries) {
  api_.refuse_patches(409, "Conflict", "the object has been modified", 100);
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_FALSE(a);
  EXPECT_EQ(
      a.error().message,
      "drain n1: PATCH /api/v1/nodes/n1: 409 Conflict: the object has been modified: the node "
      "changed while cmax patched it, 6 tries: try again");
  int patches = 0;
  for (const auto& s : api_.seen()) patches += s.method == "PATCH";
  EXPECT_EQ(patches, KubernetesScheduler::kMaxTries);
}

TEST_F(KubeApi, ForbiddenNamesTheStatusTheApiMessageAndTheFix) {
  api_.refuse_patches(403, "Forbidden",
                      "nodes \"n1\" is forbidden: User \"system:serviceaccount:cmax:cmaxd\" cannot "
                      "patch resource \"nodes\" in API group \"\" at the cluster scope");
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_FALSE(a);
  EXPECT_EQ(
      a.error().message,
      "drain n1: PATCH /api/v1/nodes/n1: 403 Forbidden: nodes \"n1\" is forbidden: User "
      "\"system:serviceaccount:cmax:cmaxd\" cannot patch resource \"nodes\" in API group \"\" "
      "at the cluster scope: give the service account patch on nodes "
      "(deploy/kubernetes/cmaxd.yaml)");
  EXPECT_EQ(methods(),
            (std::vector<std::string>{"GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"}));
}

TEST_F(KubeApi, ARefusedStatusPatchSaysTheNodeIsPatchedAlready) {
  api_.refuse_status_patch(403, "Forbidden",
                           "nodes \"n1\" is forbidden: User \"system:serviceaccount:cmax:cmaxd\" "
                           "cannot patch resource \"nodes/status\"");
  auto a = scheduler().drain("n1", "Xid 79");
  ASSERT_FALSE(a);
  EXPECT_EQ(
      a.error().message,
      "drain n1: node patched, but PATCH /api/v1/nodes/n1/status: 403 Forbidden: nodes \"n1\" "
      "is forbidden: User \"system:serviceaccount:cmax:cmaxd\" cannot patch resource "
      "\"nodes/status\": give the service account patch on nodes/status "
      "(deploy/kubernetes/cmaxd.yaml)");
  EXPECT_EQ(api_.node("n1")["spec"]["unschedulable"], true);
  EXPECT_TRUE(condition("n1", "CmaxHealthy").is_null());
}

TEST_F(KubeApi, AMissingNodeSaysSo) {
  auto s = scheduler().node_state("n9");
  ASSERT_FALSE(s);
  EXPECT_EQ(
      s.error().message,
      "state of n9: GET /api/v1/nodes/n9: 404 Not Found: nodes \"n9\" not found: no such node "
      "in this cluster: use the name `kubectl get nodes` prints");
  auto bad = scheduler().drain("N1", "Xid 79");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("not a Kubernetes node name"), std::string::npos);
  EXPECT_EQ(api_.seen().size(), 1u);
}

TEST_F(KubeApi, DryRunSendsOnlyGetsAndReportsWhatARealRunSends) {
  auto dry = scheduler(/*dry_run=*/true);
  auto d = dry.drain("n1", "Xid 79: GPU fell off the bus");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->changed);
  EXPECT_TRUE(d->dry_run);
  auto rb = dry.reboot("n1", "Xid 79");
  ASSERT_TRUE(rb) << rb.error().message;
  EXPECT_TRUE(rb->dry_run);
  auto r = dry.resume("n1", Force::kNo);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->changed);
  for (const auto& s : api_.seen()) EXPECT_EQ(s.method, "GET") << s.target;
  EXPECT_EQ(api_.seen().size(), 3u);
  EXPECT_EQ(api_.node("n1"), gpu_node("n1"));

  auto real = scheduler().drain("n1", "Xid 79: GPU fell off the bus");
  ASSERT_TRUE(real) << real.error().message;
  EXPECT_EQ(d->argv, real->argv);
}

TEST_F(KubeApi, RebootTaintsNoExecuteAndAsksForTheRebootOnce) {
  auto k = scheduler();
  auto a = k.reboot("n1", "Xid 79");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(
      a->argv.at(2),
      R"([{"op":"test","path":"/spec","value":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu","value":"present"}]}},)"
      R"({"op":"add","path":"/spec/unschedulable","value":true},)"
      R"({"op":"add","path":"/spec/taints/-","value":{"effect":"NoExecute","key":"cmax.io/reboot-required","timeAdded":"2026-12-02T12:00:00Z","value":"Xid-79"}},)"
      R"({"op":"add","path":"/metadata/annotations/cmax.io~1cordoned","value":"true"},)"
      R"({"op":"add","path":"/metadata/annotations/cmax.io~1reason","value":"cmax: Xid 79"},)"
      R"({"op":"add","path":"/metadata/labels/cmax.io~1held","value":"true"}])");
  EXPECT_EQ(condition("n1", "CmaxHealthy")["reason"], "CmaxRebootRequired");
  auto s = k.node_state("n1");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, "READY+DRAIN+REBOOT_REQUESTED");

  api_.forget();
  auto again = k.reboot("n1", "Xid 79");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->note, "reboot already pending (READY+DRAIN+REBOOT_REQUESTED)");
  EXPECT_EQ(methods(), std::vector<std::string>{"GET /api/v1/nodes/n1"});

  // Resume after the reboot clears both the taint and the cordon.
  ASSERT_TRUE(k.resume("n1", Force::kNo));
  EXPECT_EQ(taint_keys("n1"), json({"nvidia.com/gpu"}));
  EXPECT_FALSE(api_.node("n1")["spec"].contains("unschedulable"));
}

TEST_F(KubeApi, RebootOfADrainedNodeKeepsTheDrainTaintAndLeavesNoExecuteOut) {
  auto o = options();
  o.reboot_evicts = false;
  KubernetesScheduler k(o, clock_);
  ASSERT_TRUE(k.drain("n1", "Xid 79"));
  auto a = k.reboot("n1", "Xid 79 again");
  ASSERT_TRUE(a) << a.error().message;
  json n = api_.node("n1");
  EXPECT_EQ(taint_keys("n1"),
            json({"nvidia.com/gpu", "cmax.io/unhealthy", "cmax.io/reboot-required"}));
  EXPECT_EQ(n["spec"]["taints"][2]["effect"], "NoSchedule");
  EXPECT_FALSE(n["spec"]["taints"][2].contains("timeAdded"));
  EXPECT_EQ(n["metadata"]["annotations"]["cmax.io/reason"], "cmax: Xid 79 again");
  EXPECT_EQ(n["metadata"]["annotations"]["cmax.io/cordoned"], "true");
  // The condition stays False: its transition time is the drain's, only the heartbeat moves.
  EXPECT_EQ(a->argv.at(5),
            R"({"status":{"conditions":[{"lastHeartbeatTime":"2026-12-02T12:00:00Z",)"
            R"("message":"cmax: Xid 79 again","reason":"CmaxRebootRequired","status":"False",)"
            R"("type":"CmaxHealthy"}]}})");
}

TEST_F(KubeApi, HeldByCmaxCountsThePoolTheSelectorPicksAcrossPages) {
  auto held = [](json n) {
    n["spec"]["unschedulable"] = true;
    n["metadata"]["annotations"]["cmax.io/reason"] = "cmax: Xid 79";
    n["metadata"]["labels"]["cmax.io/held"] = "true";
    return n;
  };
  api_.put(held(gpu_node("n1")));
  api_.put(held(gpu_node("n2")));
  json foreign = gpu_node("n3");
  foreign["spec"]["unschedulable"] = true;
  api_.put(foreign);
  // cmax's label left behind on a node someone else holds: not cmax's hold.
  json stale = held(gpu_node("n5"));
  stale["metadata"]["annotations"]["cmax.io/reason"] = "maintenance";
  api_.put(stale);
  // cmax's reason typed by hand on a cordon, without the label every cmax hold sets: not read.
  json by_hand = held(gpu_node("n6"));
  by_hand["metadata"]["labels"].erase("cmax.io/held");
  api_.put(by_hand);
  api_.put(gpu_node("n4"));
  api_.put(held(gpu_node("h1", "h100")));

  auto o = options();
  o.pool_selector = "pool=a100";
  auto c = KubernetesScheduler(o, clock_).held_by_cmax("n1");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->pool, "nodes matching pool=a100");
  EXPECT_EQ(c->held, 2);
  EXPECT_EQ(c->total, 6);
  EXPECT_TRUE(c->node_held);
  // Only the nodes carrying cmax's label are read whole (no list by cordon: the server would filter
  // the whole pool for it); the pool is counted as metadata, one object first (this fake gives no
  // remainingItemCount, so the count pages on).
  EXPECT_EQ(methods(), (std::vector<std::string>{
                           "GET /api/v1/nodes?labelSelector=pool%3Da100%2Ccmax.io%2Fheld&limit=500",
                           "GET /api/v1/nodes?labelSelector=pool%3Da100%2Ccmax.io%2Fheld&limit=500&continue=2",
                           "GET /api/v1/nodes?labelSelector=pool%3Da100&limit=1",
                           "GET /api/v1/nodes?labelSelector=pool%3Da100&limit=500&continue=1",
                           "GET /api/v1/nodes?labelSelector=pool%3Da100&limit=500&continue=3",
                           "GET /api/v1/nodes?labelSelector=pool%3Da100&limit=500&continue=5"}));

  api_.forget();
  auto all = scheduler().held_by_cmax("n4");
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->pool, "all nodes");
  EXPECT_EQ(all->held, 3);
  EXPECT_EQ(all->total, 7);
  EXPECT_FALSE(all->node_held) << "n4 is in service";
  EXPECT_EQ(methods(), (std::vector<std::string>{"GET /api/v1/nodes?labelSelector=cmax.io%2Fheld&limit=500",
                                                 "GET /api/v1/nodes?labelSelector=cmax.io%2Fheld&limit=500&continue=2",
                                                 "GET /api/v1/nodes?limit=1",
                                                 "GET /api/v1/nodes?limit=500&continue=1",
                                                 "GET /api/v1/nodes?limit=500&continue=3",
                                                 "GET /api/v1/nodes?limit=500&continue=5"}));
}

TEST_F(KubeApi, PlainHttpToAnotherHostIsRefusedBeforeAnyConnection) {
  auto o = options();
  // TEST-NET-1: a connection attempt would hang until the timeout.
  o.api_url = "http://192.0.2.10:6443";
  o.timeout = 3000ms;
  KubernetesScheduler k(o, clock_);
  auto start = std::chrono::steady_clock::now();
  auto s = k.node_state("n1");
  auto d = k.drain("n1", "Xid 79");
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s);
  ASSERT_FALSE(d);
  EXPECT_EQ(s.error().message,
            "state of n1: API URL \"http://192.0.2.10:6443\" is plain http to a host that is not "
            "loopback: the bearer token would cross the network in clear text; use https:// with "
            "the cluster CA");
  EXPECT_TRUE(d.error().message.starts_with("drain n1: API URL"));
  EXPECT_LT(elapsed, 200ms);
}

TEST_F(KubeApi, AServerThatNeverAnswersTimesOut) {
  // A listening socket nobody accepts on: the kernel completes the handshake, no answer follows.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  auto o = options();
  o.api_url = fmt::format("http://127.0.0.1:{}", ntohs(addr.sin_port));
  o.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  auto s = KubernetesScheduler(o, clock_).node_state("n1");
  auto elapsed = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            fmt::format("state of n1: GET /api/v1/nodes/n1: no answer from 127.0.0.1:{} within 300 "
                        "ms: is the API server overloaded?",
                        ntohs(addr.sin_port)));
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 300ms + 1500ms);
}

TEST_F(KubeApi, HttpsNeedsTheCaBundle) {
  auto o = options();
  o.api_url = fmt::format("https://127.0.0.1:{}", api_.port());
  auto s = KubernetesScheduler(o, clock_).node_state("n1");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            fmt::format("state of n1: GET /api/v1/nodes/n1: read CA bundle {}: No such file or "
                        "directory: mount the service account's ca.crt or set ca_path",
                        o.ca_path));
  EXPECT_TRUE(api_.seen().empty());
}

// TLS with a throwaway CA: the server certificate is verified, host name included.
class KubeTls : public ::testing::Test {
 protected:
  void SetUp() override {
    auto openssl = cmax::core::find_program("openssl");
    if (!openssl) GTEST_SKIP() << "no openssl program to make a test certificate";
    auto dir = host_.dir().string();
    auto make = [&](std::string cn, std::string san, std::string name) {
      auto r = cmax::core::run_process(
          {{*openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            "/CN=" + cn, "-addext", "subjectAltName=" + san, "-keyout", dir + "/" + name + ".key",
            "-out", dir + "/" + name + ".crt"},
           30000ms});
      ASSERT_TRUE(r) << r.error().message;
      ASSERT_EQ(r->exit_code, 0) << r->err;
    };
    make("127.0.0.1", "IP:127.0.0.1", "server");
    make("other", "DNS:other.example", "other");
    host_.write("/token", "tls-token");

    server_ = std::make_unique<httplib::SSLServer>((dir + "/server.crt").c_str(),
                                                   (dir + "/server.key").c_str());
    ASSERT_TRUE(server_->is_valid());
    server_->Get(R"(/api/v1/nodes/([a-z0-9.-]+))", [this](const auto& req, auto& res) {
      std::lock_guard lock(mu_);
      authorization_ = req.get_header_value("Authorization");
      res.set_content(gpu_node(req.matches[1].str()).dump(), "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    wait_running(*server_);
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  KubernetesOptions options(std::string ca) {
    KubernetesOptions o;
    o.api_url = fmt::format("https://127.0.0.1:{}", port_);
    o.token_path = (host_.dir() / "token").string();
    o.ca_path = (host_.dir() / ca).string();
    o.timeout = 3000ms;
    return o;
  }

  cmax::test::TempHost host_;
  cmax::core::FixedClock clock_{kNow};
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::string authorization_;
};

TEST_F(KubeTls, ACertificateFromTheCaIsTrusted) {
  auto s = KubernetesScheduler(options("server.crt"), clock_).node_state("n1");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, "READY");
  std::lock_guard lock(mu_);
  EXPECT_EQ(authorization_, "Bearer tls-token");
}

TEST_F(KubeTls, ACertificateFromAnotherCaIsRefusedBeforeTheTokenIsSent) {
  auto s = KubernetesScheduler(options("other.crt"), clock_).node_state("n1");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("does not verify against"), std::string::npos)
      << s.error().message;
  std::lock_guard lock(mu_);
  EXPECT_EQ(authorization_, "");
}
