// cmax check: a quick health verdict on this node from the kernel log and the probes (NVML,
// InfiniBand ports, mounts), through the same signal engine as cmaxd. With --slurm-healthcheck it
// is Slurm's HealthCheckProgram (docs/cmaxd.md): drains the node on a problem, resumes its own
// drain when healthy again, and never calls scontrol unless slurmd says the node has registered.
// Exit codes: 0 healthy; 1 unhealthy; 3 usage or cannot check.

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/healthcheck.h"
#include "apps/cmax/command.h"
#include "audit/audit.h"
#include "probes/probe_set.h"
#include "sched/policy.h"
#include "sched/slurm.h"
#include "signals/catalog.h"

namespace cmax::app {
namespace {

constexpr int kExitHealthy = 0, kExitUnhealthy = 1;

struct CheckFlags {
  bool slurm = false, json = false, dry_run = false, no_nvml = false, no_ib = false;
  std::string node, slurm_conf, act_on = "kernel", drain_at = "drain", config, kmsg = "/dev/kmsg";
  std::string nvml_lib = "libnvidia-ml.so.1", ib_root = "/sys/class/infiniband";
  std::vector<std::string> ib_expect, mounts;
  int mount_timeout_ms = 3000, budget_ms = 20000, scontrol_timeout_ms = 5000;
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

int run_check(const CheckFlags& f) {
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
                               {"sample", p.sample}});
    if (f.slurm) j["slurm"] = {{"node_is_healthy", slurm_said}, {"did", slurm_did}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}: {} ({} kernel records read)\n", f.node, healthy ? "healthy" : "UNHEALTHY", rep->records);
    for (const auto& p : rep->problems)
      fmt::print("  {}: {} line{} from {}: {}\n", p.label(), p.count, p.count == 1 ? "" : "s", p.source, p.sample);
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
      "Exit codes: 0 healthy; 1 unhealthy; 3 usage error or cannot check (kernel log unreadable).");
  sub.add_flag("--slurm-healthcheck", f->slurm, "Act as Slurm's HealthCheckProgram (see above)");
  sub.add_option("--node", f->node, "This node's name in Slurm (default: $SLURMD_NODENAME, else the host name)");
  sub.add_option("--slurm-conf", f->slurm_conf, "slurm.conf for scontrol (SLURM_CONF); default: Slurm's own");
  sub.add_option("--scontrol-timeout-ms", f->scontrol_timeout_ms, "Deadline of each scontrol call")->capture_default_str();
  sub.add_option("--act-on", f->act_on,
                 "Kernel log lines that count: 'kernel' (kernel facility only) or 'any' (also lines written to\n"
                 "/dev/kmsg from userspace, as fault drills do)")
      ->check(CLI::IsMember({"kernel", "any"}))
      ->capture_default_str();
  sub.add_option("--drain-at", f->drain_at, "Unhealthy when an incident's action is at least this")
      ->check(CLI::IsMember({"restart_app", "reset_gpu", "drain", "reboot_node", "replace"}))
      ->capture_default_str();
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
  sub.add_flag("--dry-run", f->dry_run, "With --slurm-healthcheck: decide and print, change nothing in Slurm");
  sub.add_flag("--json", f->json, "Print {\"schema\": \"cmax.check/1\", ...}");
  return [f] { return run_check(*f); };
}

}  // namespace cmax::app
