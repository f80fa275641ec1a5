// The safety rules as pure functions: reasons, node names, and what drain/resume/reboot decide.

#include <gtest/gtest.h>

#include <string>

#include "sched/policy.h"

using namespace cmax::sched;

namespace {

NodeState node(std::string base, std::vector<std::string> flags, std::string reason = "") {
  NodeState s;
  s.name = "n1";
  s.base = std::move(base);
  s.flags = std::move(flags);
  s.state = s.base;
  for (const auto& f : s.flags) s.state += "+" + f;
  s.reason = std::move(reason);
  return s;
}

}  // namespace

TEST(Policy, ReasonsGetThePrefixOnce) {
  EXPECT_EQ(kReasonPrefix, "cmax: ");
  EXPECT_EQ(*cmax_reason("Xid 79"), "cmax: Xid 79");
  EXPECT_EQ(*cmax_reason("cmax: Xid 79"), "cmax: Xid 79");
  EXPECT_TRUE(is_cmax_reason("cmax: Xid 79"));
  EXPECT_FALSE(is_cmax_reason("cmax:Xid 79"));
  EXPECT_FALSE(is_cmax_reason("maintenance"));
  EXPECT_FALSE(is_cmax_reason(""));
}

TEST(Policy, BadReasonsAreRefused) {
  EXPECT_FALSE(cmax_reason(""));
  EXPECT_FALSE(cmax_reason("cmax: "));
  EXPECT_FALSE(cmax_reason("two\nlines"));
  EXPECT_FALSE(cmax_reason("tab\there"));
  EXPECT_FALSE(cmax_reason(std::string(kMaxReasonBytes, 'x')));
  EXPECT_TRUE(cmax_reason(std::string(kMaxReasonBytes - kReasonPrefix.size(), 'x')));
  EXPECT_TRUE(cmax_reason("quotes \" and ' and $(id) are plain text"));
}

TEST(Policy, NodeNamesMustNameOneNode) {
  for (const char* good : {"n1", "gpu-a100-017", "node_3.rack2"})
    EXPECT_TRUE(check_node_name(good)) << good;
  for (const char* bad : {"", "n[1-4]", "n1,n2", "n1 n2", "NodeName=n2", "n1\n", "$(reboot)"})
    EXPECT_FALSE(check_node_name(bad)) << bad;
  EXPECT_FALSE(check_node_name(std::string(256, 'n')));
}

TEST(Policy, DrainActsOnlyOnNodesInService) {
  EXPECT_TRUE(decide_drain(node("IDLE", {})).act);
  EXPECT_TRUE(decide_drain(node("MIXED", {})).act);
  EXPECT_TRUE(decide_drain(node("IDLE", {"NOT_RESPONDING"})).act);
  EXPECT_TRUE(decide_drain(node("DOWN", {}, "cmax: Xid 79")).act);

  auto again = decide_drain(node("IDLE", {"DRAIN"}, "cmax: Xid 79"));
  EXPECT_FALSE(again.act);
  EXPECT_EQ(again.note, "already drained: cmax: Xid 79");
  EXPECT_EQ(decide_drain(node("MIXED", {"DRAIN"}, "cmax: Xid 79")).note,
            "already draining: cmax: Xid 79");

  // Someone else's drain or down is never overwritten: cmax could otherwise resume it later.
  auto foreign = decide_drain(node("IDLE", {"DRAIN"}, "maintenance"));
  EXPECT_FALSE(foreign.act);
  EXPECT_NE(foreign.note.find("someone else's reason \"maintenance\""), std::string::npos)
      << foreign.note;
  EXPECT_FALSE(decide_drain(node("DOWN", {"NOT_RESPONDING"}, "Not responding")).act);
}

TEST(Policy, ResumeOnlyOwnDrainsUnlessForced) {
  EXPECT_TRUE(decide_resume(node("IDLE", {"DRAIN"}, "cmax: Xid 79"), Force::kNo)->act);
  EXPECT_TRUE(
      decide_resume(node("DOWN", {"DRAIN", "NOT_RESPONDING"}, "cmax: Xid 79"), Force::kNo)->act);

  auto refused = decide_resume(node("IDLE", {"DRAIN"}, "maintenance"), Force::kNo);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not set by cmax"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(decide_resume(node("IDLE", {"DRAIN"}), Force::kNo));
  EXPECT_FALSE(decide_resume(node("DOWN", {}, "Not responding"), Force::kNo));
  EXPECT_TRUE(decide_resume(node("IDLE", {"DRAIN"}, "maintenance"), Force::kYes)->act);

  auto idle = decide_resume(node("IDLE", {}), Force::kNo);
  ASSERT_TRUE(idle);
  EXPECT_FALSE(idle->act);
  EXPECT_FALSE(decide_resume(node("IDLE", {"NOT_RESPONDING"}), Force::kNo)->act);
}

TEST(Policy, RebootOnceAndNeverSomeoneElsesNode) {
  EXPECT_TRUE(decide_reboot(node("IDLE", {}))->act);
  EXPECT_TRUE(decide_reboot(node("IDLE", {"DRAIN"}, "cmax: Xid 79"))->act);
  for (const char* pending : {"REBOOT_REQUESTED", "REBOOT_ISSUED"}) {
    auto r = decide_reboot(node("IDLE", {"DRAIN", pending}, "cmax: Xid 79"));
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->act) << pending;
  }
  auto refused = decide_reboot(node("IDLE", {"DRAIN"}, "maintenance"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("return it to service"), std::string::npos);
}

TEST(Policy, DrainedVersusDraining) {
  EXPECT_TRUE(node("IDLE", {"DRAIN"}).drained());
  EXPECT_TRUE(node("DOWN", {"DRAIN"}).drained());
  EXPECT_TRUE(node("ALLOCATED", {"DRAIN"}).draining());
  EXPECT_TRUE(node("MIXED", {"DRAIN"}).draining());
  EXPECT_TRUE(node("IDLE", {"DRAIN", "COMPLETING"}).draining());
  EXPECT_FALSE(node("IDLE", {}).draining());
}
