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
  if (base == "allocated" || base == "completing") {
    if (overlap) return std::nullopt;
    return why(fmt::format("busy with other jobs (state {}): run cmax inside their allocation (salloc, then cmax run "
                           "--harness slurm) or when the node is idle",
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
  else argv.push_back(fmt::format("--immediate={}", std::max<long long>(1, o.node_timeout.count() / 1000)));
  if (!o.partition.empty()) argv.push_back(fmt::format("--partition={}", o.partition));
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

bool is_fatal_srun_error(std::string_view line) {
  line = core::trim(line);
  for (std::string_view s : {"Unable to allocate resources", "Unable to create step", "Job step aborted",
                             "Application launch failed", "Immediate execution impossible"})
    if (line.find(s) != std::string_view::npos) return true;
  return false;
}

}  // namespace cmax::cluster
