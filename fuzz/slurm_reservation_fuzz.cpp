// libFuzzer target: the parser of `scontrol -o show reservation` lines and Slurm hostlists.
// Invariants: no crash and no unbounded allocation on any bytes; an expansion never exceeds
// kMaxHostlistNames and holds no empty name, separator or bracket; a parsed reservation has a name
// and a state, and node names of the same kind.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "drill/reservation.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_names(const std::vector<std::string>& names) {
  check(names.size() <= cmax::drill::kMaxHostlistNames);
  for (const auto& n : names) check(!n.empty() && n.find_first_of(",[] \n") == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = cmax::drill::parse_scontrol_reservation(in)) {
    check(!r->name.empty() && !r->state.empty() && r->node_cnt >= 0);
    check_names(r->nodes);
  }
  if (auto names = cmax::drill::expand_hostlist(in)) check_names(*names);
  return 0;
}
