#include "sched/slurm.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/process.h"
#include "core/strings.h"
#include "sched/policy.h"
#include "sched/slurm_parse.h"

namespace cmax::sched {
namespace {

// Every node, one line each (about 600 bytes): room for tens of thousands.
constexpr std::size_t kMaxAllNodesBytes = 32u << 20;

Unexpected<Error> fail_on(std::string_view action, std::string_view node, const Error& e) {
  return fail("{} {}: {}", action, node, e.message);
}

Action unchanged(std::string note) {
  Action a;
  a.note = std::move(note);
  return a;
}

}  // namespace

std::vector<std::string> drain_argv(const SlurmOptions& options, std::string_view node,
                                    std::string_view reason) {
  return {options.scontrol, "update", "NodeName=" + std::string(node), "State=DRAIN",
          "Reason=" + std::string(reason)};
}

std::vector<std::string> resume_argv(const SlurmOptions& options, std::string_view node) {
  return {options.scontrol, "update", "NodeName=" + std::string(node), "State=RESUME"};
}

std::vector<std::string> reboot_argv(const SlurmOptions& options, std::string_view node,
                                     std::string_view reason) {
  return {options.scontrol, "reboot", "ASAP", "nextstate=RESUME", "reason=" + std::string(reason),
          std::string(node)};
}

Result<std::string> run_scontrol(const SlurmOptions& options, std::vector<std::string> argv,
                                 std::size_t max_bytes) {
  core::ProcessSpec spec{std::move(argv), options.timeout, max_bytes};
  // Without SLURM_CONF the tools fall back to /etc/slurm and DNS; the ISO time format keeps
  // Reason's "[user@time]" suffix parseable whatever the caller's SLURM_TIME_FORMAT.
  if (!options.conf_path.empty()) spec.extra_env.push_back("SLURM_CONF=" + options.conf_path);
  spec.extra_env.push_back("SLURM_TIME_FORMAT=standard");
  auto r = core::run_process(spec);
  if (!r) return Unexpected<Error>{r.error()};
  auto where =
      options.conf_path.empty() ? std::string("the default slurm.conf") : options.conf_path;
  if (r->timed_out)
    return fail("scontrol timed out after {} ms: is slurmctld (from {}) up and reachable?",
                options.timeout.count(), where);
  if (r->signal != 0) return fail("scontrol killed by signal {}", r->signal);
  if (r->exit_code != 0)
    return fail("scontrol exited {}: {}", r->exit_code,
                core::clip(core::trim(r->err.empty() ? r->out : r->err), 300));
  if (r->truncated) return fail("scontrol printed more than {} bytes", max_bytes);
  return std::move(r->out);
}

Result<std::string> effective_slurm_conf(std::string_view flag) {
  std::string path(flag);
  std::string_view from = "--slurm-conf";
  if (path.empty()) {
    const char* env = std::getenv("SLURM_CONF");
    if (env == nullptr || *env == '\0') return std::string();
    path = env;
    from = "$SLURM_CONF";
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return fail("read slurm.conf: {} names {}, a directory: name the cluster's slurm.conf file", from, path);
  if (::access(path.c_str(), R_OK) != 0)
    return fail("read slurm.conf: {} names {}: {}; export SLURM_CONF with the path of the cluster's slurm.conf (or "
                "pass --slurm-conf), or unset it to use Slurm's default",
                from, path, std::strerror(errno));
  return path;
}

SlurmScheduler::SlurmScheduler(SlurmOptions options) : options_(std::move(options)) {}

Result<std::string> SlurmScheduler::scontrol(std::vector<std::string> argv, std::size_t max_bytes) {
  return run_scontrol(options_, std::move(argv), max_bytes);
}

Result<NodeState> SlurmScheduler::read_state(std::string_view node) {
  if (auto r = check_node_name(node); !r) return Unexpected<Error>{r.error()};
  auto out = scontrol({options_.scontrol, "-o", "show", "node", std::string(node)});
  if (!out) return Unexpected<Error>{out.error()};
  auto state = parse_scontrol_node(*out);
  if (!state) return Unexpected<Error>{state.error()};
  if (state->name != node) return fail("scontrol answered for node {}", state->name);
  return state;
}

Result<NodeState> SlurmScheduler::state_for_action(std::string_view node) {
  auto r = std::exchange(remembered_, std::nullopt);
  if (r && r->state.name == node && std::chrono::steady_clock::now() - r->at <= kReuseWindow) return std::move(r->state);
  return read_state(node);
}

Result<Action> SlurmScheduler::act(std::vector<std::string> argv) {
  Action a;
  a.changed = true;
  a.dry_run = options_.dry_run;
  a.argv = std::move(argv);
  if (a.dry_run) return a;
  if (auto r = scontrol(a.argv); !r) return Unexpected<Error>{r.error()};
  return a;
}

Result<NodeState> SlurmScheduler::node_state(std::string_view node) {
  auto s = read_state(node);
  if (!s) return fail_on("state of", node, s.error());
  return s;
}

Result<Action> SlurmScheduler::drain(std::string_view node, std::string_view reason) {
  auto full = cmax_reason(reason);
  if (!full) return fail_on("drain", node, full.error());
  auto s = state_for_action(node);
  if (!s) return fail_on("drain", node, s.error());
  auto d = decide_drain(*s);
  if (!d.act) return unchanged(std::move(d.note));
  auto a = act(drain_argv(options_, node, *full));
  if (!a) return fail_on("drain", node, a.error());
  return a;
}

Result<Action> SlurmScheduler::resume(std::string_view node, Force force) {
  auto s = read_state(node);
  if (!s) return fail_on("resume", node, s.error());
  auto d = decide_resume(*s, force);
  if (!d) return fail_on("resume", node, d.error());
  if (!d->act) return unchanged(std::move(d->note));
  auto a = act(resume_argv(options_, node));
  if (!a) return fail_on("resume", node, a.error());
  return a;
}

Result<Action> SlurmScheduler::reboot(std::string_view node, std::string_view reason) {
  auto full = cmax_reason(reason);
  if (!full) return fail_on("reboot", node, full.error());
  auto s = state_for_action(node);
  if (!s) return fail_on("reboot", node, s.error());
  auto d = decide_reboot(*s);
  if (!d) return fail_on("reboot", node, d.error());
  if (!d->act) return unchanged(std::move(d->note));
  auto a = act(reboot_argv(options_, node, *full));
  if (!a) return fail_on("reboot", node, a.error());
  return a;
}

Result<PoolCount> SlurmScheduler::held_by_cmax(std::string_view node) {
  if (auto r = check_node_name(node); !r) return fail_on("count held nodes around", node, r.error());
  auto out = scontrol({options_.scontrol, "-o", "show", "node"}, kMaxAllNodesBytes);
  if (!out) return fail_on("count held nodes around", node, out.error());
  auto nodes = parse_scontrol_nodes(*out);
  if (!nodes) return fail_on("count held nodes around", node, nodes.error());
  remembered_.reset();
  for (auto& n : *nodes)
    if (n.name == node) remembered_ = Remembered{n, std::chrono::steady_clock::now()};
  return pool_count(*nodes, node);
}

}  // namespace cmax::sched
