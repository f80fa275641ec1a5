#include "campaign/decide.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::campaign {
namespace {

// The node counts of "--node-counts 1,2,4" that the cluster has nodes for (at least "1").
void fit_node_counts(std::vector<std::string>& args, std::size_t nodes) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--node-counts") continue;
    std::string kept;
    std::string_view list = args[i + 1];
    while (!list.empty()) {
      auto comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      if (auto n = core::parse_uint(item); n && *n >= 1 && *n <= nodes) kept += (kept.empty() ? "" : ",") + std::string(item);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    args[i + 1] = kept.empty() ? "1" : kept;
  }
}

std::string node_list(const std::vector<std::string>& nodes) {
  if (nodes.empty()) return "this machine";
  if (nodes.size() <= 6) return fmt::format("{}", fmt::join(nodes, ","));
  return fmt::format("{},... ({} nodes)", fmt::join(nodes.begin(), nodes.begin() + 4, ","), nodes.size());
}

void skip(Decision& d, std::string reason, std::string todo) {
  d.run = false;
  d.reason = std::move(reason);
  d.todo = std::move(todo);
}

Decision decide_one(const StageSpec& s, const Facts& f) {
  Decision d;
  d.id = s.id;
  d.kind = s.kind;
  d.budget_s = s.budget_s;
  d.run = true;
  const bool cluster = f.harness == "slurm" || f.harness == "kubernetes";
  std::vector<std::string> extra = s.args;
  auto cmd = [&](std::initializer_list<std::string> words) {
    d.argv.assign(words);
    d.argv.insert(d.argv.begin(), f.cmax);
  };
  switch (s.kind) {
    case Kind::audit:
      cmd({"run", "--stage", "audit", "--out", f.out, "--overwrite"});
      d.argv.insert(d.argv.end(), f.audit_args.begin(), f.audit_args.end());
      d.targets = cluster ? node_list(f.nodes) : "this machine";
      d.reason = cluster ? "the audit on every node and the comparison between them" : "the audit of this machine";
      d.documents = {"results.json"};
      if (cluster) d.documents.push_back("cluster.json");
      break;
    case Kind::isolation:
      cmd({"audit", "isolation", "--out", f.out});
      // Nothing is probed that the user did not name: the metadata address only when asked.
      if (!f.isolation_metadata) d.argv.push_back("--no-metadata");
      for (const auto& scope : f.isolation_scopes) d.argv.insert(d.argv.end(), {"--scope", scope});
      d.targets = "this machine, as a tenant";
      d.reason = "what a tenant can reach and do from here (host checks; the Kubernetes API when configured)";
      d.documents = {"isolation.json"};
      break;
    case Kind::scan:
      cmd({"scan", "--out", f.out});
      d.targets = "this machine's kernel log";
      d.reason = "the kernel log's incidents (cluster runs also scan every node in the audit)";
      d.documents = {"scan.json"};
      break;
    case Kind::active:
      if (f.harness == "slurm") {
        if (f.idle.empty()) {
          skip(d, "no node is idle now: active checks run only on idle nodes, as a low-priority job",
               "run again when nodes are idle (or `cmax check --submit --wait --out DIR` later)");
          break;
        }
        cmd({"check", "--submit", "--wait", "--out", f.out, "--output-dir", f.out + "/active", "--wait-timeout-s",
             std::to_string(s.budget_s)});
        if (!f.partition.empty()) d.argv.insert(d.argv.end(), {"--partition", f.partition});
        d.targets = fmt::format("idle nodes now: {}", node_list(f.idle));
      } else if (f.harness == "kubernetes") {
        skip(d, "active checks are submitted through Slurm; on Kubernetes run them in a pod per node",
             "`cmax check --active --out DIR` inside a pod on each GPU node");
        break;
      } else {
        cmd({"check", "--active", "--out", f.out});
        d.targets = "this machine";
      }
      d.reason = "storage, memory, CPU and GPU checks under load";
      d.documents = {"check-active.json"};
      break;
    case Kind::nccl: {
      if (f.nccl_tests_dir.empty() && f.collbench.empty()) {
        skip(d, "neither nccl-tests (all_reduce_perf) nor cmax-collbench with mpirun is installed",
             "pass --nccl-tests DIR (nccl-tests' build directory), or install Open MPI so cmax-collbench runs "
             "(scripts/setup-deps)");
        break;
      }
      cmd({"nccl", "sweep", "--out", f.out});
      if (!f.nccl_tests_dir.empty())
        d.argv.insert(d.argv.end(), {"--tests-dir", f.nccl_tests_dir});
      else
        d.argv.insert(d.argv.end(), {"--collbench", f.collbench});
      fit_node_counts(extra, std::max<std::size_t>(1, f.nodes.size()));
      if (f.nccl_tests_dir.empty()) {
        // A CPU fabric says whether the pipeline and the launcher work, not what a GPU fabric does:
        // small sizes and 2 ranks a node unless the plan says otherwise.
        auto has = [&](std::initializer_list<std::string_view> names) {
          return std::any_of(extra.begin(), extra.end(), [&](const std::string& a) {
            for (auto n : names)
              if (a == n || a.rfind(std::string(n) + "=", 0) == 0) return true;
            return false;
          });
        };
        if (!has({"-e", "--max-bytes"})) d.argv.insert(d.argv.end(), {"--max-bytes", "64M"});
        if (!has({"--ranks-per-node"})) d.argv.insert(d.argv.end(), {"--ranks-per-node", "2"});
      }
      d.targets = !f.nccl_tests_dir.empty() ? "nccl-tests" : "cmax-collbench over MPI (CPU fabric: to 64 MiB, 2 ranks a node)";
      d.reason = "collectives over message sizes and node counts; the curve judged per run";
      d.documents = {"nccl.json"};
      break;
    }
    case Kind::drill:
      d.disruptive = true;
      if (!cluster) {
        skip(d, "a fault drill needs a scheduler to drain and replace the node (no Slurm or Kubernetes here)", "");
        break;
      }
      // On Slurm the spares are named too (a reservation or a partition the replacement joins); on
      // Kubernetes the drill watches the workload's pods move, so the node is the whole target.
      if (!f.allow_disruptive || f.drill_node.empty() ||
          (f.harness == "slurm" && f.reservation.empty() && f.partition.empty())) {
        std::vector<std::string> missing;
        if (!f.allow_disruptive) missing.push_back("--allow-disruptive");
        if (f.drill_node.empty()) missing.push_back("--drill-node NODE");
        if (f.harness == "slurm" && f.reservation.empty() && f.partition.empty())
          missing.push_back("--drill-reservation NAME (its spares replace the node)");
        skip(d, "disruptive: it injects a GPU fault and drains a node, so it runs only when asked with a named target",
             fmt::format("add {}", fmt::join(missing, " ")));
        break;
      }
      cmd({"drill", "run", "--nodes", f.drill_node, "--yes", "--out", f.out});
      d.cleanup_argv = {f.cmax, "drill", "cleanup", "--run", f.out, "--yes"};
      if (f.harness == "kubernetes") d.argv.insert(d.argv.end(), {"--scheduler", "kubernetes"});
      if (!f.reservation.empty()) d.argv.insert(d.argv.end(), {"--reservation", f.reservation});
      else if (!f.partition.empty()) d.argv.insert(d.argv.end(), {"--partition", f.partition});
      d.targets = f.reservation.empty() && f.partition.empty()
                      ? f.drill_node
                      : fmt::format("{} (spares: {})", f.drill_node, f.reservation.empty() ? f.partition : f.reservation);
      d.reason = "detection, drain and replacement of a node with an injected fault, then cleanup";
      d.documents = {"drill.json"};
      break;
    case Kind::endpoint:
      if (f.endpoint.empty()) {
        skip(d, "no inference endpoint named", "pass --endpoint URL (an OpenAI-compatible base URL ending in /v1)");
        break;
      }
      cmd({"endpoint", "bench"});
      if (!f.endpoint_trace.empty()) d.argv.push_back(f.endpoint_trace);
      d.argv.insert(d.argv.end(), {"--base-url", f.endpoint, "--out", f.out});
      d.targets = f.endpoint;
      d.reason = "latency, throughput, prefix-cache hit rate and the bill";
      d.documents = {"bench.json"};
      break;
    case Kind::sla:
      if (f.contract.empty() || f.events.empty()) {
        skip(d, "no SLA contract or no node events given",
             "pass --contract FILE (cmax.sla-contract/1) and --cmaxd-db FILE (cmaxd's event database; docs/sla.md)");
        break;
      }
      cmd({"sla", "--contract", f.contract, "--cmaxd-db", f.events, "--out", f.out});
      d.targets = f.contract;
      d.reason = "availability per month against the contract, drills excluded";
      d.documents = {"sla.json"};
      break;
    case Kind::score:
      d.in_process = true;
      d.targets = "this run directory";
      d.reason = "the ten ClusterMAX categories by the published rubric";
      d.documents = {"score.json"};
      break;
    case Kind::report:
      d.in_process = true;
      d.targets = "this run directory";
      d.reason = "report.html: every stage, the ones that did not run and why";
      d.documents = {"report.html"};
      break;
  }
  if (d.run && !d.in_process) d.argv.insert(d.argv.end(), extra.begin(), extra.end());
  return d;
}

}  // namespace

std::vector<Decision> decide(const Plan& plan, const Facts& facts) {
  std::vector<Decision> out;
  out.reserve(plan.stages.size());
  for (const auto& s : plan.stages) out.push_back(decide_one(s, facts));
  // The isolation stage owns the host's isolation checks: the audit does not run them twice.
  const bool isolation = std::any_of(out.begin(), out.end(), [](const Decision& d) { return d.run && d.kind == Kind::isolation; });
  for (auto& d : out)
    if (isolation && d.run && d.kind == Kind::audit && facts.harness == "standalone") d.argv.push_back("--no-isolation");
  if (!facts.budget_s) return out;
  // Fit into --budget: every stage first gets its min_s, the rest of the budget is shared in
  // proportion to what each would take beyond that; while even the minimums do not fit, the last
  // stage of the plan is skipped (earlier stages are the basics the later ones build on).
  const long long budget = *facts.budget_s;
  for (;;) {
    long long mins = 0, extra = 0;
    std::optional<std::size_t> last;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!out[i].run || out[i].in_process) continue;
      mins += plan.stages[i].min_s;
      extra += plan.stages[i].budget_s - plan.stages[i].min_s;
      last = i;
    }
    if (!last) break;
    if (mins > budget) {
      auto& d = out[*last];
      skip(d,
           fmt::format("does not fit --budget {} s: the stages before it need their minimum time (min_s) first",
                       budget),
           "raise --budget, or lower the stages' min_s in your plan (--plan FILE)");
      d.argv.clear();
      d.cleanup_argv.clear();
      continue;
    }
    const double share = extra > 0 ? std::min(1.0, static_cast<double>(budget - mins) / static_cast<double>(extra)) : 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!out[i].run || out[i].in_process) continue;
      out[i].budget_s =
          plan.stages[i].min_s + static_cast<int>((plan.stages[i].budget_s - plan.stages[i].min_s) * share);
    }
    break;
  }
  for (auto& d : out)
    if (d.run && d.kind == Kind::active)
      for (std::size_t i = 0; i + 1 < d.argv.size(); ++i)
        if (d.argv[i] == "--wait-timeout-s") d.argv[i + 1] = std::to_string(d.budget_s);
  return out;
}

int planned_seconds(const std::vector<Decision>& decisions) {
  int s = 0;
  for (const auto& d : decisions)
    if (d.run) s += d.budget_s;
  return s;
}

std::string render_decisions(const Plan& plan, const Facts& facts, const std::vector<Decision>& decisions) {
  std::string s = fmt::format("cmax run --dry-run: plan {} ({}), harness {} ({})\n", plan.name, plan.origin,
                              facts.harness, facts.harness_why);
  s += fmt::format("run directory: {}\n\n", facts.out);
  std::size_t n = 0;
  for (const auto& d : decisions) {
    ++n;
    if (d.run) {
      s += fmt::format("{:>2}. {:<10} RUN   {:>6}  {}{}\n      {}\n", n, d.id, fmt::format("{} s", d.budget_s),
                       d.targets, d.disruptive ? "  [disruptive]" : "", d.reason);
      if (!d.argv.empty()) {
        std::string words;
        for (std::size_t i = 1; i < d.argv.size(); ++i) words += " " + d.argv[i];
        s += fmt::format("      cmax{}\n", words);
      }
    } else {
      s += fmt::format("{:>2}. {:<10} SKIP          {}\n", n, d.id, d.reason);
      if (!d.todo.empty()) s += fmt::format("      to run it: {}\n", d.todo);
    }
  }
  const int total = planned_seconds(decisions);
  s += fmt::format("\nat most {} min {} s in all (each stage is stopped at its budget){}\n", total / 60, total % 60,
                   facts.budget_s ? fmt::format("; --budget {} s", *facts.budget_s) : std::string());
  return s;
}

}  // namespace cmax::campaign
