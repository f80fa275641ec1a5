#include "sched/kubernetes_parse.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <set>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sched/scheduler.h"

namespace cmax::sched::kube {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxTaintValue = 63;

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool is_loopback(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  std::string h(host);
  // inet_pton takes only the dotted quad, so "127.1" or "127.0.0.1.evil.com" are not loopback.
  return ::inet_pton(AF_INET, h.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::optional<int> parse_port(std::string_view s) {
  int port = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port < 1 || port > 65535)
    return std::nullopt;
  return port;
}

/// A JSON Pointer token: '~' -> "~0", '/' -> "~1" (RFC 6901).
std::string pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string annotation_path(std::string_view key) {
  return "/metadata/annotations/" + pointer_token(key);
}

const json* find(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string string_at(const json& j, std::string_view key) {
  const json* v = find(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<json> parse_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

Result<Node> node_from(const json& j) {
  if (!j.is_object() || string_at(j, "kind") != "Node")
    return fail("not a Node object (kind \"{}\")", j.is_object() ? string_at(j, "kind") : "");
  Node n;
  const json* meta = find(j, "metadata");
  n.state.name = meta ? string_at(*meta, "name") : "";
  if (n.state.name.empty()) return fail("Node object without metadata.name");
  n.resource_version = string_at(*meta, "resourceVersion");

  if (const json* labels = find(*meta, "labels"); labels && labels->is_object()) {
    n.has_labels = true;
    n.held_label = labels->contains(std::string(kHeldLabel));
  }
  if (const json* ann = find(*meta, "annotations"); ann && ann->is_object()) {
    n.has_annotations = true;
    if (const json* r = find(*ann, kReasonAnnotation); r && r->is_string())
      n.reason_annotation = r->get<std::string>();
    n.cordoned_by_cmax = string_at(*ann, kCordonedAnnotation) == "true";
  }

  if (const json* spec = find(j, "spec")) {
    if (spec->is_object()) n.spec_json = spec->dump();
    const json* u = find(*spec, "unschedulable");
    n.unschedulable = u && u->is_boolean() && u->get<bool>();
    if (const json* taints = find(*spec, "taints"); taints && taints->is_array()) {
      n.has_taints = true;
      for (const json& t : *taints)
        n.taints.push_back({string_at(t, "key"), string_at(t, "value"), string_at(t, "effect")});
    }
  }

  std::string ready;
  std::string cmax_since;
  if (const json* status = find(j, "status"))
    if (const json* conds = find(*status, "conditions"); conds && conds->is_array())
      for (const json& c : *conds) {
        auto type = string_at(c, "type");
        if (type == "Ready") ready = string_at(c, "status");
        if (type == kConditionType) {
          n.condition_status = string_at(c, "status");
          cmax_since = string_at(c, "lastTransitionTime");
        }
      }

  NodeState& s = n.state;
  s.base = ready == "True" ? "READY" : ready == "False" ? "NOTREADY" : "UNKNOWN";
  const Taint* fault = nullptr;
  const Taint* reboot = nullptr;
  for (const Taint& t : n.taints) {
    if (t.key == kUnhealthyTaint && !fault) fault = &t;
    if (t.key == kRebootTaint && !reboot) reboot = &t;
  }
  // cmax's NoSchedule taint keeps pods off as surely as a cordon: a node someone uncordoned by
  // hand while the taint stays is still out of service, and resume must still find it held.
  if (n.unschedulable || fault || reboot) s.flags.push_back("DRAIN");
  if (ready == "Unknown") s.flags.push_back("NOT_RESPONDING");
  if (reboot) s.flags.push_back("REBOOT_REQUESTED");
  s.state = s.base;
  for (const auto& f : s.flags) s.state += "+" + f;

  if (n.reason_annotation && n.reason_annotation->starts_with(kReasonPrefix)) {
    s.reason = *n.reason_annotation;
    s.reason_time = cmax_since;
  } else if (fault || reboot) {
    const Taint& t = fault ? *fault : *reboot;
    s.reason = fmt::format("{}taint {}={} (no {} annotation)", kReasonPrefix, t.key, t.value,
                           kReasonAnnotation);
  } else if (n.unschedulable) {
    // Kubernetes does not record who cordoned a node; without cmax's annotation it was not cmax.
    s.reason = "cordoned";
  }
  return n;
}

json condition_json(std::string_view status, std::string_view reason, std::string_view message,
                    std::string_view previous_status, std::string_view now_utc) {
  json c = {{"type", kConditionType},
            {"status", status},
            {"reason", reason},
            {"message", message},
            {"lastHeartbeatTime", now_utc}};
  if (previous_status != status) c["lastTransitionTime"] = now_utc;
  return c;
}

void remove_taints(const Node& node, json& ops, std::string_view key_a, std::string_view key_b) {
  // Highest index first, so each removal leaves the indexes still to remove in place.
  for (std::size_t i = node.taints.size(); i-- > 0;)
    if (node.taints[i].key == key_a || node.taints[i].key == key_b)
      ops.push_back({{"op", "remove"}, {"path", fmt::format("/spec/taints/{}", i)}});
}

}  // namespace

Result<ApiEndpoint> parse_api_url(std::string_view url) {
  ApiEndpoint e;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    e.tls = false;
    e.port = 80;
    rest.remove_prefix(7);
  } else {
    return fail("API URL \"{}\" is not https://host[:port]: use the API server's https URL", url);
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find_first_of("@?#") != std::string_view::npos ||
      path.find_first_of("?#") != std::string_view::npos)
    return fail("API URL \"{}\" holds credentials, a query or a fragment: give scheme, host, port",
                url);
  std::string_view port;
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("API URL \"{}\": unclosed '[' in host", url);
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':'))
      return fail("API URL \"{}\": junk after the IPv6 address", url);
    if (!after.empty()) port = after.substr(1);
  } else {
    auto colon = authority.find(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (e.host.empty()) return fail("API URL \"{}\" has no host", url);
  if (!port.empty() || authority.ends_with(':')) {
    auto p = parse_port(port);
    if (!p) return fail("API URL \"{}\": port \"{}\" is not 1-65535", url, port);
    e.port = *p;
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  e.base_path = std::string(path);
  if (!e.tls && !is_loopback(e.host))
    return fail(
        "API URL \"{}\" is plain http to a host that is not loopback: the bearer token would "
        "cross the network in clear text; use https:// with the cluster CA",
        url);
  return e;
}

Result<std::string> in_cluster_url(std::string_view host, std::string_view port) {
  if (host.empty())
    return fail(
        "KUBERNETES_SERVICE_HOST is not set: not running in a Kubernetes pod; give the API "
        "server's URL instead");
  auto p = parse_port(port);
  if (!p) return fail("KUBERNETES_SERVICE_PORT \"{}\" is not a port (1-65535)", port);
  bool v6 = host.find(':') != std::string_view::npos;
  return fmt::format("https://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", *p);
}

Result<void> check_node_name(std::string_view node) {
  if (node.empty()) return fail("empty node name");
  if (node.size() > 253) return fail("node name longer than 253 characters");
  for (char c : node)
    if (!is_lower_alnum(c) && c != '-' && c != '.')
      return fail(
          "\"{}\" is not a Kubernetes node name (lower-case letters, digits, '-', '.'): use the "
          "name `kubectl get nodes` prints",
          node);
  if (!is_lower_alnum(node.front()) || !is_lower_alnum(node.back()))
    return fail(
        "\"{}\" is not a Kubernetes node name: it must start and end with a letter or digit", node);
  return ok();
}

std::string encode_query_value(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (is_alnum(static_cast<char>(c)) || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string taint_value(std::string_view reason) {
  if (reason.starts_with(kReasonPrefix)) reason.remove_prefix(kReasonPrefix.size());
  std::string out;
  for (char c : reason) {
    if (out.size() >= kMaxTaintValue) break;
    if (is_alnum(c) || c == '_' || c == '.' || c == '-')
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && !is_alnum(out.back())) out.pop_back();
  auto first = std::find_if(out.begin(), out.end(), is_alnum);
  out.erase(out.begin(), first);
  return out;
}

Result<Node> parse_node(std::string_view text) {
  auto j = parse_json(text);
  if (!j) return fail("answer is not JSON");
  return node_from(*j);
}

Result<NodePage> parse_node_list(std::string_view text) {
  auto j = parse_json(text);
  if (!j) return fail("answer is not JSON");
  if (!j->is_object() || string_at(*j, "kind") != "NodeList")
    return fail("not a NodeList object (kind \"{}\")", j->is_object() ? string_at(*j, "kind") : "");
  NodePage page;
  if (const json* meta = find(*j, "metadata")) page.continue_token = string_at(*meta, "continue");
  const json* items = find(*j, "items");
  if (!items || !items->is_array()) return page;
  for (const json& item : *items) {
    json node = item;
    // List items carry no kind of their own.
    if (node.is_object()) node["kind"] = "Node";
    auto n = node_from(node);
    if (!n) return Unexpected<Error>{n.error()};
    page.nodes.push_back(std::move(n->state));
  }
  return page;
}

Result<ListCount> parse_list_count(std::string_view text) {
  auto j = parse_json(text);
  if (!j) return fail("answer is not JSON");
  const std::string kind = j->is_object() ? string_at(*j, "kind") : "";
  if (kind != "NodeList" && kind != "PartialObjectMetadataList")
    return fail("not a NodeList or PartialObjectMetadataList (kind \"{}\")", kind);
  ListCount c;
  if (const json* meta = find(*j, "metadata"); meta && meta->is_object()) {
    c.continue_token = string_at(*meta, "continue");
    if (const json* r = find(*meta, "remainingItemCount"); r && r->is_number_integer() && r->get<std::int64_t>() >= 0)
      c.remaining = r->get<std::int64_t>();
  }
  if (const json* items = find(*j, "items"); items && items->is_array()) c.items = items->size();
  return c;
}

Result<WatchEvent> parse_node_watch_event(std::string_view line) {
  auto j = parse_json(line);
  if (!j) return fail("watch event is not JSON");
  if (!j->is_object()) return fail("watch event is not an object");
  WatchEvent e;
  e.type = string_at(*j, "type");
  const json* obj = find(*j, "object");
  if (!obj || !obj->is_object()) return fail("watch event {} without an object", e.type.empty() ? "\"\"" : e.type);
  if (const json* meta = find(*obj, "metadata"); meta && meta->is_object())
    e.resource_version = string_at(*meta, "resourceVersion");
  if (e.type == "ERROR") {
    if (const json* code = find(*obj, "code"); code && code->is_number_integer()) e.error_code = code->get<int>();
    e.error_message = string_at(*obj, "message");
    return e;
  }
  if (e.type == "BOOKMARK") return e;
  if (e.type != "ADDED" && e.type != "MODIFIED" && e.type != "DELETED")
    return fail("watch event of unknown type \"{}\"", core::clip(e.type, 40));
  auto n = node_from(*obj);
  if (!n) return fail("watch event {}: {}", e.type, n.error().message);
  e.node = std::move(*n);
  return e;
}

namespace {

// MicroTime as the API writes it: "2026-12-07T03:04:22.092738Z".
std::string micro_time(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:06d}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000) * 1000);
}

// "2026-12-07T03:04:22.092738Z" or "...:22Z" -> ms since the epoch; 0 when unreadable.
std::int64_t parse_micro_time(const std::string& text) {
  std::tm tm{};
  int frac_digits = 0;
  long frac = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) != 6) return 0;
  if (auto dot = text.find('.'); dot != std::string::npos) {
    std::size_t i = dot + 1;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && frac_digits < 9) {
      frac = frac * 10 + (text[i] - '0');
      ++frac_digits;
      ++i;
    }
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return 0;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const std::int64_t secs = static_cast<std::int64_t>(::timegm(&tm));
  while (frac_digits > 3) {
    frac /= 10;
    --frac_digits;
  }
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  return secs * 1000 + frac;
}

}  // namespace

Result<std::vector<BreakerSlot>> parse_breaker_slots(std::string_view text) {
  auto j = parse_json(text);
  if (!j) return fail("answer is not JSON");
  if (!j->is_object() || string_at(*j, "kind") != "LeaseList")
    return fail("not a LeaseList (kind \"{}\")", j->is_object() ? string_at(*j, "kind") : "");
  std::vector<BreakerSlot> out;
  const json* items = find(*j, "items");
  if (!items || !items->is_array()) return out;
  for (const auto& item : *items) {
    if (!item.is_object()) continue;
    const json* meta = find(item, "metadata");
    const json* spec = find(item, "spec");
    if (!meta || !meta->is_object()) continue;
    BreakerSlot s;
    s.name = string_at(*meta, "name");
    s.resource_version = string_at(*meta, "resourceVersion");
    if (auto dash = s.name.rfind('-'); dash != std::string::npos && dash + 1 < s.name.size()) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.name.data() + dash + 1, s.name.data() + s.name.size(), v);
      if (ec == std::errc() && p == s.name.data() + s.name.size() && v >= 0) s.index = v;
    }
    if (spec && spec->is_object()) {
      s.holder = string_at(*spec, "holderIdentity");
      s.acquired_ms = parse_micro_time(string_at(*spec, "acquireTime"));
    }
    if (s.name.empty()) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::string breaker_slot_json(std::string_view name, std::string_view ns, std::string_view pool_key,
                              std::string_view holder, std::int64_t acquired_ms, int duration_s,
                              std::string_view resource_version) {
  json meta = {{"name", name}, {"namespace", ns}, {"labels", {{kSlotPoolLabel, pool_key}}}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  const auto at = micro_time(acquired_ms);
  return json{{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", meta},
              {"spec",
               {{"holderIdentity", holder}, {"leaseDurationSeconds", duration_s}, {"acquireTime", at}, {"renewTime", at}}}}
      .dump();
}

std::string breaker_pool_key(std::string_view pool_selector) {
  if (pool_selector.empty()) return "all";
  std::uint32_t h = 2166136261u;
  for (unsigned char c : pool_selector) h = (h ^ c) * 16777619u;
  return fmt::format("{:08x}", h);
}

std::optional<PoolTotal> parse_pool_total(std::string_view text) {
  auto j = parse_json(text);
  if (!j || !j->is_object() || string_at(*j, "kind") != "Lease") return std::nullopt;
  const json* meta = find(*j, "metadata");
  if (!meta || !meta->is_object()) return std::nullopt;
  const json* ann = find(*meta, "annotations");
  if (!ann || !ann->is_object()) return std::nullopt;
  PoolTotal t;
  t.resource_version = string_at(*meta, "resourceVersion");
  const std::string total = string_at(*ann, kPoolTotalAnnotation), at = string_at(*ann, kPoolCountedAtAnnotation);
  auto [p1, e1] = std::from_chars(total.data(), total.data() + total.size(), t.total);
  auto [p2, e2] = std::from_chars(at.data(), at.data() + at.size(), t.counted_ms);
  if (total.empty() || at.empty() || e1 != std::errc() || e2 != std::errc() || p1 != total.data() + total.size() ||
      p2 != at.data() + at.size() || t.total < 0 || t.counted_ms <= 0)
    return std::nullopt;
  return t;
}

std::string pool_total_json(std::string_view name, std::string_view ns, int total, std::int64_t counted_ms,
                            std::string_view holder, std::string_view resource_version) {
  json meta = {{"name", name},
               {"namespace", ns},
               {"annotations",
                {{kPoolTotalAnnotation, std::to_string(total)}, {kPoolCountedAtAnnotation, std::to_string(counted_ms)}}}};
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  return json{{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", meta},
              {"spec", {{"holderIdentity", holder}}}}
      .dump();
}

SlotView view_slots(const std::vector<BreakerSlot>& slots, std::string_view node,
                    const std::vector<std::string>& held_nodes, int held_unnamed, int limit, std::int64_t now_ms,
                    std::int64_t ttl_ms) {
  SlotView v;
  const std::set<std::string, std::less<>> held(held_nodes.begin(), held_nodes.end());
  std::set<std::string> counted(held_nodes.begin(), held_nodes.end());
  std::set<int> present;
  for (const auto& s : slots) {
    if (s.index >= 0) present.insert(s.index);
    // A claim counts while its holder is held, or while it is young (the drain is under way).
    const bool young = s.acquired_ms > 0 && now_ms - s.acquired_ms < ttl_ms && s.acquired_ms < now_ms + ttl_ms;
    const bool live = !s.holder.empty() && (held.count(s.holder) > 0 || young);
    if (live) {
      counted.insert(s.holder);
      if (s.holder == node) v.mine = true;
    } else if (s.index >= 0 && s.index < limit) {
      v.stale.push_back(s);
    }
  }
  if (held.count(node) > 0) v.mine = true;
  v.live_holders.assign(counted.begin(), counted.end());
  v.count = static_cast<int>(counted.size()) + std::max(0, held_unnamed);
  for (int i = 0; i < limit; ++i)
    if (!present.count(i)) v.free.push_back(i);
  return v;
}

std::optional<std::string> status_message(std::string_view text) {
  auto j = parse_json(text);
  if (!j || string_at(*j, "kind") != "Status") return std::nullopt;
  return string_at(*j, "message");
}

// The ops that make a patch fail (422) when what it builds on changed since `node` was read: spec as
// read (taints, cordon); and when there was no annotations map, a test that there still is none
// (the patch adds the whole map, which would replace one another writer added): kube-apiserver's
// JSON Patch (evanphx/json-patch) passes a "test" of null on a missing member. Only when no spec
// was read does the resourceVersion stand in. A label or status write by another controller is
// then no conflict; a taint, cordon or first annotation is, and the caller reads the node again.
namespace {
void add_concurrency_tests(const Node& node, json& ops) {
  auto spec = node.spec_json.empty() ? std::nullopt : parse_json(node.spec_json);
  if (spec) ops.push_back({{"op", "test"}, {"path", "/spec"}, {"value", *spec}});
  else ops.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", node.resource_version}});
  if (!node.has_annotations) ops.push_back({{"op", "test"}, {"path", "/metadata/annotations"}, {"value", nullptr}});
  if (!node.has_labels) ops.push_back({{"op", "test"}, {"path", "/metadata/labels"}, {"value", nullptr}});
}

std::string label_path(std::string_view key) { return "/metadata/labels/" + pointer_token(key); }
}  // namespace

std::string hold_patch(const Node& node, std::string_view reason, Hold hold,
                       std::string_view reboot_effect, std::string_view now_utc) {
  json ops = json::array();
  add_concurrency_tests(node, ops);
  json annotations = {{kReasonAnnotation, reason}};
  if (!node.unschedulable) {
    ops.push_back({{"op", "add"}, {"path", "/spec/unschedulable"}, {"value", true}});
    annotations[std::string(kCordonedAnnotation)] = "true";
  }

  std::string_view key = hold == Hold::kFault ? kUnhealthyTaint : kRebootTaint;
  json taint = {{"key", key},
                {"value", taint_value(reason)},
                {"effect", hold == Hold::kFault ? std::string_view("NoSchedule") : reboot_effect}};
  // The taint eviction controller counts tolerationSeconds from timeAdded, which only NoExecute
  // taints carry.
  if (taint["effect"] == "NoExecute") taint["timeAdded"] = now_utc;
  if (node.has_taints) {
    remove_taints(node, ops, key, key);
    ops.push_back({{"op", "add"}, {"path", "/spec/taints/-"}, {"value", taint}});
  } else {
    ops.push_back({{"op", "add"}, {"path", "/spec/taints"}, {"value", json::array({taint})}});
  }

  if (node.has_annotations) {
    for (const auto& [k, v] : annotations.items())
      ops.push_back({{"op", "add"}, {"path", annotation_path(k)}, {"value", v}});
  } else {
    ops.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", annotations}});
  }
  if (!node.held_label) {
    if (node.has_labels)
      ops.push_back({{"op", "add"}, {"path", label_path(kHeldLabel)}, {"value", "true"}});
    else
      ops.push_back({{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{kHeldLabel, "true"}}}});
  }
  return ops.dump();
}

std::string release_patch(const Node& node, bool uncordon) {
  json ops = json::array();
  add_concurrency_tests(node, ops);
  remove_taints(node, ops, kUnhealthyTaint, kRebootTaint);
  if (node.reason_annotation)
    ops.push_back({{"op", "remove"}, {"path", annotation_path(kReasonAnnotation)}});
  if (node.cordoned_by_cmax)
    ops.push_back({{"op", "remove"}, {"path", annotation_path(kCordonedAnnotation)}});
  if (uncordon && node.unschedulable)
    ops.push_back({{"op", "remove"}, {"path", "/spec/unschedulable"}});
  if (node.held_label) ops.push_back({{"op", "remove"}, {"path", label_path(kHeldLabel)}});
  return ops.dump();
}

std::string condition_patch(std::string_view status, std::string_view reason,
                            std::string_view message, std::string_view previous_status,
                            std::string_view now_utc) {
  json patch = {{"status",
                 {{"conditions", json::array({condition_json(status, reason, message,
                                                             previous_status, now_utc)})}}}};
  return patch.dump();
}

}  // namespace cmax::sched::kube
