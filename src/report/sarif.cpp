#include "report/sarif.h"

#include <nlohmann/json.hpp>

#include "report/audit_json.h"

namespace cmax::report {

std::string render_sarif(const audit::AuditReport& r) {
  using ordered_json = nlohmann::ordered_json;
  ordered_json rules = ordered_json::array();
  ordered_json results = ordered_json::array();
  for (const auto& f : r.findings) {
    if (!f.security && f.category != audit::Category::security) continue;
    ordered_json rule;
    rule["id"] = f.check_id;
    rule["name"] = f.check_id;
    rule["shortDescription"] = {{"text", f.title}};
    rule["fullDescription"] = {{"text", f.description.empty() ? f.title : f.description}};
    rule["help"] = {{"text", f.remediation}};
    rule["properties"] = {{"category", audit::to_string(f.category)}, {"criterion", f.criterion}};
    if (!f.links.empty()) rule["helpUri"] = f.links.front();
    rules.push_back(rule);
    if (f.outcome != audit::Outcome::fail && f.outcome != audit::Outcome::warn) continue;
    ordered_json res;
    res["ruleId"] = f.check_id;
    res["level"] = f.outcome == audit::Outcome::fail ? "error" : "warning";
    std::string text = f.title + ": observed " + f.observed;
    if (!f.expected.empty()) text += ", expected " + f.expected;
    if (!f.reason.empty()) text += ". " + f.reason;
    res["message"] = {{"text", text}};
    std::string uri = f.evidence_source.empty() ? "host" : f.evidence_source;
    res["locations"] = ordered_json::array(
        {{{"physicalLocation", {{"artifactLocation", {{"uri", uri}}}}},
          {"logicalLocations", ordered_json::array({{{"name", r.host}, {"kind", "host"}}})}}});
    res["properties"] = {{"cves", f.cves}, {"observed", f.observed}, {"expected", f.expected}};
    results.push_back(res);
  }
  ordered_json tool = {{"driver",
                        {{"name", "cmax"},
                         {"version", std::string(cmax_version())},
                         {"rules", rules}}}};
  ordered_json run = {{"tool", tool}, {"results", results}};
  ordered_json doc = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                      {"version", "2.1.0"},
                      {"runs", ordered_json::array({run})}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace cmax::report
