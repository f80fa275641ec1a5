#include "agent/healthcheck.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "agent/kmsg_follow.h"
#include "signals/classify.h"
#include "signals/correlate.h"
#include "signals/drill_marker.h"
#include "signals/prefix.h"

namespace cmax::agent {

std::string HealthProblem::label() const {
  std::string what = kind == signals::Kind::xid    ? fmt::format("Xid {}", code)
                     : kind == signals::Kind::sxid ? fmt::format("SXid {}", code)
                                                   : std::string(signals::to_string(kind));
  return fmt::format("{}{}{} ({})", what, device.empty() ? "" : " ", device, signals::to_string(action));
}

Result<HealthReport> check_health(const HealthOptions& options, const signals::Catalog& catalog,
                                  std::vector<std::unique_ptr<probes::Probe>>& probes) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + options.budget;
  HealthReport report;
  signals::Correlator correlator(catalog);
  signals::DrillTracker drills;
  struct DrillLine {
    std::string drill, line;
  };
  std::vector<DrillLine> deferred;
  const double now_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::string> source_of;  // incident index -> source
  auto add = [&](const signals::Signal& sig, const signals::LineInfo& info, std::string_view line,
                 const std::string& source, std::string_view drill = {}) {
    signals::Event e{&options.node, &info, &sig, line, drill};
    if (!correlator.add(e)) return;
    auto index = correlator.last_incident();
    if (index && *index >= source_of.size()) source_of.resize(*index + 1, source);
  };

  if (!options.kmsg_path.empty()) {
    auto follower = KmsgFollower::open(options.kmsg_path, std::nullopt);
    if (!follower) return Unexpected<Error>{follower.error()};
    const std::string kmsg = "kmsg";
    for (;;) {
      if (Clock::now() >= deadline) {
        report.truncated = true;
        report.notes.push_back("the budget ran out before the end of the kernel log");
        break;
      }
      auto rec = follower->next(std::chrono::milliseconds(0));
      if (!rec) return Unexpected<Error>{rec.error()};
      if (!*rec) break;
      ++report.records;
      auto info = signals::parse_line_prefix((*rec)->line, 1970);
      if (info.message.find(signals::kDrillMarker) != std::string_view::npos)
        if (auto mk = signals::parse_drill_marker(info.message)) {
          drills.on_marker(options.node, *mk);
          continue;
        }
      if (options.act_on == Origins::kernel && !(*rec)->from_kernel()) continue;
      auto sig = signals::classify(info.message);
      if (!sig) continue;
      // A drill's lines count while the drill runs (the check is what it tests), not after; its
      // end marker comes after its lines, so they are judged once the whole log is read.
      if (auto drill = drills.match(options.node, info.message, now_unix)) {
        deferred.push_back({drill->id, std::string((*rec)->line)});
        continue;
      }
      add(*sig, info, (*rec)->line, kmsg);
    }
  }

  for (const auto& d : deferred) {
    if (!drills.live(options.node, d.drill, now_unix)) {
      ++report.drill_lines_ended;
      continue;
    }
    auto info = signals::parse_line_prefix(d.line, 1970);
    if (auto sig = signals::classify(info.message)) add(*sig, info, d.line, "kmsg", d.drill);
  }

  for (auto& probe : probes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      report.notes.push_back(fmt::format("probe {}: not run, the budget ran out", probe->name()));
      continue;
    }
    auto found = probe->poll(left);
    if (!found) {
      report.notes.push_back(fmt::format("probe {}: {}", probe->name(), found.error().message));
      continue;
    }
    for (const auto& p : probe->problems()) report.notes.push_back(fmt::format("probe {}: {}", probe->name(), p));
    const std::string source = fmt::format("probe:{}", probe->name());
    for (const auto& f : *found) {
      const signals::Signal sig = probes::signal_of(f);
      signals::LineInfo info;
      info.message = f.text;
      add(sig, info, f.text, source);
    }
  }

  const auto& incidents = correlator.incidents();
  for (std::size_t i = 0; i < incidents.size(); ++i) {
    const auto& inc = incidents[i];
    if (inc.resolved || inc.action < options.drain_at) continue;
    report.problems.push_back(HealthProblem{inc.kind, inc.code, inc.device, inc.action, inc.count,
                                            i < source_of.size() ? source_of[i] : "kmsg", inc.sample, inc.drill});
  }
  std::stable_sort(report.problems.begin(), report.problems.end(),
                   [](const HealthProblem& a, const HealthProblem& b) { return a.action > b.action; });
  return report;
}

SlurmHealth parse_slurm_node_is_healthy(const char* value) {
  if (!value) return SlurmHealth::unset;
  if (std::strcmp(value, "yes") == 0) return SlurmHealth::yes;
  if (std::strcmp(value, "no") == 0) return SlurmHealth::no;
  return SlurmHealth::unset;
}

HealthAction decide_health_action(SlurmHealth slurm, bool healthy) {
  using V = HealthAction::Verb;
  switch (slurm) {
    case SlurmHealth::unset:
      return {V::none,
              "SLURM_NODE_IS_HEALTHY is not set (slurmd has not registered yet, or is older than 26.05.2): "
              "scontrol is not called"};
    case SlurmHealth::yes:
      return healthy ? HealthAction{V::none, "healthy, and Slurm has the node in service"}
                     : HealthAction{V::drain, "unhealthy while Slurm has the node in service"};
    case SlurmHealth::no:
      return healthy ? HealthAction{V::resume, "healthy again while Slurm holds the node"}
                     : HealthAction{V::none, "unhealthy, and Slurm already holds the node"};
  }
  return {V::none, ""};
}

}  // namespace cmax::agent
