// parse_scontrol_node and parse_slurm_state on lines captured from Slurm 22.05.8
// (tests/golden/slurm_node) and on broken input, which must give an error and never crash.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sched/policy.h"
#include "sched/slurm_parse.h"

using cmax::sched::NodeState;
using cmax::sched::parse_scontrol_node;
using cmax::sched::parse_slurm_state;

namespace {

std::string golden(const std::string& name) {
  auto path = std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "slurm_node" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

NodeState parse_golden(const std::string& name) {
  auto r = parse_scontrol_node(golden(name));
  EXPECT_TRUE(r) << name << ": " << r.error().message;
  return r ? *r : NodeState{};
}

using Flags = std::vector<std::string>;

}  // namespace

TEST(SlurmParse, IdleNodeWithoutReason) {
  auto n = parse_golden("idle.txt");
  EXPECT_EQ(n.name, "n1");
  EXPECT_EQ(n.state, "IDLE");
  EXPECT_EQ(n.base, "IDLE");
  EXPECT_TRUE(n.flags.empty());
  EXPECT_EQ(n.reason, "");
  EXPECT_FALSE(n.drain_flag());
  EXPECT_FALSE(n.drained());
  EXPECT_FALSE(n.not_responding());
}

TEST(SlurmParse, CmaxReasonKeepsSpacesAndEqualsSignsAndDropsUserAndTime) {
  auto n = parse_golden("idle_drain_cmax.txt");
  EXPECT_EQ(n.state, "IDLE+DRAIN");
  EXPECT_EQ(n.flags, Flags{"DRAIN"});
  EXPECT_TRUE(n.drained());
  EXPECT_FALSE(n.draining());
  EXPECT_EQ(n.reason, "cmax: Xid 79 x=y  two  spaces");
  EXPECT_EQ(n.reason_user, "root");
  EXPECT_EQ(n.reason_time, "2026-12-02T18:34:40");
}

TEST(SlurmParse, ForeignReasonWithItsOwnBrackets) {
  auto n = parse_golden("idle_drain_foreign.txt");
  EXPECT_EQ(n.name, "n3");
  EXPECT_EQ(n.reason, "maintenance");
  auto m = parse_golden("mixed_drain_foreign.txt");
  EXPECT_EQ(m.state, "MIXED+DRAIN");
  EXPECT_EQ(m.reason, "maintenance ticket [OPS-1234]");
  EXPECT_EQ(m.reason_time, "2026-12-02T18:39:05");
  EXPECT_TRUE(m.draining());
  EXPECT_FALSE(m.drained());
}

TEST(SlurmParse, MixedAndAllocated) {
  auto m = parse_golden("mixed.txt");
  EXPECT_EQ(m.base, "MIXED");
  EXPECT_FALSE(m.drain_flag());
  auto a = parse_golden("allocated_drain.txt");
  EXPECT_EQ(a.base, "ALLOCATED");
  EXPECT_TRUE(a.draining());
  EXPECT_EQ(a.reason, "cmax: Xid 79 on GPU 3");
}

TEST(SlurmParse, DownDrainAndNotResponding) {
  auto d = parse_golden("down_drain.txt");
  EXPECT_EQ(d.state, "DOWN+DRAIN");
  EXPECT_TRUE(d.down());
  EXPECT_TRUE(d.drained());
  auto nr = parse_golden("down_drain_not_responding.txt");
  EXPECT_EQ(nr.flags, (Flags{"DRAIN", "NOT_RESPONDING"}));
  EXPECT_TRUE(nr.not_responding());
  EXPECT_EQ(nr.reason, "cmax: Xid 48 double-bit ECC");
  auto i = parse_golden("idle_not_responding.txt");
  EXPECT_EQ(i.state, "IDLE+NOT_RESPONDING");
  EXPECT_TRUE(i.not_responding());
  EXPECT_FALSE(i.drain_flag());
}

TEST(SlurmParse, RebootRequestedAndIssuedBesideNextState) {
  auto r = parse_golden("reboot_requested.txt");
  EXPECT_EQ(r.name, "spare1");
  EXPECT_EQ(r.state, "IDLE+DRAIN+REBOOT_REQUESTED");  // not NextState=RESUME
  EXPECT_TRUE(r.has_flag("REBOOT_REQUESTED"));
  auto i = parse_golden("reboot_issued.txt");
  EXPECT_EQ(i.base, "DOWN");
  EXPECT_TRUE(i.has_flag("REBOOT_ISSUED"));
  EXPECT_EQ(i.reason, "cmax: Xid 79 GPU has fallen off the bus : reboot issued");
}

TEST(SlurmParse, ReasonWithoutUserAndFieldsAfterIt) {
  auto r = parse_scontrol_node("NodeName=n2 State=DOWN+NOT_RESPONDING Reason=Not responding\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reason, "Not responding");
  EXPECT_EQ(r->reason_user, "");
  auto c = parse_scontrol_node(
      "NodeName=n2 State=IDLE+DRAIN Reason=cmax: a [b@c] d [slurm@2026-12-02T18:00:00] Comment=x "
      "y");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->reason, "cmax: a [b@c] d");
  EXPECT_EQ(c->reason_user, "slurm");
  // A bracket followed by free text is part of the reason, not Slurm's suffix.
  auto t = parse_scontrol_node(
      "NodeName=n2 State=IDLE+DRAIN Reason=cmax: x [root@2026-12-02T18:00:00] more");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->reason, "cmax: x [root@2026-12-02T18:00:00] more");
}

TEST(SlurmParse, SinfoSuffixesBecomeFlags) {
  auto s = parse_slurm_state("IDLE*");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->base, "IDLE");
  EXPECT_EQ(s->flags, Flags{"NOT_RESPONDING"});
  auto d = parse_slurm_state("DOWN+DRAIN*");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->flags, (Flags{"DRAIN", "NOT_RESPONDING"}));
  auto n = parse_slurm_state("IDLE+NOT_RESPONDING*");  // not listed twice
  ASSERT_TRUE(n);
  EXPECT_EQ(n->flags, Flags{"NOT_RESPONDING"});
  auto rb = parse_slurm_state("IDLE@");
  ASSERT_TRUE(rb);
  EXPECT_EQ(rb->flags, Flags{"REBOOT_REQUESTED"});
}

TEST(SlurmParse, BadStatesAreErrors) {
  for (const char* bad :
       {"", "*", "IDL", "idle", "IDLE+", "+DRAIN", "IDLE++DRAIN", "IDLE+drain", "IDLE+DR AIN"}) {
    auto s = parse_slurm_state(bad);
    EXPECT_FALSE(s) << bad;
  }
  auto s = parse_slurm_state("BOGUS+DRAIN");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("unknown base state \"BOGUS\""), std::string::npos)
      << s.error().message;
}

TEST(SlurmParse, GarbageIsAClearError) {
  struct Case {
    const char* input;
    const char* expect;
  } cases[] = {
      {"", "printed nothing"},
      {"\n\n", "printed nothing"},
      {"Node nosuch not found", "not a node line"},
      {"slurm_load_node error: Unable to contact slurm controller (connect failure)",
       "not a node line"},
      {"NodeName=n1 State=IDLE\nNodeName=n2 State=IDLE\n", "2 lines"},
      {"NodeName=n1 Arch=x86_64 CoresPer", "no State="},
      {"State=IDLE NodeName=n1", "no NodeName= first"},
      {"NodeName= State=IDLE", "empty NodeName="},
      {"NodeName=n1 State=IDL", "unknown base state"},
      {"=x NodeName=n1", "not a node line"},
  };
  for (const auto& c : cases) {
    auto r = parse_scontrol_node(c.input);
    ASSERT_FALSE(r) << c.input;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
        << c.input << " -> " << r.error().message;
  }
}

TEST(SlurmParse, EveryTruncationOfARealLineIsAValueOrAnError) {
  std::string line = golden("reboot_issued.txt");
  for (std::size_t n = 0; n <= line.size(); ++n) {
    auto r = parse_scontrol_node(std::string_view(line).substr(0, n));
    if (r) {
      EXPECT_FALSE(r->name.empty());
    }
  }
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>((i * 7919) & 0xff));
  EXPECT_FALSE(parse_scontrol_node(bytes));
}

namespace {

// `scontrol -o show node` for every node is the golden lines one after another.
TEST(SlurmParse, AllNodesParseWithTheirPartitions) {
  std::string all;
  for (const char* name : {"idle.txt", "idle_drain_cmax.txt", "mixed_drain_foreign.txt", "down_drain.txt"})
    all += golden(name);
  auto nodes = cmax::sched::parse_scontrol_nodes(all);
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4u);
  for (const auto& n : *nodes) EXPECT_FALSE(n.partitions.empty()) << n.name;
  auto empty = cmax::sched::parse_scontrol_nodes("\n");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  auto bad = cmax::sched::parse_scontrol_nodes(golden("idle.txt") + "NodeName=x State=BOGUS\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
}

TEST(SlurmParse, PoolCountsCmaxHoldsInTheNodesPartitions) {
  auto node = [](std::string name, std::string state, std::string reason, std::vector<std::string> parts) {
    NodeState s;
    s.name = std::move(name);
    auto st = parse_slurm_state(state);
    s.state = state;
    s.base = st->base;
    s.flags = st->flags;
    s.reason = std::move(reason);
    s.partitions = std::move(parts);
    return s;
  };
  std::vector<NodeState> nodes{
      node("a1", "IDLE+DRAIN", "cmax: Xid 79", {"gpu"}),
      node("a2", "IDLE+DRAIN", "maintenance", {"gpu"}),       // someone else's
      node("a3", "MIXED", "", {"gpu", "debug"}),
      node("a4", "DOWN+DRAIN", "cmax: ib_port_down", {"gpu"}),
      node("b1", "IDLE+DRAIN", "cmax: Xid 79", {"cpu"}),       // another partition
  };
  auto c = cmax::sched::pool_count(nodes, "a3");
  EXPECT_EQ(c.pool, "partition gpu,debug");
  EXPECT_EQ(c.total, 4);
  EXPECT_EQ(c.held, 2);
  EXPECT_FALSE(c.node_held);
  auto self = cmax::sched::pool_count(nodes, "a1");
  EXPECT_TRUE(self.node_held);
  auto unknown = cmax::sched::pool_count(nodes, "zz");  // not listed: every node
  EXPECT_EQ(unknown.pool, "all nodes");
  EXPECT_EQ(unknown.total, 5);
  EXPECT_EQ(unknown.held, 3);
}

}  // namespace
