#pragma once
// Pure scoring: rubric + evidence -> per-category scores, confidence, total, tier with reasons, and
// what would move the cluster up a tier. No I/O. docs/score.md gives the formulas.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/model.h"
#include "score/evidence.h"
#include "score/rubric.h"

namespace cmax::score {

/// What a category, a total or a card with nothing evaluated reads: never 0.
inline constexpr std::string_view kNotRated = "not rated";

/// One way to gain points (a finding to fix, a metric to improve) or confidence (evidence to add).
struct Suggestion {
  enum class Kind { fix, evidence };
  Kind kind = Kind::fix;
  audit::Category category = audit::Category::security;
  std::string item;  ///< the rubric item
  std::string text;  ///< "security.docker.floor fails: upgrade Docker to >= 29.8.2"
  double gain = 0;   ///< points the total would gain with this alone fixed (fix)
  double confidence_gain = 0;  ///< what the total's confidence would gain (evidence)
};

struct ItemScore {
  std::string id, title;
  Source source = Source::findings;
  double weight = 0;
  std::optional<double> points;  ///< 0..100; nullopt: the evidence is missing
  std::string reason;            ///< why these points, or what is missing
  /// Missing only: why the documents that are there gave no evidence ("nccl.json: every step
  /// failed: ..."), so that the advice is not to run a stage that ran; "" when nothing says.
  std::string gap;
  std::vector<Suggestion> fixes;  ///< ways to raise the points, with the category-level gain in `gain`
};

struct CategoryScore {
  audit::Category category = audit::Category::security;
  double weight = 0;
  std::optional<double> score;  ///< 0..100; nullopt: not evaluated (no evidence), never 0
  double confidence = 0;        ///< weight of the items present / weight of all its items
  std::vector<ItemScore> items;
};

struct ScoreCard {
  std::string label, dir, host;
  std::vector<std::string> documents, warnings;
  std::vector<CategoryScore> categories;  ///< all ten, in category order
  std::optional<double> total;            ///< weighted over the evaluated categories; nullopt: none
  double confidence = 0;  ///< sum(category weight x confidence) / sum(category weight)
  std::string tier;       ///< "not rated" when nothing was evaluated
  std::vector<std::string> tier_reasons;  ///< why this tier, and why not the one above
  std::optional<std::string> next_tier;
  double needed = 0;                 ///< points of total short of the next tier's min_total
  std::vector<Suggestion> move_up;   ///< fixes by gain (largest first), then evidence to add
};

/// Scores one run. Pure and deterministic.
ScoreCard score_run(const Rubric& rubric, const Evidence& evidence);

}  // namespace cmax::score
