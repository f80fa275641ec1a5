#include "cluster/merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "audit/check.h"
#include "cluster/consistency.h"
#include "report/audit_json.h"
#include "report/run_dir.h"

namespace cmax::cluster {
namespace {

using nlohmann::ordered_json;
using audit::Outcome;

audit::Finding answered_finding(const NodeOutput& o) {
  audit::Finding f;
  f.check_id = "cluster.node.answered@" + o.node;
  f.category = audit::Category::availability;
  f.severity = audit::Severity::missing;
  f.title = "Node answered the cluster run";
  f.criterion = "Every node of the cluster is reachable and schedulable";
  f.observed = std::string(to_string(o.status));
  f.expected = "ok";
  f.evidence_source = "the fan-out (srun or pods)";
  f.evidence_value = o.detail;
  f.reason = o.detail;
  f.remediation = "Check the node's scheduler daemon (slurmd, kubelet) and network; a node the scheduler will not "
                  "place work on (drained, down) or queued the work for (reserved, busy) is reported as not evaluated.";
  f.outcome = o.status == NodeStatus::ok ? Outcome::pass
              : o.status == NodeStatus::not_scheduled || o.status == NodeStatus::queued ? Outcome::unverified
                                                       : Outcome::fail;
  return f;
}

struct Tally {
  int pass = 0, warn = 0, fail = 0, unverified = 0;
};
Tally tally(const std::vector<audit::Finding>& fs) {
  Tally t;
  for (const auto& f : fs) {
    if (f.outcome == Outcome::pass) ++t.pass;
    else if (f.outcome == Outcome::warn) ++t.warn;
    else if (f.outcome == Outcome::fail) ++t.fail;
    else if (f.outcome == Outcome::unverified) ++t.unverified;
  }
  return t;
}

ordered_json finding_json(const audit::Finding& f) {
  return {{"id", f.check_id},       {"category", audit::to_string(f.category)}, {"outcome", audit::to_string(f.outcome)},
          {"title", f.title},       {"observed", f.observed},                  {"expected", f.expected},
          {"reason", f.reason},     {"evidence", f.evidence_source},           {"remediation", f.remediation}};
}

// Node names come from the cluster; keep file names to a safe alphabet.
std::string safe_file_name(std::string_view node) {
  std::string s;
  for (char c : node) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
  return s;
}

}  // namespace

ClusterRun merge_nodes(std::vector<NodeOutput> outputs, const audit::Floors& floors, const core::Clock& clock) {
  ClusterRun run;
  run.floors_origin = floors.origin;
  run.floors_updated = floors.updated;
  for (auto& o : outputs) {
    NodeResult nr;
    nr.output = std::move(o);
    if (nr.output.status == NodeStatus::ok) {
      auto doc = parse_collect_doc(nr.output.payload, "node " + nr.output.node);
      if (!doc) {
        nr.output.status = NodeStatus::failed;
        nr.output.detail = doc.error().message;
      } else {
        if (doc->node != nr.output.node)
          doc->errors.push_back(fmt::format("the document names node {} but came from {}", doc->node, nr.output.node));
        nr.doc = std::move(*doc);
      }
    }
    if (nr.doc) {
      audit::CheckContext ctx{nr.doc->audit.facts, floors, nr.doc->audit.harness, clock};
      nr.findings = audit::run_checks(audit::all_checks(), ctx);
      nr.exit_code = audit::exit_code_for(nr.findings);
      for (const auto& c : nr.doc->checks) nr.findings.push_back(health::to_finding(c));
    }
    run.nodes.push_back(std::move(nr));
  }
  std::vector<NodeFacts> facts;
  for (const auto& n : run.nodes)
    if (n.doc) facts.push_back({n.output.node, &n.doc->audit.facts});
  run.cluster_findings = cross_node_findings(facts);
  for (const auto& n : run.nodes) run.cluster_findings.push_back(answered_finding(n.output));
  return run;
}

std::string why_no_node_evaluated(const ClusterRun& run) {
  std::vector<std::pair<NodeStatus, std::vector<const NodeOutput*>>> by_status;
  for (const auto& n : run.nodes) {
    if (n.doc) return {};
    auto it = std::find_if(by_status.begin(), by_status.end(), [&](const auto& p) { return p.first == n.output.status; });
    if (it == by_status.end()) by_status.push_back({n.output.status, {&n.output}});
    else it->second.push_back(&n.output);
  }
  if (run.nodes.empty()) return "no node was evaluated: the plan named no node";
  std::vector<std::string> parts;
  for (const auto& [status, outs] : by_status)
    parts.push_back(fmt::format("{} {} ({}: {})", outs.size(), to_string(status), outs.front()->node, outs.front()->detail));
  return fmt::format("no node was evaluated, so this run gives no verdict: {}", fmt::join(parts, "; "));
}

int cluster_exit_code(const ClusterRun& run) {
  std::vector<audit::Finding> all = run.cluster_findings;
  for (const auto& n : run.nodes) all.insert(all.end(), n.findings.begin(), n.findings.end());
  return audit::exit_code_for(all);
}

audit::AuditReport aggregate_report(const ClusterRun& run) {
  audit::AuditReport r;
  r.started_at = run.started_at;
  r.finished_at = run.finished_at;
  r.duration = std::chrono::microseconds(static_cast<long long>(run.seconds * 1e6));
  r.host = fmt::format("cluster ({} nodes, {})", run.nodes.size(), run.harness);
  r.host_root = "/";
  r.harness = run.harness == "slurm" ? audit::kSlurm : run.harness == "kubernetes" ? audit::kKubernetes : audit::kStandalone;
  r.floors_origin = run.floors_origin;
  r.floors_updated = run.floors_updated;
  for (const auto& n : run.nodes) {
    for (auto f : n.findings) {
      f.check_id += "@" + n.output.node;
      r.findings.push_back(std::move(f));
    }
  }
  r.findings.insert(r.findings.end(), run.cluster_findings.begin(), run.cluster_findings.end());
  return r;
}

std::string cluster_to_json(const ClusterRun& run, int exit_code) {
  ordered_json j;
  j["schema"] = kClusterSchema;
  j["cmax_version"] = report::cmax_version();
  j["harness"] = run.harness;
  j["started_at"] = run.started_at;
  j["finished_at"] = run.finished_at;
  j["seconds"] = run.seconds;
  j["floors"] = {{"origin", run.floors_origin}, {"updated", run.floors_updated}};
  std::map<std::string, int> by_status;
  for (const auto& n : run.nodes) ++by_status[std::string(to_string(n.output.status))];
  j["summary"] = {{"nodes", run.nodes.size()}, {"by_status", by_status}, {"exit_code", exit_code}};
  ordered_json nodes = ordered_json::array();
  for (const auto& n : run.nodes) {
    auto t = tally(n.findings);
    ordered_json nj = {{"node", n.output.node},
                       {"status", to_string(n.output.status)},
                       {"detail", n.output.detail},
                       {"seconds", n.output.seconds}};
    if (n.doc) {
      nj["collect_seconds"] = n.doc->seconds;
      nj["cmax_version"] = n.doc->cmax_version;
      nj["harness"] = audit::harness_name(n.doc->audit.harness);
      nj["findings"] = {{"pass", t.pass}, {"warn", t.warn}, {"fail", t.fail}, {"unverified", t.unverified}};
      nj["exit_code"] = n.exit_code;
      nj["scan"] = {{"ran", n.doc->scan.ran},
                    {"incidents", n.doc->scan.incidents},
                    {"actionable", n.doc->scan.actionable},
                    {"worst_action", n.doc->scan.worst_action},
                    {"top", n.doc->scan.top},
                    {"errors", n.doc->scan.errors}};
      ordered_json checks = ordered_json::array();
      for (const auto& c : n.doc->checks) checks.push_back(health::to_json(c));
      nj["checks"] = std::move(checks);
      nj["errors"] = n.doc->errors;
      ordered_json failing = ordered_json::array();
      for (const auto& f : n.findings)
        if (f.outcome == Outcome::fail) failing.push_back(f.check_id);
      nj["failing"] = std::move(failing);
    }
    nodes.push_back(std::move(nj));
  }
  j["nodes"] = std::move(nodes);
  ordered_json cf = ordered_json::array();
  for (const auto& f : run.cluster_findings) cf.push_back(finding_json(f));
  j["cluster_findings"] = std::move(cf);
  return j.dump(2) + "\n";
}

std::string render_node_table(const ClusterRun& run, bool color) {
  auto paint = [&](std::string_view s, std::string_view code) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : std::string(s);
  };
  std::size_t w = 4;
  for (const auto& n : run.nodes) w = std::max(w, n.output.node.size());
  std::string out = fmt::format("{:<{}}  {:<13} {:>6}  {:>4} {:>4} {:>4}  {:<16} {}\n", "NODE", w, "STATUS", "SECS",
                                "PASS", "WARN", "FAIL", "KERNEL LOG", "DETAIL");
  for (const auto& n : run.nodes) {
    std::string status(to_string(n.output.status));
    std::string padded = fmt::format("{:<13}", status);
    padded = n.output.status == NodeStatus::ok ? paint(padded, "32") : paint(padded, "31");
    if (!n.doc) {
      out += fmt::format("{:<{}}  {} {:>6.2f}  {:>4} {:>4} {:>4}  {:<16} {}\n", n.output.node, w, padded, n.output.seconds,
                         "-", "-", "-", "-", n.output.detail);
      continue;
    }
    auto t = tally(n.findings);
    std::string log = !n.doc->scan.ran ? "not scanned"
                      : n.doc->scan.actionable ? fmt::format("{} ({})", n.doc->scan.worst_action, n.doc->scan.actionable)
                                               : "clean";
    std::string detail;
    for (const auto& f : n.findings)
      if (f.outcome == Outcome::fail) detail += (detail.empty() ? "" : ", ") + f.check_id;
    if (detail.size() > 80) detail = detail.substr(0, 77) + "...";
    out += fmt::format("{:<{}}  {} {:>6.2f}  {:>4} {:>4} {:>4}  {:<16} {}\n", n.output.node, w, padded, n.output.seconds,
                       t.pass, t.warn, t.fail, log, detail);
  }
  std::vector<std::string> disagreements;
  for (const auto& f : run.cluster_findings)
    if (f.outcome == Outcome::fail && f.check_id.starts_with("cluster.consistency.")) disagreements.push_back(f.title + ": " + f.reason);
  if (!disagreements.empty()) {
    out += "\nNodes disagree:\n";
    for (const auto& d : disagreements) out += "  " + paint("FAIL", "31") + " " + d + "\n";
  }
  return out;
}

Result<std::string> write_cluster_run_dir(const ClusterRun& run, int exit_code, const std::string& dir) {
  auto written = report::write_run_dir(aggregate_report(run), exit_code, dir);
  if (!written) return written;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(*written) / "nodes", ec);
  if (ec) return fail("create {}/nodes: {}", *written, ec.message());
  auto write = [](const fs::path& p, std::string_view text) -> Result<void> {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!f) return fail("write {}: {}", p.string(), std::strerror(errno));
    return {};
  };
  if (auto r = write(fs::path(*written) / "cluster.json", cluster_to_json(run, exit_code)); !r) return Unexpected<Error>{r.error()};
  if (auto r = write(fs::path(*written) / "fanout.log", run.fanout_log); !r) return Unexpected<Error>{r.error()};
  for (const auto& n : run.nodes) {
    if (n.output.payload.empty()) continue;
    if (auto r = write(fs::path(*written) / "nodes" / (safe_file_name(n.output.node) + ".json"), n.output.payload + "\n"); !r)
      return Unexpected<Error>{r.error()};
  }
  return written;
}

}  // namespace cmax::cluster
