#pragma once
// cmax score's output: the cmax.score/1 document (docs/schemas/score.md) and the terminal text.

#include <string>
#include <string_view>
#include <vector>

#include "score/compare.h"
#include "score/rubric.h"
#include "score/scorer.h"

namespace cmax::score {

inline constexpr std::string_view kScoreSchema = "cmax.score/1";

/// The cmax.score/1 document, two-space indented, deterministic (numbers rounded to 0.01 and
/// confidences to 0.0001).
std::string score_to_json(const Rubric& rubric, const std::vector<ScoreCard>& cards, const Ranking& ranking);

/// One run for the terminal: categories with items, total, confidence, tier, reasons, move-up list.
std::string render_card(const ScoreCard& card, bool verbose);

}  // namespace cmax::score
