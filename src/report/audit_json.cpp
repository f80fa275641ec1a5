#include "report/audit_json.h"

#include <nlohmann/json.hpp>

#include "report/scorecard.h"
#include "core/json_fields.h"

#ifndef CMAX_VERSION
#define CMAX_VERSION "0.0.0"
#endif

namespace cmax::report {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json finding_json(const audit::Finding& f) {
  ordered_json j;
  j["id"] = f.check_id;
  j["category"] = audit::to_string(f.category);
  j["severity"] = audit::to_string(f.severity);
  j["security"] = f.security;
  j["result"] = audit::to_string(f.outcome);
  j["title"] = f.title;
  j["observed"] = f.observed;
  j["expected"] = f.expected;
  j["evidence"] = {{"source", f.evidence_source}, {"value", f.evidence_value}};
  j["criterion"] = f.criterion;
  j["cves"] = f.cves;
  j["links"] = f.links;
  j["reason"] = f.reason;
  j["description"] = f.description;
  j["remediation"] = f.remediation;
  if (!f.peer_result.empty())
    j["peer"] = {{"tool", "clustermax"}, {"check", f.peer_check}, {"result", f.peer_result}, {"why", f.peer_why}};
  return j;
}


std::vector<std::string> strs(const ordered_json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it != j.end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

}  // namespace

std::string_view cmax_version() { return CMAX_VERSION; }

std::string audit_to_json(const audit::AuditReport& r, int exit_code, bool include_facts) {
  ordered_json j;
  j["schema"] = kAuditSchema;
  j["cmax_version"] = cmax_version();
  j["host"] = r.host;
  j["host_root"] = r.host_root;
  j["harness"] = audit::harness_name(r.harness);
  j["started_at"] = r.started_at;
  j["finished_at"] = r.finished_at;
  j["duration_ms"] = static_cast<double>(r.duration.count()) / 1000.0;
  j["floors"] = {{"origin", r.floors_origin}, {"updated", r.floors_updated}};
  auto totals = outcome_totals(r.findings);
  int security_fail = 0;
  for (const auto& f : r.findings) security_fail += f.security && f.outcome == audit::Outcome::fail;
  ordered_json summary;
  summary["checks"] = r.findings.size();
  for (int i = 0; i < 5; ++i) summary[std::string(audit::to_string(static_cast<audit::Outcome>(i)))] = totals[i];
  summary["security_fail"] = security_fail;
  summary["exit_code"] = exit_code;
  j["summary"] = summary;
  ordered_json cats = ordered_json::array();
  for (const auto& c : score_categories(r.findings)) {
    ordered_json cj;
    cj["category"] = audit::to_string(c.category);
    cj["title"] = audit::category_title(c.category);
    for (int i = 0; i < 5; ++i) cj[std::string(audit::to_string(static_cast<audit::Outcome>(i)))] = c.counts[i];
    cj["score"] = c.score ? ordered_json(*c.score) : ordered_json(nullptr);
    cats.push_back(cj);
  }
  j["scorecard"] = cats;
  ordered_json findings = ordered_json::array();
  for (const auto& f : r.findings) findings.push_back(finding_json(f));
  j["findings"] = findings;
  if (include_facts) {
    ordered_json facts = ordered_json::array();
    for (const auto* f : r.facts.all())
      facts.push_back({{"key", f->key},
                       {"status", audit::to_string(f->status)},
                       {"value", f->value},
                       {"source", f->source},
                       {"detail", f->detail}});
    j["facts"] = facts;
  }
  // Invalid UTF-8 from a host file must not abort the render: replace it.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<audit::AuditReport> audit_from_json(std::string_view text, std::string_view origin) {
  auto j = ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("read {}: not valid JSON (truncated or damaged results file?)", origin);
  if (core::string_field(j, "schema") != kAuditSchema)
    return fail("read {}: schema is '{}', this cmax reads '{}'", origin, core::string_field(j, "schema"), kAuditSchema);
  audit::AuditReport r;
  r.host = core::string_field(j, "host");
  r.host_root = core::string_field(j, "host_root");
  std::string harness = core::string_field(j, "harness");
  r.harness = harness == "slurm" ? audit::kSlurm : harness == "kubernetes" ? audit::kKubernetes : audit::kStandalone;
  r.started_at = core::string_field(j, "started_at");
  r.finished_at = core::string_field(j, "finished_at");
  if (j.contains("duration_ms") && j["duration_ms"].is_number())
    r.duration = std::chrono::microseconds(static_cast<long long>(j["duration_ms"].get<double>() * 1000));
  if (j.contains("floors") && j["floors"].is_object()) {
    r.floors_origin = core::string_field(j["floors"], "origin");
    r.floors_updated = core::string_field(j["floors"], "updated");
  }
  if (!j.contains("findings") || !j["findings"].is_array()) return fail("read {}: no 'findings' array", origin);
  for (const auto& fj : j["findings"]) {
    audit::Finding f;
    f.check_id = core::string_field(fj, "id");
    auto cat = audit::parse_category(core::string_field(fj, "category"));
    auto outcome = audit::parse_outcome(core::string_field(fj, "result"));
    auto sev = audit::parse_severity(core::string_field(fj, "severity"));
    if (f.check_id.empty() || !cat || !outcome || !sev)
      return fail("read {}: finding '{}' has an unknown id, category, severity or result", origin, f.check_id);
    f.category = *cat;
    f.outcome = *outcome;
    f.severity = *sev;
    f.security = fj.contains("security") && fj["security"].is_boolean() && fj["security"].get<bool>();
    f.title = core::string_field(fj, "title");
    f.observed = core::string_field(fj, "observed");
    f.expected = core::string_field(fj, "expected");
    if (fj.contains("evidence") && fj["evidence"].is_object()) {
      f.evidence_source = core::string_field(fj["evidence"], "source");
      f.evidence_value = core::string_field(fj["evidence"], "value");
    }
    f.criterion = core::string_field(fj, "criterion");
    f.cves = strs(fj, "cves");
    f.links = strs(fj, "links");
    f.reason = core::string_field(fj, "reason");
    f.description = core::string_field(fj, "description");
    f.remediation = core::string_field(fj, "remediation");
    if (fj.contains("peer") && fj["peer"].is_object()) {
      f.peer_check = core::string_field(fj["peer"], "check");
      f.peer_result = core::string_field(fj["peer"], "result");
      f.peer_why = core::string_field(fj["peer"], "why");
    }
    r.findings.push_back(std::move(f));
  }
  if (j.contains("facts") && j["facts"].is_array()) {
    for (const auto& fj : j["facts"]) {
      audit::Fact f;
      f.key = core::string_field(fj, "key");
      std::string st = core::string_field(fj, "status");
      f.status = st == "present" ? audit::FactStatus::present
                 : st == "error" ? audit::FactStatus::error
                                 : audit::FactStatus::absent;
      f.value = core::string_field(fj, "value");
      f.source = core::string_field(fj, "source");
      f.detail = core::string_field(fj, "detail");
      if (!f.key.empty()) r.facts.put(std::move(f));
    }
  }
  return r;
}

}  // namespace cmax::report
