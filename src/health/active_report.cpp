#include "health/active_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::health {
namespace {

std::string pad(std::string_view s, std::size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

}  // namespace

std::size_t ActiveCounts::failed() const { return by_outcome[static_cast<int>(audit::Outcome::fail)]; }

ActiveCounts count_outcomes(const std::vector<CheckResult>& results) {
  ActiveCounts c;
  for (const auto& r : results) ++c.by_outcome[static_cast<int>(r.outcome)];
  return c;
}

std::string active_document(std::string_view node, const std::vector<std::string>& groups,
                            std::string_view thresholds_origin, double check_timeout_s,
                            const std::vector<CheckResult>& results) {
  const ActiveCounts counts = count_outcomes(results);
  nlohmann::ordered_json j{{"schema", "cmax.check.active/1"},
                           {"node", std::string(node)},
                           {"healthy", counts.healthy()},
                           {"groups", groups},
                           {"thresholds", std::string(thresholds_origin)},
                           {"check_timeout_s", check_timeout_s}};
  nlohmann::ordered_json c;
  for (int i = 0; i < 5; ++i) c[std::string(audit::to_string(static_cast<audit::Outcome>(i)))] = counts.by_outcome[i];
  j["counts"] = std::move(c);
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : results) j["results"].push_back(to_json(r));
  return j.dump(2) + "\n";
}

std::string active_table(std::string_view node, std::string_view thresholds_origin,
                         const std::vector<CheckResult>& results) {
  std::size_t wid = 2, wtarget = 6;
  for (const auto& r : results) {
    wid = std::max(wid, r.id.size());
    wtarget = std::max(wtarget, r.target.size());
  }
  std::string out = fmt::format("{}: active checks (thresholds: {})\n", node, thresholds_origin);
  out += fmt::format("{}  {}  {}  {}\n", pad("ID", wid), pad("TARGET", wtarget), pad("OUTCOME", 14), "SUMMARY");
  for (const auto& r : results)
    out += fmt::format("{}  {}  {}  {}\n", pad(r.id, wid), pad(r.target.empty() ? "-" : r.target, wtarget),
                       pad(audit::to_string(r.outcome), 14), r.summary);
  bool header = false;
  for (const auto& r : results) {
    if (r.outcome == audit::Outcome::pass || r.reason.empty()) continue;
    if (!header) out += "\n";
    header = true;
    out += fmt::format("{} ({}): {}\n", r.id, audit::to_string(r.outcome), r.reason);
  }
  return out;
}

}  // namespace cmax::health
