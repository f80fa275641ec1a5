#include "html/views.h"

#include "campaign/state.h"
#include "core/text_file.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "score/evidence.h"
#include "core/json_fields.h"

namespace cmax::html {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

Result<json> parse(std::string_view text, std::string_view file, std::string_view schema_prefix) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail("{}: not JSON: {}", file, e.what());
  }
  if (!j.is_object()) return fail("{}: not a JSON object", file);
  auto s = j.find("schema");
  std::string schema = s != j.end() && s->is_string() ? s->get<std::string>() : "";
  if (schema.rfind(schema_prefix, 0) != 0) return fail("{}: schema \"{}\" is not {}", file, schema, schema_prefix);
  return j;
}


double num(const json& o, const char* key, double fallback = 0) {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : fallback;
}

std::optional<double> opt_num(const json& o, const char* key) {
  if (!o.is_object()) return std::nullopt;
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool flag(const json& o, const char* key) {
  if (!o.is_object()) return false;
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

const json& arr(const json& o, const char* key) {
  static const json kEmpty = json::array();
  if (!o.is_object()) return kEmpty;
  auto it = o.find(key);
  return it != o.end() && it->is_array() ? *it : kEmpty;
}

// The kernel-log actions from mildest to strongest (docs/schemas/scan.md).
int action_rank(std::string_view a) {
  static constexpr std::array<std::string_view, 7> kOrder{"ignore", "monitor", "restart_app", "reset_gpu",
                                                          "drain", "reboot_node", "replace"};
  for (std::size_t i = 0; i < kOrder.size(); ++i)
    if (kOrder[i] == a) return static_cast<int>(i);
  return -1;
}

SlaCell sla_cell(const json& e) {
  SlaCell c;
  c.availability_percent = num(e, "availability_percent", 100);
  c.down_gpu_hours = num(e, "down_gpu_hours");
  c.excluded_gpu_hours = num(e, "excluded_gpu_hours");
  c.credit = num(e, "credit");
  c.below_target = flag(e, "below_target");
  return c;
}

std::string read_file(const fs::path& p, std::string* error) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    *error = fmt::format("open {}: cannot read", p.string());
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last `max_bytes` of a file (a stage's log can be long; its reason is at its end).
std::string read_tail(const fs::path& p, std::size_t max_bytes) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0));
  const std::size_t n = std::min(size, max_bytes);
  in.seekg(static_cast<std::streamoff>(size - n));
  std::string out(n, '\0');
  in.read(out.data(), static_cast<std::streamsize>(n));
  out.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

}  // namespace

Result<ClusterView> parse_cluster_view(std::string_view text) {
  auto j = parse(text, "cluster.json", "cmax.cluster/");
  if (!j) return fail("{}", j.error().message);
  return cluster_view(*j);
}

Result<ClusterView> cluster_view(const nlohmann::json& doc) {
  const json* j = &doc;
  ClusterView v;
  v.harness = core::string_field(*j, "harness");
  v.started_at = core::string_field(*j, "started_at");
  v.seconds = num(*j, "seconds");
  for (const auto& n : arr(*j, "nodes")) {
    ClusterNode c;
    c.node = core::string_field(n, "node");
    c.status = core::string_field(n, "status");
    c.detail = core::string_field(n, "detail");
    c.seconds = num(n, "seconds");
    if (auto f = n.find("findings"); f != n.end() && f->is_object()) {
      c.pass = static_cast<int>(num(*f, "pass"));
      c.warn = static_cast<int>(num(*f, "warn"));
      c.fail = static_cast<int>(num(*f, "fail"));
      c.unverified = static_cast<int>(num(*f, "unverified"));
    }
    if (auto s = n.find("scan"); s != n.end() && flag(*s, "ran")) c.worst_action = core::string_field(*s, "worst_action");
    for (const auto& x : arr(n, "failing"))
      if (x.is_string()) c.failing.push_back(x.get<std::string>());
    v.nodes.push_back(std::move(c));
  }
  return v;
}

Result<ScanView> parse_scan_view(std::string_view text) {
  auto j = parse(text, "scan.json", "cmax.scan/");
  if (!j) return fail("{}", j.error().message);
  return scan_view(*j);
}

Result<ScanView> scan_view(const nlohmann::json& doc) {
  const json* j = &doc;
  ScanView v;
  for (const auto& s : arr(*j, "sources"))
    if (s.is_string()) v.sources.push_back(s.get<std::string>());
  for (const auto& i : arr(*j, "incidents")) {
    ScanIncident x;
    x.node = core::string_field(i, "node");
    x.kind = core::string_field(i, "kind");
    x.device = core::string_field(i, "device");
    x.action = core::string_field(i, "action");
    x.reason = core::string_field(i, "reason");
    x.first_seen = core::string_field(i, "first_seen");
    x.last_seen = core::string_field(i, "last_seen");
    x.sample = core::string_field(i, "sample");
    if (auto c = opt_num(i, "code")) x.code = static_cast<long long>(*c);
    x.count = static_cast<long long>(num(i, "count"));
    x.resolved = flag(i, "resolved");
    if (!x.resolved && action_rank(x.action) >= action_rank("restart_app")) ++v.actionable;
    v.incidents.push_back(std::move(x));
  }
  v.total = v.incidents.size();
  std::map<std::string, std::pair<std::size_t, std::set<std::string>>> drills;
  for (const auto& i : arr(*j, "drills")) {
    auto& d = drills[core::string_field(i, "drill")];
    ++d.first;
    d.second.insert(core::string_field(i, "node"));
  }
  for (const auto& [id, d] : drills)
    v.drills.push_back(fmt::format("drill {}: {} incident{} ({})", id, d.first, d.first == 1 ? "" : "s",
                                   fmt::join(d.second, ", ")));
  std::stable_sort(v.incidents.begin(), v.incidents.end(), [](const ScanIncident& a, const ScanIncident& b) {
    if (a.resolved != b.resolved) return !a.resolved;
    int ra = action_rank(a.action), rb = action_rank(b.action);
    if (ra != rb) return ra > rb;
    return a.count > b.count;
  });
  if (v.incidents.size() > kMaxIncidents) v.incidents.resize(kMaxIncidents);
  return v;
}

Result<NcclView> parse_nccl_view(std::string_view text) {
  auto j = parse(text, "nccl.json", "cmax.nccl/");
  if (!j) return fail("{}", j.error().message);
  return nccl_view(*j);
}

Result<NcclView> nccl_view(const nlohmann::json& doc) {
  const json* j = &doc;
  NcclView v;
  std::map<std::string, int, std::less<>> step_nodes;
  if (auto sweep = j->find("sweep"); sweep != j->end() && sweep->is_object())
    for (const auto& st : arr(*sweep, "steps")) step_nodes[core::string_field(st, "step")] = static_cast<int>(num(st, "nodes"));
  for (const auto& r : arr(*j, "runs")) {
    NcclChart c;
    c.file = core::string_field(r, "file");
    c.collective = core::string_field(r, "collective");
    c.gpu = core::string_field(r, "gpu");
    c.verdict = core::string_field(r, "verdict");
    c.ranks = static_cast<int>(num(r, "ranks"));
    c.nodes = static_cast<int>(num(r, "nodes"));
    c.step = core::string_field(r, "step");
    c.variant = core::string_field(r, "variant");
    if (auto it = step_nodes.find(c.step); !c.step.empty() && it != step_nodes.end()) c.step_nodes = it->second;
    c.peak_busbw_gbps = num(r, "peak_busbw_gbps");
    if (auto fit = r.find("fit"); fit != r.end() && fit->is_object() && flag(*fit, "ok"))
      c.fit_peak_gbps = opt_num(*fit, "peak_gbps");
    if (auto ref = r.find("reference"); ref != r.end() && ref->is_object())
      c.expected_busbw_gbps = opt_num(*ref, "expected_busbw_gbps");
    for (const auto& a : arr(r, "anomalies")) c.anomalies.push_back(core::string_field(a, "detail"));
    c.chart_path = core::string_field(r, "chart");
    v.runs.push_back(std::move(c));
  }
  for (const auto& s : arr(*j, "scaling")) {
    NcclScaling x;
    x.group = core::string_field(s, "group");
    x.kind = core::string_field(s, "kind");
    x.detail = core::string_field(s, "detail");
    x.nodes = static_cast<int>(num(s, "nodes"));
    x.measured_gbps = opt_num(s, "measured_gbps");
    x.expected_gbps = opt_num(s, "expected_gbps");
    v.scaling.push_back(std::move(x));
  }
  if (auto sweep = j->find("sweep"); sweep != j->end() && sweep->is_object())
    for (const auto& st : arr(*sweep, "steps")) {
      std::string error = core::string_field(st, "error");
      if (error.empty() && !flag(st, "interrupted")) continue;
      v.failed_steps.push_back({core::string_field(st, "step"), core::string_field(st, "test"),
                                core::string_field(st, "variant"), error.empty() ? "interrupted" : error,
                                static_cast<int>(num(st, "nodes")), static_cast<int>(num(st, "exit_code", -1))});
    }
  return v;
}

NcclScalingTable nccl_scaling_table(const NcclView& v) {
  NcclScalingTable t;
  std::set<int> counts;
  auto nodes_of = [](const NcclChart& r) { return r.step_nodes > 0 ? r.step_nodes : r.nodes; };
  for (const auto& r : v.runs)
    if (nodes_of(r) > 0) counts.insert(nodes_of(r));
  for (const auto& s : v.scaling)
    if (s.nodes > 0) counts.insert(s.nodes);
  t.node_counts.assign(counts.begin(), counts.end());
  auto column = [&](int nodes) {
    return static_cast<std::size_t>(std::lower_bound(t.node_counts.begin(), t.node_counts.end(), nodes) -
                                    t.node_counts.begin());
  };
  auto row_of = [&](const std::string& collective, const std::string& variant) -> NcclScalingRow& {
    for (auto& row : t.rows)
      if (row.collective == collective && row.variant == variant) return row;
    t.rows.push_back({collective, variant, std::vector<NcclScalingCell>(t.node_counts.size())});
    return t.rows.back();
  };
  for (const auto& r : v.runs) {
    if (nodes_of(r) <= 0) continue;
    auto& cell = row_of(r.collective, r.variant).cells[column(nodes_of(r))];
    if (!cell.peak_busbw_gbps || r.peak_busbw_gbps > *cell.peak_busbw_gbps) cell.peak_busbw_gbps = r.peak_busbw_gbps;
  }
  // A scaling group reads "COLLECTIVE GPU (VARIANT) in DIR": its collective is the first word, its
  // variant the parenthesised one (none when the runs had none).
  for (const auto& s : v.scaling) {
    if (s.nodes <= 0) continue;
    const std::string_view g = s.group;
    const std::string collective(g.substr(0, g.find(' ')));
    for (auto& row : t.rows) {
      if (row.collective != collective) continue;
      if (!row.variant.empty() && g.find("(" + row.variant + ")") == std::string_view::npos) continue;
      auto& cell = row.cells[column(s.nodes)];
      cell.expected_gbps = s.expected_gbps ? s.expected_gbps : std::optional<double>(0.0);
      cell.detail = s.detail;
      if (!cell.peak_busbw_gbps && s.measured_gbps) cell.peak_busbw_gbps = s.measured_gbps;
    }
  }
  return t;
}

Result<DrillView> parse_drill_view(std::string_view text) {
  auto j = parse(text, "drill.json", "cmax.drill/");
  if (!j) return fail("{}", j.error().message);
  return drill_view(*j);
}

Result<DrillView> drill_view(const nlohmann::json& doc) {
  const json* j = &doc;
  DrillView v;
  v.drill_id = core::string_field(*j, "drill_id");
  v.scenario = core::string_field(*j, "scenario");
  v.title = core::string_field(*j, "title");
  v.expect = core::string_field(*j, "expect");
  v.scheduler = core::string_field(*j, "scheduler");
  for (const auto& n : arr(*j, "nodes")) {
    DrillNode d;
    d.node = core::string_field(n, "node");
    d.error = core::string_field(n, "error");
    if (auto det = n.find("detector"); det != n.end() && det->is_object()) {
      d.detector_by = core::string_field(*det, "by");
      d.detector_owner = core::string_field(*det, "owner");
    }
    for (const auto& s : arr(n, "stages")) {
      DrillStage st;
      st.stage = core::string_field(s, "stage");
      st.verdict = core::string_field(s, "verdict");
      st.reached = flag(s, "reached");
      st.at_ms = num(s, "at_ms");
      st.lower_ms = num(s, "lower_ms");
      st.threshold_ms = opt_num(s, "threshold_ms");
      st.how = core::string_field(s, "how");
      if (auto a = s.find("awaited"); a != s.end() && a->is_boolean()) st.awaited = a->get<bool>();
      d.stages.push_back(std::move(st));
    }
    v.nodes.push_back(std::move(d));
  }
  return v;
}

Result<SlaView> parse_sla_view(std::string_view text) {
  auto j = parse(text, "sla.json", "cmax.sla/");
  if (!j) return fail("{}", j.error().message);
  return sla_view(*j);
}

Result<SlaView> sla_view(const nlohmann::json& doc) {
  const json* j = &doc;
  SlaView v;
  static const json kNone = json::object();
  auto c = j->find("contract");
  const json& contract = c != j->end() ? *c : kNone;
  v.contract = core::string_field(contract, "name");
  v.scope = core::string_field(contract, "scope");
  v.currency = core::string_field(contract, "currency");
  v.target_percent = num(contract, "availability_target_percent");
  v.total.name = "all " + (v.scope.empty() ? std::string("entities") : v.scope + "s");
  std::vector<std::string> order;  // entities in first-seen order
  std::map<std::string, SlaRow> rows;
  const json& months = arr(*j, "months");
  for (std::size_t m = 0; m < months.size(); ++m) {
    const json& month = months[m];
    v.months.push_back(core::string_field(month, "month"));
    if (auto t = month.find("totals"); t != month.end() && t->is_object()) {
      SlaCell c = sla_cell(*t);
      c.below_target = c.availability_percent < v.target_percent;
      v.total.cells.push_back(c);
      v.total.worst = std::min(v.total.worst, c.availability_percent);
    } else {
      v.total.cells.emplace_back(std::nullopt);
    }
    for (const auto& e : arr(month, "entities")) {
      std::string name = core::string_field(e, "name");
      auto [it, fresh] = rows.try_emplace(name);
      if (fresh) {
        it->second.name = name;
        order.push_back(name);
      }
      auto& cells = it->second.cells;
      cells.resize(months.size());
      cells[m] = sla_cell(e);
      it->second.worst = std::min(it->second.worst, cells[m]->availability_percent);
    }
  }
  for (const auto& name : order) {
    // Listed for excluded time alone (maintenance, force majeure, drills): no downtime.
    bool excluded_only = true;
    for (const auto& c : rows[name].cells)
      if (c && !(c->down_gpu_hours <= 0 && c->excluded_gpu_hours > 0)) excluded_only = false;
    ++(excluded_only ? v.entities_excluded_only : v.entities_with_downtime);
  }
  for (const auto& d : arr(*j, "drills")) {
    const std::string end = d.contains("end") && d["end"].is_string() ? d["end"].get<std::string>() : "still out";
    v.drills.push_back(fmt::format("drill {} on {}: {} .. {}{}", core::string_field(d, "drill"), core::string_field(d, "node"), core::string_field(d, "start"), end,
                                   flag(d, "excluded") ? "" : " (a node the contract does not name)"));
  }
  for (const auto& name : order) {
    v.entities.push_back(std::move(rows[name]));
    v.entities.back().cells.resize(months.size());
  }
  std::stable_sort(v.entities.begin(), v.entities.end(),
                   [](const SlaRow& a, const SlaRow& b) { return a.worst < b.worst; });
  if (v.entities.size() > kMaxSlaRows) v.entities.resize(kMaxSlaRows);
  for (const auto& c : arr(*j, "cancellation_rights"))
    v.cancellations.push_back(fmt::format("{} {}: {}", core::string_field(c, "name"), core::string_field(c, "month"), core::string_field(c, "detail")));
  if (auto s = j->find("summary"); s != j->end()) v.credit_total = num(*s, "credit_total");
  return v;
}

Result<std::string> inline_svg(std::string_view svg) {
  auto start = svg.find("<svg");
  auto end = svg.rfind("</svg>");
  if (start == std::string_view::npos || end == std::string_view::npos || end < start)
    return fail("not an SVG document (no <svg> ... </svg>)");
  std::string_view body = svg.substr(start, end + 6 - start);
  // The report promises no scripts and no fetches; a chart that would break that is not inlined.
  for (std::string_view bad : {"<script", "href=\"http", "href='http", "url(http", "<foreignObject", "<image"})
    if (body.find(bad) != std::string_view::npos) return fail("holds {}: not inlined", bad);
  return std::string(body);
}

Result<CampaignView> parse_campaign_view(std::string_view text) {
  auto c = campaign::campaign_from_json(text, "campaign.json");
  if (!c) return Unexpected<Error>{c.error()};
  CampaignView v;
  v.plan = c->plan_name;
  v.origin = c->plan_origin;
  v.started_at = c->started_at;
  v.finished_at = c->finished_at;
  v.interrupted = c->interrupted;
  v.resumes = c->resumes;
  for (const auto& st : c->stages) {
    const auto& d = st.decision;
    v.stages.push_back({d.id, std::string(campaign::to_string(d.kind)), std::string(campaign::to_string(st.status)),
                        d.targets, d.reason, d.todo, st.error, st.log, d.run, d.disruptive, false, st.seconds, st.exit_code,
                        d.documents});
  }
  return v;
}

std::string stage_exit_meaning(std::string_view kind, int exit_code) {
  // Codes 1 and 2 differ by command (docs/exit-codes.md); 0, 3 and the signals do not.
  struct Meaning {
    std::string_view kind, one, two;
  };
  static constexpr std::array<Meaning, 8> kMeanings{{
      {"audit", "findings: a check failed", "findings: a security check failed"},
      {"isolation", "findings: a check failed", "findings: a tenant can reach what it should not"},
      {"scan", "findings: an incident needs action", ""},
      {"active", "findings: an active check failed", ""},
      {"nccl", "findings: an anomaly or poor scaling", "a log or sweep step failed, or the sweep was interrupted"},
      {"drill", "findings: a stage was slow or never reached", ""},
      {"endpoint", "findings: too many requests failed", "interrupted: partial results"},
      {"sla", "findings: a credit is owed or a cancellation right triggered", "the events could not be read"},
  }};
  switch (exit_code) {
    case -1: return "did not exit";
    case 0: return "clean";
    case 3: return "usage or environment";
    case 130: return "interrupted";
    default: break;
  }
  if (exit_code == 1 || exit_code == 2) {
    for (const auto& m : kMeanings)
      if (m.kind == kind) {
        std::string_view s = exit_code == 1 ? m.one : m.two;
        if (!s.empty()) return std::string(s);
      }
    return exit_code == 1 ? "findings" : "findings or a partial result";
  }
  if (exit_code > 128) return fmt::format("killed by signal {}", exit_code - 128);
  return "failed";
}

namespace {

// Lines a child prints when it ends whatever happened: where its report and run directory are.
// They say nothing about why a stage failed.
bool closing_line(std::string_view line) {
  for (std::string_view p : {"Report:", "report:", "Run directory:", "warning: no report written", "# "})
    if (line.rfind(p, 0) == 0) return true;
  return line.find("report.html") != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

}  // namespace

std::string stage_failure_reason(std::string_view error, std::string_view log_text) {
  constexpr std::string_view kTail = " (last line: ";
  const auto at = error.find(kTail);
  if (at == std::string_view::npos) return std::string(error);
  // The last line may hold parentheses of its own: it ends at the ')' before what cmax run
  // appends after it (docs/schemas/campaign.md), else at the error's last ')'.
  std::size_t end = std::string_view::npos;
  for (std::string_view after : {"); raise the stage's budget_s", "); cleanup failed ("}) {
    auto a = error.find(after, at + kTail.size());
    if (a != std::string_view::npos) end = std::min(end, a);
  }
  if (end == std::string_view::npos && !error.empty() && error.back() == ')') end = error.size() - 1;
  if (end == std::string_view::npos || end < at + kTail.size()) return std::string(error);
  const std::string_view last = error.substr(at + kTail.size(), end - at - kTail.size());
  if (!closing_line(trim(last))) return std::string(error);
  // The log's last line that says something, the child's error message as a rule.
  std::string_view better;
  std::size_t pos = log_text.size();
  while (pos > 0 && better.empty()) {
    auto nl = log_text.rfind('\n', pos - 1);
    const std::size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    std::string_view line = trim(log_text.substr(start, pos - start));
    if (!line.empty() && !closing_line(line)) better = line;
    if (nl == std::string_view::npos) break;
    pos = nl;
  }
  std::string out(error.substr(0, at));
  if (!better.empty()) out += fmt::format(" (log: {})", better);
  out += error.substr(end + 1);
  return out;
}

std::vector<std::string> bench_warnings(const nlohmann::json& bench) {
  std::vector<std::string> out;
  for (const auto& w : arr(bench, "warnings"))
    if (w.is_string() && !w.get<std::string>().empty()) out.push_back(w.get<std::string>());
  return out;
}

Result<RunReport> load_run(const std::string& dir, const score::Rubric& rubric) {
  score::ParsedDocuments docs;
  auto ev = score::read_evidence(dir, &docs);
  if (!ev) return fail("{}", ev.error().message);
  RunReport r;
  r.dir = dir;
  r.label = ev->label;
  r.host = ev->host;
  r.card = score::score_run(rubric, *ev);
  r.findings = std::move(ev->findings);
  r.warnings = std::move(ev->warnings);  // documents present but unusable are listed there already
  const fs::path base(dir);
  auto warn = [&](const std::string& message) {
    if (std::find(r.warnings.begin(), r.warnings.end(), message) == r.warnings.end()) r.warnings.push_back(message);
  };
  // Each document was parsed once, by read_evidence; the views read the same trees.
  auto doc = [&](std::string_view name) -> const json* {
    auto it = docs.find(name);
    return it == docs.end() ? nullptr : &it->second;
  };
  if (fs::exists(base / "campaign.json")) {
    auto text = core::read_text_file((base / "campaign.json").string(), 16u << 20);
    auto v = text ? parse_campaign_view(*text) : Result<CampaignView>(Unexpected<Error>{text.error()});
    if (v) {
      for (auto& st : v->stages) {
        std::error_code ec;
        st.log_exists = !st.log.empty() && fs::is_regular_file(base / st.log, ec);
        if (st.error.empty()) continue;
        const std::string log_text = st.log_exists ? read_tail(base / st.log, 64u << 10) : std::string();
        st.error = stage_failure_reason(st.error, log_text);
      }
      r.campaign = std::move(*v);
    } else {
      warn(v.error().message + "; the stages are not shown");
    }
  }
  if (const json* d = doc("cluster.json")) {
    if (auto v = cluster_view(*d)) r.cluster = std::move(*v);
    else warn(v.error().message);
  }
  if (const json* d = doc("scan.json")) {
    if (auto v = scan_view(*d)) r.scan = std::move(*v);
    else warn(v.error().message);
  }
  if (const json* d = doc("drill.json")) {
    if (auto v = drill_view(*d)) r.drill = std::move(*v);
    else warn(v.error().message);
  }
  if (const json* d = doc("sla.json")) {
    if (auto v = sla_view(*d)) r.sla = std::move(*v);
    else warn(v.error().message);
  }
  if (const json* d = doc("nccl.json")) {
    if (auto v = nccl_view(*d)) {
      for (auto& c : v->runs) {
        if (c.chart_path.empty()) {
          c.svg_error = "no chart was written (nccl analyze --no-charts?)";
          continue;
        }
        // nccl.json names the chart as written; a directory that was moved still has it beside.
        fs::path p(c.chart_path);
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) p = base / p.filename();
        std::string error;
        std::string text = read_file(p, &error);
        if (!error.empty()) {
          c.svg_error = error;
          warn(fmt::format("nccl.json: chart of {}: {}", c.file, error));
          continue;
        }
        if (auto s = inline_svg(text)) c.svg = std::move(*s);
        else {
          c.svg_error = fmt::format("{}: {}", p.string(), s.error().message);
          warn(fmt::format("nccl.json: chart {}", c.svg_error));
        }
      }
      r.nccl = std::move(*v);
    } else {
      warn(v.error().message);
    }
  }
  if (const json* d = doc("bench.json")) {
    r.bench_warnings = bench_warnings(*d);
    if (auto b = loadgen::read_bench(dir)) {
      if (b->label.empty()) b->label = r.label;
      r.bench = std::move(*b);
    } else {
      warn(b.error().message);
    }
  }
  return r;
}

}  // namespace cmax::html
