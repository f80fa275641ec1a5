#include "drill/record.h"

#include <algorithm>
#include <string_view>

#include "sched/scheduler.h"

namespace cmax::drill {

using json = nlohmann::json;

json state_json(const sched::NodeState& s) {
  return {{"state", s.state}, {"reason", s.reason}};
}

json detector_of(const std::vector<Observation>& seen, const sched::NodeState& before, bool provider_runs_cmax) {
  for (const auto& o : seen) {
    const auto& t = o.target;
    if (!(t.drain_flag() || t.down()) || (t.reason == before.reason && t.state == before.state)) continue;
    std::string by = "the provider's stack";
    std::string owner = "provider";
    const std::string cmaxd_prefix(sched::kReasonPrefix);
    const std::string check_prefix = cmaxd_prefix + "healthcheck: ";
    if (t.reason.rfind(check_prefix, 0) == 0) by = "cmax check (HealthCheckProgram)";
    else if (t.reason.rfind(cmaxd_prefix, 0) == 0) by = "cmaxd";
    if (by != "the provider's stack" && !provider_runs_cmax) owner = "rater";
    return {{"by", by}, {"owner", owner}, {"reason", t.reason}, {"reason_user", t.reason_user}, {"state", t.state}};
  }
  return {{"by", "none"}, {"owner", nullptr}, {"reason", ""}};
}

std::string reservation_of(const std::vector<sched::Reservation>& all, const std::string& node) {
  for (const auto& r : all)
    if (r.state == "ACTIVE" && r.contains(node)) return r.name;
  return {};
}

namespace {

double first_injection_ms(const json& nodes) {
  double first = -1;
  for (const auto& n : nodes)
    if (n.contains("injected_at_ms")) {
      const double t = n["injected_at_ms"].get<double>();
      first = first < 0 ? t : std::min(first, t);
    }
  return first;
}

// One stage across the fleet; null when no target awaited it.
json fleet_stage(const json& nodes, std::string_view name, double first_injection) {
  std::vector<double> at;
  std::vector<std::string> missing;
  bool awaited = false;
  for (const auto& n : nodes) {
    if (!n.contains("stages")) continue;
    for (const auto& st : n["stages"]) {
      if (st["stage"] != name) continue;
      awaited = awaited || st["awaited"].get<bool>();
      if (st["reached"].get<bool>())
        at.push_back(n["injected_at_ms"].get<double>() - first_injection + st["at_ms"].get<double>());
      else
        missing.push_back(n["node"].get<std::string>());
    }
  }
  if (!awaited) return nullptr;
  std::sort(at.begin(), at.end());
  return {{"reached", at.size()},
          {"of", at.size() + missing.size()},
          {"at_ms", at},
          {"first_ms", at.empty() ? json(nullptr) : json(at.front())},
          {"all_ms", missing.empty() && !at.empty() ? json(at.back()) : json(nullptr)},
          {"not_reached", missing}};
}

}  // namespace

json fleet_summary(const json& nodes, const std::vector<std::string>& spares_before) {
  const double first_injection = first_injection_ms(nodes);
  json stages = json::object();
  for (std::string_view name : {"detected", "drained", "replaced", "returned"})
    if (auto st = fleet_stage(nodes, name, first_injection); !st.is_null()) stages[std::string(name)] = std::move(st);
  return {{"nodes", nodes.size()}, {"stages", stages}, {"spares_before", spares_before},
          {"spares_before_count", spares_before.size()}};
}

}  // namespace cmax::drill
