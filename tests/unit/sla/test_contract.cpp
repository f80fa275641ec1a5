#include <gtest/gtest.h>

#include "core/text_file.h"
#include "sla_fixture.h"

namespace cmax::sla {
namespace {

using testing::rack_contract;

TEST(SlaContract, TheSampleContractParses) {
  auto text = core::read_text_file(std::string(CMAX_SOURCE_DIR) + "/docs/sla-contract.sample.json", 1 << 20);
  ASSERT_TRUE(text.has_value()) << text.error().message;
  auto c = parse_contract(*text);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->scope, Scope::rack);
  EXPECT_EQ(c->rack_down_min_nodes, 2);
  ASSERT_FALSE(c->topology.rack_names.empty());
  EXPECT_EQ(c->topology.rack_begin[1] - c->topology.rack_begin[0], 18);
  EXPECT_EQ(c->topology.node_gpus[0], 4);
  EXPECT_EQ(c->credit_tiers.size(), 4u);
  EXPECT_EQ(c->credit_tiers.front().below_percent, 99.5);
  EXPECT_EQ(c->target_percent, 99.5);
}

TEST(SlaContract, FixtureParses) {
  auto c = parse_contract(rack_contract());
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->node_count(), 18);
  EXPECT_EQ(c->topology.find_node("t18"), 17);
  EXPECT_EQ(c->cancel_consecutive_months, 2);
}

// Each malformed field is named in the error.
TEST(SlaContract, MalformedFieldsAreNamed) {
  struct Case {
    std::string json, field;
  };
  const std::string base = rack_contract();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const Case cases[] = {
      {with("cmax.sla-contract/1", "cmax.sla-contract/9"), "schema"},
      {with(R"("scope": "rack")", R"("scope": "row")"), "scope"},
      {with(R"("time_zone": "UTC")", R"("time_zone": "Mars/Base")"), "time_zone"},
      {with("99.5, \"gpus", "101, \"gpus"), "availability_target_percent"},
      {with(R"("min_down_nodes": 2)", R"("min_down_nodes": 0)"), "rack_down.min_down_nodes"},
      {with(R"("nodes": "t[01-18]")", R"("nodes": "t[01-")"), "topology.sites[0].racks[0].nodes"},
      {with(R"("gpus_per_node": 4)", R"("gpus_per_node": -1)"), "gpus_per_node"},
      {with(R"("exclusions": [])", R"("exclusions": [{"kind": "force_majeure", "start": "2026-04-01", "end": "2026-04-02"}])"),
       "exclusions[0].reason"},
      {with(R"("exclusions": [])", R"("exclusions": [{"kind": "maintenance", "start": "2026-04-02", "end": "2026-04-01"}])"),
       "exclusions[0].end"},
      {with(R"("exclusions": [])", R"("exclusions": [{"kind": "maintenance", "scope": "rack", "targets": ["r9"], "start": "2026-04-01", "end": "2026-04-02"}])"),
       "exclusions[0].targets"},
      {with(R"("fee_per_gpu_hour": 2.0)", R"("fee": 2.0)"), "credits.fee"},
      {with(R"({"below_percent": 99.0, "credit_percent": 25})", R"({"below_percent": 99.0, "credit_percent": 5})"),
       "credits.tiers"},
      {with(R"("consecutive_months_below_target": 2)", R"("consecutive_months_below_target": 0)"),
       "cancellation.consecutive_months_below_target"},
      {with(R"("name": "test")", R"("nmae": "test")"), "nmae"},
  };
  for (const auto& c : cases) {
    auto r = parse_contract(c.json);
    ASSERT_FALSE(r.has_value()) << c.field;
    EXPECT_NE(r.error().message.find(c.field), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parse_contract("[]").has_value());
}

TEST(SlaContract, DownStatesMatchSlurmCompoundStates) {
  const std::vector<std::string> down = {"down", "drain", "fail"};
  EXPECT_TRUE(is_down_state("down*", down));
  EXPECT_TRUE(is_down_state("IDLE+DRAIN", down));
  EXPECT_TRUE(is_down_state("mixed+drain~", down));
  EXPECT_FALSE(is_down_state("idle", down));
  EXPECT_FALSE(is_down_state("allocated+completing", down));
  EXPECT_FALSE(is_down_state("", down));
}

}  // namespace
}  // namespace cmax::sla
