#include "score/compare.h"
#include "score_test_util.h"

namespace cmax::score {
namespace {

ScoreCard card(std::string label, std::optional<double> total, double confidence) {
  ScoreCard c;
  c.label = std::move(label);
  c.total = total;
  c.confidence = confidence;
  c.tier = total ? "Gold" : "not rated";
  for (int i = 0; i < audit::kCategoryCount; ++i) {
    CategoryScore cs;
    cs.category = static_cast<audit::Category>(i);
    cs.score = total;
    cs.confidence = confidence;
    c.categories.push_back(cs);
  }
  return c;
}

TEST(Compare, RanksByTotalWithTiesAndUnrated) {
  std::vector<ScoreCard> cards = {card("a", 80.0, 0.9), card("none", std::nullopt, 0), card("b", 80.04, 0.9),
                                  card("c", 85.0, 0.9), card("d", 70.0, 0.3)};
  auto r = rank_runs(cards);
  ASSERT_EQ(r.entries.size(), 5u);
  EXPECT_EQ(r.entries[0].run, 3u);  // c
  EXPECT_EQ(r.entries[0].rank, 1);
  EXPECT_FALSE(r.entries[0].tie);
  EXPECT_EQ(r.entries[1].run, 0u);  // a and b tie at 80.0, in the order given
  EXPECT_EQ(r.entries[2].run, 2u);
  EXPECT_EQ(r.entries[1].rank, 2);
  EXPECT_EQ(r.entries[2].rank, 2);
  EXPECT_TRUE(r.entries[1].tie && r.entries[2].tie);
  EXPECT_EQ(r.entries[3].run, 4u);
  EXPECT_EQ(r.entries[3].rank, 4);
  EXPECT_EQ(r.entries[4].run, 1u);
  EXPECT_FALSE(r.entries[4].rank);
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("a and b tie at 80.0"), std::string::npos) << notes;
  EXPECT_NE(notes.find("b (90% confidence) and d (30%) are ranked on different evidence"), std::string::npos) << notes;
  EXPECT_NE(notes.find("none is not rated"), std::string::npos) << notes;
  auto table = render_side_by_side(cards, r);
  EXPECT_NE(table.find("security"), std::string::npos);
  EXPECT_NE(table.find("2 (tie)"), std::string::npos);
}

}  // namespace
}  // namespace cmax::score
