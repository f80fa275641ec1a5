#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "sla/parse.h"

namespace cmax::sla {

EventSet intervals_from_actions(const std::vector<NodeAction>& actions) {
  EventSet set;
  const std::int32_t drained = set.state("drain"), rebooting = set.state("reboot");
  std::unordered_map<std::int32_t, std::int64_t> open_since;  // node -> drain time
  for (const auto& a : actions) {
    ++set.records;
    if (a.status != "done") continue;
    if (a.node.empty() || !std::isfinite(a.t_requested) || !std::isfinite(a.t_done) || a.t_requested < 0) {
      set.anomalies.malformed.add(fmt::format("{} {}: no node or no time", a.verb, a.node));
      continue;
    }
    const std::int32_t node = set.node(a.node);
    // The node is out of service from the moment the drain was asked for: the agent asks because
    // the node already failed.
    const auto t = static_cast<std::int64_t>(a.t_requested);
    if (a.verb == "drain") {
      if (open_since.count(node)) {
        set.anomalies.duplicated.add(fmt::format("{}: drain at {} while drained since {}", a.node, t, open_since[node]));
        continue;
      }
      open_since[node] = t;
    } else if (a.verb == "resume") {
      auto it = open_since.find(node);
      if (it == open_since.end()) {
        set.anomalies.unmatched.add(fmt::format("{}: resume at {} without a drain", a.node, t));
        continue;
      }
      set.intervals.push_back(RawInterval{it->second, t, node, drained});
      open_since.erase(it);
    } else if (a.verb == "reboot") {
      const auto done = static_cast<std::int64_t>(std::max(a.t_done, a.t_requested));
      set.intervals.push_back(RawInterval{t, done, node, rebooting});
    }
  }
  // Drains never resumed: open-ended, in node order so the output is deterministic.
  std::vector<std::pair<std::int32_t, std::int64_t>> still(open_since.begin(), open_since.end());
  std::sort(still.begin(), still.end());
  for (auto [node, since] : still) set.intervals.push_back(RawInterval{since, kOpenEnd, node, drained});
  return set;
}

}  // namespace cmax::sla
