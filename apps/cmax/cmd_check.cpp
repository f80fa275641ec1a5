// cmax check: a quick health verdict on this node from the kernel log and the probes (NVML,
// InfiniBand ports, mounts), through the same signal engine as cmaxd. With --slurm-healthcheck it
// is Slurm's HealthCheckProgram (docs/cmaxd.md): drains the node on a problem, resumes its own
// drain when healthy again, and never calls scontrol unless slurmd says the node has registered.
// With --active it runs the active checks instead (storage, memory, CPU, GPU; docs/checks-active.md),
// each in a bounded child (the hidden --run-one mode of this same command); with --submit it puts
// them into a low-priority Slurm job on the idle nodes.
// Exit codes: 0 healthy; 1 unhealthy; 3 usage or cannot check.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/healthcheck.h"
#include "apps/cmax/command.h"
#include "audit/audit.h"
#include "health/active.h"
#include "health/active_report.h"
#include "health/runner.h"
#include "health/submit.h"
#include "health/submit_flow.h"
#include "report/run_dir.h"
#include "probes/probe_set.h"
#include "sched/policy.h"
#include "sched/slurm.h"
#include "signals/catalog.h"

namespace cmax::app {
namespace {

constexpr int kExitHealthy = 0, kExitUnhealthy = 1;

struct CheckFlags {
  bool slurm = false, json = false, dry_run = false, no_nvml = false, no_ib = false;
  std::string node, slurm_conf, act_on = "any", drain_at = "drain", config, kmsg = "/dev/kmsg";
  std::string nvml_lib = "libnvidia-ml.so.1", ib_root = "/sys/class/infiniband";
  std::vector<std::string> ib_expect, mounts;
  int mount_timeout_ms = 3000, budget_ms = 20000, scontrol_timeout_ms = 5000;
  // --active and --submit
  bool active = false, submit = false, force = false;
  std::string checks, path, thresholds, host_root = "/", output_dir, partition, qos;
  std::vector<std::string> gpu_tool_outputs;  ///< --gpu-tool-output: saved NVIDIA tool outputs to judge
  std::vector<std::string> reservations;  ///< --submit: also a job inside each, on its idle nodes
  bool no_free_nodes = false;             ///< --submit: only inside --reservation
  double check_timeout_s = 60;
  std::size_t metadata_files = 2000, max_nodes = 0;
  std::uint64_t seq_mib = 256;
  int fsync_count = 200, job_time_min = 0;
  std::string out;            ///< run directory: check-active.json there
  bool wait = false;          ///< --submit: wait for the job, merge the nodes' results into --out
  int wait_timeout_s = 3600;  ///< --wait: then the job is cancelled
  // The runner's child (hidden): one check, its result as JSON on stdout.
  std::string run_one, child_options, child_thresholds;
};

std::string default_node() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

int fail_env(const std::string& msg) {
  fmt::print(stderr, "cmax check: {}\n", msg);
  return audit::kExitUsage;
}

// Drains or resumes per decide_health_action; returns what happened, for the output.
std::string act_on_slurm(const CheckFlags& f, const agent::HealthReport& rep, agent::HealthAction action) {
  using V = agent::HealthAction::Verb;
  if (action.verb == V::none) return action.why;
  sched::SlurmScheduler slurm({f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), f.dry_run});
  if (action.verb == V::drain) {
    std::string reason = fmt::format("{}{}", agent::kHealthReasonTag, rep.problems.front().label());
    if (rep.problems.size() > 1) reason += fmt::format(" and {} more", rep.problems.size() - 1);
    if (!rep.problems.front().drill.empty()) reason += agent::drill_reason_suffix(rep.problems.front().drill);
    auto r = slurm.drain(f.node, reason);
    if (!r) return fmt::format("{}; drain failed: {}", action.why, r.error().message);
    if (!r->changed) return fmt::format("{}; drain not needed: {}", action.why, r->note);
    return fmt::format("{}; {}drained: {}", action.why, r->dry_run ? "dry run, would have " : "", reason);
  }
  // Resume only a drain of the health check's own: cmaxd's drains are cmaxd's to undo.
  auto state = slurm.node_state(f.node);
  if (!state) return fmt::format("{}; not resumed: {}", action.why, state.error().message);
  const std::string ours = fmt::format("{}{}", sched::kReasonPrefix, agent::kHealthReasonTag);
  if (state->reason.rfind(ours, 0) != 0)
    return fmt::format("{}; not resumed: the reason \"{}\" is not the health check's", action.why, state->reason);
  auto r = slurm.resume(f.node, sched::Force::kNo);
  if (!r) return fmt::format("{}; resume failed: {}", action.why, r.error().message);
  return fmt::format("{}; {}resumed", action.why, r->dry_run ? "dry run, would have " : "");
}

// The groups to run: --checks, else every group, storage only with --path.
Result<std::vector<std::string>> active_groups(const CheckFlags& f) {
  std::vector<std::string> groups;
  if (f.checks.empty()) {
    for (auto g : health::kActiveGroups)
      if (g != "storage" || !f.path.empty()) groups.emplace_back(g);
    return groups;
  }
  auto parsed = health::parse_groups(f.checks);
  if (!parsed) return parsed;
  if (std::find(parsed->begin(), parsed->end(), "storage") != parsed->end() && f.path.empty())
    return fail("--checks storage needs --path DIR: a directory on the filesystem to test");
  if (!f.gpu_tool_outputs.empty() && std::find(parsed->begin(), parsed->end(), "gpu") == parsed->end())
    return fail("--gpu-tool-output is judged with the GPU checks: add gpu to --checks");
  return parsed;
}

Result<health::Thresholds> active_thresholds(const CheckFlags& f) {
  return f.thresholds.empty() ? health::Thresholds::builtin() : health::Thresholds::load_file(f.thresholds);
}

Result<health::ActiveOptions> active_options(const CheckFlags& f) {
  if (!(f.check_timeout_s > 0)) return fail("--check-timeout-s must be positive");
  if (f.metadata_files == 0) return fail("--metadata-files must be at least 1");
  if (f.seq_mib == 0) return fail("--seq-mib must be at least 1");
  if (f.fsync_count <= 0) return fail("--fsync-count must be at least 1");
  health::ActiveOptions o;
  o.host_root = f.host_root;
  o.storage_path = f.path;
  o.metadata_files = f.metadata_files;
  o.seq_bytes = f.seq_mib << 20;
  o.fsync_count = f.fsync_count;
  o.check_timeout = std::chrono::milliseconds(static_cast<long long>(f.check_timeout_s * 1000));
  o.gpu.tool_outputs = f.gpu_tool_outputs;
  return o;
}

// `cmax check --run-one ID`: the runner's child. The result on stdout, nothing else.
int run_one_check(const CheckFlags& f) {
  auto text = health::run_one(f.run_one, f.child_options, f.child_thresholds);
  if (!text) return fail_env(text.error().message);
  fmt::print("{}\n", *text);
  return kExitHealthy;
}

int run_active_checks(const CheckFlags& f) {
  auto groups = active_groups(f);
  if (!groups) return fail_env(groups.error().message);
  auto o = active_options(f);
  if (!o) return fail_env(o.error().message);
  auto t = active_thresholds(f);
  if (!t) return fail_env(t.error().message);

  health::RunnerOptions ro;
  const bool progress = ::isatty(STDERR_FILENO) == 1;
  if (progress) {
    ro.on_start = [](std::string_view id, std::size_t i, std::size_t n) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} ...", i, n, id);
      std::fflush(stderr);
    };
  }
  auto results = health::run_active(*o, *t, *groups, ro);
  if (progress) fmt::print(stderr, "\r\033[K");
  if (!results) return fail_env(results.error().message);

  const auto counts = health::count_outcomes(*results);
  if (f.json || !f.out.empty()) {
    const std::string doc = health::active_document(f.node, *groups, t->origin(), f.check_timeout_s, *results);
    if (!f.out.empty())
      if (auto w = report::write_stage_document(f.out, "check-active.json", doc); !w) return fail_env(w.error().message);
    if (f.json) fmt::print("{}", doc);
  }
  if (!f.json) {
    fmt::print("{}", health::active_table(f.node, t->origin(), *results));
    fmt::print("\n{}: {}\n", f.node,
               counts.healthy() ? "healthy (no active check failed)"
                                : fmt::format("UNHEALTHY ({} active check{} failed)", counts.failed(),
                                              counts.failed() == 1 ? "" : "s"));
  }
  return counts.healthy() ? kExitHealthy : kExitUnhealthy;
}

std::string absolute(const std::string& p) {
  if (p.empty()) return p;
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

// `cmax check --submit`: the active checks as a Slurm job on the idle nodes.
int submit_checks(const CheckFlags& f) {
  auto groups = active_groups(f);
  if (!groups) return fail_env(groups.error().message);
  auto o = active_options(f);
  if (!o) return fail_env(o.error().message);
  if (auto t = active_thresholds(f); !t) return fail_env(t.error().message);  // fail here, not on every node

  health::SubmitOptions s;
  std::error_code ec;
  s.cmax_bin = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return fail_env(fmt::format("read /proc/self/exe: {}; cannot tell the nodes which cmax to run", ec.message()));
  s.check_args = health::node_check_args({*groups, f.check_timeout_s, absolute(f.path),
                                           f.metadata_files, f.seq_mib, f.fsync_count, absolute(f.thresholds)});
  s.output_dir = absolute(f.output_dir.empty() ? std::string(".") : f.output_dir);
  s.partition = f.partition;
  s.qos = f.qos;
  s.slurm_conf = f.slurm_conf;
  s.max_nodes = f.max_nodes;
  s.force = f.force;
  s.dry_run = f.dry_run;
  s.slurm_timeout = std::chrono::milliseconds(std::max(f.scontrol_timeout_ms, 1000));
  s.time_limit = f.job_time_min > 0 ? std::chrono::minutes(f.job_time_min)
                                    : health::job_time_for_groups(*groups, o->check_timeout, o->gpu.timeout);

  // One job on the free idle nodes (the spares) unless --no-free-nodes, and one inside each
  // --reservation on its idle nodes (a trial's own nodes): a job cannot span both.
  std::vector<std::string> scopes(f.no_free_nodes ? 0 : 1);
  scopes.insert(scopes.end(), f.reservations.begin(), f.reservations.end());
  // Ctrl-C (or cmax run stopping this stage) while waiting cancels the jobs rather than leave them queued.
  static std::atomic<bool> stop{false};
  const health::SubmitFlowOptions fo{s, scopes, f.wait, std::chrono::seconds(f.wait_timeout_s), &stop};
  health::SubmitFlowHooks hooks;
  hooks.on_queued = [](const std::string& id) {
    fmt::print(stderr, "cmax check --submit --wait: job {} ({}) of yours is still queued; waiting for it to end first\n",
               id, health::kSubmitJobName);
  };
  hooks.on_planned = [](const health::SubmittedJob& j) { fmt::print("{}", health::describe_plan(j.outcome)); };
  hooks.on_submitted = [&s](const health::SubmittedJob& j) {
    fmt::print("{}\n", j.outcome.job_id);
    fmt::print(stderr, "cmax check --submit: {}\n", health::describe_submitted(j, s.output_dir));
  };
  hooks.on_scopes_done = [](const std::vector<std::string>& notes) {
    for (const auto& n : notes) fmt::print(stderr, "cmax check --submit: {}\n", n);
  };
  hooks.before_wait = [] {
    struct sigaction sa {};
    sa.sa_handler = [](int) { stop.store(true); };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
  };
  health::SlurmSubmitBackend slurm;
  auto r = health::run_submit_flow(fo, slurm, hooks);
  if (!r) return fail_env(r.error().message);
  if (f.dry_run || !r->merged) return kExitHealthy;  // planned, or submitted and not waited for
  auto w = report::write_stage_document(f.out.empty() ? s.output_dir : f.out, "check-active.json", r->merged->document);
  if (!w) return fail_env(w.error().message);
  const bool healthy = r->merged->healthy;
  fmt::print(stderr, "cmax check --submit: job{} ended ({}); {}: {}\n", r->parts.size() == 1 ? "" : "s",
             health::describe_job_ends(r->parts), *w,
             healthy ? "every node reported, no active check failed" : "a check failed or a node did not report");
  return healthy ? kExitHealthy : kExitUnhealthy;
}

int run_check(const CheckFlags& f0) {
  CheckFlags f = f0;
  if (f.slurm || f.submit) {
    // A named slurm.conf that is missing is said at once, not after scontrol's minute of retries.
    auto conf = sched::effective_slurm_conf(f.slurm_conf);
    if (!conf) return fail_env(conf.error().message);
    f.slurm_conf = *conf;
  }
  if (!f.run_one.empty()) return run_one_check(f);
  if (f.active && f.submit) return fail_env("--active and --submit: choose one (--submit runs the active checks on idle nodes)");
  if ((f.active || f.submit) && f.slurm) return fail_env("--slurm-healthcheck is the passive check; drop --active/--submit");
  if (f.active) return run_active_checks(f);
  if (f.submit) return submit_checks(f);
  if (auto r = sched::check_node_name(f.node); !r) return fail_env(fmt::format("--node {}: {}", f.node, r.error().message));
  auto catalog = signals::Catalog::builtin();
  if (!catalog) return fail_env(catalog.error().message);
  if (!f.config.empty()) {
    std::ifstream in(f.config, std::ios::binary);
    if (!in) return fail_env(fmt::format("open {}: cannot read the --config file", f.config));
    std::stringstream ss;
    ss << in.rdbuf();
    if (auto r = catalog->apply_config(ss.str(), f.config); !r) return fail_env(r.error().message);
  }
  probes::ProbeConfig pc;
  pc.nvml = !f.no_nvml;
  pc.nvml_lib = f.nvml_lib;
  pc.ib = !f.no_ib;
  pc.ib_root = f.ib_root;
  pc.ib_expect = f.ib_expect;
  pc.mounts = f.mounts;
  pc.mount_timeout = std::chrono::milliseconds(f.mount_timeout_ms);
  auto set = probes::make_probes(pc);
  if (!set) return fail_env(set.error().message);

  agent::HealthOptions ho;
  ho.node = f.node;
  ho.kmsg_path = f.kmsg;
  ho.act_on = f.act_on == "any" ? agent::Origins::any : agent::Origins::kernel;
  for (int a = 0; a < signals::kActionCount; ++a)
    if (signals::to_string(static_cast<signals::Action>(a)) == f.drain_at) ho.drain_at = static_cast<signals::Action>(a);
  ho.budget = std::chrono::milliseconds(f.budget_ms);
  auto rep = agent::check_health(ho, *catalog, set->probes);
  if (!rep) return fail_env(rep.error().message);
  rep->notes.insert(rep->notes.begin(), set->notes.begin(), set->notes.end());

  const bool healthy = rep->problems.empty();
  std::string slurm_said, slurm_did;
  if (f.slurm) {
    const char* env = std::getenv("SLURM_NODE_IS_HEALTHY");
    slurm_said = env ? env : "";
    slurm_did = act_on_slurm(f, *rep, agent::decide_health_action(agent::parse_slurm_node_is_healthy(env), healthy));
  }

  if (f.json) {
    nlohmann::json j{{"schema", "cmax.check/1"}, {"node", f.node}, {"healthy", healthy},
                     {"records", rep->records}, {"truncated", rep->truncated}, {"notes", rep->notes}};
    j["problems"] = nlohmann::json::array();
    for (const auto& p : rep->problems)
      j["problems"].push_back({{"kind", signals::to_string(p.kind)}, {"code", p.code}, {"device", p.device},
                               {"action", signals::to_string(p.action)}, {"count", p.count}, {"source", p.source},
                               {"sample", p.sample}, {"drill", p.drill.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.drill)}});
    j["drill_lines_ended"] = rep->drill_lines_ended;
    if (f.slurm) j["slurm"] = {{"node_is_healthy", slurm_said}, {"did", slurm_did}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}: {} ({} kernel records read)\n", f.node, healthy ? "healthy" : "UNHEALTHY", rep->records);
    for (const auto& p : rep->problems)
      fmt::print("  {}: {} line{} from {}{}: {}\n", p.label(), p.count, p.count == 1 ? "" : "s", p.source,
                 p.drill.empty() ? "" : fmt::format(" (drill {}, running)", p.drill), p.sample);
    if (rep->drill_lines_ended > 0)
      fmt::print("  note: {} line(s) of fault drills that have ended were skipped\n", rep->drill_lines_ended);
    for (const auto& n : rep->notes) fmt::print("  note: {}\n", n);
    if (f.slurm) fmt::print("  slurm: {}\n", slurm_did);
  }
  return healthy ? kExitHealthy : kExitUnhealthy;
}

}  // namespace

Runner setup_check(CLI::App& sub) {
  auto f = std::make_shared<CheckFlags>();
  f->node = default_node();
  sub.description(
      "A quick health verdict on this node: reads the kernel ring buffer once and polls NVML (when the\n"
      "driver's library loads), the InfiniBand ports and the --mount points once, through cmax's signal\n"
      "engine, and lists every incident at or above --drain-at. No waiting, no state: cmaxd is the\n"
      "live agent; this is the one-shot check.\n\n"
      "--slurm-healthcheck makes it Slurm's HealthCheckProgram (slurm.conf takes no arguments, so point it\n"
      "at a two-line wrapper, docs/cmaxd.md). slurmd 26.05.2 and later set SLURM_NODE_IS_HEALTHY for a\n"
      "registered node: 'yes' and a problem -> drain (reason 'cmax: healthcheck: ...'); 'no' and no problem\n"
      "-> resume, only when the reason is the health check's own. Unset (before registration, or an older\n"
      "slurmd): scontrol is never called, the verdict is only printed and returned.\n\n"
      "--active runs the active checks instead (docs/checks-active.md): storage (metadata latency over\n"
      "thousands of small files, sequential write and read, fsync latency; needs --path), memory bandwidth\n"
      "against the DIMM ceiling, per-core CPU throughput, CPU stalls per NUMA node, and the GPU checks. Each\n"
      "runs in a child process bounded by --check-timeout-s: a hung filesystem is a finding, not a hang.\n"
      "--submit runs them as a low-priority (--nice), non-requeued Slurm job on the nodes idle now, one\n"
      "result file per node; it refuses while a cmax-check job of yours is pending or running (--force).\n\n"
      "Exit codes: 0 healthy (--submit: submitted, or nothing to submit); 1 unhealthy (an active check\n"
      "failed); 3 usage error or cannot check (kernel log unreadable, bad --thresholds, Slurm unreachable).");
  sub.add_flag("--slurm-healthcheck", f->slurm, "Act as Slurm's HealthCheckProgram (see above)");
  sub.add_option("--node", f->node, "This node's name in Slurm (default: $SLURMD_NODENAME, else the host name)");
  sub.add_option("--slurm-conf", f->slurm_conf, "slurm.conf for scontrol (SLURM_CONF); default: Slurm's own");
  sub.add_option("--scontrol-timeout-ms", f->scontrol_timeout_ms, "Deadline of each scontrol call")->capture_default_str();
  sub.add_option("--act-on", f->act_on,
                 "Kernel log lines that count: 'any' (also lines written to /dev/kmsg from userspace, as fault drills\n"
                 "do; as cmaxd) or 'kernel' (kernel facility only). A drill's lines count only while it runs")
      ->check(CLI::IsMember({"kernel", "any"}))->capture_default_str();
  sub.add_option("--drain-at", f->drain_at, "Unhealthy when an incident's action is at least this")
      ->check(CLI::IsMember({"restart_app", "reset_gpu", "drain", "reboot_node", "replace"}))->capture_default_str();
  sub.add_option("--config", f->config, "Signal overrides: actions, ignore lists, thresholds (docs/signals-config.md)");
  sub.add_option("--kmsg", f->kmsg, "Kernel log device ('' to skip it)")->capture_default_str();
  sub.add_option("--nvml-lib", f->nvml_lib, "NVML library (a path must load; a bare name may be absent)")
      ->capture_default_str();
  sub.add_flag("--no-nvml", f->no_nvml, "Do not load NVML");
  sub.add_option("--ib-root", f->ib_root, "Where InfiniBand devices are listed")->capture_default_str();
  sub.add_option("--ib-expect", f->ib_expect, "A port that must be up, DEVICE/PORT (mlx5_0/1); repeatable");
  sub.add_flag("--no-ib", f->no_ib, "Do not read InfiniBand ports");
  sub.add_option("--mount", f->mounts, "A mount point that must answer stat/statfs; repeatable");
  sub.add_option("--mount-timeout-ms", f->mount_timeout_ms, "A mount that takes longer is hung")->capture_default_str();
  sub.add_option("--budget-ms", f->budget_ms, "The whole check's time limit (Slurm's HealthCheckTimeout is 60 s)")
      ->capture_default_str();
  sub.add_flag("--dry-run", f->dry_run,
               "With --slurm-healthcheck: decide and print, change nothing in Slurm; with --submit: print the "
               "sbatch argv and the batch script, submit nothing");
  sub.add_flag("--json", f->json,
               "Print {\"schema\": \"cmax.check/1\", ...} (with --active: \"cmax.check.active/1\", "
               "docs/schemas/check-active.md)");

  const std::string active = "Active checks";
  sub.add_flag("--active", f->active, "Run the active checks on this node (see above)")->group(active);
  sub.add_option("--checks", f->checks,
                 "Groups to run, comma-separated: storage,memory,cpu,gpu (default: all; storage only with --path)")
      ->group(active);
  sub.add_option("--path", f->path, "A directory on the filesystem to test (a shared filesystem's scratch)")
      ->group(active);
  sub.add_option("--gpu-tool-output", f->gpu_tool_outputs,
                 "With the gpu group: also judge this saved output of nvidia-smi -q -x, nvidia-smi --query-gpu "
                 "(CSV with its header), nvidia-smi topo -m, dcgmi diag (text or -j) or nvbandwidth (text or -j); "
                 "the tool is recognised from the content. Repeat for several files. On a live node nvidia-smi -q -x "
                 "and topo -m are run and judged anyway when nvidia-smi is installed (docs/gpu-checks.md)")
      ->check(CLI::ExistingFile)->group(active);
  sub.add_option("--check-timeout-s", f->check_timeout_s, "Time limit of each check; then it is a fail (timed out)")
      ->capture_default_str()->group(active);
  sub.add_option("--metadata-files", f->metadata_files, "Small files in the metadata check's tree")
      ->capture_default_str()->group(active);
  sub.add_option("--seq-mib", f->seq_mib, "MiB written and read back by the sequential checks")->capture_default_str()
      ->group(active);
  sub.add_option("--fsync-count", f->fsync_count, "4 KiB writes + fdatasync timed by the fsync check")
      ->capture_default_str()->group(active);
  sub.add_option("--thresholds", f->thresholds,
                 "Threshold table (schema cmax.health-thresholds/1; default: the built-in "
                 "data/health-thresholds.json)")->group(active);
  sub.add_option("--host-root", f->host_root, "Read /proc and /sys under this root (CPU and memory checks)")
      ->capture_default_str()->group(active);

  const std::string submit = "Submitting the active checks to Slurm";
  sub.add_flag("--submit", f->submit, "Submit the active checks as a low-priority Slurm job on the idle nodes")
      ->group(submit);
  sub.add_option("--partition", f->partition, "Only idle nodes of this partition, and submit there")->group(submit);
  sub.add_option("--qos", f->qos, "A preemptible QOS of your site's for the job")->group(submit);
  sub.add_option("--reservation", f->reservations,
                 "Also a job inside this active reservation, on its idle nodes (repeat): a trial's own nodes,\n"
                 "which a job outside the reservation never gets")->group(submit);
  sub.add_flag("--no-free-nodes", f->no_free_nodes,
               "Only the --reservation jobs: leave out the idle nodes outside every reservation")->group(submit);
  sub.add_option("--output-dir", f->output_dir,
                 "Where the script and the per-node results go, on a filesystem every node can write "
                 "(default: the current directory)")->group(submit);
  sub.add_option("--max-nodes", f->max_nodes, "At most this many idle nodes (0: all)")->capture_default_str()
      ->group(submit);
  sub.add_option("--job-time-min", f->job_time_min,
                 "The job's time limit in minutes (0: from the checks' time limits)")->capture_default_str()
      ->group(submit);
  sub.add_flag("--force", f->force, "Submit even while a cmax-check job of yours is pending or running")->group(submit);
  sub.add_flag("--wait", f->wait,
               "Wait for the job to end, then merge the nodes' results into check-active.json (in --out, else\n"
               "--output-dir); a node without a result is unverified, never a pass. Exit 0 healthy, 1 not")
      ->group(submit);
  sub.add_option("--wait-timeout-s", f->wait_timeout_s, "--wait: stop waiting (and cancel the job) after this long")
      ->capture_default_str()->check(CLI::Range(1, 7 * 24 * 3600))->group(submit);
  sub.add_option("--out", f->out,
                 "Write check-active.json into this run directory (--active; --submit --wait: the nodes' results "
                 "merged)")->group(active);

  // The runner's child process (health/runner.h): not for people.
  sub.add_option("--run-one", f->run_one)->group("");
  sub.add_option("--child-options", f->child_options)->group("");
  sub.add_option("--child-thresholds", f->child_thresholds)->group("");
  return [f] { return run_check(*f); };
}

}  // namespace cmax::app
