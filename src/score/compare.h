#pragma once
// Several runs side by side: a relative ranking by total, with ties and uneven evidence noted.

#include <optional>
#include <string>
#include <vector>

#include "score/scorer.h"

namespace cmax::score {

struct RankEntry {
  std::size_t run = 0;       ///< index into the cards given
  std::optional<int> rank;   ///< 1 = best; equal totals (to 0.1 point) share a rank; nullopt: not rated
  bool tie = false;
};

struct Ranking {
  std::vector<RankEntry> entries;  ///< best first; not rated last, in the order given
  std::vector<std::string> notes;  ///< ties, and ranks that rest on very different confidence
};

/// Ranks by total. A difference of confidence above 0.2 between neighbours is noted, and so is
/// any difference in the documents read or the categories evaluated: their order rests on
/// different evidence, not only on different clusters.
Ranking rank_runs(const std::vector<ScoreCard>& cards);

/// Which documents and evaluated categories one run has and the other lacks, as a note for a
/// ranking ("a and b differ in the evidence collected, not only in the cluster: a has bench.json
/// and evidence of pricing that b lacks; ..."); nullopt when both rest on the same evidence.
std::optional<std::string> evidence_difference(const ScoreCard& a, const ScoreCard& b);

/// The side-by-side table for the terminal: one row per category, one column per run.
std::string render_side_by_side(const std::vector<ScoreCard>& cards, const Ranking& ranking);

}  // namespace cmax::score
