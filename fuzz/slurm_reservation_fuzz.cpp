// libFuzzer target: the parsers of the Slurm objects a drill watches (`scontrol -o show
// reservation`, `partition` and `job` lines, `scontrol show topology`) and Slurm hostlists.
// Invariants: no crash and no unbounded allocation on any bytes; an expansion never exceeds
// kMaxHostlistNames and holds no empty name, separator or bracket; a parsed reservation has a name
// and a state, a partition a name, a job an id and a state, all with node names of the same kind;
// a topology unit has a name.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sched/slurm_reservation.h"
#include "sched/slurm_topology.h"
#include "drill/slurm_objects.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_names(const std::vector<std::string>& names) {
  check(names.size() <= cmax::sched::kMaxHostlistNames);
  for (const auto& n : names) check(!n.empty() && n.find_first_of(",[] \n") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = cmax::sched::parse_scontrol_reservation(in)) {
    check(!r->name.empty() && !r->state.empty() && r->node_cnt >= 0);
    check_names(r->nodes);
  }
  if (auto p = cmax::drill::parse_scontrol_partition(in)) {
    check(!p->name.empty());
    check_names(p->nodes);
  }
  if (auto j = cmax::drill::parse_scontrol_job(in)) {
    check(!j->id.empty() && !j->state.empty() && j->restarts >= 0);
    check_names(j->nodes);
  }
  if (auto all = cmax::sched::parse_scontrol_reservations(in)) {
    for (const auto& r : *all) {
      check(!r.name.empty() && !r.state.empty());
      check_names(r.nodes);
      (void)cmax::sched::user_may_use(r, "root");
    }
  }
  for (const auto& u : cmax::sched::parse_scontrol_topology(in)) {
    check(!u.name.empty() && u.nodes != "(null)" && u.level >= -1);
    if (auto names = cmax::sched::expand_hostlist(u.nodes)) check_names(*names);
  }
  if (auto names = cmax::sched::expand_hostlist(in)) check_names(*names);
  return 0;
}
