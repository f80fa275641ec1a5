// cmax run: the main job. On one machine (harness standalone) it audits this node; with Slurm or
// Kubernetes it runs `cmax collect` on every node through the scheduler (srun, one task per node;
// pods), merges the answers, judges every node against this run's floors, compares the nodes with
// each other, and writes one run directory. Prints a per-node table and the scorecard grouped by
// the ten ClusterMAX categories.

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/campaign_cmd.h"
#include "apps/cmax/command.h"
#include "apps/cmax/report_page.h"
#include "apps/cmax/run_render.h"
#include "campaign/harness.h"
#include "cluster/kube_fanout.h"
#include "cluster/kube_view.h"
#include "cluster/merge.h"
#include "cluster/slurm_fanout.h"
#include "core/clock.h"
#include "core/process.h"
#include "isolation/isolation.h"
#include "report/audit_json.h"
#include "sched/slurm.h"
#include "score/evidence.h"
#include "score/render.h"
#include "score/rubric.h"
#include "score/scorer.h"
#include "report/run_dir.h"
#include "report/terminal.h"

namespace cmax::app {
namespace {

struct RunState {
  AuditFlags flags;
  std::string out_dir;
  std::string partition, nodelist, slurm_conf, cmax_path, reservation;
  std::vector<std::string> collect_args;
  int node_timeout_s = 120;
  int queue_wait_s = 5;
  bool dry_run = false;
  bool overwrite = false;
  // Kubernetes
  std::string kube_api, kube_token = "/var/run/secrets/kubernetes.io/serviceaccount/token",
                        kube_ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string ns = "default", image, node_selector = std::string(cluster::kDefaultGpuSelector), run_id;
  std::vector<std::string> kube_nodes;
  int max_in_flight = 64;
  bool render_manifest = false;
  // Tenant isolation (standalone)
  bool no_isolation = false;
  std::vector<std::string> isolation_scopes;
  bool isolation_metadata = false;
  // The campaign (cmax run without --stage)
  std::string stage;  ///< "audit": the audit and node consistency alone (what a campaign's audit stage runs)
  CampaignFlags campaign;
};

// Which fan-out: the flag when given; else what campaign::pick_harness finds on this host.
// Kubernetes only when asked for.
Result<std::string> choose_harness(const RunState& s, std::string* why) {
  if (s.flags.harness != "auto") {
    *why = "--harness " + s.flags.harness;
    return s.flags.harness;
  }
  auto signs = campaign::read_harness_signs(s.slurm_conf);
  if (!signs) return Unexpected<Error>{signs.error()};
  auto pick = campaign::pick_harness(*signs);
  *why = std::move(pick.why);
  return std::move(pick.harness);
}

// The tenant-isolation stage of a standalone run: the host-side checks (local reads only), and
// probes only where the user named scopes (--isolation-scope) or the metadata address
// (--isolation-metadata). Kubernetes permissions are left to `cmax audit isolation`. Findings the
// run did not ask about (services not probed, Kubernetes, the canary) are left out; the host
// checks are kept whatever their result, since their reasons say what this host lacks.
Result<void> add_isolation(const RunState& s, const audit::AuditOptions& options, audit::AuditReport& report) {
  isolation::IsolationOptions o;
  o.scopes = s.isolation_scopes;
  o.metadata = s.isolation_metadata;
  o.kube_off_reason = "not asked by cmax run (cmax audit isolation asks the Kubernetes API)";
  const core::HostRoot root(options.host_root);
  o.host = &root;
  std::vector<std::string> notes;
  auto iso = isolation::run_isolation(o, &notes);
  if (!iso) return Unexpected<Error>{iso.error()};
  for (const auto& n : notes) fmt::print(stderr, "cmax: isolation: {}\n", n);
  for (auto& f : iso->findings)
    if (f.check_id.starts_with("isolation.host.") || f.outcome != audit::Outcome::not_applicable)
      report.findings.push_back(std::move(f));
  return {};
}

// The scorecard of the run directory by the published rubric: the same card cmax score prints.
std::string rubric_card(const std::string& dir) {
  auto rubric = score::load_rubric(std::nullopt);
  if (!rubric) return fmt::format("\nno scorecard: {}\n", rubric.error().message);
  auto ev = score::read_evidence(dir);
  if (!ev) return fmt::format("\nno scorecard: {}\n", ev.error().message);
  return "\n" + score::render_card(score::score_run(*rubric, *ev), false);
}

int run_standalone(const RunState& s, const std::string& dir, const std::string& why) {
  auto options = to_audit_options(s.flags);
  if (!options) return environment_error(options.error().message);
  // The auto harness says why it stayed on this machine: a user who meant a cluster sees it.
  if (s.flags.harness == "auto") fmt::print(stderr, "cmax run: auditing this machine only ({}; --harness slurm|kubernetes to choose)\n", why);
  const int stages = s.no_isolation ? 1 : 2;
  run_progress(fmt::format("cmax run [1/{}] audit: collecting facts and judging checks...", stages));
  auto report = audit::run_audit(*options);
  run_progress("");
  if (!report) return environment_error(report.error().message);
  if (!s.no_isolation) {
    run_progress("cmax run [2/2] isolation: host-side checks...");
    auto added = add_isolation(s, *options, *report);
    run_progress("");
    if (!added) return environment_error(added.error().message);
  }
  int code = audit::exit_code_for(report->findings);
  auto written = report::write_run_dir(*report, code, dir);
  if (!written) return environment_error(written.error().message);

  const std::string report_line = write_run_report(*written);
  if (s.flags.json) {
    fmt::print("{}", report::audit_to_json(*report, code));
    return code;
  }
  auto topt = to_terminal_options(s.flags);
  fmt::print("{}", report::render_audit_terminal(*report, code, topt));
  fmt::print("{}", rubric_card(*written));
  fmt::print("\nRun directory: {}\n  results.json  cmax.db  security.sarif  report.html   (re-render: cmax audit review {})\n",
             *written, *written);
  fmt::print("{}", report_line);
  return code;
}

std::string self_path() { return core::self_executable().value_or("cmax"); }

// Merges the nodes' answers, writes the run directory and prints the table and scorecard.
int finish_cluster(const RunState& s, const std::string& dir, const std::string& why, const std::string& harness,
                   std::vector<cluster::NodeOutput> nodes, const audit::Floors& floors, const std::string& started,
                   std::chrono::steady_clock::time_point t0, std::string fanout_log,
                   std::vector<audit::Finding> cluster_view = {}) {
  core::SystemClock clock;
  auto run = cluster::merge_nodes(std::move(nodes), floors, clock);
  for (auto& f : cluster_view) run.cluster_findings.push_back(std::move(f));
  run.harness = harness;
  run.started_at = started;
  run.finished_at = core::format_utc(clock.now());
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.fanout_log = std::move(fanout_log);
  int code = cluster::cluster_exit_code(run);
  // A run that judged no node has no verdict to give: an error exit (results are still written),
  // never a green one.
  const std::string none_evaluated = cluster::why_no_node_evaluated(run);
  if (!none_evaluated.empty()) code = 3;
  auto written = cluster::write_cluster_run_dir(run, code, dir);
  if (!written) return environment_error(written.error().message);
  if (!none_evaluated.empty()) fmt::print(stderr, "cmax run: {}\n", none_evaluated);

  const std::string report_line = write_run_report(*written);
  if (s.flags.json) {
    fmt::print("{}", cluster::cluster_to_json(run, code));
    return code;
  }
  auto topt = to_terminal_options(s.flags);
  fmt::print("cmax run: {}, {} node(s) in {:.2f} s ({})\n\n", harness, run.nodes.size(), run.seconds, why);
  fmt::print("{}", cluster::render_node_table(run, topt.color));
  auto aggregate = cluster::aggregate_report(run);
  if (s.flags.verbosity > 0) fmt::print("\n{}", report::render_audit_terminal(aggregate, code, topt));
  fmt::print("{}", rubric_card(*written));
  fmt::print("\nRun directory: {}\n  cluster.json  results.json  cmax.db  security.sarif  report.html  nodes/  fanout.log\n", *written);
  fmt::print("{}", report_line);
  return code;
}

int run_slurm(const RunState& s, const std::string& dir, const std::string& why) {
  auto options = to_audit_options(s.flags);
  if (!options) return environment_error(options.error().message);
  auto floors = audit::load_floors(*options);
  if (!floors) return environment_error(floors.error().message);
  core::SystemClock clock;

  cluster::SlurmFanoutOptions fo;
  fo.collect_argv = {s.cmax_path.empty() ? self_path() : s.cmax_path, "collect", "--frame",
                     fmt::format("--timeout-ms={}", s.flags.timeout_ms)};
  if (!s.flags.min_versions.empty()) fo.collect_argv.push_back("--min-versions=" + s.flags.min_versions);
  fo.collect_argv.insert(fo.collect_argv.end(), s.collect_args.begin(), s.collect_args.end());
  fo.partition = s.partition;
  fo.nodelist = s.nodelist;
  fo.slurm_conf = s.slurm_conf;
  fo.reservation = s.reservation;
  fo.queue_wait = std::chrono::seconds(s.queue_wait_s);
  const char* job = std::getenv("SLURM_JOB_ID");
  fo.overlap = job && *job;
  if (fo.overlap && fo.nodelist.empty())
    if (const char* nl = std::getenv("SLURM_JOB_NODELIST"); nl && *nl) fo.nodelist = nl;
  fo.node_timeout = std::chrono::seconds(s.node_timeout_s);
  fo.dry_run = s.dry_run;

  const auto t0 = std::chrono::steady_clock::now();
  std::string started = core::format_utc(clock.now());
  NodeProgress on_node;
  run_progress(fmt::format("cmax run: Slurm ({}): asking every node through srun...", why));
  auto fanned = cluster::slurm_fanout(fo, on_node.callback());
  run_progress("");
  if (!fanned) return environment_error(fanned.error().message);

  if (s.dry_run) {
    print_slurm_dry_run(fanned->plan, why);
    return 0;
  }

  return finish_cluster(s, dir, why, "slurm", std::move(fanned->nodes), *floors, started, t0, std::move(fanned->log));
}

std::string default_run_id(const core::Clock& clock) {
  std::string stamp = core::format_utc_compact(clock.now());  // 20261202T122122Z
  std::string id;
  for (char c : stamp) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

int run_kubernetes(const RunState& s, const std::string& dir, const std::string& why) {
  auto options = to_audit_options(s.flags);
  if (!options) return environment_error(options.error().message);
  auto floors = audit::load_floors(*options);
  if (!floors) return environment_error(floors.error().message);
  core::SystemClock clock;

  cluster::KubeFanoutOptions ko;
  ko.pod.run_id = s.run_id.empty() ? default_run_id(clock) : s.run_id;
  ko.pod.ns = s.ns;
  ko.pod.image = s.image;
  ko.pod.collect_args = {"--kmsg", fmt::format("--timeout-ms={}", s.flags.timeout_ms)};
  ko.pod.collect_args.insert(ko.pod.collect_args.end(), s.collect_args.begin(), s.collect_args.end());
  ko.pod.node_timeout = std::chrono::seconds(s.node_timeout_s);
  if (s.render_manifest) {
    if (auto r = cluster::check_run_id(ko.pod.run_id); !r) return environment_error(r.error().message);
    auto ds = cluster::render_collect_daemonset(ko.pod, s.node_selector);
    if (!ds) return environment_error(ds.error().message);
    fmt::print("{}\n", *ds);
    return 0;
  }
  if (s.image.empty())
    return environment_error("--harness kubernetes needs --image: an image that holds cmax on its PATH");
  if (!s.kube_api.empty()) {
    ko.api.api_url = s.kube_api;
  } else {
    auto in = sched::KubernetesOptions::in_cluster();
    if (!in)
      return environment_error(fmt::format("{}; outside a pod pass --kube-api URL (and --kube-token-file, --kube-ca-file)",
                                           in.error().message));
    ko.api = *in;
  }
  ko.api.token_path = s.kube_token;
  ko.api.ca_path = s.kube_ca;
  ko.node_selector = s.node_selector;
  ko.nodes = s.kube_nodes;
  ko.node_timeout = std::chrono::seconds(s.node_timeout_s);
  ko.max_in_flight = s.max_in_flight;
  ko.dry_run = s.dry_run;
  ko.on_dry_run = [](const cluster::KubeRequest& r) {
    fmt::print("would send: {} {}{}\n", r.method, r.path, r.body.empty() ? "" : "\n  " + r.body);
  };

  const auto t0 = std::chrono::steady_clock::now();
  std::string started = core::format_utc(clock.now());
  NodeProgress on_node;
  run_progress(fmt::format("cmax run: Kubernetes ({}): one collect pod per node...", why));
  auto fanned = cluster::kube_fanout(ko, on_node.callback());
  run_progress("");
  if (!fanned) return environment_error(fanned.error().message);
  if (s.dry_run) return 0;
  // What the API says about the cluster as a whole: topology, dcgm-exporter, who holds nodes/proxy.
  std::vector<std::string> selected;
  for (const auto& n : *fanned) selected.push_back(n.node);
  auto view = cluster::run_kube_view(sched::KubeClient(ko.api), selected, *floors, clock);
  return finish_cluster(s, dir, why, "kubernetes", std::move(*fanned), *floors, started, t0,
                        fmt::format("kubernetes run {} in namespace {}, image {}\n", ko.pod.run_id, ko.pod.ns, ko.pod.image),
                        std::move(view));
}

int run_main(const RunState& s) {
  core::SystemClock clock;
  std::string dir = s.out_dir.empty() ? report::default_run_dir(core::format_utc_compact(clock.now())) : s.out_dir;
  std::string why;
  auto harness = choose_harness(s, &why);
  if (!harness) return environment_error(harness.error().message);
  if (!s.dry_run && !s.render_manifest)
    if (auto ready = report::prepare_run_dir(dir, s.overwrite); !ready) return environment_error(ready.error().message);
  if (*harness == "slurm") return run_slurm(s, dir, why);
  if (*harness == "kubernetes") return run_kubernetes(s, dir, why);
  return run_standalone(s, dir, why);
}

// cmax run: the campaign, or with --stage audit the audit stage alone.
int run_entry(RunState& s) {
  if (s.stage == "audit") return run_main(s);
  if (!s.stage.empty())
    return environment_error(fmt::format("--stage {}: only 'audit' runs alone through cmax run; the other stages are "
                                         "their own commands (docs/run.md lists them)",
                                         s.stage));
  std::string why;
  auto harness = choose_harness(s, &why);
  if (!harness) return environment_error(harness.error().message);
  CampaignFlags f = s.campaign;
  f.out = s.out_dir;
  f.overwrite = s.overwrite;
  f.dry_run = s.dry_run;
  f.json = s.flags.json;
  f.slurm_conf = s.slurm_conf;
  f.partition = s.partition;
  f.forwarded = run_arguments();
  if (s.flags.harness == "auto") f.forwarded.insert(f.forwarded.begin(), {"--harness", *harness});
  return run_campaign(f, {*harness, why});
}

}  // namespace

Runner setup_run(CLI::App& sub) {
  auto s = std::make_shared<RunState>();
  sub.description(
      "The main job: a whole rating of this cluster, stage by stage, by a plan (--plan quick|standard|full or\n"
      "FILE; docs/run.md): the audit and node consistency, host isolation, the kernel log, active checks on idle\n"
      "nodes, NCCL sweeps over node counts, a fault drill (disruptive: only with --allow-disruptive), an endpoint\n"
      "benchmark (--endpoint), SLA accounting (--contract), then the score and report.html. Every stage writes its\n"
      "document into the one run directory; a stage that cannot run here is skipped with the reason and what to\n"
      "do, a stage that fails is reported and the run goes on. Each stage is stopped at its budget; --budget fits\n"
      "the whole plan into a total. --dry-run prints the plan for this cluster: what runs, on which nodes, what is\n"
      "skipped and why, and the time it may take. Ctrl-C stops the running stage, keeps what it measured, and\n"
      "--resume DIR continues without repeating finished stages. Progress goes to a terminal only.\n"
      "--stage audit runs the audit stage alone: standalone, this machine; Slurm (inside an allocation, where\n"
      "slurm.conf and sinfo are found, or --harness slurm): `cmax collect` on every node through one srun, nodes\n"
      "compared with each other, a node that does not answer within --node-timeout-s reported while the rest\n"
      "finish; nodes of an active reservation asked inside it; a step Slurm queues reported with its reason.\n"
      "Exit codes: 0 every stage that ran is clean; 1 a stage reported findings; 2 a stage failed or ran past its\n"
      "budget (the others still ran); 3 usage or environment error, or no stage ran; 130 interrupted (resume with\n"
      "--resume DIR). With --stage audit: 0 no fail; 1 a check failed or a node did not answer; 2 a security check\n"
      "failed; 3 usage or environment error, or no node evaluated.");
  auto camp = "The rating campaign";
  sub.add_option("--plan", s->campaign.plan, "quick, standard (default), full, or a cmax.plan/1 file (docs/plan.md)")
      ->group(camp);
  sub.add_option("--budget", s->campaign.budget,
                 "Fit the plan into this much time (90m, 2h, 3600): each stage gets its min_s, the rest is shared in\n"
                 "proportion; when the minimums do not fit, the last stages are skipped. With --json, cmax run prints\n"
                 "campaign.json (docs/schemas/campaign.md) at the end; with --stage audit, the audit's cmax.audit/1")
      ->group(camp);
  sub.add_flag("--allow-disruptive", s->campaign.allow_disruptive,
               "Run the disruptive stages (the fault drill) on their named targets: --drill-node and\n"
               "--drill-reservation, else a REPLACE_DOWN reservation of this user's found in Slurm")
      ->group(camp);
  sub.add_option("--drill-node", s->campaign.drill_node, "The node the fault drill injects into")->group(camp);
  sub.add_option("--drill-reservation", s->campaign.drill_reservation,
                 "The reservation whose spares replace the drilled node (Flags=REPLACE_DOWN)")
      ->group(camp);
  sub.add_option("--endpoint", s->campaign.endpoint, "OpenAI-compatible base URL (.../v1) for the endpoint stage")->group(camp);
  sub.add_option("--trace", s->campaign.trace, "A Mooncake JSONL trace for the endpoint stage (default: multi-turn sessions)")
      ->group(camp);
  sub.add_option("--prices", s->campaign.prices,
                 "A price sheet (docs/endpoint-bench.md) for the endpoint stage: the bill at the measured hit rate")
      ->group(camp);
  sub.add_option("--storage-path", s->campaign.storage_path,
                 "The directory the active stage's storage checks write to, on the filesystem a rater means (a shared\n"
                 "filesystem's scratch; default: the run directory's, which every node writes its results to)")
      ->group(camp);
  sub.add_option("--contract", s->campaign.contract, "An SLA contract (cmax.sla-contract/1) for the SLA stage")->group(camp);
  sub.add_option("--cmaxd-db", s->campaign.cmaxd_db, "cmaxd's event database: the SLA stage's node events")->group(camp);
  sub.add_option("--nccl-tests", s->campaign.nccl_tests,
                 "nccl-tests' build directory for the NCCL stage (default: all_reduce_perf on PATH, else cmax-collbench)")
      ->group(camp);
  sub.add_option("--stage-arg", s->campaign.stage_args,
                 "One more argument for one stage's command, ID=ARG (repeatable): nccl=--max-bytes=1G")
      ->group(camp);
  sub.add_option("--resume", s->campaign.resume, "Continue the interrupted run in DIR; finished stages are not repeated")
      ->group(camp);
  sub.add_option("--stage", s->stage, "Run one stage alone: 'audit' (the audit and node consistency)")->group(camp);
  sub.add_option("--out", s->out_dir, "Run directory (default ~/.cmax/runs/<UTC timestamp>/)");
  sub.add_option("--partition,-p", s->partition, "Slurm: only nodes of this partition (srun -p)");
  sub.add_option("--nodelist,-w", s->nodelist, "Slurm: only these nodes (a hostlist: gpu[01-16])");
  sub.add_option("--node-timeout-s", s->node_timeout_s, "Give up on a node that has not answered after this long (default 120)")
      ->check(CLI::Range(1, 86400));
  sub.add_option("--slurm-conf", s->slurm_conf, "SLURM_CONF for sinfo and srun (default: inherited)");
  sub.add_option("--reservation", s->reservation,
                 "Slurm: ask only this reservation's nodes, inside it (default: every node; those held by an active "
                 "reservation that admits this user are asked inside it)");
  sub.add_option("--queue-wait-s", s->queue_wait_s,
                 "Slurm: a step not started within this long is reported as queued, with Slurm's reason (default 5)")
      ->check(CLI::Range(1, 3600));
  sub.add_flag("--overwrite", s->overwrite,
               "Replace the run an --out directory already holds (without it such a directory is refused)");
  sub.add_option("--cmax-path", s->cmax_path, "Path of cmax on the nodes (default: this binary's path)");
  sub.add_option("--collect-arg", s->collect_args, "Extra argument for `cmax collect` on each node (repeatable)");
  sub.add_flag("--dry-run", s->dry_run,
               "Print the plan for this cluster (with --stage audit: the nodes to ask and the srun command, or the\n"
               "Kubernetes requests); change nothing");
  auto k8s = "Kubernetes";
  sub.add_option("--image", s->image, "Kubernetes: the image of the collect pods (holds cmax on its PATH)")->group(k8s);
  sub.add_option("--namespace", s->ns, "Kubernetes: namespace of the collect pods (default default)")->group(k8s);
  sub.add_option("--node-selector", s->node_selector,
                 "Kubernetes: label selector of the nodes to collect on (default nvidia.com/gpu.present=true)")
      ->group(k8s);
  sub.add_option("--kube-node", s->kube_nodes, "Kubernetes: these nodes instead of a selector (repeatable)")->group(k8s);
  sub.add_option("--kube-api", s->kube_api, "Kubernetes: API server URL (default: in-cluster from the pod's environment)")
      ->group(k8s);
  sub.add_option("--kube-token-file", s->kube_token, "Kubernetes: bearer token file")->group(k8s);
  sub.add_option("--kube-ca-file", s->kube_ca, "Kubernetes: CA bundle of the API server")->group(k8s);
  sub.add_option("--max-in-flight", s->max_in_flight, "Kubernetes: collect pods alive at once (default 64)")
      ->check(CLI::Range(1, 1024))
      ->group(k8s);
  sub.add_option("--run-id", s->run_id, "Kubernetes: label value cmax.io/run of this run's objects (default: the UTC stamp)")
      ->group(k8s);
  sub.add_flag("--render-manifest", s->render_manifest,
               "Kubernetes: print a DaemonSet that runs the collect once on every selected node, for kubectl apply; "
               "read the documents back with kubectl logs -l cmax.io/run=ID -c collect")
      ->group(k8s);
  auto iso = "Tenant isolation (standalone runs)";
  sub.add_flag("--no-isolation", s->no_isolation,
               "Skip the host-side isolation checks (GPU device nodes beyond the allocation, IB partitions, "
               "namespaces, munge; docs/audit-isolation.md)")
      ->group(iso);
  sub.add_option("--isolation-scope", s->isolation_scopes,
                 "Also probe these addresses or CIDR blocks for services a tenant should not reach (repeatable; "
                 "as cmax audit isolation --scope)")
      ->delimiter(',')
      ->group(iso);
  sub.add_flag("--isolation-metadata", s->isolation_metadata,
               "Also probe the cloud metadata address 169.254.169.254 (one GET of the listing)")
      ->group(iso);
  add_audit_flags(sub, s->flags);
  return [s] { return run_entry(*s); };
}

}  // namespace cmax::app
