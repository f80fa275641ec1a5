#include "campaign/state.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace cmax::campaign {
namespace {

using json = nlohmann::ordered_json;

constexpr std::pair<Status, std::string_view> kStatuses[] = {
    {Status::pending, "pending"}, {Status::running, "running"},     {Status::done, "done"},
    {Status::failed, "failed"},   {Status::timed_out, "timed_out"}, {Status::interrupted, "interrupted"},
    {Status::skipped, "skipped"}};

json facts_json(const Facts& f) {
  json j{{"harness", f.harness},       {"harness_why", f.harness_why},   {"nodes", f.nodes},
         {"idle", f.idle},             {"cmax", f.cmax},                 {"out", f.out},
         {"gpu", f.gpu},               {"nccl_tests_dir", f.nccl_tests_dir}, {"collbench", f.collbench},
         {"endpoint", f.endpoint},     {"endpoint_trace", f.endpoint_trace}, {"contract", f.contract},
         {"events", f.events},         {"drill_node", f.drill_node},     {"reservation", f.reservation},
         {"partition", f.partition},   {"allow_disruptive", f.allow_disruptive},
         {"audit_args", f.audit_args},  {"isolation_scopes", f.isolation_scopes},
         {"isolation_metadata", f.isolation_metadata}, {"trial_nodes", f.trial_nodes},
         {"trial_reservations", f.trial_reservations}, {"trial_nccl_nodes", f.trial_nccl_nodes},
         {"storage_path", f.storage_path}, {"prices", f.prices}};
  j["budget_s"] = f.budget_s ? json(*f.budget_s) : json(nullptr);
  return j;
}

Facts facts_from(const nlohmann::json& j) {
  Facts f;
  f.harness = j.value("harness", "");
  f.harness_why = j.value("harness_why", "");
  f.nodes = j.value("nodes", std::vector<std::string>{});
  f.idle = j.value("idle", std::vector<std::string>{});
  f.cmax = j.value("cmax", "");
  f.out = j.value("out", "");
  f.gpu = j.value("gpu", false);
  f.nccl_tests_dir = j.value("nccl_tests_dir", "");
  f.collbench = j.value("collbench", "");
  f.endpoint = j.value("endpoint", "");
  f.endpoint_trace = j.value("endpoint_trace", "");
  f.contract = j.value("contract", "");
  f.events = j.value("events", "");
  f.drill_node = j.value("drill_node", "");
  f.reservation = j.value("reservation", "");
  f.partition = j.value("partition", "");
  f.allow_disruptive = j.value("allow_disruptive", false);
  f.audit_args = j.value("audit_args", std::vector<std::string>{});
  f.isolation_scopes = j.value("isolation_scopes", std::vector<std::string>{});
  f.isolation_metadata = j.value("isolation_metadata", false);
  f.trial_nodes = j.value("trial_nodes", std::vector<std::string>{});
  f.trial_reservations = j.value("trial_reservations", std::vector<std::string>{});
  f.trial_nccl_nodes = j.value("trial_nccl_nodes", std::vector<std::string>{});
  f.storage_path = j.value("storage_path", "");
  f.prices = j.value("prices", "");
  if (j.contains("budget_s") && j["budget_s"].is_number_integer()) f.budget_s = j["budget_s"].get<int>();
  return f;
}

}  // namespace

std::string_view to_string(Status s) {
  for (const auto& [st, name] : kStatuses)
    if (st == s) return name;
  return "unknown";
}

std::string campaign_to_json(const Campaign& c) {
  json j{{"schema", "cmax.campaign/1"},
         {"plan", {{"name", c.plan_name}, {"origin", c.plan_origin}, {"about", c.plan_about}}},
         {"started_at", c.started_at},
         {"finished_at", c.finished_at.empty() ? json(nullptr) : json(c.finished_at)},
         {"interrupted", c.interrupted},
         {"resumes", c.resumes},
         {"facts", facts_json(c.facts)}};
  j["stages"] = json::array();
  for (const auto& s : c.stages) {
    const Decision& d = s.decision;
    json st{{"id", d.id},
            {"kind", to_string(d.kind)},
            {"status", to_string(s.status)},
            {"run", d.run},
            {"disruptive", d.disruptive},
            {"in_process", d.in_process},
            {"budget_s", d.budget_s},
            {"plan_budget_s", d.plan_budget_s},
            {"min_s", d.min_s},
            {"over_budget", d.over_budget},
            {"run_reason", d.run_reason},
            {"targets", d.targets},
            {"reason", d.reason},
            {"todo", d.todo},
            {"argv", d.argv},
            {"cleanup_argv", d.cleanup_argv},
            {"documents", d.documents},
            {"exit_code", s.exit_code},
            {"seconds", s.seconds},
            {"interrupted_s", s.interrupted_s},
            {"attempts", s.attempts},
            {"last_line", s.last_line},
            {"started_at", s.started_at},
            {"log", s.log},
            {"error", s.error}};
    j["stages"].push_back(std::move(st));
  }
  return j.dump(2) + "\n";
}

Result<Campaign> campaign_from_json(std::string_view text, std::string_view origin) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("schema") || doc["schema"] != "cmax.campaign/1")
    return fail("read {}: not a cmax.campaign/1 document (is this a cmax run directory?)", origin);
  try {
    Campaign c;
    const nlohmann::json plan = doc.contains("plan") && doc["plan"].is_object() ? doc["plan"] : nlohmann::json::object();
    c.plan_name = plan.value("name", "");
    c.plan_origin = plan.value("origin", "");
    c.plan_about = plan.value("about", "");
    c.started_at = doc.value("started_at", "");
    if (doc.contains("finished_at") && doc["finished_at"].is_string()) c.finished_at = doc["finished_at"];
    c.interrupted = doc.value("interrupted", false);
    c.resumes = doc.value("resumes", 0);
    c.facts = facts_from(doc.at("facts"));
    for (const auto& s : doc.at("stages")) {
      StageState st;
      Decision& d = st.decision;
      d.id = s.at("id").get<std::string>();
      if (!parse_kind(s.at("kind").get<std::string>(), &d.kind))
        return fail("read {}: stage '{}' has an unknown kind", origin, d.id);
      const std::string status = s.at("status").get<std::string>();
      bool known = false;
      for (const auto& [v, name] : kStatuses)
        if (name == status) st.status = v, known = true;
      if (!known) return fail("read {}: stage '{}' has an unknown status '{}'", origin, d.id, status);
      d.run = s.value("run", false);
      d.disruptive = s.value("disruptive", false);
      d.in_process = s.value("in_process", false);
      d.budget_s = s.value("budget_s", 0);
      d.plan_budget_s = s.value("plan_budget_s", d.budget_s);
      d.min_s = s.value("min_s", std::min(1, d.budget_s));
      d.over_budget = s.value("over_budget", false);
      d.run_reason = s.value("run_reason", "");
      d.targets = s.value("targets", "");
      d.reason = s.value("reason", "");
      d.todo = s.value("todo", "");
      d.argv = s.value("argv", std::vector<std::string>{});
      d.cleanup_argv = s.value("cleanup_argv", std::vector<std::string>{});
      d.documents = s.value("documents", std::vector<std::string>{});
      st.exit_code = s.value("exit_code", -1);
      st.seconds = s.value("seconds", 0.0);
      st.interrupted_s = s.value("interrupted_s", 0.0);
      st.attempts = s.value("attempts", 0);
      st.last_line = s.value("last_line", "");
      st.started_at = s.value("started_at", "");
      st.log = s.value("log", "");
      st.error = s.value("error", "");
      c.stages.push_back(std::move(st));
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    return fail("read {}: {}", origin, e.what());
  }
}

Result<void> save_campaign(const Campaign& c, const std::string& dir) {
  return core::write_text_file_atomic((std::filesystem::path(dir) / kCampaignFile).string(), campaign_to_json(c));
}

Result<Campaign> load_campaign(const std::string& dir) {
  const auto path = (std::filesystem::path(dir) / kCampaignFile).string();
  auto text = core::read_text_file(path, 16u << 20);
  if (!text) return fail("{}; --resume needs the run directory of an earlier `cmax run`", text.error().message);
  return campaign_from_json(*text, path);
}

}  // namespace cmax::campaign
