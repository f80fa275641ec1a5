// `scontrol show topology` as Slurm prints it (src/scontrol/info_topo.c: "SwitchName=%s Level=%u
// LinkSpeed=%u Nodes=%s Switches=%s"; topology/block: "BlockName=%s BlockIndex=%u Nodes=%s
// BlockSize=%u"), read by sched::parse_scontrol_topology for `cmax drill run --rack`.

#include <gtest/gtest.h>

#include "sched/slurm_topology.h"

namespace cmax::sched {
namespace {

TEST(SlurmTopology, TreeSwitchesWithTheirLevelsAndNodes) {
  // Slurm 22.05 on the test cluster: a spine above two leaves lists every node below it.
  const auto units = parse_scontrol_topology(
      "SwitchName=rack1 Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
      "SwitchName=rack2 Level=0 LinkSpeed=1 Nodes=n[3-4]\n"
      "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=rack[1-2]\n");
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0].name, "rack1");
  EXPECT_FALSE(units[0].block);
  EXPECT_EQ(units[0].nodes, "n[1-2]");
  EXPECT_EQ(units[0].level, 0);
  EXPECT_EQ(units[2].name, "spine");
  EXPECT_EQ(units[2].nodes, "n[1-4]");
  EXPECT_EQ(units[2].level, 1);
}

TEST(SlurmTopology, BlocksOfTopologyBlock) {
  const auto units = parse_scontrol_topology(
      "BlockName=rack1 BlockIndex=0 Nodes=gb[001-018] BlockSize=18\n"
      "BlockName=rack2 BlockIndex=1 Nodes=gb[019-036] BlockSize=18\n");
  ASSERT_EQ(units.size(), 2u);
  EXPECT_TRUE(units[1].block);
  EXPECT_EQ(units[1].name, "rack2");
  EXPECT_EQ(units[1].nodes, "gb[019-036]");
  EXPECT_EQ(units[1].level, -1);
}

TEST(SlurmTopology, NullNodesOtherLinesAndGarbage) {
  const auto units = parse_scontrol_topology(
      "  SwitchName=empty Level=x LinkSpeed=1 Nodes=(null) Switches=(null)\n"
      "Topology is not configured\n"
      "NodeName=n1 Arch=x86_64\n"
      "SwitchName= Level=0 Nodes=n1\n"
      "\n"
      "garbage=\xff\xfe SwitchName=late Nodes=n9\n");
  ASSERT_EQ(units.size(), 1u) << "only lines that start with SwitchName= or BlockName= and name something";
  EXPECT_EQ(units[0].name, "empty");
  EXPECT_EQ(units[0].nodes, "");
  EXPECT_EQ(units[0].level, -1);
  EXPECT_TRUE(parse_scontrol_topology("").empty());
}

}  // namespace
}  // namespace cmax::sched
