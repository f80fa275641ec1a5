#include "score/evidence.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "report/run_dir.h"
#include "report/audit_json.h"

namespace cmax::score {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Parses into `j` (an out-parameter: a Result<json> would invite json's implicit conversions).
Result<void> parse_doc(std::string_view text, std::string_view file, std::string_view schema_prefix, json& j) {
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail("{}: not JSON: {}", file, e.what());
  }
  if (!j.is_object()) return fail("{}: not a JSON object", file);
  std::string schema = core::string_field(j, "schema");
  if (schema.rfind(schema_prefix, 0) != 0)
    return fail("{}: schema \"{}\" is not {}", file, schema, schema_prefix);
  return ok();
}

std::optional<double> num(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool actionable(std::string_view action) {
  return action == "restart_app" || action == "reset_gpu" || action == "drain" || action == "reboot_node" ||
         action == "replace";
}

// One line of at most `max` characters: an error quoted in a sentence.
std::string clip_line(std::string_view text, std::size_t max) {
  std::string out(text.substr(0, text.find('\n')));
  while (!out.empty() && (out.back() == '\r' || out.back() == ' ')) out.pop_back();
  if (out.size() > max) out = out.substr(0, max) + "...";
  return out;
}

// The whole file in one read: no stream buffers copying it twice.
Result<void> read_whole_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return fail("open {}: {}", path.string(), std::strerror(errno));
  const auto size = static_cast<std::size_t>(in.tellg());
  out.resize(size);
  in.seekg(0);
  in.read(out.data(), static_cast<std::streamsize>(size));
  out.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return fail("read {}: {}", path.string(), std::strerror(errno));
  return ok();
}

}  // namespace

const MetricSpec* find_metric(std::string_view name) {
  for (const auto& m : kMetrics)
    if (m.name == name) return &m;
  return nullptr;
}

Result<void> add_cluster_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    const json& nodes = (*j)["nodes"];
    if (!nodes.is_array()) return fail("cluster.json: no nodes array");
    // A node the scheduler did not run the audit on (queued behind a reservation, busy with
    // jobs, drained) was not evaluated (docs/cluster-run.md): no evidence either way, so it is
    // neither answered nor unavailable.
    int ok = 0, scanned = 0, queued = 0, not_scheduled = 0;
    double incidents = 0;
    for (const auto& n : nodes) {
      const std::string status = n.value("status", std::string());
      if (status == "ok") ++ok;
      else if (status == "queued") ++queued;
      else if (status == "not_scheduled") ++not_scheduled;
      if (auto s = n.find("scan"); s != n.end() && s->is_object() && s->value("ran", false)) {
        ++scanned;
        incidents += num(*s, "actionable").value_or(0);
      }
    }
    const int unasked = queued + not_scheduled;
    const auto asked = static_cast<int>(nodes.size()) - unasked;
    const std::string left_out =
        unasked == 0 ? std::string()
                     : fmt::format("{} queued, {} not scheduled: busy or reserved, not evaluated", queued, not_scheduled);
    if (asked > 0)
      ev.metrics["cluster.nodes_answered"] = {
          static_cast<double>(ok) / asked,
          unasked == 0 ? fmt::format("cluster.json: {} of {} nodes ok", ok, nodes.size())
                       : fmt::format("cluster.json: {} of {} evaluated nodes ok ({}; not counted)", ok, asked, left_out)};
    else if (!nodes.empty())
      ev.gaps["cluster.nodes_answered"] = fmt::format(
          "cluster.json: no node was evaluated ({}): run again when nodes are idle, or inside an allocation", left_out);
    if (scanned > 0)
      ev.metrics["scan.actionable_per_node"] = {
          incidents / scanned, fmt::format("cluster.json: {:g} actionable incidents on {} scanned nodes", incidents, scanned)};
  } catch (const json::exception& e) {
    return fail("cluster.json: {}", e.what());
  }
  return ok();
}

Result<void> add_cluster_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "cluster.json", "cmax.cluster/", doc); !p) return p;
  return add_cluster_json(doc, ev);
}

Result<void> add_drill_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    const json& nodes = (*j)["nodes"];
    if (!nodes.is_array()) return fail("drill.json: no nodes array");
    struct Stage {
      const char* stage;
      const char* metric;
    };
    // A node whose detector the rater started (cmaxd or cmax check, unless the drill was told the
    // provider runs it) says how fast the rater's tool is, not the provider's stack: its detection
    // and drain are not the provider's to be scored on. Replacement is the scheduler's either way.
    auto raters = [](const json& n) {
      auto d = n.find("detector");
      return d != n.end() && d->is_object() && d->value("owner", json()).is_string() && (*d)["owner"] == "rater";
    };
    int by_rater = 0;
    std::string rater_tool;
    for (const auto& n : nodes)
      if (raters(n)) {
        ++by_rater;
        rater_tool = n["detector"].value("by", std::string("cmax"));
      }
    if (by_rater > 0)
      ev.warnings.push_back(fmt::format(
          "drill.json: {} of {} node(s) detected and drained by {}, which the rater started: not the provider's "
          "stack, so those times are not scored (cmax drill run --provider-runs-cmax when the provider runs it)",
          by_rater, nodes.size(), rater_tool));
    for (auto [stage, metric] : {Stage{"detected", "drill.detect_s"}, Stage{"drained", "drill.drain_s"},
                                 Stage{"replaced", "drill.replace_s"}}) {
      double worst = -1;
      int measured = 0, never = 0, skipped_as_raters = 0;
      std::set<std::string> verdicts;  // of the stage where it was not reached, for the gap
      for (const auto& n : nodes) {
        if (!n.contains("stages") || !n["stages"].is_array()) continue;
        if (raters(n) && std::string_view(stage) != "replaced") {
          ++skipped_as_raters;
          continue;
        }
        for (const auto& s : n["stages"]) {
          if (s.value("stage", std::string()) != stage) continue;
          std::string verdict = s.value("verdict", std::string());
          if (!s.value("reached", false) && !verdict.empty()) verdicts.insert(verdict);
          if (s.value("reached", false)) {
            if (auto at = num(s, "at_ms")) {
              worst = std::max(worst, *at / 1000.0);
              ++measured;
            }
          } else if (verdict == "never") {
            ++never;
          }
        }
      }
      if (never > 0)
        ev.metrics[metric] = {std::numeric_limits<double>::infinity(),
                              fmt::format("drill.json: {} never reached on {} node(s)", stage, never)};
      else if (measured > 0)
        ev.metrics[metric] = {worst, fmt::format("drill.json: {} after {:.1f} s (worst of {} node(s))", stage, worst, measured)};
      else if (skipped_as_raters > 0)
        ev.gaps[metric] = fmt::format(
            "drill.json: the drill ran, but {} was by {}, which the rater started, not the provider's stack (pass "
            "--provider-runs-cmax to cmax drill run when the provider runs it)",
            stage, rater_tool);
      else
        ev.gaps[metric] = fmt::format("drill.json: the drill ran, but {} was not measured on any node{}", stage,
                                      verdicts.empty() ? std::string(" (no such stage recorded)")
                                                       : fmt::format(" (verdict {})", fmt::join(verdicts, ", ")));
    }
  } catch (const json::exception& e) {
    return fail("drill.json: {}", e.what());
  }
  return ok();
}

Result<void> add_drill_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "drill.json", "cmax.drill/", doc); !p) return p;
  return add_drill_json(doc, ev);
}

Result<void> add_nccl_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    const json& runs = (*j)["runs"];
    if (!runs.is_array()) return fail("nccl.json: no runs array");
    int pass = 0, warn = 0, failed = 0, cpu = 0;
    std::optional<double> worst_ratio;
    std::string worst_what;
    for (const auto& r : runs) {
      // cmax-collbench over MPI measures a CPU fabric: it shows the launcher and the pipeline work,
      // not what the GPU fabric the rubric rates can do.
      if (r.contains("backend") && r["backend"].is_string() && r["backend"] == "mpi") {
        ++cpu;
        continue;
      }
      std::string v = r.value("verdict", std::string());
      if (v == "pass") ++pass;
      else if (v == "warn") ++warn;
      else if (v == "fail") ++failed;
      auto peak = num(r, "peak_busbw_gbps");
      auto ref = r.contains("reference") ? num(r["reference"], "expected_busbw_gbps") : std::nullopt;
      if (peak && ref && *ref > 0 && (!worst_ratio || *peak / *ref < *worst_ratio)) {
        worst_ratio = *peak / *ref;
        worst_what = fmt::format("{} on {} nodes: {:.1f} of {:.1f} GB/s", r.value("collective", std::string("?")),
                                 num(r, "nodes").value_or(0), *peak, *ref);
      }
    }
    int n = pass + warn + failed;
    if (n > 0)
      ev.metrics["nccl.pass_fraction"] = {(pass + 0.5 * warn) / n,
                                          fmt::format("nccl.json: {} pass, {} warn, {} fail", pass, warn, failed)};
    if (worst_ratio) ev.metrics["nccl.reference_ratio"] = {*worst_ratio, "nccl.json: worst run " + worst_what};
    if (n == 0) {
      // The sweep ran: say why it measured nothing rather than ask for it again.
      std::size_t steps = 0, failed_steps = 0;
      std::string first_error;
      if (j->contains("sweep") && (*j)["sweep"].is_object() && (*j)["sweep"].contains("steps") &&
          (*j)["sweep"]["steps"].is_array())
        for (const auto& st : (*j)["sweep"]["steps"]) {
          ++steps;
          if (st.is_object() && st.contains("error") && st["error"].is_string()) {
            ++failed_steps;
            if (first_error.empty()) first_error = st["error"].get<std::string>();
          }
        }
      std::string why;
      if (steps > 0 && failed_steps == steps)
        why = fmt::format("nccl.json: every step failed ({} of {}): {}", failed_steps, steps, clip_line(first_error, 240));
      else if (cpu > 0)
        why = "nccl.json: only cmax-collbench over MPI ran (a CPU fabric, not scored): put nccl-tests on the nodes "
              "(cmax run --nccl-tests DIR)";
      else if (runs.empty())
        why = steps > 0 ? fmt::format("nccl.json: no run was measured ({} of {} steps failed{}{})", failed_steps, steps,
                                      first_error.empty() ? "" : ": ", clip_line(first_error, 240))
                        : std::string("nccl.json: no run was measured");
      else
        why = "nccl.json: no run reached a verdict";
      ev.gaps["nccl.pass_fraction"] = why;
      ev.gaps["nccl.reference_ratio"] = why;
    } else if (!worst_ratio) {
      ev.gaps["nccl.reference_ratio"] =
          "nccl.json: no run carries a reference busbw (runs[].reference) to compare its peak against";
    }
    if (cpu > 0)
      ev.warnings.push_back(fmt::format("nccl.json: {} run(s) of cmax-collbench over MPI (a CPU fabric) are not evidence "
                                        "of the GPU fabric and are not scored",
                                        cpu));
  } catch (const json::exception& e) {
    return fail("nccl.json: {}", e.what());
  }
  return ok();
}

Result<void> add_nccl_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "nccl.json", "cmax.nccl/", doc); !p) return p;
  return add_nccl_json(doc, ev);
}

Result<void> add_bench_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    const json& overall = (*j)["overall"];
    const json& w = j->contains("workload") ? (*j)["workload"] : json();
    auto hr = num(overall, "cache_hit_rate");
    auto achievable = num(w, "theoretical_hit_rate");
    // Measured above what the prompts sent allow: the endpoint held them before the run (someone
    // sent the same seeded prompts), so neither the hit rate nor the bill judges it. bench.json
    // says so itself; an older one is checked from its numbers.
    bool warm = false;
    if (auto f = j->find("cache_hit_above_achievable"); f != j->end() && f->is_boolean())
      warm = f->get<bool>();
    else if (hr && achievable)
      warm = *hr > *achievable + kHitAboveAchievableTolerance;
    if (hr) {
      ev.metrics["endpoint.cache_hit_rate"] = {*hr, fmt::format("bench.json overall.cache_hit_rate ({})",
                                                                overall.value("cache_source", std::string("?")))};
      if (warm) {
        std::string why = fmt::format(
            "bench.json: the measured hit rate {:.1f}% is above the {:.1f}% the prompts sent allow: the endpoint's "
            "cache held these prompts before the run, so the hit rate and the bill are not scored; run the "
            "endpoint stage again with a fresh seed (the default) or --flush-cache",
            *hr * 100, achievable.value_or(0) * 100);
        ev.warnings.push_back(why);
        ev.gaps["endpoint.cache_hit_of_achievable"] = why;
        ev.gaps["endpoint.cost_ratio"] = why;
      } else if (achievable && *achievable > 0.005) {
        // Judged against what the prompts sent allow: a short replay of a trace cannot reach the
        // trace's own rate, and a workload with no shared prefix allows nothing to judge.
        ev.metrics["endpoint.cache_hit_of_achievable"] = {
            std::min(1.0, *hr / *achievable),
            fmt::format("bench.json: {:.1f}% measured of the {:.1f}% the prompts sent allow{}", *hr * 100, *achievable * 100,
                        w.contains("plan") && w["plan"].is_string() ? " (" + w["plan"].get<std::string>() + ")" : "")};
      } else if (achievable) {
        ev.warnings.push_back("bench.json: the prompts sent share no prefix (upper-bound hit rate 0): the endpoint's "
                              "cache cannot be judged on this workload");
        ev.gaps["endpoint.cache_hit_of_achievable"] = "bench.json: the prompts sent share no prefix: nothing to judge";
      } else {
        ev.metrics["endpoint.cache_hit_of_achievable"] = {
            *hr, "bench.json overall.cache_hit_rate (no upper bound recorded: judged as measured)"};
      }
    } else {
      ev.gaps["endpoint.cache_hit_of_achievable"] =
          "bench.json: the endpoint reported no cached-token usage (overall.cache_hit_rate null)";
    }
    if (!warm) {
      if (j->contains("cost") && (*j)["cost"].is_object()) {
        if (auto r = num((*j)["cost"], "ratio_to_reference"))
          ev.metrics["endpoint.cost_ratio"] = {*r, "bench.json cost.ratio_to_reference"};
      } else {
        ev.gaps["endpoint.cost_ratio"] =
            "bench.json: no bill, the endpoint stage ran without a price sheet: add --prices FILE to cmax run "
            "(or cmax endpoint bench --prices FILE)";
      }
    }
    // Requests cmax canceled itself when it stopped (Ctrl-C, --duration, a stage's budget) are not
    // the endpoint's failures: they are left out of the rate.
    auto req = num(overall, "requests"), ok_n = num(overall, "succeeded");
    std::optional<double> canceled = num(overall, "client_canceled");
    if (!canceled && overall.is_object() && overall.contains("errors")) canceled = num(overall["errors"], "canceled");
    const double cut = canceled.value_or(0);
    if (req && ok_n && *req - cut > 0)
      ev.metrics["endpoint.success_rate"] = {
          *ok_n / (*req - cut),
          cut > 0 ? fmt::format("bench.json: {:g} of {:g} requests succeeded ({:g} more canceled by cmax when it "
                                "stopped: not the endpoint's failures, not counted)",
                                *ok_n, *req - cut, cut)
                  : fmt::format("bench.json: {:g} of {:g} requests succeeded", *ok_n, *req)};
    else if (req && *req > 0)
      ev.gaps["endpoint.success_rate"] =
          "bench.json: every request was canceled by cmax when it stopped (its --duration or the stage's budget): "
          "none was judged";
  } catch (const json::exception& e) {
    return fail("bench.json: {}", e.what());
  }
  return ok();
}

Result<void> add_bench_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "bench.json", "cmax.endpoint.bench/", doc); !p) return p;
  return add_bench_json(doc, ev);
}

Result<void> add_sla_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    double hours = 0, down = 0;
    if ((*j)["months"].is_array())
      for (const auto& m : (*j)["months"]) {
        if (!m.is_object() || !m.contains("totals")) continue;
        const json& t = m["totals"];
        hours += num(t, "gpu_hours").value_or(0) - num(t, "excluded_gpu_hours").value_or(0);
        down += num(t, "down_gpu_hours").value_or(0);
      }
    if (hours > 0)
      ev.metrics["sla.availability_percent"] = {
          100.0 * (1.0 - down / hours), fmt::format("sla.json: {:g} down of {:g} GPU-hours", down, hours)};
    else
      ev.gaps["sla.availability_percent"] =
          "sla.json: no GPU-hours owed in its window (no month, or every hour excluded): widen --from/--to";
    if (auto c = num((*j)["summary"], "cancellation_rights"))
      ev.metrics["sla.cancellation_rights"] = {*c, "sla.json summary.cancellation_rights"};
  } catch (const json::exception& e) {
    return fail("sla.json: {}", e.what());
  }
  return ok();
}

Result<void> add_sla_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "sla.json", "cmax.sla/", doc); !p) return p;
  return add_sla_json(doc, ev);
}

Result<void> add_scan_json(nlohmann::json& doc, Evidence& ev) {
  if (ev.metrics.count("scan.actionable_per_node")) return ok();  // a cluster run's per-node scans win
  try {
    json* j = &doc;
    std::set<std::string> nodes;
    int n = 0;
    if ((*j)["incidents"].is_array())
      for (const auto& inc : (*j)["incidents"]) {
        nodes.insert(inc.value("node", std::string()));
        if (!inc.value("resolved", false) && actionable(inc.value("action", std::string()))) ++n;
      }
    double per = nodes.empty() ? 0.0 : static_cast<double>(n) / static_cast<double>(nodes.size());
    ev.metrics["scan.actionable_per_node"] = {
        per, fmt::format("scan.json: {} actionable incidents on {} node(s)", n, std::max<std::size_t>(nodes.size(), 1))};
  } catch (const json::exception& e) {
    return fail("scan.json: {}", e.what());
  }
  return ok();
}

Result<void> add_scan_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "scan.json", "cmax.scan/", doc); !p) return p;
  return add_scan_json(doc, ev);
}

Result<void> add_check_active_json(nlohmann::json& doc, Evidence& ev) {
  for (const auto& f : ev.findings)
    if (f.check_id.rfind("check.", 0) == 0) return ok();
  try {
    json* j = &doc;
    if (!(*j)["results"].is_array()) return fail("check-active.json: no results array");
    for (const auto& r : (*j)["results"]) {
      audit::Finding f;
      std::string id = r.value("id", std::string()), target = r.value("target", std::string());
      f.check_id = target.empty() ? "check." + id : fmt::format("check.{}@{}", id, target);
      f.category = audit::parse_category(r.value("category", std::string())).value_or(audit::Category::reliability);
      f.outcome = audit::parse_outcome(r.value("outcome", std::string())).value_or(audit::Outcome::unverified);
      f.title = r.value("title", id);
      f.observed = r.value("summary", std::string());
      f.reason = r.value("reason", std::string());
      f.evidence_source = "check-active.json";
      ev.findings.push_back(std::move(f));
    }
  } catch (const json::exception& e) {
    return fail("check-active.json: {}", e.what());
  }
  return ok();
}

Result<void> add_check_active_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "check-active.json", "cmax.check.active/", doc); !p) return p;
  return add_check_active_json(doc, ev);
}

Result<void> add_attestations_json(nlohmann::json& doc, Evidence& ev) {
  try {
    json* j = &doc;
    if (!(*j)["attestations"].is_array()) return fail("attestations.json: no attestations array");
    std::size_t i = 0;
    for (const auto& a : (*j)["attestations"]) {
      audit::Finding f;
      std::string id = a.value("id", std::string());
      auto cat = audit::parse_category(a.value("category", std::string()));
      auto outcome = audit::parse_outcome(a.value("outcome", std::string()));
      if (id.empty() || !cat || !outcome)
        return fail("attestations.json: attestations[{}]: needs id, a ClusterMAX category and an outcome", i);
      f.check_id = "attest." + id;
      f.category = *cat;
      f.outcome = *outcome;
      f.title = a.value("title", id);
      f.evidence_source = a.value("evidence", std::string());
      f.reason = a.value("note", std::string());
      f.remediation = a.value("remediation", std::string());
      ev.findings.push_back(std::move(f));
      ++i;
    }
  } catch (const json::exception& e) {
    return fail("attestations.json: {}", e.what());
  }
  return ok();
}

Result<void> add_attestations_doc(std::string_view text, Evidence& ev) {
  json doc;
  if (auto p = parse_doc(text, "attestations.json", "cmax.attestations/", doc); !p) return p;
  return add_attestations_json(doc, ev);
}

// isolation.json (cmax audit isolation --out): its findings join the run's, except those results.json
// already holds (a standalone run's host checks are in both).
Result<void> add_isolation_json(nlohmann::json& doc, Evidence& ev) {
  auto report = report::audit_from_json(doc.dump(), "isolation.json");
  if (!report) return Unexpected<Error>{report.error()};
  std::set<std::string> have;
  for (const auto& f : ev.findings) have.insert(f.check_id);
  for (auto& f : report->findings)
    if (!have.count(f.check_id)) {
      f.evidence_source = "isolation.json";
      ev.findings.push_back(std::move(f));
    }
  return ok();
}

Result<Evidence> read_evidence(const std::string& dir, ParsedDocuments* keep) {
  auto report = report::read_run_dir(dir);
  if (!report) return Unexpected<Error>{report.error()};
  Evidence ev;
  ev.dir = dir;
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  ev.label = p.filename().string();
  if (ev.label.empty() || ev.label == ".") ev.label = dir;
  ev.host = report->host;
  ev.findings = std::move(report->findings);
  ev.documents.push_back("results.json");

  struct Doc {
    const char* file;
    const char* schema;
    Result<void> (*add)(json&, Evidence&);
  };
  // cluster.json before scan.json: a cluster run's per-node scans are the evidence of record.
  const Doc docs[] = {{"cluster.json", "cmax.cluster/", add_cluster_json},
                      {"check-active.json", "cmax.check.active/", add_check_active_json},
                      {"scan.json", "cmax.scan/", add_scan_json},
                      {"drill.json", "cmax.drill/", add_drill_json},
                      {"nccl.json", "cmax.nccl/", add_nccl_json},
                      {"bench.json", "cmax.endpoint.bench/", add_bench_json},
                      {"sla.json", "cmax.sla/", add_sla_json},
                      {"attestations.json", "cmax.attestations/", add_attestations_json},
                      {"isolation.json", "cmax.audit/", add_isolation_json}};
  for (const auto& d : docs) {
    fs::path path = fs::path(dir) / d.file;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    // Scored from cluster.json already: scan.json is parsed only for a caller that shows it.
    if (!keep && std::string_view(d.file) == "scan.json" && ev.metrics.count("scan.actionable_per_node")) continue;
    std::string text;
    if (auto r = read_whole_file(path, text); !r) {
      ev.warnings.push_back(r.error().message);
      continue;
    }
    json doc;
    auto r = parse_doc(text, d.file, d.schema, doc);
    text = std::string();  // the parsed tree replaces the text; both at once is twice the memory
    if (r) r = d.add(doc, ev);
    if (!r) {
      ev.warnings.push_back(r.error().message + "; its evidence counts as missing");
      continue;
    }
    ev.documents.push_back(d.file);
    if (keep) keep->insert_or_assign(d.file, std::move(doc));
  }
  return ev;
}

}  // namespace cmax::score
