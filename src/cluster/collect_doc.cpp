#include "cluster/collect_doc.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/audit_json.h"

namespace cmax::cluster {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Strongest first; "monitor" and "ignore" need no action.
int action_rank(std::string_view a) {
  constexpr std::string_view kOrder[] = {"ignore", "monitor", "restart_app", "reset_gpu", "drain", "reboot_node", "replace"};
  for (int i = 0; i < 7; ++i)
    if (kOrder[i] == a) return i;
  return -1;
}

ScanSummary summarize_scan(const json& s) {
  ScanSummary out;
  out.ran = true;
  if (auto st = s.find("stats"); st != s.end() && st->is_object()) out.bytes = st->value("bytes", std::uint64_t{0});
  if (auto e = s.find("errors"); e != s.end() && e->is_array())
    for (const auto& x : *e)
      if (x.is_string()) out.errors.push_back(x.get<std::string>());
  auto inc = s.find("incidents");
  if (inc == s.end() || !inc->is_array()) return out;
  out.incidents = inc->size();
  for (const auto& i : *inc) {
    if (!i.is_object() || i.value("resolved", false)) continue;
    std::string action = i.value("action", "");
    if (action_rank(action) < action_rank("restart_app")) continue;
    ++out.actionable;
    if (action_rank(action) > action_rank(out.worst_action)) out.worst_action = action;
    if (out.top.size() < 5) {
      std::string code = i.contains("code") && i["code"].is_number() ? fmt::format(" {}", i["code"].get<long long>()) : "";
      out.top.push_back(fmt::format("{}{} {} x{} {}", i.value("kind", "?"), code, action, i.value("count", 0ull),
                                    i.value("device", "")));
    }
  }
  return out;
}

}  // namespace

Result<std::string> render_collect_doc(std::string_view node, double seconds, std::string_view audit_json,
                                       std::string_view scan_json, const std::vector<health::CheckResult>& checks,
                                       const std::vector<std::string>& errors) {
  ordered_json j;
  j["schema"] = kCollectSchema;
  j["node"] = node;
  j["cmax_version"] = report::cmax_version();
  j["seconds"] = seconds;
  try {
    if (!audit_json.empty()) j["audit"] = ordered_json::parse(audit_json);
    if (!scan_json.empty()) j["scan"] = ordered_json::parse(scan_json);
  } catch (const std::exception& e) {
    return fail("render the collect document of {}: a stage's JSON does not parse: {}", node, e.what());
  }
  ordered_json cj = ordered_json::array();
  for (const auto& c : checks) cj.push_back(health::to_json(c));
  j["checks"] = std::move(cj);
  j["errors"] = errors;
  // Compact and ASCII-safe: no newline can appear, so the document frames line by line.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

Result<CollectDoc> read_collect_doc(const json& j, std::string_view origin) {
  if (!j.is_object() || j.value("schema", "") != kCollectSchema)
    return fail("read the collect document from {}: schema is not {} (is cmax on that node the same release?)", origin,
                kCollectSchema);
  CollectDoc d;
  d.node = j.value("node", "");
  if (d.node.empty()) return fail("read the collect document from {}: no \"node\"", origin);
  d.cmax_version = j.value("cmax_version", "");
  d.seconds = j.value("seconds", 0.0);
  if (auto a = j.find("audit"); a != j.end() && a->is_object()) {
    auto audit = report::audit_from_json(a->dump(), fmt::format("{} (node {})", origin, d.node));
    if (!audit) return Unexpected<Error>{audit.error()};
    d.audit = std::move(*audit);
  } else {
    d.errors.push_back("no audit in the document");
  }
  if (auto s = j.find("scan"); s != j.end() && s->is_object()) {
    d.scan = summarize_scan(*s);
    d.scan_json = s->dump();
  }
  if (auto c = j.find("checks"); c != j.end() && c->is_array()) {
    for (const auto& cj : *c) {
      auto r = health::check_from_json(cj);
      if (!r) return fail("read the collect document from {} (node {}): {}", origin, d.node, r.error().message);
      d.checks.push_back(std::move(*r));
    }
  }
  if (auto e = j.find("errors"); e != j.end() && e->is_array())
    for (const auto& x : *e)
      if (x.is_string()) d.errors.push_back(x.get<std::string>());
  return d;
}

}  // namespace

Result<CollectDoc> parse_collect_doc(std::string_view text, std::string_view origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    return fail("read the collect document from {}: not JSON ({})", origin, e.what());
  }
  // json::value() throws on a key of the wrong type ("resolved": "no"); a node's document is input.
  try {
    return read_collect_doc(j, origin);
  } catch (const json::exception& e) {
    return fail("read the collect document from {}: a field has the wrong type ({})", origin, e.what());
  }
}

}  // namespace cmax::cluster
