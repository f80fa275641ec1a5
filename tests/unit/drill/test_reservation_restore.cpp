// Putting a reservation back as it was before a drill (drill/reservation_restore.h): the scontrol
// commands for each kind of reservation, and the record drill.json keeps of it.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drill/reservation_restore.h"

using cmax::drill::reservation_from_json;
using cmax::drill::reservation_to_json;
using cmax::drill::restore_reservation_commands;
using cmax::sched::Reservation;

namespace {

Reservation train(std::vector<std::string> nodes, std::vector<std::string> flags = {"REPLACE_DOWN"}) {
  Reservation r;
  r.name = "train";
  r.nodes = std::move(nodes);
  r.node_cnt = static_cast<int>(r.nodes.size());
  r.flags = std::move(flags);
  r.state = "ACTIVE";
  r.start_time = "2026-12-05T05:19:46";
  r.end_time = "2026-12-05T15:19:46";
  r.partition = "batch";
  r.users = {"root", "alice"};
  return r;
}

}  // namespace

TEST(RestoreReservation, NothingWhenItHoldsTheSameNodes) {
  EXPECT_TRUE(restore_reservation_commands(train({"n1", "n2"}), train({"n2", "n1"})).empty());
}

TEST(RestoreReservation, AReplaceDownReservationIsCreatedAgainByCount) {
  // Slurm 22.05 takes no Nodes= update on a REPLACE_DOWN reservation, nor Nodes= at its creation.
  auto cmds = restore_reservation_commands(train({"n1", "n2", "n3", "n4"}, {"STATIC", "REPLACE_DOWN"}),
                                           train({"n2", "n3", "n4", "spare1"}));
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"delete", "ReservationName=train"}));
  EXPECT_EQ(cmds[1], (std::vector<std::string>{"create", "reservation", "ReservationName=train", "StartTime=now",
                                               "EndTime=2026-12-05T15:19:46", "Users=root,alice", "PartitionName=batch",
                                               "NodeCnt=4", "Flags=STATIC,REPLACE_DOWN"}));
}

TEST(RestoreReservation, AnyOtherReservationTakesANodesUpdate) {
  auto cmds = restore_reservation_commands(train({"n1", "n2"}, {"SPEC_NODES", "MAINT"}), train({"n2"}, {"SPEC_NODES"}));
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"update", "ReservationName=train", "Nodes=n1,n2"}));
}

TEST(RestoreReservation, TheRecordRoundTripsAndRefusesNonsense) {
  const Reservation r = train({"n1", "n2"});
  auto back = reservation_from_json(reservation_to_json(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->nodes, r.nodes);
  EXPECT_EQ(back->flags, r.flags);
  EXPECT_EQ(back->users, r.users);
  EXPECT_EQ(back->end_time, r.end_time);
  EXPECT_EQ(back->partition, "batch");
  EXPECT_FALSE(reservation_from_json(nlohmann::json{{"name", "x"}}));
  EXPECT_FALSE(reservation_from_json(nlohmann::json{{"name", ""}, {"nodes", {"n1"}}, {"node_cnt", 1}}));
  EXPECT_FALSE(reservation_from_json(nlohmann::json::array()));
}
