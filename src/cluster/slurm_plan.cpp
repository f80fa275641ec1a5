#include "cluster/slurm_plan.h"

#include <set>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::cluster {

Result<std::vector<SinfoNode>> parse_sinfo_nodes(std::string_view text) {
  std::vector<SinfoNode> out;
  std::set<std::string, std::less<>> seen;
  for (auto raw : core::split_lines(text)) {
    auto line = core::trim(raw);
    if (line.empty()) continue;
    auto a = line.find('|');
    auto b = a == std::string_view::npos ? a : line.find('|', a + 1);
    if (b == std::string_view::npos)
      return fail("read sinfo output: expected NODE|STATE|REASON, got \"{}\"", core::clip(line, 120));
    SinfoNode n{std::string(core::trim(line.substr(0, a))), std::string(core::trim(line.substr(a + 1, b - a - 1))),
                std::string(core::trim(line.substr(b + 1)))};
    if (n.name.empty() || n.state.empty())
      return fail("read sinfo output: a node without a name or state in \"{}\"", core::clip(line, 120));
    if (seen.insert(n.name).second) out.push_back(std::move(n));
  }
  return out;
}

std::optional<NodeOutput> not_schedulable(const SinfoNode& node, bool overlap) {
  auto why = [&](std::string detail) {
    if (!node.reason.empty() && node.reason != "none") detail += fmt::format(" (reason: {})", node.reason);
    return NodeOutput{node.name, NodeStatus::not_scheduled, {}, std::move(detail), 0};
  };
  std::string_view state = node.state;
  if (state.ends_with('*'))
    return why(fmt::format("slurmctld reports the node not responding (state {}): its slurmd is down or unreachable",
                           node.state));
  // sinfo prints one word: idle, mixed, allocated, completing, drained, draining, down, fail,
  // failing, maint, reserved, planned, future, inval, unknown, perfctrs, reboot, powered_down...
  auto base = state.substr(0, state.find_first_of("~#!%$@^-+"));
  static const std::set<std::string_view> kAskable = {"idle", "mixed", "reserved", "planned"};
  if (kAskable.contains(base)) return std::nullopt;
  if (base == "allocated") {
    if (overlap) return std::nullopt;
    return why(fmt::format("busy with other jobs (state {}): run cmax inside their allocation (salloc, then cmax run "
                           "--harness slurm) or when the node is idle",
                           node.state));
  }
  if (base == "completing") {
    if (overlap) return std::nullopt;
    // No allocation can be had on a completing node, so salloc is no advice here.
    return why(fmt::format("a job on it is still ending (state {}): Slurm starts nothing there until its slurmd "
                           "reports the job's processes gone; a node that stays completing has lost its slurmd or "
                           "holds processes that will not die (scontrol show node, squeue -t CG, the slurmd log)",
                           node.state));
  }
  return why(fmt::format("Slurm will not start work there (state {})", node.state));
}

std::vector<std::string> srun_argv(const std::vector<std::string>& nodes, const SrunOptions& o) {
  const auto minutes = std::max<long long>(1, (o.node_timeout.count() + 59999) / 60000 + 1);
  std::vector<std::string> argv = {"srun",
                                   fmt::format("--nodes={}", nodes.size()),
                                   fmt::format("--ntasks={}", nodes.size()),
                                   "--ntasks-per-node=1",
                                   fmt::format("--nodelist={}", fmt::join(nodes, ",")),
                                   fmt::format("--job-name={}", o.job_name),
                                   "--label",
                                   "--kill-on-bad-exit=0",
                                   "--cpus-per-task=1",
                                   "--mpi=none",
                                   fmt::format("--time={}", minutes)};
  if (o.overlap) argv.push_back("--overlap");
  else argv.push_back(fmt::format("--immediate={}", std::max<long long>(1, o.queue_wait.count() / 1000)));
  if (!o.partition.empty()) argv.push_back(fmt::format("--partition={}", o.partition));
  if (!o.reservation.empty() && !o.overlap) argv.push_back(fmt::format("--reservation={}", o.reservation));
  argv.push_back("--");
  argv.insert(argv.end(), o.collect_argv.begin(), o.collect_argv.end());
  return argv;
}

std::optional<SrunEvent> parse_srun_error(std::string_view line) {
  line = core::trim(line);
  constexpr std::string_view kError = "srun: error: ";
  if (!line.starts_with(kError)) return std::nullopt;
  auto msg = line.substr(kError.size());
  // Task launch for StepId=3.0 failed on node n3: Communication connection failure
  if (auto at = msg.find(" failed on node "); msg.starts_with("Task launch for ") && at != std::string_view::npos) {
    auto rest = msg.substr(at + 16);
    auto colon = rest.find(':');
    std::string node(core::trim(rest.substr(0, colon)));
    // A node name is one word; anything else is not this message (and must not settle a node).
    if (node.empty() || node.find_first_of(" \t") != std::string::npos) return std::nullopt;
    return SrunEvent{std::move(node), NodeStatus::unreachable, std::string(msg)};
  }
  // n3: task 2: Exited with exit code 1   |   n3: task 2: Killed
  auto colon = msg.find(": task ");
  if (colon != std::string_view::npos && colon > 0 && msg.substr(0, colon).find(' ') == std::string_view::npos)
    return SrunEvent{std::string(msg.substr(0, colon)), NodeStatus::failed, std::string(msg.substr(colon + 2))};
  return std::nullopt;
}

Result<SrunPlan> plan_srun(const PlanInput& in, const SrunOptions& options) {
  SrunPlan plan;
  std::vector<const sched::Reservation*> active;
  for (const auto& r : in.reservations)
    if (r.state == "ACTIVE") active.push_back(&r);
  const sched::Reservation* named = nullptr;
  if (!in.reservation.empty() && !options.overlap) {
    for (const auto* r : active)
      if (r->name == in.reservation) named = r;
    if (named == nullptr)
      return fail("plan the cluster run: reservation {} is not active (scontrol show reservation {}); name an active "
                  "one with --reservation or leave the flag out",
                  in.reservation, in.reservation);
  }
  // Group order: outside any reservation first, then reservations as scontrol lists them.
  std::vector<SrunGroup> groups(1);
  auto group_of = [&](const std::string& reservation) -> SrunGroup& {
    for (auto& g : groups)
      if (g.reservation == reservation) return g;
    groups.push_back({reservation, {}, {}});
    return groups.back();
  };
  for (const auto& n : in.nodes) {
    const sched::Reservation* holder = nullptr;
    const sched::Reservation* refused = nullptr;
    if (!options.overlap) {
      for (const auto* r : active) {
        if (!r->contains(n.name)) continue;
        if (sched::user_may_use(*r, in.user)) {
          holder = r;
          break;
        }
        if (refused == nullptr) refused = r;
      }
    }
    if (named != nullptr && holder != named) {
      plan.skipped.push_back({n.name, NodeStatus::not_scheduled, {},
                              fmt::format("not in reservation {} (--reservation)", named->name), 0});
      continue;
    }
    if (holder == nullptr && refused != nullptr) {
      plan.skipped.push_back(
          {n.name, NodeStatus::not_scheduled, {},
           fmt::format("held by reservation {} (Users={}), which does not admit {}: run cmax as one of its users, or "
                       "when the reservation ends ({})",
                       refused->name, fmt::join(refused->users, ","), in.user.empty() ? "this user" : in.user,
                       refused->end_time.empty() ? "its EndTime" : refused->end_time),
           0});
      continue;
    }
    // Inside a reservation that admits us, Slurm shows its nodes reserved (or maint): both run.
    SinfoNode judged = n;
    if (holder != nullptr) {
      std::string_view base = std::string_view(n.state).substr(0, n.state.find_first_of("~#!%$@^-+*"));
      if (base == "maint") judged.state = "reserved" + n.state.substr(base.size());
    }
    if (auto skip = not_schedulable(judged, options.overlap)) {
      plan.skipped.push_back(std::move(*skip));
      continue;
    }
    plan.nodes.push_back(n.name);
    group_of(holder != nullptr ? holder->name : std::string()).nodes.push_back(n.name);
  }
  for (auto& g : groups) {
    if (g.nodes.empty()) continue;
    SrunOptions o = options;
    o.reservation = g.reservation;
    g.argv = srun_argv(g.nodes, o);
    if (!g.reservation.empty())
      plan.notes.push_back(fmt::format("{} node(s) held by reservation {}: asked inside it ({})", g.nodes.size(),
                                       g.reservation, fmt::join(g.nodes, ",")));
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

std::optional<std::string> parse_srun_queued(std::string_view line) {
  line = core::trim(line);
  constexpr std::string_view kJob = "srun: job ";
  constexpr std::string_view kQueued = " queued and waiting for resources";
  if (!line.starts_with(kJob) || !line.ends_with(kQueued)) return std::nullopt;
  auto id = line.substr(kJob.size(), line.size() - kJob.size() - kQueued.size());
  if (id.empty() || id.find_first_not_of("0123456789_+") != std::string_view::npos) return std::nullopt;
  return std::string(id);
}

std::optional<std::string> parse_srun_unavailable(std::string_view line) {
  constexpr std::string_view kPrefix = "Unable to allocate resources: ";
  auto at = line.find(kPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  auto why = core::trim(line.substr(at + kPrefix.size()));
  for (std::string_view s : {"Requested nodes are busy", "Required node not available", "Nodes required for job are DOWN",
                             "Requested node configuration is not available now", "Job is held"})
    if (why.starts_with(s)) return std::string(why);
  return std::nullopt;
}

bool is_reservation_refusal(std::string_view line) {
  return line.find("Access denied to requested reservation") != std::string_view::npos ||
         line.find("Problem using reservation") != std::string_view::npos ||
         line.find("Requested reservation is invalid") != std::string_view::npos;
}

bool is_fatal_srun_error(std::string_view line) {
  line = core::trim(line);
  for (std::string_view s : {"Unable to allocate resources", "Unable to create step", "Job step aborted",
                             "Application launch failed", "Immediate execution impossible"})
    if (line.find(s) != std::string_view::npos) return true;
  return false;
}

}  // namespace cmax::cluster
