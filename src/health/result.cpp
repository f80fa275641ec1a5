#include "health/result.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "core/json_fields.h"

namespace cmax::health {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json to_json(const CheckResult& r) {
  ordered_json m = ordered_json::array();
  for (const auto& x : r.measurements) {
    ordered_json o = {{"name", x.name}, {"value", x.value}, {"unit", x.unit}};
    if (x.min) o["min"] = *x.min;
    if (x.max) o["max"] = *x.max;
    m.push_back(std::move(o));
  }
  return ordered_json{{"id", r.id},
                      {"category", audit::to_string(r.category)},
                      {"outcome", audit::to_string(r.outcome)},
                      {"title", r.title},
                      {"target", r.target},
                      {"summary", r.summary},
                      {"reason", r.reason},
                      {"timed_out", r.timed_out},
                      {"duration_s", r.duration_s},
                      {"measurements", std::move(m)}};
}

Result<CheckResult> check_from_json(const json& j) {
  if (!j.is_object()) return fail("read check result: expected an object, got {}", j.type_name());
  CheckResult r;
  r.id = core::string_field(j, "id");
  if (r.id.empty()) return fail("read check result: no \"id\"");
  auto cat = audit::parse_category(core::string_field(j, "category"));
  if (!cat) return fail("read check result {}: unknown category \"{}\"", r.id, core::string_field(j, "category"));
  r.category = *cat;
  auto out = audit::parse_outcome(core::string_field(j, "outcome"));
  if (!out) return fail("read check result {}: unknown outcome \"{}\"", r.id, core::string_field(j, "outcome"));
  r.outcome = *out;
  r.title = core::string_field(j, "title");
  r.target = core::string_field(j, "target");
  r.summary = core::string_field(j, "summary");
  r.reason = core::string_field(j, "reason");
  r.timed_out = j.value("timed_out", false);
  r.duration_s = j.value("duration_s", 0.0);
  if (auto it = j.find("measurements"); it != j.end() && it->is_array()) {
    for (const auto& mj : *it) {
      if (!mj.is_object() || !mj.contains("value") || !mj["value"].is_number())
        return fail("read check result {}: a measurement without a numeric \"value\"", r.id);
      Measurement m{core::string_field(mj, "name"), mj["value"].get<double>(), core::string_field(mj, "unit"), std::nullopt, std::nullopt};
      if (mj.contains("min") && mj["min"].is_number()) m.min = mj["min"].get<double>();
      if (mj.contains("max") && mj["max"].is_number()) m.max = mj["max"].get<double>();
      r.measurements.push_back(std::move(m));
    }
  }
  return r;
}

audit::Finding to_finding(const CheckResult& r) {
  audit::Finding f;
  f.check_id = r.target.empty() ? "check." + r.id : fmt::format("check.{}@{}", r.id, r.target);
  f.category = r.category;
  f.severity = audit::Severity::config;
  f.title = r.title.empty() ? r.id : r.title;
  f.outcome = r.outcome;
  f.observed = r.summary;
  std::string expected;
  for (const auto& m : r.measurements) {
    if (!m.min && !m.max) continue;
    if (!expected.empty()) expected += ", ";
    if (m.min && m.max) expected += fmt::format("{} in [{:g}, {:g}] {}", m.name, *m.min, *m.max, m.unit);
    else if (m.min) expected += fmt::format("{} >= {:g} {}", m.name, *m.min, m.unit);
    else expected += fmt::format("{} <= {:g} {}", m.name, *m.max, m.unit);
  }
  f.expected = expected;
  f.evidence_source = fmt::format("cmax check ({})", r.id);
  f.evidence_value = r.summary;
  f.criterion = "Active health checks";
  f.reason = r.timed_out ? (r.reason.empty() ? "timed out" : r.reason) : r.reason;
  return f;
}

}  // namespace cmax::health
