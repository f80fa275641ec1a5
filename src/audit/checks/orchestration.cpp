// Orchestration: Slurm set up so that bad nodes drain themselves, jobs get the GPUs and the network
// placement they asked for, and users have containers, modules and MPI. ClusterMAX category
// "Orchestration".

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <initializer_list>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "audit/parse/health_check.h"
#include "core/strings.h"

namespace cmax::audit::checks {
namespace {

constexpr std::uint8_t kNode = kStandalone | kSlurm;
constexpr std::int64_t kMaxHealthCheckInterval_s = 300;

// The fact must have been read: missing or unreadable -> unverified. Absent is for the predicate.
std::optional<Verdict> unreadable(const CheckContext& ctx, std::initializer_list<std::string_view> keys) {
  for (auto key : keys) {
    const Fact* f = ctx.facts.find(key);
    if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", key));
    if (f->status == FactStatus::error)
      return verdict(Outcome::unverified, {}, {}, fmt::format("could not read {}: {}", f->source, f->detail));
  }
  return std::nullopt;
}

std::optional<Verdict> guard_readable(const CheckContext& ctx, const Check& check) {
  if (check.fact.empty()) return std::nullopt;
  return unreadable(ctx, {check.fact});
}

// A slurm.conf is here (else not_applicable); the primary fact may be absent, not unreadable.
std::optional<Verdict> guard_slurm_conf(const CheckContext& ctx, const Check& check) {
  Check bare = check;
  bare.fact = {};
  if (auto g = guard_slurm(ctx, bare)) return g;
  return guard_readable(ctx, check);
}

std::optional<Verdict> guard_slurm_gpu(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  return guard_slurm_conf(ctx, check);
}

std::optional<Verdict> guard_gpu_readable(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  return guard_readable(ctx, check);
}

std::string lower_value(const CheckContext& ctx, std::string_view key) {
  return core::to_lower(core::trim(ctx.facts.value_or(key)));
}

// "task/affinity,task/cgroup" has "task/cgroup"; Slurm lists plugins with commas.
bool list_has(std::string_view list, std::string_view item) {
  for (auto part : core::split_any(list, ", \t"))
    if (part == item) return true;
  return false;
}

Verdict with_evidence(Verdict v, std::string source, std::string value) {
  v.evidence_source = std::move(source);
  v.evidence_value = std::move(value);
  return v;
}

Verdict pred_healthcheck_program(const CheckContext& ctx, const Check& check) {
  constexpr std::string_view kExpected = "NHC (/usr/sbin/nhc) or a DCGM diagnostic script";
  std::string program(ctx.facts.value_or(check.fact));
  if (!ctx.facts.is_present(check.fact))
    return verdict(Outcome::fail, "not set", std::string(kExpected),
                   "HealthCheckProgram is not set: slurmd never checks the node, so a node with a failed GPU keeps "
                   "taking jobs");
  std::string base = core::to_lower(program.substr(program.rfind('/') + 1));
  std::string_view kind = base.starts_with("nhc")                  ? "LBNL NHC"
                          : base.find("dcgm") != std::string::npos ? "DCGM diagnostics"
                          : base.starts_with("cmax")               ? "cmax health checks"
                                                                   : "";
  const Fact* installed = ctx.facts.find("slurm.healthcheck_program.installed");
  if (installed && installed->status == FactStatus::absent)
    return verdict(Outcome::fail, program, std::string(kExpected),
                   fmt::format("{}; the health check never runs", installed->detail));
  if (!kind.empty()) return verdict(Outcome::pass, program, std::string(kExpected), fmt::format("runs {}", kind));
  return verdict(Outcome::warn, program, std::string(kExpected),
                 fmt::format("'{}' is neither NHC nor a DCGM script; make sure it runs GPU checks (dcgmi diag, NHC "
                             "GPU checks) and drains the node on failure",
                             program));
}

Verdict pred_healthcheck_interval(const CheckContext& ctx, const Check& check) {
  if (auto u = unreadable(ctx, {"slurm.conf.HealthCheckProgram"})) return *u;
  if (!ctx.facts.is_present("slurm.conf.HealthCheckProgram"))
    return verdict(Outcome::not_applicable, "no HealthCheckProgram", {},
                   "no HealthCheckProgram is set (see orchestration.slurm.healthcheck_program)");
  bool set = ctx.facts.is_present(check.fact);
  std::string raw = set ? std::string(core::trim(ctx.facts.value_or(check.fact))) : std::string("0");
  std::string expected = fmt::format("1..{} s", kMaxHealthCheckInterval_s);
  auto seconds = core::parse_int(raw);
  if (!seconds || *seconds < 0)
    return verdict(Outcome::unverified, raw, expected,
                   fmt::format("HealthCheckInterval '{}' is not a number of seconds", raw));
  if (*seconds == 0)
    return verdict(Outcome::fail, set ? "0" : "not set (0)", expected,
                   "the health check runs only when slurmd starts, never while the node is in service");
  if (*seconds > kMaxHealthCheckInterval_s)
    return verdict(
        Outcome::warn, fmt::format("{} s", *seconds), expected,
        fmt::format("a failed GPU can keep taking jobs for up to {} s before the check drains it", *seconds));
  return verdict(Outcome::pass, fmt::format("{} s", *seconds), expected);
}

// Can a node the health check drained come back on its own? The loop raters meet: the only thing
// that returns the node (the health check resuming what it drained: NHC's node-mark-online, a
// script's scontrol resume) never runs on a drained node (audit/parse/health_check.h).
Verdict pred_healthcheck_returns(const CheckContext& ctx, const Check& check) {
  constexpr std::string_view kExpected =
      "the health check runs on drained nodes (HealthCheckNodeState=ANY or IDLE, HealthCheckInterval > 0) and "
      "resumes the nodes it drained";
  if (auto u = unreadable(ctx, {"slurm.conf.HealthCheckNodeState", "slurm.conf.HealthCheckInterval"})) return *u;
  if (!ctx.facts.is_present(check.fact))
    return verdict(Outcome::not_applicable, "no HealthCheckProgram", {},
                   "no HealthCheckProgram is set (see orchestration.slurm.healthcheck_program)");
  const std::string program(core::trim(ctx.facts.value_or(check.fact)));
  const std::string base = core::to_lower(program.substr(program.rfind('/') + 1));
  const bool nhc = base.starts_with("nhc");
  const auto states = parse_health_check_states(ctx.facts.value_or("slurm.conf.HealthCheckNodeState"));
  const std::string state_text =
      ctx.facts.is_present("slurm.conf.HealthCheckNodeState")
          ? fmt::format("HealthCheckNodeState={}", core::trim(ctx.facts.value_or("slurm.conf.HealthCheckNodeState")))
          : std::string("HealthCheckNodeState unset (ANY)");
  const auto interval = core::parse_int(core::trim(ctx.facts.value_or("slurm.conf.HealthCheckInterval", "0")));
  const bool periodic = interval && *interval > 0 && !states.start_only && !states.reboot_only;
  const bool checks_drained = periodic && states.checks_drained_idle();
  std::string ignored;
  if (!states.ignored.empty())
    ignored = fmt::format(" (slurmctld ignores {})", fmt::join(states.ignored, ", "));

  // What the program does: NHC drains with a reason starting "NHC:" and resumes exactly those; a
  // script says so in its text; anything else is not known.
  enum class Known { yes, no, unknown };
  Known drains = Known::unknown, resumes = Known::unknown;
  std::string how;
  if (nhc) {
    drains = resumes = Known::yes;
    how = "NHC resumes a node whose reason starts with \"NHC:\" once every check passes (node-mark-online)";
  } else if (const Fact* a = ctx.facts.find("slurm.healthcheck_program.actions"); a && a->status == FactStatus::present) {
    drains = a->value.find("drains") != std::string::npos ? Known::yes : Known::no;
    resumes = a->value.find("resumes") != std::string::npos ? Known::yes : Known::no;
    how = fmt::format("{} {}", program, a->detail);
  }
  const std::string actual = fmt::format("{}, HealthCheckInterval={}{}", state_text,
                                         interval ? std::to_string(*interval) : std::string("?"), ignored);
  const Fact* actions = ctx.facts.find("slurm.healthcheck_program.actions");
  if (resumes == Known::yes && actions && actions->status == FactStatus::present &&
      actions->value.find("skips-drained") != std::string::npos)
    return verdict(Outcome::fail, actual, std::string(kExpected),
                   fmt::format("{}: the check is the only thing that returns a node it drained, yet it needs the node "
                               "undrained before it runs, so remediation can never finish on its own",
                               how));
  const std::string why_not =
      !periodic ? std::string("it never runs periodically (HealthCheckInterval=0, START_ONLY or REBOOT_ONLY), only "
                              "when slurmd starts")
                : fmt::format("{} never runs it on a drained idle node (only IDLE or ANY do; NONDRAINED_IDLE skips "
                              "drained nodes by design, ALLOC and MIXED see no idle node)",
                              state_text);
  if (resumes == Known::yes && !checks_drained)
    return verdict(Outcome::fail, actual, std::string(kExpected),
                   fmt::format("the health check is what returns a node it drained ({}), but {}: a node it drains stays "
                               "drained until slurmd restarts on it or an operator resumes it, so remediation can never "
                               "finish on its own",
                               how, why_not));
  if (resumes == Known::unknown && !checks_drained)
    return verdict(Outcome::warn, actual, std::string(kExpected),
                   fmt::format("{}; if {} is what resumes the nodes it drains, they never come back on their own (what "
                               "it does to the node could not be read: {})",
                               why_not, program, actions ? actions->detail : std::string("the program was not read")));
  if (drains == Known::yes && resumes == Known::no)
    return verdict(Outcome::warn, actual, std::string(kExpected),
                   fmt::format("{}, but nothing in it ever resumes a node: each node it drains waits for an operator "
                               "or another remediation",
                               how));
  if (resumes == Known::unknown)
    return verdict(Outcome::pass, actual, std::string(kExpected),
                   fmt::format("the health check runs on drained nodes ({}); whether it resumes those it drained "
                               "could not be read",
                               state_text));
  return verdict(Outcome::pass, actual, std::string(kExpected),
                 resumes == Known::yes ? fmt::format("runs on drained nodes and returns them: {}", how)
                                       : std::string("runs on drained nodes; it neither drains nor resumes"));
}

Verdict pred_topology(const CheckContext& ctx, const Check& check) {
  constexpr std::string_view kExpected = "topology/tree (topology/block for NVL72 racks) with a topology.conf";
  if (auto u = unreadable(ctx, {"slurm.topology_yaml", "slurm.topology_conf"})) return *u;
  if (const Fact* yaml = ctx.facts.find("slurm.topology_yaml"); yaml && yaml->status == FactStatus::present) {
    bool placed = list_has(yaml->value, "tree") || list_has(yaml->value, "block");
    return with_evidence(
        verdict(placed ? Outcome::pass : Outcome::warn, fmt::format("topology.yaml: {}", yaml->value),
                std::string(kExpected), placed ? "" : "topology.yaml defines no tree or block topology"),
        yaml->source, yaml->value);
  }
  std::string plugin = lower_value(ctx, check.fact);
  bool tree = plugin == "topology/tree", block = plugin == "topology/block";
  if (!tree && !block)
    return verdict(Outcome::warn, plugin.empty() ? "not set (topology/flat)" : plugin, std::string(kExpected),
                   "the scheduler places jobs without knowing the network, so multi-node jobs straddle leaf switches "
                   "(or NVLink domains) and collectives slow down");
  const Fact* conf = ctx.facts.find("slurm.topology_conf");
  if (!conf || conf->status != FactStatus::present)
    return verdict(Outcome::warn, plugin, std::string(kExpected),
                   fmt::format("{} is set but there is no topology.conf beside slurm.conf", plugin));
  std::string_view count_key = tree ? "slurm.topology_conf.switches" : "slurm.topology_conf.blocks";
  auto count = core::parse_uint(ctx.facts.value_or(count_key, "0"));
  Verdict v = count && *count > 0
                  ? verdict(Outcome::pass, fmt::format("{}, {}", plugin, conf->detail), std::string(kExpected))
                  : verdict(Outcome::warn, fmt::format("{}, {}", plugin, conf->detail), std::string(kExpected),
                            fmt::format("topology.conf has no {} line", tree ? "SwitchName" : "BlockName"));
  return with_evidence(std::move(v), conf->source, conf->detail);
}

Verdict pred_accounting(const CheckContext& ctx, const Check& check) {
  if (auto u = unreadable(ctx, {"slurm.tool.sacct", "slurm.conf.JobAcctGatherType"})) return *u;
  std::string storage = lower_value(ctx, check.fact);
  std::string gather = lower_value(ctx, "slurm.conf.JobAcctGatherType");
  std::string observed = fmt::format("AccountingStorageType={}, JobAcctGatherType={}",
                                     storage.empty() ? "unset" : storage, gather.empty() ? "unset" : gather);
  constexpr std::string_view kExpected = "accounting_storage/slurmdbd, a jobacct_gather plugin and sacct";
  if (storage.empty() || storage == "accounting_storage/none")
    return verdict(Outcome::fail, observed, std::string(kExpected),
                   "no job accounting: sacct has nothing to show and usage cannot be audited or billed");
  if (!ctx.facts.is_present("slurm.tool.sacct"))
    return verdict(Outcome::warn, observed, std::string(kExpected),
                   "accounting is stored, but sacct is not on PATH here");
  if (gather.empty() || gather == "jobacct_gather/none")
    return verdict(Outcome::warn, observed, std::string(kExpected),
                   "jobacct_gather/none: jobs are recorded without their CPU and memory usage");
  return verdict(Outcome::pass, observed, std::string(kExpected));
}

Verdict pred_client_tools(const CheckContext& ctx, const Check&) {
  std::vector<std::string> missing, found;
  for (std::string_view tool : {"sinfo", "squeue", "srun", "sbatch"}) {
    std::string key = fmt::format("slurm.tool.{}", tool);
    (ctx.facts.is_present(key) ? found : missing).emplace_back(tool);
  }
  if (missing.empty())
    return verdict(Outcome::pass, fmt::format("{}", fmt::join(found, " ")), "sinfo squeue srun sbatch");
  return verdict(Outcome::fail, fmt::format("missing: {}", fmt::join(missing, " ")), "sinfo squeue srun sbatch",
                 "users cannot see the queue or submit work from this node");
}

Verdict pred_cgroup_devices(const CheckContext& ctx, const Check& check) {
  if (auto u = unreadable(ctx, {"slurm.conf.ProctrackType", "slurm.conf.TaskPlugin"})) return *u;
  std::string proctrack = lower_value(ctx, "slurm.conf.ProctrackType");
  std::string task = lower_value(ctx, "slurm.conf.TaskPlugin");
  std::string devices = lower_value(ctx, check.fact);
  std::vector<std::string> problems;
  // Recent Slurm releases default ProctrackType to proctrack/cgroup, so unset is not a problem.
  if (!proctrack.empty() && proctrack != "proctrack/cgroup")
    problems.push_back(fmt::format("ProctrackType={}", proctrack));
  if (!list_has(task, "task/cgroup"))
    problems.push_back(task.empty() ? "TaskPlugin unset (task/none)"
                                    : fmt::format("TaskPlugin={} lacks task/cgroup", task));
  if (devices != "yes") {
    const Fact* f = ctx.facts.find(check.fact);
    problems.push_back(ctx.facts.is_present(check.fact) ? fmt::format("ConstrainDevices={}", devices)
                                                        : (f ? f->detail : std::string("ConstrainDevices unset")));
  }
  std::string observed = fmt::format("ProctrackType={}, TaskPlugin={}, ConstrainDevices={}",
                                     proctrack.empty() ? "default (proctrack/cgroup)" : proctrack,
                                     task.empty() ? "unset" : task, devices.empty() ? "unset (no)" : devices);
  constexpr std::string_view kExpected = "proctrack/cgroup, task/cgroup, ConstrainDevices=yes";
  if (problems.empty()) return verdict(Outcome::pass, observed, std::string(kExpected));
  return verdict(Outcome::fail, observed, std::string(kExpected),
                 fmt::format("{}: a job can open GPUs it was not given, whatever CUDA_VISIBLE_DEVICES says",
                             fmt::join(problems, "; ")));
}

Verdict pred_gres_gpu(const CheckContext& ctx, const Check& check) {
  if (auto u = unreadable(ctx, {"slurm.gres_conf", "slurm.gres_conf.gpus"})) return *u;
  std::string types = lower_value(ctx, check.fact);
  constexpr std::string_view kExpected = "GresTypes with gpu and a gres.conf naming the GPUs";
  if (!list_has(types, "gpu"))
    return verdict(Outcome::fail, types.empty() ? "GresTypes unset" : fmt::format("GresTypes={}", types),
                   std::string(kExpected),
                   "jobs cannot ask for GPUs (--gpus, --gres=gpu) and Slurm does not bind them");
  const Fact* conf = ctx.facts.find("slurm.gres_conf");
  if (conf->status != FactStatus::present)
    return with_evidence(
        verdict(Outcome::fail, fmt::format("GresTypes={}, no gres.conf", types), std::string(kExpected),
                fmt::format("{}: slurmd cannot tell which device files are GPUs", conf->detail)),
        conf->source, conf->detail);
  const Fact* gpus = ctx.facts.find("slurm.gres_conf.gpus");
  if (gpus->status != FactStatus::present)
    return with_evidence(verdict(Outcome::warn, fmt::format("GresTypes={}, gres.conf without GPUs", types),
                                 std::string(kExpected), gpus->detail),
                         conf->source, gpus->detail);
  return with_evidence(
      verdict(Outcome::pass, fmt::format("GresTypes={}, gres.conf: {}", types, gpus->value), std::string(kExpected)),
      conf->source, gpus->value);
}

Verdict pred_select_type(const CheckContext& ctx, const Check& check) {
  std::string select = lower_value(ctx, check.fact);
  constexpr std::string_view kExpected = "select/cons_tres";
  if (select == "select/cons_tres") return verdict(Outcome::pass, select, std::string(kExpected));
  if (select.empty())
    return verdict(Outcome::warn, "not set", std::string(kExpected),
                   "the default depends on the release (select/linear, whole nodes only, before 23.02); set "
                   "select/cons_tres explicitly");
  return verdict(Outcome::warn, select, std::string(kExpected),
                 select == "select/linear"
                     ? "whole nodes only: jobs cannot share a GPU node or ask for GPUs per task"
                     : "only select/cons_tres supports --gpus-per-task, --gpus-per-node and GPU binding");
}

Verdict pred_slurmd(const CheckContext& ctx, const Check& check) {
  if (ctx.facts.is_present(check.fact))
    return verdict(Outcome::pass, fmt::format("slurmd pid {}", ctx.facts.value_or(check.fact)), "slurmd running");
  return verdict(Outcome::fail, "no slurmd", "slurmd running",
                 "this GPU node has a slurm.conf but no slurmd, so it takes no jobs and runs no health check");
}

Verdict pred_enroot(const CheckContext& ctx, const Check& check) {
  if (ctx.facts.is_present(check.fact))
    return verdict(Outcome::pass, std::string(ctx.facts.value_or(check.fact)), "installed");
  const Fact* f = ctx.facts.find(check.fact);
  if (ctx.facts.is_present("slurm.pyxis"))
    return verdict(Outcome::fail, "missing", "installed",
                   fmt::format("pyxis is configured ({}) but enroot is not installed: every srun --container-image "
                               "fails",
                               ctx.facts.value_or("slurm.pyxis")));
  return verdict(Outcome::warn, "missing", "installed", f->detail);
}

Verdict pred_pyxis(const CheckContext& ctx, const Check& check) {
  if (ctx.facts.is_present(check.fact))
    return verdict(Outcome::pass, std::string(ctx.facts.value_or(check.fact)), "loaded");
  return verdict(
      Outcome::warn, "not loaded", "loaded",
      fmt::format("{}: users cannot run containers with srun --container-image", ctx.facts.find(check.fact)->detail));
}

Verdict pred_sudo(const CheckContext& ctx, const Check& check) {
  if (ctx.facts.is_present(check.fact))
    return verdict(Outcome::pass, core::clip(ctx.facts.value_or(check.fact), 120), "a NOPASSWD rule");
  return verdict(Outcome::warn, "none", "a NOPASSWD rule",
                 fmt::format("{}: tenants cannot administer their nodes", ctx.facts.find(check.fact)->detail));
}

constexpr std::string_view kSlurmConfDoc = "https://slurm.schedmd.com/slurm.conf.html";

const Check kChecks[] = {
    {"orchestration.slurm.healthcheck_program",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm runs a GPU health check (NHC or DCGM)",
     "Orchestration: DCGM or NHC wired into Slurm HealthCheckProgram so bad nodes drain themselves",
     "Reads HealthCheckProgram from slurm.conf and checks that the program exists and is NHC, a DCGM "
     "diagnostic script or cmax.",
     "Install NHC (or a dcgmi diag wrapper) and set HealthCheckProgram=/usr/sbin/nhc in slurm.conf.",
     guard_slurm_conf,
     pred_healthcheck_program,
     "slurm.conf.HealthCheckProgram",
     {},
     {},
     "https://github.com/mej/nhc"},
    {"orchestration.slurm.healthcheck_interval",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm health check runs at least every 5 minutes",
     "Orchestration: health checks run continuously, not only at boot",
     "Reads HealthCheckInterval (seconds; 0 or unset means only at slurmd start).",
     "Set HealthCheckInterval=300 (or less) and HealthCheckNodeState=ANY in slurm.conf.",
     guard_slurm_conf,
     pred_healthcheck_interval,
     "slurm.conf.HealthCheckInterval",
     {},
     {},
     kSlurmConfDoc},
    {"orchestration.slurm.healthcheck_returns_nodes",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "A node the health check drains can come back on its own",
     "Orchestration: auto-remediation can finish (the health check that drained a node runs on it again and returns it)",
     "Reads HealthCheckProgram, HealthCheckNodeState and HealthCheckInterval from slurm.conf and, when the program "
     "is a script, whether it drains and resumes the node (scontrol State=DRAIN/RESUME, NHC's node-mark-offline/"
     "online). Fails when the program is what resumes a node it drained but never runs on a drained idle node: "
     "slurmctld skips it under NONDRAINED_IDLE, ALLOC or MIXED without IDLE or ANY, START_ONLY, or no interval "
     "(ping_nodes.c run_health_check), or the script itself exits first on a drained node. Warns when it drains "
     "and never resumes. ReturnToService does not help: it returns DOWN "
     "nodes only and never clears DRAIN.",
     "Set HealthCheckNodeState=ANY (or add IDLE) with HealthCheckInterval > 0, so that the check that drained a node "
     "runs on it again and resumes it when it passes; with a script, resume only the nodes whose reason it set.",
     guard_slurm_conf,
     pred_healthcheck_returns,
     "slurm.conf.HealthCheckProgram",
     {},
     {},
     "https://slurm.schedmd.com/slurm.conf.html#OPT_HealthCheckNodeState"},
    {"orchestration.slurm.topology",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm knows the network topology",
     "Orchestration: Slurm topology.conf (topology-aware placement; block topology for NVL72)",
     "Reads TopologyPlugin and topology.conf (or topology.yaml) beside slurm.conf: topology/tree needs SwitchName "
     "lines, topology/block (GB200/GB300 NVL72 racks) BlockName lines.",
     "Generate topology.conf from the fabric (e.g. slurmibtopology, or ibnetdiscover) and set "
     "TopologyPlugin=topology/tree; use topology/block with one block per NVL72 rack.",
     guard_slurm_conf,
     pred_topology,
     "slurm.conf.TopologyPlugin",
     {},
     {},
     "https://slurm.schedmd.com/topology.html"},
    {"orchestration.slurm.accounting",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm job accounting is on and sacct works",
     "Orchestration: sacct works (job accounting via slurmdbd)",
     "Reads AccountingStorageType and JobAcctGatherType from slurm.conf and looks for sacct on PATH.",
     "Run slurmdbd, set AccountingStorageType=accounting_storage/slurmdbd and "
     "JobAcctGatherType=jobacct_gather/cgroup, and install the Slurm client tools.",
     guard_slurm_conf,
     pred_accounting,
     "slurm.conf.AccountingStorageType",
     {},
     {},
     "https://slurm.schedmd.com/accounting.html"},
    {"orchestration.slurm.client_tools", Category::orchestration, Severity::missing, false, kNode,
     "Slurm client tools are installed", "Orchestration: sinfo, squeue, srun, sbatch work",
     "Looks for sinfo, squeue, srun and sbatch on PATH of a node that has a slurm.conf.",
     "Install the Slurm client package (slurm-client, slurm-wlm-client) matching the cluster's release.",
     guard_slurm_conf, pred_client_tools, "slurm.tool.sinfo"},
    {"orchestration.slurm.cgroup_devices",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm confines each job to the GPUs it was given",
     "Orchestration: CUDA_VISIBLE_DEVICES and device isolation enforced by the scheduler",
     "Needs ProctrackType=proctrack/cgroup, task/cgroup in TaskPlugin and ConstrainDevices=yes in cgroup.conf: "
     "only then does the device cgroup stop a job from opening other jobs' GPUs.",
     "Set ProctrackType=proctrack/cgroup and TaskPlugin=task/cgroup,task/affinity in slurm.conf and "
     "ConstrainDevices=yes in cgroup.conf, then restart slurmd.",
     guard_slurm_conf,
     pred_cgroup_devices,
     "slurm.cgroup.ConstrainDevices",
     {},
     {},
     "https://slurm.schedmd.com/cgroup.conf.html"},
    {"orchestration.slurm.gres_gpu",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm schedules this node's GPUs as GRES",
     "Orchestration: GPUs requested and bound through Slurm GRES",
     "On a GPU node, GresTypes must list gpu and gres.conf must declare the GPUs (AutoDetect=nvml or Name=gpu).",
     "Add GresTypes=gpu and Gres=gpu:<n> to the NodeName lines, and AutoDetect=nvml to gres.conf.",
     guard_slurm_gpu,
     pred_gres_gpu,
     "slurm.conf.GresTypes",
     {},
     {},
     "https://slurm.schedmd.com/gres.html"},
    {"orchestration.slurm.select_type",
     Category::orchestration,
     Severity::config,
     false,
     kNode,
     "Slurm uses the GPU-aware resource selector",
     "Orchestration: GPU-aware scheduling (select/cons_tres)",
     "Reads SelectType: only select/cons_tres supports per-task GPU requests and GPU binding.",
     "Set SelectType=select/cons_tres (with SelectTypeParameters=CR_Core_Memory) and restart slurmctld.",
     guard_slurm_gpu,
     pred_select_type,
     "slurm.conf.SelectType",
     {},
     {},
     kSlurmConfDoc},
    {"orchestration.slurm.slurmd", Category::orchestration, Severity::missing, false, kNode,
     "slurmd runs on this GPU node", "Orchestration: every GPU node is in the Slurm pool",
     "A GPU node with a slurm.conf should run slurmd; otherwise it is out of the pool without anyone draining it.",
     "Start slurmd (systemctl enable --now slurmd) and check it registers (sinfo -N -n <node>).", guard_slurm_gpu,
     pred_slurmd, "proc.slurmd"},
    {"orchestration.pyxis",
     Category::orchestration,
     Severity::missing,
     false,
     kNode,
     "Pyxis lets users run containers through srun",
     "Orchestration: pyxis + enroot for containers on Slurm",
     "Looks for a spank_pyxis.so line in plugstack.conf or the files it includes.",
     "Install NVIDIA pyxis built against this Slurm release and add 'required spank_pyxis.so' to plugstack.conf "
     "(or plugstack.conf.d/pyxis.conf, included from plugstack.conf).",
     guard_slurm_conf,
     pred_pyxis,
     "slurm.pyxis",
     {},
     {},
     "https://github.com/NVIDIA/pyxis"},
    {"orchestration.enroot",
     Category::orchestration,
     Severity::missing,
     false,
     kNode,
     "enroot is installed",
     "Orchestration: pyxis + enroot for containers on Slurm",
     "enroot is the unprivileged container runtime pyxis drives; without it pyxis cannot start a container.",
     "Install the enroot (and enroot+caps) packages from NVIDIA's releases.",
     guard_readable,
     pred_enroot,
     "tool.enroot.version",
     {},
     {},
     "https://github.com/NVIDIA/enroot"},
    {"orchestration.apptainer",
     Category::orchestration,
     Severity::missing,
     false,
     kNode,
     "Apptainer is installed",
     "Orchestration: Apptainer available for HPC containers",
     "Looks for apptainer (or singularity) on PATH or as a package.",
     "Install Apptainer from the distribution or apptainer.org releases.",
     guard_readable,
     pred_present,
     "tool.apptainer.version",
     {},
     "warn",
     "https://apptainer.org/docs/admin/main/installation.html"},
    {"orchestration.lmod",
     Category::orchestration,
     Severity::missing,
     false,
     kNode,
     "Lmod environment modules are installed",
     "Orchestration: Lmod modules for toolchains",
     "Looks for Lmod's libexec or profile script.",
     "Install Lmod (apt-get install lmod) and publish module files.",
     guard_readable,
     pred_present,
     "tool.lmod.path",
     {},
     "warn",
     "https://lmod.readthedocs.io/"},
    {"orchestration.hpcx",
     Category::orchestration,
     Severity::missing,
     false,
     kNode,
     "NVIDIA HPC-X is installed",
     "Orchestration: HPC-X (UCX, UCC, Open MPI) for GPU jobs",
     "Looks for HPC-X under $HPCX_HOME, /opt/hpcx, /opt/nvidia/hpcx or /usr/local/hpcx on a GPU node.",
     "Install NVIDIA HPC-X matching the OFED/DOCA release and publish it as a module.",
     guard_gpu_readable,
     pred_present,
     "tool.hpcx.path",
     {},
     "warn",
     "https://developer.nvidia.com/networking/hpc-x"},
    {"orchestration.sudo", Category::orchestration, Severity::config, false, kNode,
     "Tenants can use sudo on their nodes", "Orchestration: tenants have root (sudo) on dedicated nodes",
     "Looks for a NOPASSWD rule in /etc/sudoers or /etc/sudoers.d.",
     "Grant the tenant's admin group passwordless sudo in /etc/sudoers.d on dedicated nodes.", guard_readable,
     pred_sudo, "access.sudo_nopasswd"},
    {"orchestration.gpu_containers",
     Category::orchestration,
     Severity::missing,
     false,
     kAnyHarness,
     "Containers can use the GPUs",
     "Orchestration: Docker with the NVIDIA container toolkit (or CDI)",
     "On a GPU node, looks for the nvidia runtime in Docker's daemon.json or an NVIDIA CDI spec.",
     "Install nvidia-container-toolkit and run `nvidia-ctk runtime configure` or `nvidia-ctk cdi generate`.",
     guard_gpu_readable,
     pred_present,
     "containers.gpu_runtime",
     {},
     "warn",
     "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"},
};

}  // namespace

std::span<const Check> orchestration_checks() { return kChecks; }

}  // namespace cmax::audit::checks
