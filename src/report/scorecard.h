#pragma once
// Per-category tallies of an audit and the transparent score formula:
//   score = (pass + 0.5 x warn) / (pass + warn + fail), over the checks that reached a verdict.
// not_applicable and unverified never count for or against. See docs/scorecard.md.

#include <array>
#include <optional>
#include <vector>

#include "audit/model.h"

namespace cmax::report {

struct CategoryScore {
  audit::Category category;
  std::array<int, 5> counts{};  ///< indexed by Outcome
  std::optional<double> score;  ///< nullopt when nothing in the category reached a verdict
  int count(audit::Outcome o) const { return counts[static_cast<int>(o)]; }
  int total() const;
};

/// One entry per ClusterMAX category, in category order (all ten, also the empty ones).
std::vector<CategoryScore> score_categories(const std::vector<audit::Finding>& findings);

/// Totals over all findings, indexed by Outcome.
std::array<int, 5> outcome_totals(const std::vector<audit::Finding>& findings);

}  // namespace cmax::report
