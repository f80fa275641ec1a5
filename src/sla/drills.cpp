#include "sla/drills.h"

#include "core/json_fields.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::sla {

std::string_view drill_of_reason(std::string_view reason) {
  constexpr std::string_view kTag = "[drill ";
  auto at = reason.rfind(kTag);
  if (at == std::string_view::npos) return {};
  auto rest = reason.substr(at + kTag.size());
  auto end = rest.find(']');
  if (end == std::string_view::npos || end == 0 || end > 16) return {};
  return rest.substr(0, end);
}

std::vector<DrillWindow> drill_windows_from_actions(const std::vector<NodeAction>& actions) {
  std::vector<DrillWindow> out;
  std::map<std::string, std::size_t, std::less<>> open;  // node -> index into out
  for (const auto& a : actions) {
    if (a.status != "done" || a.node.empty() || !std::isfinite(a.t_requested)) continue;
    const auto t = static_cast<std::int64_t>(a.t_requested);
    if (a.verb == "drain" || a.verb == "reboot") {
      auto drill = drill_of_reason(a.reason);
      if (drill.empty() || open.contains(a.node)) continue;
      open[a.node] = out.size();
      out.push_back({a.node, std::string(drill), "cmaxd db", t, kOpenEnd});
    } else if (a.verb == "resume") {
      if (auto it = open.find(a.node); it != open.end()) {
        out[it->second].end_s = std::max(t, out[it->second].start_s);
        open.erase(it);
      }
    }
  }
  return out;
}

Result<std::vector<DrillWindow>> drill_windows_from_report(std::string_view text, std::string_view path) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("read drill record {}: not JSON", path);
  if (core::string_field(j, "schema") != "cmax.drill/1")
    return fail("read drill record {}: schema is not cmax.drill/1", path);
  std::vector<DrillWindow> out;
  try {
    const std::string id = j.value("drill_id", std::string());
    if (!j.contains("nodes") || !j["nodes"].is_array()) return fail("read drill record {}: no nodes array", path);
    for (const auto& n : j["nodes"]) {
      if (!n.contains("injected") || !n["injected"].is_array() || n["injected"].empty()) continue;
      double first = n["injected"][0].value("t_unix", 0.0);
      if (!(first > 0)) continue;
      DrillWindow w{n.value("node", std::string()), id, std::string(path), static_cast<std::int64_t>(first), kOpenEnd};
      if (auto r = n.find("resumed_unix"); r != n.end() && r->is_number() && r->get<double>() >= first)
        w.end_s = static_cast<std::int64_t>(std::ceil(r->get<double>()));
      if (!w.node.empty()) out.push_back(std::move(w));
    }
  } catch (const nlohmann::json::exception& e) {
    return fail("read drill record {}: {}", path, e.what());
  }
  return out;
}

std::size_t close_with_drills(EventSet& events, const std::vector<DrillWindow>& drills, std::int64_t slack_s) {
  std::size_t closed = 0;
  for (auto& r : events.intervals) {
    if (r.end_s != kOpenEnd) continue;
    const std::string& node = events.node_names[static_cast<std::size_t>(r.node)];
    for (const auto& d : drills) {
      if (d.node != node || d.end_s == kOpenEnd || d.start_s > r.start_s + slack_s || d.end_s < r.start_s) continue;
      r.end_s = std::max(d.end_s, r.start_s);
      ++closed;
      break;
    }
  }
  return closed;
}

std::size_t extend_drills_to_resume(std::vector<DrillWindow>& drills, const EventSet& events,
                                    const std::vector<std::string>& down_states, std::int64_t slack_s,
                                    std::int64_t max_lag_s) {
  std::size_t moved = 0;
  for (auto& d : drills) {
    if (d.end_s == kOpenEnd) continue;
    std::int64_t resume = d.end_s;
    for (const auto& r : events.intervals) {
      if (r.end_s == kOpenEnd || r.end_s <= d.end_s || r.end_s - d.end_s > max_lag_s) continue;
      if (r.start_s + slack_s < d.start_s || r.start_s > d.end_s) continue;
      if (events.node_names[static_cast<std::size_t>(r.node)] != d.node) continue;
      if (!is_down_state(events.state_names[static_cast<std::size_t>(r.state)], down_states)) continue;
      resume = std::max(resume, r.end_s);
    }
    if (resume > d.end_s) {
      if (d.marker_end_s == kOpenEnd) d.marker_end_s = d.end_s;
      d.end_s = resume;
      ++moved;
    }
  }
  return moved;
}

std::vector<DrillWindow> exclude_drills(Contract& contract, const std::vector<DrillWindow>& drills, std::int64_t as_of_s) {
  std::vector<DrillWindow> unknown;
  for (const auto& d : drills) {
    const std::int32_t n = contract.topology.find_node(d.node);
    if (n < 0) {
      unknown.push_back(d);
      continue;
    }
    Exclusion x;
    x.kind = Exclusion::Kind::drill;
    x.target = Exclusion::Target::node;
    x.indices = {n};
    x.start_s = d.start_s;
    x.end_s = d.end_s == kOpenEnd ? std::max(as_of_s, d.start_s) : d.end_s;
    x.reason = fmt::format("fault drill {} ({})", d.drill, d.source);
    if (x.end_s > x.start_s) contract.exclusions.push_back(std::move(x));
  }
  return unknown;
}

}  // namespace cmax::sla
