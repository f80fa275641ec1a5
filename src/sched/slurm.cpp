#include "sched/slurm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/process.h"
#include "core/strings.h"
#include "sched/policy.h"
#include "sched/slurm_parse.h"
#include "sched/slurm_reservation.h"

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

std::string claim_name(std::string_view node) { return "cmax_hold_" + std::string(node); }

std::vector<std::string> claim_argv(const SlurmOptions& options, std::string_view node) {
  return {options.scontrol,  "create",        "reservation",         "ReservationName=" + claim_name(node),
          "Licenses=" + options.breaker_license + ":1", "StartTime=now", "Duration=UNLIMITED", "Users=root",
          "Flags=ANY_NODES", "NodeCnt=0"};
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
  held_all_.clear();
  for (auto& n : *nodes) {
    if (n.name == node) remembered_ = Remembered{n, std::chrono::steady_clock::now()};
    if (sched::held_by_cmax(n)) held_all_.push_back(n.name);
  }
  return pool_count(*nodes, node);
}

namespace {

// "2026-12-07T03:22:05" as scontrol prints it (local time) -> seconds since the epoch; nullopt
// when it is not that.
std::optional<std::time_t> slurm_time(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return t;
}

bool says(const Error& e, std::string_view text) { return e.message.find(text) != std::string::npos; }

}  // namespace

Result<Claim> SlurmScheduler::claim_hold(std::string_view node, const PoolCount& pool, int limit) {
  constexpr std::string_view kAction = "claim a fleet-breaker slot for";
  constexpr auto kNoLicenseRetry = std::chrono::minutes(10);
  if (options_.breaker_license.empty()) return Claim{};
  if (auto r = check_node_name(node); !r) return fail_on(kAction, node, r.error());
  if (options_.dry_run) return Claim{true, false, "dry run: no reservation made"};
  if (pool.node_held) return Claim{true, true, "already held"};
  const auto not_exact = [&] {
    return Claim{true, false,
                 fmt::format("fleet breaker not exact (read-then-act): slurmctld has no license {}; add "
                             "Licenses={}:{} to slurm.conf (the breaker's limit) and scontrol reconfigure",
                             options_.breaker_license, options_.breaker_license, std::max(1, limit))};
  };
  if (no_license_since_ && std::chrono::steady_clock::now() - *no_license_since_ < kNoLicenseRetry) return not_exact();
  const std::string name = claim_name(node);
  const auto granted = [&](std::string_view how) {
    return Claim{true, true, fmt::format("{} reservation {} (license {})", how, name, options_.breaker_license)};
  };
  auto made = scontrol(claim_argv(options_, node));
  if (made) return granted("took");
  if (says(made.error(), "Duplicate reservation name")) return granted("already took");
  if (!says(made.error(), "Invalid license specification")) return fail_on(kAction, node, made.error());

  // No unit left, or no such license: which?
  auto lic = scontrol({options_.scontrol, "-o", "show", "license", options_.breaker_license});
  if (!lic || lic->find("LicenseName=" + options_.breaker_license) == std::string::npos) {
    no_license_since_ = std::chrono::steady_clock::now();
    return not_exact();
  }
  no_license_since_.reset();
  // Claims whose node is back in service (or never got drained) and that are older than the TTL
  // give their unit back; then one more try.
  std::vector<std::string> holders;
  int swept = 0;
  if (auto listed = scontrol({options_.scontrol, "-o", "show", "reservation"}, 16u << 20)) {
    auto resvs = parse_scontrol_reservations(*listed);
    const auto now = std::time(nullptr);
    for (const auto& r : resvs ? *resvs : std::vector<Reservation>{}) {
      if (r.name.rfind("cmax_hold_", 0) != 0) continue;
      const std::string holder = r.name.substr(10);
      const bool held = std::find(held_all_.begin(), held_all_.end(), holder) != held_all_.end();
      const auto start = slurm_time(r.start_time);
      const bool young = !start || now - *start < options_.claim_ttl.count();
      if (held || young) {
        holders.push_back(holder);
        continue;
      }
      if (scontrol({options_.scontrol, "delete", "reservation", r.name})) ++swept;
    }
  }
  if (swept > 0) {
    auto again = scontrol(claim_argv(options_, node));
    if (again || says(again.error(), "Duplicate reservation name")) return granted("took");
  }
  std::sort(holders.begin(), holders.end());
  return Claim{false, true,
               fmt::format("fleet circuit breaker: every unit of license {} is claimed ({}); cmax holds {} of {} nodes "
                           "in {} (limit {}){}",
                           options_.breaker_license, core::clip(fmt::format("{}", fmt::join(holders, ", ")), 300),
                           pool.held, pool.total, pool.pool, limit,
                           swept > 0 ? fmt::format("; {} stale claims deleted and lost again", swept) : "")};
}

Result<void> SlurmScheduler::release_hold(std::string_view node) {
  if (options_.breaker_license.empty() || options_.dry_run) return ok();
  if (auto r = check_node_name(node); !r) return fail_on("release the fleet-breaker slot of", node, r.error());
  auto r = scontrol({options_.scontrol, "delete", "reservation", claim_name(node)});
  if (!r && !says(r.error(), "Requested reservation is invalid") && !says(r.error(), "Invalid reservation"))
    return fail_on("release the fleet-breaker slot of", node, r.error());
  return ok();
}

}  // namespace cmax::sched
