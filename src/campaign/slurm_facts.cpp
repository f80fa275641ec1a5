#include "campaign/slurm_facts.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace cmax::campaign {

void add_sinfo_nodes(Facts& facts, std::string_view out) {
  std::set<std::string> seen(facts.nodes.begin(), facts.nodes.end());
  while (!out.empty()) {
    auto nl = out.find('\n');
    std::string_view line = out.substr(0, nl);
    out.remove_prefix(nl == std::string_view::npos ? out.size() : nl + 1);
    auto a = line.find(' ');
    if (a == std::string_view::npos) continue;
    std::string node(line.substr(0, a));
    auto b = line.find(' ', a + 1);
    std::string state(line.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1));
    if (b != std::string_view::npos && line.substr(b + 1).find("gpu") != std::string_view::npos) facts.gpu = true;
    if (seen.insert(node).second) facts.nodes.push_back(node);
    // "reserved" is idle inside an active reservation: a trial node free for a job inside it.
    if (state == "idle" || state == "reserved") facts.idle.push_back(node);
  }
}

// A step runs inside one reservation, and the NCCL sweep takes the first: the one with the most
// idle nodes.
void note_trial_nodes(Facts& facts, const std::vector<sched::Reservation>& list, std::string_view user) {
  std::vector<std::pair<std::string, std::vector<std::string>>> usable;
  for (const auto& res : list) {
    if (res.state != "ACTIVE" || res.nodes.empty() || res.has_flag("MAINT")) continue;
    if (!sched::user_may_use(res, user)) continue;
    std::vector<std::string> idle;
    for (const auto& n : res.nodes)
      if (std::find(facts.idle.begin(), facts.idle.end(), n) != facts.idle.end()) idle.push_back(n);
    if (!idle.empty()) usable.emplace_back(res.name, std::move(idle));
  }
  std::stable_sort(usable.begin(), usable.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (const auto& [name, idle] : usable) {
    facts.trial_reservations.push_back(name);
    for (const auto& n : idle)
      if (std::find(facts.trial_nodes.begin(), facts.trial_nodes.end(), n) == facts.trial_nodes.end())
        facts.trial_nodes.push_back(n);
  }
  if (!usable.empty()) facts.trial_nccl_nodes = usable.front().second;
}

std::vector<std::string> note_drill_target(Facts& facts, const std::vector<sched::Reservation>& list,
                                           std::string_view user) {
  std::vector<std::string> notes;
  for (const auto& res : list) {
    if (!facts.allow_disruptive || (!facts.drill_node.empty() && !facts.reservation.empty())) break;
    if (!res.has_flag("REPLACE_DOWN") || res.state != "ACTIVE" || res.nodes.empty()) continue;
    if (!sched::user_may_use(res, user)) continue;
    if (!facts.reservation.empty() && res.name != facts.reservation) continue;
    if (facts.reservation.empty()) facts.reservation = res.name;
    if (facts.drill_node.empty()) facts.drill_node = res.nodes.front();
    notes.push_back(fmt::format("drill target from Slurm: node {} in reservation {} (REPLACE_DOWN: its spares "
                                "replace a drained node)",
                                facts.drill_node, facts.reservation));
  }
  return notes;
}

}  // namespace cmax::campaign
