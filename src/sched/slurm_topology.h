#pragma once
// `scontrol show topology`: the switches of topology/tree ("SwitchName=leaf1 Level=0 LinkSpeed=1
// Nodes=n[1-2] Switches=(null)") and the blocks of topology/block ("BlockName=b1 BlockIndex=0
// Nodes=gb[001-018] BlockSize=18"), one per line. Slurm lists every node below a switch on its line,
// so an upper switch names all the nodes of its leaves. Pure; no I/O.

#include <string>
#include <string_view>
#include <vector>

namespace cmax::sched {

struct TopologyUnit {
  std::string name;
  bool block = false;   ///< a BlockName= line (topology/block); else a SwitchName= line
  std::string nodes;    ///< the Nodes= hostlist as printed; "" when absent or "(null)"
  int level = -1;       ///< a switch's Level= (0 = leaf), -1 when absent or not a number
};

/// Every SwitchName= or BlockName= line of `text`, in order. Lines that start with another key (or
/// none) are skipped: the caller says what it looked for and did not find.
std::vector<TopologyUnit> parse_scontrol_topology(std::string_view text);

}  // namespace cmax::sched
