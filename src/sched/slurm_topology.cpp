#include "sched/slurm_topology.h"

#include <limits>

#include "core/strings.h"
#include "sched/scontrol_fields.h"

namespace cmax::sched {

std::vector<TopologyUnit> parse_scontrol_topology(std::string_view text) {
  std::vector<TopologyUnit> out;
  std::vector<ScontrolField> fields;
  for (auto line : core::split_lines(text)) {
    fields.clear();
    split_scontrol_fields(core::trim(line), fields);
    if (fields.empty() || (fields.front().key != "SwitchName" && fields.front().key != "BlockName")) continue;
    TopologyUnit u;
    u.block = fields.front().key == "BlockName";
    u.name = fields.front().value;
    if (u.name.empty()) continue;
    if (const auto* n = find_scontrol_field(fields, "Nodes"); n != nullptr && *n != "(null)") u.nodes = *n;
    if (const auto* l = find_scontrol_field(fields, "Level"))
      if (const auto v = core::parse_uint(*l); v && *v <= static_cast<unsigned>(std::numeric_limits<int>::max()))
        u.level = static_cast<int>(*v);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace cmax::sched
