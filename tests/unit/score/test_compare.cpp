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

// Issue 35: two runs of one cluster, one with the endpoint stage and one without, are ranked with a
// note that says so: the order rests on the evidence, not only on the cluster.
TEST(Compare, RunsThatDifferInEvidenceAreNoted) {
  ScoreCard a = card("run1", 82.0, 0.60), b = card("run2", 80.0, 0.55);
  a.documents = {"results.json", "cluster.json", "bench.json"};
  b.documents = {"results.json", "cluster.json", "nccl.json"};
  b.categories[static_cast<std::size_t>(audit::Category::pricing)].score.reset();
  a.categories[static_cast<std::size_t>(audit::Category::pricing)].weight = 7;
  auto r = rank_runs({a, b});
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("run1 and run2 differ in the evidence collected, not only in the cluster: run1 has bench.json "
                       "and evidence of pricing that run2 lacks; run2 has nccl.json that run1 lacks"),
            std::string::npos)
      << notes;
  // The same evidence: no such note.
  auto same = rank_runs({card("x", 82.0, 0.6), card("y", 80.0, 0.6)});
  for (const auto& n : same.notes) EXPECT_EQ(n.find("differ in the evidence"), std::string::npos) << n;
  EXPECT_FALSE(evidence_difference(card("x", 1.0, 1), card("y", 2.0, 1)));
  EXPECT_NE(render_side_by_side({a, b}, r).find("not rated"), std::string::npos) << "run2's pricing";
}

}  // namespace
}  // namespace cmax::score
