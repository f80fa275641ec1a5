#include "audit/peer_view.h"

#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/version.h"
#include "core/json_fields.h"

namespace cmax::audit {

extern const char kBuiltinPeerMap[];  // generated from data/peers/clustermax.json

namespace {

using nlohmann::json;


// The peer's rule for one check, as the map records it.
struct Policy {
  std::string kind;
  json data;
  std::string reason;  ///< the first recorded difference's reason
  std::string source;
};

struct Loaded {
  PeerMap map;
  std::map<std::string, Policy> policy_by_key;
  std::map<std::string, std::vector<std::string>> keys_by_cmax;
};

const Loaded* loaded() {
  static const Loaded* value = [] () -> const Loaded* {
    auto doc = json::parse(kBuiltinPeerMap, nullptr, false);
    auto map = parse_peer_map(kBuiltinPeerMap, "built-in data/peers/clustermax.json");
    if (doc.is_discarded() || !map) return nullptr;
    auto* l = new Loaded{std::move(*map), {}, {}};
    for (const auto& c : doc["checks"]) {
      std::string key = core::string_field(c, "key");
      for (const auto& id : c["cmax"]) l->keys_by_cmax[id.get<std::string>()].push_back(key);
      if (c.contains("policy") && c["policy"].is_object()) {
        Policy p{core::string_field(c["policy"], "kind"), c["policy"], {}, {}};
        if (c.contains("differences") && c["differences"].is_array() && !c["differences"].empty()) {
          p.reason = core::string_field(c["differences"][0], "reason");
          p.source = core::string_field(c["differences"][0], "source");
        }
        l->policy_by_key[key] = std::move(p);
      }
    }
    return l;
  }();
  return value;
}

// A version as the peer compares it: the packager's epoch and revision dropped.
std::optional<core::Version> upstream(std::string_view v) {
  auto u = core::parse_package_upstream(v);
  if (u) return std::move(*u);
  return std::nullopt;
}

// The peer's verdict for one finding under `p`, or "" when it cannot be said from these facts.
std::string predict(const Policy& p, const Finding& f, const Facts& facts) {
  const json& d = p.data;
  if (p.kind == "nvidia_branches") {
    auto v = upstream(facts.value_or("gpu.driver.version"));
    if (!v || !d.contains("branches")) return {};
    std::string branch = std::to_string(v->major());
    std::optional<unsigned long long> lowest, highest;
    for (const auto& [b, floor] : d["branches"].items()) {
      auto n = core::parse_uint(b);
      if (!n) continue;
      lowest = lowest ? std::min(*lowest, *n) : *n;
      highest = highest ? std::max(*highest, *n) : *n;
      if (b == branch) {
        auto fl = core::parse_version(floor.get<std::string>());
        return fl && core::compare_versions(*v, *fl) >= 0 ? "PASS" : "FAIL";
      }
    }
    if (highest && v->major() > *highest) return "PASS";
    if (lowest && v->major() < *lowest) return "FAIL";
    return "WARNING";  // an unlisted branch between listed ones is "unknown"
  }
  if (p.kind == "ladder") {
    auto v = upstream(f.observed);
    if (!v || v->parts.size() < 2 || !d.contains("ladder")) return {};
    std::string rung = fmt::format("{}.{}", v->parts[0], v->parts[1]);
    std::optional<core::Version> lowest, highest;
    for (const auto& [r, floor] : d["ladder"].items()) {
      auto rv = core::parse_version(r);
      if (!rv) continue;
      if (!lowest || core::compare_versions(*rv, *lowest) < 0) lowest = *rv;
      if (!highest || core::compare_versions(*rv, *highest) > 0) highest = *rv;
      if (r == rung) {
        auto fl = core::parse_version(floor.get<std::string>());
        return fl && core::compare_versions(*v, *fl) >= 0 ? "PASS" : "FAIL";
      }
    }
    auto series = core::parse_version(rung);
    if (series && highest && core::compare_versions(*series, *highest) > 0) return "PASS";
    return "FAIL";
  }
  if (p.kind == "floor") {
    auto v = upstream(f.observed);
    auto fl = core::parse_version(core::string_field(d, "floor"));
    if (!v || !fl) return {};
    return core::compare_versions(*v, *fl) >= 0 ? "PASS" : "FAIL";
  }
  if (p.kind == "kptr_zero") {
    auto n = core::parse_int(facts.value_or("sysctl.kernel.kptr_restrict"));
    if (!n) return {};
    return *n > 0 ? "WARNING" : "PASS";
  }
  if (p.kind == "hca_names") {
    static const std::regex kOk("^(mlx5_[0-9]+|roce_p[0-9]+_rail[0-9]+)$");
    std::string devices(facts.value_or("rdma.devices"));
    if (devices.empty()) return {};
    for (auto d2 : core::split_any(devices, " "))
      if (!std::regex_match(std::string(d2), kOk)) return "WARNING";
    return "PASS";
  }
  if (p.kind == "newer_kernel") {
    if (f.check_id != "lifecycle.kernel.reboot_pending") return {};
    return f.outcome == Outcome::warn ? "FAIL" : f.outcome == Outcome::pass ? "PASS" : "";
  }
  return {};
}

}  // namespace

std::string_view peer_result_of(Outcome o) {
  switch (o) {
    case Outcome::pass: return "PASS";
    case Outcome::warn: return "WARNING";
    case Outcome::fail: return "FAIL";
    case Outcome::not_applicable: return "SKIPPED";
    case Outcome::unverified: return "WARNING";
  }
  return "WARNING";
}

Result<PeerMap> parse_peer_map(std::string_view json_text, std::string_view origin) {
  auto doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || core::string_field(doc, "schema") != "cmax.peer-map/1")
    return fail("read peer map {}: not a cmax.peer-map/1 document", origin);
  PeerMap m;
  m.peer = core::string_field(doc, "peer");
  m.pinned = core::string_field(doc, "pinned");
  if (!doc.contains("checks") || !doc["checks"].is_array()) return fail("read peer map {}: no checks array", origin);
  for (const auto& c : doc["checks"]) {
    PeerCheck pc;
    pc.key = core::string_field(c, "key");
    if (pc.key.empty()) return fail("read peer map {}: a check has no key", origin);
    pc.profile = core::string_field(c, "profile");
    pc.harness = core::string_field(c, "harness");
    pc.in_pinned = !c.contains("in_0_2_1") || c["in_0_2_1"].get<bool>();
    pc.relation = core::string_field(c, "relation");
    pc.note = core::string_field(c, "note");
    if (c.contains("cmax") && c["cmax"].is_array())
      for (const auto& id : c["cmax"])
        if (id.is_string()) pc.cmax.push_back(id.get<std::string>());
    m.checks.push_back(std::move(pc));
  }
  return m;
}

Result<PeerMap> builtin_peer_map() {
  const Loaded* l = loaded();
  if (!l) return fail("read peer map built-in data/peers/clustermax.json: it does not parse");
  return l->map;
}

void annotate_peer_view(std::vector<Finding>& findings, const Facts& facts) {
  const Loaded* l = loaded();
  if (!l) return;
  for (auto& f : findings) {
    auto keys = l->keys_by_cmax.find(f.check_id);
    if (keys == l->keys_by_cmax.end()) continue;
    for (const auto& key : keys->second) {
      auto p = l->policy_by_key.find(key);
      if (p == l->policy_by_key.end()) continue;
      std::string theirs = predict(p->second, f, facts);
      if (theirs.empty() || theirs == peer_result_of(f.outcome)) continue;
      f.peer_check = key;
      f.peer_result = theirs;
      f.peer_why = p->second.source.empty() ? p->second.reason : fmt::format("{} ({})", p->second.reason, p->second.source);
      break;
    }
  }
}

}  // namespace cmax::audit
