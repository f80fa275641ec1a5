#include "campaign/decide.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::campaign {
namespace {

// The node counts of "--node-counts 1,2,4" that `nodes` allows (at least "1"); returns those
// dropped, for the plan to say.
std::vector<std::string> fit_node_counts(std::vector<std::string>& args, std::size_t nodes) {
  std::vector<std::string> dropped;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--node-counts") continue;
    std::string kept;
    std::string_view list = args[i + 1];
    while (!list.empty()) {
      auto comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      if (auto n = core::parse_uint(item); n && *n >= 1 && *n <= nodes)
        kept += (kept.empty() ? "" : ",") + std::string(item);
      else
        dropped.emplace_back(item);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    args[i + 1] = kept.empty() ? "1" : kept;
  }
  return dropped;
}

// The value of `--name V` or `--name=V` (or a short alias) in args; "" when absent.
std::string arg_value(const std::vector<std::string>& args, std::initializer_list<std::string_view> names) {
  std::string v;
  for (std::size_t i = 0; i < args.size(); ++i)
    for (auto n : names) {
      if (args[i] == n && i + 1 < args.size()) v = args[i + 1];
      else if (args[i].size() > n.size() && args[i].compare(0, n.size(), n) == 0 && args[i][n.size()] == '=')
        v = args[i].substr(n.size() + 1);
    }
  return v;
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

// d.argv = {cmax, words...}.
void set_command(Decision& d, const Facts& f, std::initializer_list<std::string> words) {
  d.argv.assign(words);
  d.argv.insert(d.argv.begin(), f.cmax);
}

bool on_cluster(const Facts& f) { return f.harness == "slurm" || f.harness == "kubernetes"; }

void decide_audit(Decision& d, const Facts& f) {
  const bool cluster = on_cluster(f);
  set_command(d, f, {"run", "--stage", "audit", "--out", f.out, "--overwrite"});
  d.argv.insert(d.argv.end(), f.audit_args.begin(), f.audit_args.end());
  d.targets = cluster ? node_list(f.nodes) : "this machine";
  d.reason = cluster ? "the audit on every node and the comparison between them" : "the audit of this machine";
  d.documents = {"results.json"};
  if (cluster) d.documents.push_back("cluster.json");
}

void decide_isolation(Decision& d, const Facts& f) {
  set_command(d, f, {"audit", "isolation", "--out", f.out});
  // Nothing is probed that the user did not name: the metadata address only when asked.
  if (!f.isolation_metadata) d.argv.push_back("--no-metadata");
  for (const auto& scope : f.isolation_scopes) d.argv.insert(d.argv.end(), {"--scope", scope});
  d.targets = "this machine, as a tenant";
  d.reason = "what a tenant can reach and do from here (host checks; the Kubernetes API when configured)";
  d.documents = {"isolation.json"};
}

void decide_scan(Decision& d, const Facts& f) {
  set_command(d, f, {"scan", "--out", f.out});
  d.targets = "this machine's kernel log";
  d.reason = "the kernel log's incidents (cluster runs also scan every node in the audit)";
  d.documents = {"scan.json"};
}

// Slurm: `cmax check --submit` on the trial's nodes and the idle spares; false when none is idle.
bool active_on_slurm(Decision& d, const StageSpec& s, const Facts& f) {
  if (f.idle.empty() && f.trial_nodes.empty()) {
    skip(d, "no node is idle now, in your reservations or outside them: active checks run only on idle nodes",
         "run again when nodes are idle (or `cmax check --submit --wait --out DIR` later)");
    return false;
  }
  set_command(d, f, {"check", "--submit", "--wait", "--out", f.out, "--output-dir", f.out + "/active",
                     "--wait-timeout-s", std::to_string(s.budget_s)});
  if (!f.partition.empty()) d.argv.insert(d.argv.end(), {"--partition", f.partition});
  for (const auto& r : f.trial_reservations) d.argv.insert(d.argv.end(), {"--reservation", r});
  if (f.idle.empty()) d.argv.push_back("--no-free-nodes");
  std::vector<std::string> where;
  if (!f.trial_nodes.empty())
    where.push_back(fmt::format("the trial's nodes {} (reservation {})", node_list(f.trial_nodes),
                                fmt::join(f.trial_reservations, ", ")));
  if (!f.idle.empty()) where.push_back(fmt::format("idle spares {}", node_list(f.idle)));
  d.targets = fmt::format("{}", fmt::join(where, " and "));
  return true;
}

void decide_active(Decision& d, const StageSpec& s, const Facts& f, const std::vector<std::string>& extra) {
  if (f.harness == "slurm") {
    if (!active_on_slurm(d, s, f)) return;
  } else if (f.harness == "kubernetes") {
    skip(d, "active checks are submitted through Slurm; on Kubernetes run them in a pod per node",
         "`cmax check --active --path DIR --out DIR` inside a pod on each GPU node");
    return;
  } else {
    set_command(d, f, {"check", "--active", "--out", f.out});
    d.targets = "this machine";
  }
  // Storage is tested where a rater would: the run directory's filesystem, which every node
  // writes its results to (so it is the shared one), unless --storage-path names another.
  const std::string path = !f.storage_path.empty() ? f.storage_path : f.out + "/active";
  if (!arg_value(extra, {"--path"}).empty()) {
    d.reason = "storage, memory, CPU and GPU checks under load (storage: the plan's --path)";
  } else {
    d.argv.insert(d.argv.end(), {"--path", path});
    d.reason = fmt::format("storage ({}{}), memory, CPU and GPU checks under load", path,
                           f.storage_path.empty() ? ": the run directory's filesystem; --storage-path DIR for another"
                                                  : "");
  }
  d.documents = {"check-active.json"};
}

// Where the sweep's ranks run on Slurm: the trial's own nodes (inside its reservation), else the
// free idle nodes; false (the stage skipped) when there are neither.
bool nccl_slurm_hosts(Decision& d, const Facts& f, std::vector<std::string>& hosts, std::string& where) {
  if (!f.trial_nccl_nodes.empty()) {
    hosts = f.trial_nccl_nodes;
    where = fmt::format("the trial's nodes {} (reservation {})", node_list(hosts), f.trial_reservations.front());
  } else if (!f.idle.empty()) {
    hosts = f.idle;
    where = fmt::format("idle nodes {}", node_list(hosts));
  } else {
    skip(d, "no node is idle for the sweep, in a reservation of yours or outside every reservation",
         "run again when nodes are idle, or ask the provider for a reservation your user may use");
    return false;
  }
  return true;
}

// The launcher and its hosts: the plan's own launcher as given, srun on Slurm, mpirun standalone.
void nccl_launcher(Decision& d, const Facts& f, const std::vector<std::string>& extra,
                   const std::vector<std::string>& hosts, std::size_t most, std::string& where) {
  const std::string launcher = arg_value(extra, {"--launcher"});
  if (!launcher.empty() && launcher != "srun") {
    // The plan chose its launcher (mpirun with its own hosts, say): as given, placed by it.
    where = fmt::format("the hosts the plan's --launcher {} arguments name (this machine unless --host)", launcher);
  } else if (f.harness == "slurm") {
    if (launcher.empty()) d.argv.insert(d.argv.end(), {"--launcher", "srun"});
    if (!f.trial_nccl_nodes.empty()) d.argv.insert(d.argv.end(), {"--reservation", f.trial_reservations.front()});
    for (std::size_t i = 0; i < std::min(most, hosts.size()); ++i) d.argv.insert(d.argv.end(), {"--host", hosts[i]});
  } else {
    d.argv.insert(d.argv.end(), {"--launcher", "mpirun"});
    where = "this machine";
  }
}

// What the sweep runs on, for the plan to say; adds cmax-collbench's CPU-fabric defaults.
std::string nccl_fabric(Decision& d, const Facts& f, const std::vector<std::string>& extra) {
  if (!f.nccl_tests_dir.empty()) return "nccl-tests";
  // A CPU fabric says whether the pipeline and the launcher work, not what a GPU fabric does:
  // small sizes and 2 ranks a node unless the plan says otherwise.
  if (arg_value(extra, {"-e", "--max-bytes"}).empty()) d.argv.insert(d.argv.end(), {"--max-bytes", "64M"});
  if (arg_value(extra, {"--ranks-per-node"}).empty()) d.argv.insert(d.argv.end(), {"--ranks-per-node", "2"});
  std::vector<std::string> all = d.argv;
  all.insert(all.end(), extra.begin(), extra.end());
  return fmt::format("cmax-collbench over MPI (CPU fabric: to {}, {} ranks a node)",
                     arg_value(all, {"-e", "--max-bytes"}), arg_value(all, {"--ranks-per-node"}));
}

void decide_nccl(Decision& d, const Facts& f, std::vector<std::string>& extra) {
  if (f.nccl_tests_dir.empty() && f.collbench.empty()) {
    skip(d, "neither nccl-tests (all_reduce_perf) nor cmax-collbench with mpirun is installed",
         "pass --nccl-tests DIR (nccl-tests' build directory), or install Open MPI so cmax-collbench runs "
         "(scripts/setup-deps)");
    return;
  }
  if (f.harness == "kubernetes") {
    skip(d, "an NCCL sweep on Kubernetes runs in pods on the GPU nodes, which cmax run does not start",
         "run nccl-tests from an MPIJob (MPI Operator) across the GPU nodes, then `cmax nccl analyze LOGS --out DIR`");
    return;
  }
  // Where the ranks run: on Slurm through srun, standalone this machine, through mpirun.
  std::vector<std::string> hosts;
  std::string where;
  if (f.harness == "slurm" && !nccl_slurm_hosts(d, f, hosts, where)) return;
  set_command(d, f, {"nccl", "sweep", "--out", f.out});
  if (!f.nccl_tests_dir.empty())
    d.argv.insert(d.argv.end(), {"--tests-dir", f.nccl_tests_dir});
  else
    d.argv.insert(d.argv.end(), {"--collbench", f.collbench});
  const std::size_t reach = f.harness == "slurm" ? hosts.size() : 1;
  // The sweep's own default when the plan names none (cmax nccl sweep --node-counts), made
  // explicit so that it is fitted to the nodes like a plan's own.
  if (arg_value(extra, {"--node-counts"}).empty()) extra.insert(extra.end(), {"--node-counts", "1,2,4,8"});
  const auto dropped = fit_node_counts(extra, reach);
  const std::string counts = arg_value(extra, {"--node-counts"});
  std::size_t most = 1;
  for (auto c : core::split_any(counts, ","))
    if (auto n = core::parse_uint(c)) most = std::max<std::size_t>(most, *n);
  nccl_launcher(d, f, extra, hosts, most, where);
  const std::string fabric = nccl_fabric(d, f, extra);
  d.targets = fmt::format("{} on {}, node counts {}", fabric, where, counts);
  d.reason = "collectives over message sizes and node counts; the curve judged per run";
  if (!dropped.empty())
    d.reason += fmt::format("; node count{} {} dropped: {} {} reachable", dropped.size() == 1 ? "" : "s",
                            fmt::join(dropped, ", "), reach, reach == 1 ? "node is" : "nodes are");
  if (most <= 1)
    d.reason += f.harness == "slurm" ? "; one node only: this measures within a node, not the fabric between nodes"
                                     : "; this machine only: within one node, not the fabric between nodes";
  d.documents = {"nccl.json"};
}

void decide_drill(Decision& d, const Facts& f) {
  d.disruptive = true;
  if (!on_cluster(f)) {
    skip(d, "a fault drill needs a scheduler to drain and replace the node (no Slurm or Kubernetes here)", "");
    return;
  }
  // On Slurm the spares are named too (a reservation or a partition the replacement joins); on
  // Kubernetes the drill watches the workload's pods move, so the node is the whole target.
  const bool no_spares = f.harness == "slurm" && f.reservation.empty() && f.partition.empty();
  if (!f.allow_disruptive || f.drill_node.empty() || no_spares) {
    std::vector<std::string> missing;
    if (!f.allow_disruptive) missing.push_back("--allow-disruptive");
    if (f.drill_node.empty()) missing.push_back("--drill-node NODE");
    if (no_spares) missing.push_back("--drill-reservation NAME (its spares replace the node)");
    skip(d, "disruptive: it injects a GPU fault and drains a node, so it runs only when asked with a named target",
         fmt::format("add {}", fmt::join(missing, " ")));
    return;
  }
  set_command(d, f, {"drill", "run", "--nodes", f.drill_node, "--yes", "--out", f.out});
  d.cleanup_argv = {f.cmax, "drill", "cleanup", "--run", f.out, "--yes"};
  if (f.harness == "kubernetes") d.argv.insert(d.argv.end(), {"--scheduler", "kubernetes"});
  if (!f.reservation.empty()) d.argv.insert(d.argv.end(), {"--reservation", f.reservation});
  else if (!f.partition.empty()) d.argv.insert(d.argv.end(), {"--partition", f.partition});
  d.targets = f.reservation.empty() && f.partition.empty()
                  ? f.drill_node
                  : fmt::format("{} (spares: {})", f.drill_node, f.reservation.empty() ? f.partition : f.reservation);
  d.reason = "detection, drain and replacement of a node with an injected fault, then cleanup";
  d.documents = {"drill.json"};
}

void decide_endpoint(Decision& d, const Facts& f) {
  if (f.endpoint.empty()) {
    skip(d, "no inference endpoint named", "pass --endpoint URL (an OpenAI-compatible base URL ending in /v1)");
    return;
  }
  set_command(d, f, {"endpoint", "bench"});
  if (!f.endpoint_trace.empty()) d.argv.push_back(f.endpoint_trace);
  d.argv.insert(d.argv.end(), {"--base-url", f.endpoint, "--out", f.out});
  if (!f.prices.empty()) d.argv.insert(d.argv.end(), {"--prices", f.prices});
  d.targets = f.endpoint;
  d.reason = "latency, throughput, prefix-cache hit rate and the bill";
  d.documents = {"bench.json"};
}

void decide_sla(Decision& d, const Facts& f) {
  if (f.contract.empty() || f.events.empty()) {
    skip(d, "no SLA contract or no node events given",
         "pass --contract FILE (cmax.sla-contract/1) and --cmaxd-db FILE (cmaxd's event database; docs/sla.md)");
    return;
  }
  set_command(d, f, {"sla", "--contract", f.contract, "--cmaxd-db", f.events, "--out", f.out});
  d.targets = f.contract;
  d.reason = "availability per month against the contract, drills excluded";
  d.documents = {"sla.json"};
}

// score and report run inside cmax run on the run directory.
void decide_in_process(Decision& d, std::string reason, std::string document) {
  d.in_process = true;
  d.targets = "this run directory";
  d.reason = std::move(reason);
  d.documents = {std::move(document)};
}

Decision decide_one(const StageSpec& s, const Facts& f) {
  Decision d;
  d.id = s.id;
  d.kind = s.kind;
  d.budget_s = s.budget_s;
  d.run = true;
  std::vector<std::string> extra = s.args;
  switch (s.kind) {
    case Kind::audit: decide_audit(d, f); break;
    case Kind::isolation: decide_isolation(d, f); break;
    case Kind::scan: decide_scan(d, f); break;
    case Kind::active: decide_active(d, s, f, extra); break;
    case Kind::nccl: decide_nccl(d, f, extra); break;
    case Kind::drill: decide_drill(d, f); break;
    case Kind::endpoint: decide_endpoint(d, f); break;
    case Kind::sla: decide_sla(d, f); break;
    case Kind::score:
      decide_in_process(d, "the ten ClusterMAX categories by the published rubric", "score.json");
      break;
    case Kind::report:
      decide_in_process(d, "report.html: every stage, the ones that did not run and why", "report.html");
      break;
  }
  if (d.run && !d.in_process) d.argv.insert(d.argv.end(), extra.begin(), extra.end());
  return d;
}

}  // namespace

std::vector<Decision> decide(const Plan& plan, const Facts& facts) {
  std::vector<Decision> out;
  out.reserve(plan.stages.size());
  for (const auto& s : plan.stages) {
    out.push_back(decide_one(s, facts));
    out.back().plan_budget_s = s.budget_s;
    out.back().min_s = s.min_s;
  }
  // The isolation stage owns the host's isolation checks: the audit does not run them twice.
  const bool isolation = std::any_of(out.begin(), out.end(), [](const Decision& d) { return d.run && d.kind == Kind::isolation; });
  for (auto& d : out)
    if (isolation && d.run && d.kind == Kind::audit && facts.harness == "standalone") d.argv.push_back("--no-isolation");
  fit_budget(out, facts.budget_s);
  return out;
}

int minimum_budget_s(const std::vector<Decision>& decisions, const std::vector<bool>* finished) {
  int s = 0;
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    if ((d.run || d.over_budget) && !d.in_process && !(finished && (*finished)[i])) s += d.min_s;
  }
  return s;
}

void fit_budget(std::vector<Decision>& out, std::optional<int> budget_s, const std::vector<bool>* finished) {
  auto done = [&](std::size_t i) { return finished && (*finished)[i]; };
  // Every stage that can run takes part again (a --resume with a larger budget brings back the
  // stages an earlier, smaller one left out).
  for (std::size_t i = 0; i < out.size(); ++i)
    if (auto& d = out[i]; d.over_budget && !done(i)) {
      d.run = true;
      d.over_budget = false;
      d.reason = d.run_reason;
      d.todo.clear();
    }
  if (!budget_s) {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].run && !out[i].in_process && !done(i)) out[i].budget_s = out[i].plan_budget_s;
  } else {
    const long long budget = *budget_s;
    const int needed = minimum_budget_s(out, finished);
    for (;;) {
      long long mins = 0, extra = 0;
      std::optional<std::size_t> last;
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (!out[i].run || out[i].in_process || done(i)) continue;
        mins += out[i].min_s;
        extra += out[i].plan_budget_s - out[i].min_s;
        last = i;
      }
      if (!last) break;
      if (mins > budget) {
        // The last stage of the plan goes first: earlier stages are the basics later ones build on.
        auto& d = out[*last];
        d.run = false;
        d.over_budget = true;
        d.run_reason = d.reason;
        d.reason = fmt::format("does not fit --budget {} s: the stages that can run here need {} s at least (their "
                               "min_s), this one {} s of it",
                               budget, mins, d.min_s);
        d.todo = fmt::format("--budget {} s or more runs every stage (about {} min)", needed, (needed + 59) / 60);
        continue;
      }
      const double share =
          extra > 0 ? std::min(1.0, static_cast<double>(budget - mins) / static_cast<double>(extra)) : 0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        auto& d = out[i];
        if (!d.run || d.in_process || done(i)) continue;
        d.budget_s = d.min_s + static_cast<int>((d.plan_budget_s - d.min_s) * share);
      }
      break;
    }
  }
  for (auto& d : out)
    if (d.run && d.kind == Kind::active)
      for (std::size_t i = 0; i + 1 < d.argv.size(); ++i)
        if (d.argv[i] == "--wait-timeout-s") d.argv[i + 1] = std::to_string(d.budget_s);
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
