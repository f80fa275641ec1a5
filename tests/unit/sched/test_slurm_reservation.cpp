// expand_hostlist on Slurm's hostlist syntax, and parse_scontrol_reservation on lines captured from
// Slurm 22.05.8 (tests/golden/slurm_reservation) and on broken input, which must give an error and
// never crash.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sched/slurm_reservation.h"

using cmax::sched::expand_hostlist;
using cmax::sched::parse_scontrol_reservation;
using cmax::sched::Reservation;
using Names = std::vector<std::string>;

namespace {

std::string golden(const std::string& name) {
  auto path =
      std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "slurm_reservation" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Reservation parse_golden(const std::string& name) {
  auto r = parse_scontrol_reservation(golden(name));
  EXPECT_TRUE(r) << name << ": " << r.error().message;
  return r ? *r : Reservation{};
}

Names expand(std::string_view hostlist) {
  auto r = expand_hostlist(hostlist);
  EXPECT_TRUE(r) << hostlist << ": " << r.error().message;
  return r ? *r : Names{};
}

}  // namespace

TEST(Hostlist, PlainNamesRangesAndLists) {
  EXPECT_EQ(expand(""), Names{});
  EXPECT_EQ(expand("n1"), Names{"n1"});
  EXPECT_EQ(expand("n[1-3,5],spare1"), (Names{"n1", "n2", "n3", "n5", "spare1"}));
  EXPECT_EQ(expand("n[1-2],spare[1-2]"), (Names{"n1", "n2", "spare1", "spare2"}));
  EXPECT_EQ(expand("n[8-11]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand("n[7]"), Names{"n7"});
  EXPECT_EQ(expand("[1-2]"), (Names{"1", "2"}));
  EXPECT_EQ(expand("node-a.b_c"), Names{"node-a.b_c"});
}

TEST(Hostlist, ZeroPaddingKeepsTheLowerBoundsWidth) {
  auto gpus = expand("gpu[01-10]");
  ASSERT_EQ(gpus.size(), 10u);
  EXPECT_EQ(gpus.front(), "gpu01");
  EXPECT_EQ(gpus[8], "gpu09");
  EXPECT_EQ(gpus.back(), "gpu10");
  EXPECT_EQ(expand("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand("n[0-1]"), (Names{"n0", "n1"}));
  EXPECT_EQ(expand("n[007]"), Names{"n007"});
}

TEST(Hostlist, SeveralBracketsInOneNameMultiply) {
  EXPECT_EQ(expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand("r[1-2]-gpu[01,03].x"),
            (Names{"r1-gpu01.x", "r1-gpu03.x", "r2-gpu01.x", "r2-gpu03.x"}));
}

TEST(Hostlist, MalformedIsAnError) {
  for (const char* bad : {"n[1-3", "n1-3]", "n[3-1]", "n[a-b]", "n[]", "n[[1]]", "n[1-]", "n[-1]",
                          "n[1-2-3]", "n[1,,2]", "n1,,n2", "n1,", ",n1", "n 1", "n1\n", "n[1]]",
                          "n[1234567890123456789]", "n\x7f"}) {
    auto r = expand_hostlist(bad);
    EXPECT_FALSE(r) << bad;
  }
  // Names longer than DNS allows are garbage, however few.
  EXPECT_TRUE(expand_hostlist(std::string(255, 'a')));
  EXPECT_FALSE(expand_hostlist(std::string(256, 'a')));
  EXPECT_FALSE(expand_hostlist(std::string(250, 'a') + "[1-100000]"));
  auto r = expand_hostlist("n[3-1]");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("runs backwards"), std::string::npos) << r.error().message;
}

TEST(Hostlist, RefusesHugeExpansionsWithoutAllocatingThem) {
  auto limit = expand_hostlist("n[1-100000]");
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->size(), cmax::sched::kMaxHostlistNames);
  EXPECT_EQ(limit->back(), "n100000");
  for (const char* huge : {"n[1-100001]", "n[1-50000],m[1-50001]", "a[1-1000]b[1-1000]",
                           "n[0-999999999999999999]", "a[0-99999]b[0-99999]c[0-99999]d[0-99999]"}) {
    auto r = expand_hostlist(huge);
    ASSERT_FALSE(r) << huge;
    EXPECT_NE(r.error().message.find("more than 100000"), std::string::npos) << r.error().message;
  }
}

TEST(Reservation, ReplaceDownAsCreated) {
  auto r = parse_golden("replace_down.txt");
  EXPECT_EQ(r.name, "drill");
  EXPECT_EQ(r.nodes, (Names{"n1", "n2"}));
  EXPECT_EQ(r.node_cnt, 2);
  EXPECT_EQ(r.flags, Names{"REPLACE_DOWN"});
  EXPECT_TRUE(r.has_flag("REPLACE_DOWN"));
  EXPECT_EQ(r.state, "ACTIVE");
  EXPECT_EQ(r.start_time, "2026-12-03T07:32:03");
  EXPECT_EQ(r.end_time, "2026-12-03T08:32:03");
  EXPECT_TRUE(r.contains("n1"));
  EXPECT_FALSE(r.contains("n3"));
}

TEST(Reservation, MembersReplacedAfterDrainAndDown) {
  auto drained = parse_golden("replace_down_after_drain.txt");
  EXPECT_EQ(drained.nodes, (Names{"n2", "n3"}));
  auto down = parse_golden("replace_down_after_down.txt");
  EXPECT_EQ(down.nodes, (Names{"n3", "n4"}));
  EXPECT_EQ(down.node_cnt, 2);
  auto spare = parse_golden("replace_down_spare.txt");
  EXPECT_EQ(spare.nodes, (Names{"n3", "n4", "spare1"}));
  EXPECT_EQ(spare.node_cnt, 3);
  EXPECT_TRUE(spare.contains("spare1"));
}

TEST(Reservation, EmptyAndSeveralFlags) {
  auto none = parse_golden("no_flags.txt");
  EXPECT_TRUE(none.flags.empty());
  EXPECT_EQ(none.nodes, (Names{"n1", "n2"}));
  auto both = parse_golden("static_replace_down_after_down.txt");
  EXPECT_EQ(both.flags, (Names{"STATIC", "REPLACE_DOWN"}));
  EXPECT_EQ(both.nodes, (Names{"n1", "n2"}));  // STATIC_ALLOC: nothing replaced
}

TEST(Reservation, NotFoundAndNoneAreErrorsThatSayWhatToDo) {
  auto missing = parse_scontrol_reservation(golden("not_found.txt"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(
      missing.error().message,
      "Reservation drill not found: it ended or was deleted; create it again or check the name");
  auto none = parse_scontrol_reservation(golden("no_reservations.txt"));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("create the reservation first"), std::string::npos)
      << none.error().message;
}

TEST(Reservation, EveryTruncationOfARealLineIsAValueOrAnError) {
  std::string line = golden("replace_down_spare.txt");
  for (std::size_t n = 0; n <= line.size(); ++n) {
    auto r = parse_scontrol_reservation(std::string_view(line).substr(0, n));
    if (r) {
      EXPECT_FALSE(r->name.empty());
      EXPECT_FALSE(r->state.empty());
    }
  }
  auto whole = parse_scontrol_reservation(line);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->nodes.size(), 3u);
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>((i * 7919) & 0xff));
  EXPECT_FALSE(parse_scontrol_reservation(bytes));
  EXPECT_FALSE(expand_hostlist(bytes));
}

TEST(Reservation, GarbageIsAClearError) {
  struct Case {
    const char* input;
    const char* expect;
  } cases[] = {
      {"", "printed nothing"},
      {"\n \n", "printed nothing"},
      {"Reservation drill not found\n", "Reservation drill not found: it ended"},
      {"No reservations in the system\n", "create the reservation first"},
      {"ReservationName=a Nodes=n1 NodeCnt=1 State=ACTIVE\nReservationName=b Nodes=n2 NodeCnt=1 "
       "State=ACTIVE\n",
       "2 lines"},
      {"slurm_load_reservations error: Unable to contact slurm controller (connect failure)",
       "not a reservation line"},
      {"NodeName=n1 State=IDLE", "not a reservation line"},
      {"ReservationName= Nodes=n1 NodeCnt=1 State=ACTIVE", "empty ReservationName="},
      {"ReservationName=drill StartTime=2026-12-03T07:30:00 EndTime=2026-12-03T08:30:00",
       "no Nodes="},
      {"ReservationName=drill Nodes=n1 State=ACTIVE", "no NodeCnt="},
      {"ReservationName=drill Nodes=n1 NodeCnt=1", "no State="},
      {"ReservationName=drill Nodes=n1 NodeCnt=-1 State=ACTIVE", "not a node count"},
      {"ReservationName=drill Nodes=n1 NodeCnt=1x State=ACTIVE", "not a node count"},
      {"ReservationName=drill Nodes=n[1-2 NodeCnt=2 State=ACTIVE", "Nodes=: hostlist"},
      {"ReservationName=drill Nodes=n1 NodeCnt=1 State=", "empty State="},
  };
  for (const auto& c : cases) {
    auto r = parse_scontrol_reservation(c.input);
    ASSERT_FALSE(r) << c.input;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
        << c.input << " -> " << r.error().message;
  }
}

TEST(Reservation, MinimalLineAndNullNodes) {
  auto r = parse_scontrol_reservation(
      "ReservationName=x Nodes=(null) NodeCnt=0 Flags=MAINT,PURGE_COMP=00:05:00 State=INACTIVE "
      "Comment=two words\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "x");
  EXPECT_TRUE(r->nodes.empty());
  EXPECT_EQ(r->node_cnt, 0);
  EXPECT_EQ(r->flags, (Names{"MAINT", "PURGE_COMP=00:05:00"}));
  EXPECT_TRUE(r->has_flag("MAINT"));
  EXPECT_FALSE(r->has_flag("REPLACE_DOWN"));
  EXPECT_EQ(r->state, "INACTIVE");
  EXPECT_EQ(r->start_time, "");
}

TEST(ParseScontrolReservations, EveryReservationOrNone) {
  auto none = cmax::sched::parse_scontrol_reservations("No reservations in the system\n");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  auto two = cmax::sched::parse_scontrol_reservations(golden("replace_down.txt") + "\n" + golden("no_flags.txt"));
  ASSERT_TRUE(two) << two.error().message;
  ASSERT_EQ(two->size(), 2u);
  EXPECT_TRUE((*two)[0].has_flag("REPLACE_DOWN"));
  EXPECT_EQ((*two)[0].users, std::vector<std::string>{"root"});
  EXPECT_EQ((*two)[0].partition, "batch");
  EXPECT_TRUE((*two)[0].accounts.empty()) << "(null) is none";
  EXPECT_FALSE(cmax::sched::parse_scontrol_reservations(golden("replace_down.txt") + "\ngarbage\n"));
}

TEST(UserMayUse, UsersListsAsSlurmReadsThem) {
  cmax::sched::Reservation r;
  r.users = {"alice", "bob"};
  EXPECT_TRUE(cmax::sched::user_may_use(r, "alice"));
  EXPECT_FALSE(cmax::sched::user_may_use(r, "root")) << "root is not admitted unless named (seen on 22.05)";
  r.users = {"-bob"};
  EXPECT_TRUE(cmax::sched::user_may_use(r, "alice"));
  EXPECT_FALSE(cmax::sched::user_may_use(r, "bob"));
  r.users = {};
  EXPECT_TRUE(cmax::sched::user_may_use(r, "anyone")) << "an Accounts= reservation: Slurm decides";
}
