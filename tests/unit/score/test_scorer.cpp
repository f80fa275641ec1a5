#include <map>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "score/render.h"
#include "score/scorer.h"
#include "score_test_util.h"

namespace cmax::score {
namespace {

using audit::Category;
using audit::Outcome;
using test::finding;
using test::make_rubric;

const char* kTwoCategories = R"(
  {"category": "security", "weight": 2, "items": [
    {"id": "sec", "weight": 1, "source": "findings", "prefixes": ["security."]}]},
  {"category": "networking", "weight": 1, "items": [
    {"id": "nccl.verdicts", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 100]]},
    {"id": "nccl.bw", "weight": 3, "source": "metric", "metric": "nccl.reference_ratio", "points": [[0.5, 0], [1, 100]]}]})";

Evidence sample() {
  Evidence ev;
  ev.label = "p";
  ev.findings = {finding("security.a", Category::security, Outcome::pass),
                 finding("security.b", Category::security, Outcome::warn),
                 finding("security.c", Category::security, Outcome::fail, "upgrade c"),
                 finding("security.d", Category::security, Outcome::unverified),
                 finding("security.e", Category::security, Outcome::not_applicable)};
  ev.metrics["nccl.pass_fraction"] = {0.8, "nccl.json"};
  return ev;
}

const CategoryScore& cat(const ScoreCard& c, Category k) { return c.categories[static_cast<int>(k)]; }

TEST(Scorer, HandComputedScores) {
  auto card = score_run(make_rubric(kTwoCategories), sample());
  // security: (100 + 50 + 0) / 3; unverified and not_applicable count neither way.
  ASSERT_TRUE(cat(card, Category::security).score);
  EXPECT_NEAR(*cat(card, Category::security).score, 50, 1e-9);
  EXPECT_DOUBLE_EQ(cat(card, Category::security).confidence, 1);
  // networking: only the verdicts item (weight 1 of 4) is present: its 80 points, confidence 0.25.
  ASSERT_TRUE(cat(card, Category::networking).score);
  EXPECT_NEAR(*cat(card, Category::networking).score, 80, 1e-9);
  EXPECT_DOUBLE_EQ(cat(card, Category::networking).confidence, 0.25);
  // total (2 x 50 + 1 x 80) / 3 = 60; confidence (2 x 1 + 1 x 0.25) / 3 = 0.75.
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 60, 1e-9);
  EXPECT_NEAR(card.confidence, 0.75, 1e-9);
}

TEST(Scorer, TierOfTheHandComputedTotal) {
  auto card = score_run(make_rubric(kTwoCategories), sample());
  EXPECT_EQ(card.tier, "Bronze");
  ASSERT_TRUE(card.next_tier);
  EXPECT_EQ(*card.next_tier, "Silver");
  EXPECT_NEAR(card.needed, 5, 1e-9);
  ASSERT_FALSE(card.tier_reasons.empty());
  EXPECT_NE(card.tier_reasons[0].find("Bronze: total 60.0 >= 50"), std::string::npos);
  EXPECT_NE(card.tier_reasons[1].find("not Silver: total 60.0 < 65"), std::string::npos) << card.tier_reasons[1];
}

TEST(Scorer, MissingEvidenceIsNotEvaluatedNeverZero) {
  auto ev = sample();
  ev.metrics.clear();
  auto card = score_run(make_rubric(kTwoCategories), ev);
  EXPECT_FALSE(cat(card, Category::networking).score.has_value());
  EXPECT_DOUBLE_EQ(cat(card, Category::networking).confidence, 0);
  for (const auto& it : cat(card, Category::networking).items) {
    EXPECT_FALSE(it.points);
    EXPECT_NE(it.reason.find("missing"), std::string::npos);
  }
  // The total is security's alone, renormalised; the confidence says a third is missing.
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 50, 1e-9);
  EXPECT_NEAR(card.confidence, 2.0 / 3.0, 1e-9);
  // Categories of weight 0 with no items are not evaluated either.
  EXPECT_FALSE(cat(card, Category::pricing).score);
}

TEST(Scorer, OnlyUnverifiedFindingsAreMissingEvidence) {
  Evidence ev;
  ev.findings = {finding("security.d", Category::security, Outcome::unverified)};
  auto card = score_run(make_rubric(kTwoCategories), ev);
  EXPECT_FALSE(cat(card, Category::security).score);
  EXPECT_FALSE(card.total);
  EXPECT_EQ(card.tier, "not rated");
  EXPECT_DOUBLE_EQ(card.confidence, 0);
  EXPECT_FALSE(card.move_up.empty());
  for (const auto& s : card.move_up) EXPECT_EQ(s.kind, Suggestion::Kind::evidence);
}

TEST(Scorer, ChangingAWeightChangesTheScore) {
  std::string text = kTwoCategories;
  auto pos = text.find("\"weight\": 2");
  text.replace(pos, 11, "\"weight\": 1");
  auto card = score_run(make_rubric(text), sample());
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 65, 1e-9);  // (50 + 80) / 2
}

TEST(Scorer, ARubricFileWithOneWeightChangedScoresDifferently) {
  // The acceptance test of issue 10: the rubric is data; edit the file, no recompiling.
  auto builtin = load_rubric(std::nullopt);
  ASSERT_TRUE(builtin) << builtin.error().message;
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/data/rubric.json");
  auto j = nlohmann::json::parse(in);
  for (auto& c : j["categories"])
    if (c["category"] == "security") c["weight"] = 60;
  test::TempDir dir;
  auto path = (dir.path() / "rubric.json").string();
  std::ofstream(path) << j.dump(2);
  auto edited = load_rubric(path);
  ASSERT_TRUE(edited) << edited.error().message;
  EXPECT_EQ(edited->origin, path);

  Evidence ev;
  ev.findings = {finding("security.docker.floor", Category::security, Outcome::fail),
                 finding("security.aslr", Category::security, Outcome::pass),
                 finding("networking.iommu.passthrough", Category::networking, Outcome::pass)};
  auto a = score_run(*builtin, ev), b = score_run(*edited, ev);
  ASSERT_TRUE(a.total && b.total);
  // security: floors 0 (weight 3) and hardening 100 (weight 2) -> 40; networking 100.
  EXPECT_NEAR(*a.total, (15 * 40.0 + 15 * 100.0) / 30, 1e-9);
  EXPECT_NEAR(*b.total, (60 * 40.0 + 15 * 100.0) / 75, 1e-9);
  EXPECT_GT(std::abs(*a.total - *b.total), 1);
}

TEST(Scorer, TierBoundaries) {
  const char* one = R"({"category": "networking", "weight": 1, "items": [
      {"id": "v", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 100]]}]})";
  auto rubric = make_rubric(one);
  auto tier_at = [&](double v) {
    Evidence ev;
    ev.metrics["nccl.pass_fraction"] = {v, "t"};
    return score_run(rubric, ev).tier;
  };
  EXPECT_EQ(tier_at(1.0), "Platinum");
  EXPECT_EQ(tier_at(0.9), "Platinum");
  EXPECT_EQ(tier_at(0.8999), "Gold");
  EXPECT_EQ(tier_at(0.8), "Gold");
  EXPECT_EQ(tier_at(0.7999), "Silver");
  EXPECT_EQ(tier_at(0.65), "Silver");
  EXPECT_EQ(tier_at(0.5), "Bronze");
  EXPECT_EQ(tier_at(0.4999), "Underperform");
  EXPECT_EQ(tier_at(0.0), "Underperform");
}

TEST(Scorer, PlatinumNeedsEveryCategoryAboveItsFloor) {
  auto rubric = make_rubric(R"(
    {"category": "security", "weight": 3, "items": [{"id": "s", "weight": 1, "source": "findings", "prefixes": ["security."]}]},
    {"category": "storage", "weight": 1, "items": [
      {"id": "v", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 100]]},
      {"id": "f", "weight": 1, "source": "findings", "prefixes": ["storage."]}]})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass),
                 finding("storage.a", Category::storage, Outcome::fail, "mount it hard"),
                 finding("storage.b", Category::storage, Outcome::pass)};
  ev.metrics["nccl.pass_fraction"] = {0.8, "t"};
  auto card = score_run(rubric, ev);
  // storage: (80 + 50) / 2 = 65; total (3 x 100 + 65) / 4 = 91.25: Gold, storage under 70.
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 91.25, 1e-9);
  EXPECT_EQ(card.tier, "Gold");
  ASSERT_EQ(card.next_tier.value_or(""), "Platinum");
  EXPECT_DOUBLE_EQ(card.needed, 0);
  bool named = false;
  for (const auto& r : card.tier_reasons) named |= r.find("not Platinum: storage 65.0 < 70") != std::string::npos;
  EXPECT_TRUE(named);
  // The fix that lifts storage over 70 is listed: storage.a fails (+25 on storage, +6.25 on the total).
  ASSERT_FALSE(card.move_up.empty());
  EXPECT_EQ(card.move_up[0].text, "storage.a fails: mount it hard");
  EXPECT_NEAR(card.move_up[0].gain, 6.25, 1e-9);
}

TEST(Scorer, MoveUpSuggestionsOrderedByGain) {
  auto rubric = make_rubric(
      R"({"category": "security", "weight": 1, "items": [{"id": "s", "weight": 1, "source": "findings", "category": "security"}]})",
      R"({"tier": "Top", "min_total": 99}, {"tier": "Low", "min_total": 0})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass),
                 finding("security.b", Category::security, Outcome::warn, "tune b"),
                 finding("security.docker.floor@n1", Category::security, Outcome::fail, "upgrade Docker to >= 29.8.2"),
                 finding("security.docker.floor@n2", Category::security, Outcome::pass),
                 finding("security.c", Category::security, Outcome::fail)};
  auto card = score_run(rubric, ev);
  // 5 findings: (100 + 50 + 0 + 100 + 0) / 5 = 50; the gap to 99 is 49.
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 50, 1e-9);
  EXPECT_NEAR(card.needed, 49, 1e-9);
  ASSERT_EQ(card.move_up.size(), 3u);
  EXPECT_EQ(card.move_up[0].text, "security.c fails: security.c");
  EXPECT_NEAR(card.move_up[0].gain, 20, 1e-9);
  EXPECT_EQ(card.move_up[1].text, "security.docker.floor fails on 1 of 2: upgrade Docker to >= 29.8.2");
  EXPECT_NEAR(card.move_up[1].gain, 20, 1e-9);
  EXPECT_EQ(card.move_up[2].text, "security.b warns: tune b");
  EXPECT_NEAR(card.move_up[2].gain, 10, 1e-9);
  for (std::size_t i = 1; i < card.move_up.size(); ++i) EXPECT_GE(card.move_up[i - 1].gain, card.move_up[i].gain);
}

TEST(Scorer, MoveUpStopsOnceTheGapIsCovered) {
  auto rubric = make_rubric(
      R"({"category": "security", "weight": 1, "items": [{"id": "s", "weight": 1, "source": "findings", "category": "security"}]})",
      R"({"tier": "Top", "min_total": 60}, {"tier": "Low", "min_total": 0})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass),
                 finding("security.b", Category::security, Outcome::warn),
                 finding("security.c", Category::security, Outcome::fail)};
  auto card = score_run(rubric, ev);  // 50; the largest fix (security.c, +33.3) covers the 10 needed
  ASSERT_EQ(card.move_up.size(), 1u);
  EXPECT_NE(card.move_up[0].text.find("security.c"), std::string::npos);
  EXPECT_NEAR(card.move_up[0].gain, 100.0 / 3, 1e-9);
}

TEST(Scorer, MetricSuggestionNamesTheTarget) {
  auto rubric = make_rubric(
      R"({"category": "pricing", "weight": 1, "items": [{"id": "hit", "weight": 1, "source": "metric",
          "metric": "endpoint.cache_hit_rate", "points": [[0.5, 0], [0.75, 40], [0.99, 100]], "advice": "route by prefix"}]})");
  Evidence ev;
  ev.metrics["endpoint.cache_hit_rate"] = {0.75, "bench.json"};
  auto card = score_run(rubric, ev);
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 40, 1e-9);
  EXPECT_EQ(card.tier, "Underperform");
  ASSERT_EQ(card.move_up.size(), 1u);
  EXPECT_EQ(card.move_up[0].text, "endpoint.cache_hit_rate is 0.75 (40 points): route by prefix; 0.99 scores 100");
  EXPECT_NEAR(card.move_up[0].gain, 60, 1e-9);
}

TEST(Scorer, ConfidenceShortOfTheNextTierAsksForEvidence) {
  auto rubric = make_rubric(
      R"({"category": "security", "weight": 1, "items": [{"id": "s", "weight": 1, "source": "findings", "category": "security"}]},
         {"category": "pricing", "weight": 1, "items": [{"id": "hit", "weight": 1, "source": "metric",
          "metric": "endpoint.cache_hit_rate", "points": [[0, 0], [1, 100]], "collect": "cmax endpoint bench --out DIR"}]})",
      R"({"tier": "Top", "min_total": 90, "min_confidence": 0.8}, {"tier": "Low", "min_total": 0})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass)};
  auto card = score_run(rubric, ev);
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 100, 1e-9);
  EXPECT_NEAR(card.confidence, 0.5, 1e-9);
  EXPECT_EQ(card.tier, "Low");
  ASSERT_EQ(card.move_up.size(), 1u);
  EXPECT_EQ(card.move_up[0].kind, Suggestion::Kind::evidence);
  EXPECT_EQ(card.move_up[0].text, "hit: no evidence; collect: cmax endpoint bench --out DIR");
  EXPECT_NEAR(card.move_up[0].confidence_gain, 0.5, 1e-9);
}

// Issue 35: a stage whose document is there but gave nothing is not asked for again: its document
// says why. A document that is not there is asked for with its collect command.
TEST(Scorer, EvidenceAdviceSaysWhyADocumentThatIsThereGaveNone) {
  auto rubric = make_rubric(
      R"J({"category": "networking", "weight": 1, "items": [{"id": "nccl", "weight": 1, "source": "metric",
          "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 100]], "collect": "cmax run --nccl-tests DIR"}]},
         {"category": "reliability", "weight": 1, "items": [{"id": "active", "weight": 1, "source": "findings",
          "prefixes": ["check.gpu."], "collect": "cmax run (its active stage)"}]},
         {"category": "pricing", "weight": 1, "items": [{"id": "cost", "weight": 1, "source": "metric",
          "metric": "endpoint.cost_ratio", "points": [[1, 100], [2, 0]], "collect": "cmax run --endpoint URL --prices FILE"}]},
         {"category": "security", "weight": 1, "items": [{"id": "s", "weight": 1, "source": "findings", "category": "security"}]})J",
      R"({"tier": "Top", "min_total": 90, "min_confidence": 1}, {"tier": "Low", "min_total": 0})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass),
                 finding("check.gpu.burn@n1", Category::reliability, Outcome::unverified)};
  ev.findings.back().reason = "no GPU visible";
  ASSERT_TRUE(add_nccl_doc(R"({"schema": "cmax.nccl/1", "runs": [],
      "sweep": {"steps": [{"step": "all_reduce-1n", "error": "srun said: srun: error: Unable to allocate resources\nmore"},
                          {"step": "all_reduce-2n", "error": "srun said: again"}]}})",
                           ev));
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1", "overall": {"requests": 4, "succeeded": 4}, "cost": null})", ev));
  auto card = score_run(rubric, ev);
  std::map<std::string, std::string> said;
  for (const auto& s : card.move_up) said[s.item] = s.text;
  ASSERT_EQ(said.size(), 3u);
  EXPECT_EQ(said["nccl"], "nccl: no evidence: nccl.json: every step failed (2 of 2): srun said: srun: error: Unable to "
                          "allocate resources");
  EXPECT_EQ(said["active"], "active: no evidence: 1 check(s) ran but reached no verdict (first: check.gpu.burn@n1: no GPU visible)");
  EXPECT_NE(said["cost"].find("add --prices FILE to cmax run"), std::string::npos) << said["cost"];
  for (const auto& [item, text] : said) EXPECT_EQ(text.find("collect:"), std::string::npos) << text;

  // Without the documents, the collect commands.
  Evidence bare;
  bare.findings = {finding("security.a", Category::security, Outcome::pass)};
  auto asked = score_run(rubric, bare);
  for (const auto& s : asked.move_up) EXPECT_NE(s.text.find("; collect: cmax run"), std::string::npos) << s.text;
}

TEST(Scorer, ACategoryWithNothingEvaluatedReadsNotRatedAndStaysOutOfTheTotal) {
  auto rubric = make_rubric(
      R"({"category": "security", "weight": 1, "items": [{"id": "s", "weight": 1, "source": "findings", "category": "security"}]},
         {"category": "availability", "weight": 1, "items": [{"id": "answered", "weight": 1, "source": "metric",
          "metric": "cluster.nodes_answered", "points": [[0.9, 0], [1, 100]]}]})");
  Evidence ev;
  ev.findings = {finding("security.a", Category::security, Outcome::pass)};
  // Every node queued: no evidence of availability either way.
  ASSERT_TRUE(add_cluster_doc(R"({"schema": "cmax.cluster/1", "nodes": [{"node": "n1", "status": "queued"},
      {"node": "n2", "status": "not_scheduled"}]})",
                              ev));
  auto card = score_run(rubric, ev);
  ASSERT_TRUE(card.total);
  EXPECT_NEAR(*card.total, 100, 1e-9) << "availability does not drag the total";
  const auto& avail = card.categories[static_cast<std::size_t>(Category::availability)];
  EXPECT_FALSE(avail.score);
  EXPECT_NE(avail.items[0].reason.find("no node was evaluated"), std::string::npos) << avail.items[0].reason;
  const std::string text = render_card(card, true);
  std::string line;
  for (std::size_t at = text.find("  availability"); at != std::string::npos;) {
    line = text.substr(at, text.find('\n', at) - at);
    break;
  }
  EXPECT_NE(line.find("not rated"), std::string::npos) << text;
  EXPECT_EQ(line.find("0.0"), std::string::npos) << line;
}

TEST(Scorer, NeverReachedDrillStageScoresTheWorstPoints) {
  auto rubric = make_rubric(R"({"category": "reliability", "weight": 1, "items": [{"id": "d", "weight": 1, "source": "metric",
      "metric": "drill.detect_s", "points": [[60, 100], [300, 50], [900, 0]]}]})");
  Evidence ev;
  ev.metrics["drill.detect_s"] = {std::numeric_limits<double>::infinity(), "drill.json: never"};
  auto card = score_run(rubric, ev);
  ASSERT_TRUE(card.total);
  EXPECT_DOUBLE_EQ(*card.total, 0);
  EXPECT_NE(cat(card, Category::reliability).items[0].reason.find("= never"), std::string::npos);
}

}  // namespace
}  // namespace cmax::score

namespace cmax::score {
namespace {

// Issue 26: a CPU-only VM (no fabric measured, little evidence) gets its category scores and no tier.
TEST(ScorerRatingGate, NoTierUntilTheEvidenceEarnsOne) {
  auto builtin = load_rubric(std::nullopt);
  ASSERT_TRUE(builtin) << builtin.error().message;
  EXPECT_DOUBLE_EQ(builtin->rating.min_confidence, 0.5);
  ASSERT_EQ(builtin->rating.requires_.size(), 2u);

  auto rubric = test::make_rubric(kTwoCategories);
  rubric.rating.min_confidence = 0.5;
  rubric.rating.requires_ = {Category::networking};
  Evidence ev = sample();
  ev.metrics.clear();  // nothing measured the fabric
  auto card = score_run(rubric, ev);
  ASSERT_TRUE(card.total);  // scored all the same
  EXPECT_EQ(card.tier, "no tier");
  ASSERT_FALSE(card.tier_reasons.empty());
  EXPECT_NE(card.tier_reasons[0].find("nothing measured networking"), std::string::npos) << card.tier_reasons[0];
  // The NCCL verdicts and the bandwidth: the gate opens, the tier is the total's.
  auto full = score_run(rubric, sample());
  EXPECT_NE(full.tier, "no tier");
  // Too little evidence overall, even with the fabric measured.
  rubric.rating.min_confidence = 0.9;
  auto thin = score_run(rubric, sample());
  EXPECT_EQ(thin.tier, "no tier");
  EXPECT_NE(thin.tier_reasons[0].find("confidence 75% < 90%"), std::string::npos) << thin.tier_reasons[0];
}

}  // namespace
}  // namespace cmax::score
