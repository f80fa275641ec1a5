#include "report/scorecard.h"

namespace cmax::report {

int CategoryScore::total() const {
  int n = 0;
  for (int c : counts) n += c;
  return n;
}

std::vector<CategoryScore> score_categories(const std::vector<audit::Finding>& findings) {
  std::vector<CategoryScore> out;
  for (int i = 0; i < audit::kCategoryCount; ++i) out.push_back({static_cast<audit::Category>(i), {}, std::nullopt});
  for (const auto& f : findings) ++out[static_cast<int>(f.category)].counts[static_cast<int>(f.outcome)];
  for (auto& c : out) {
    int pass = c.count(audit::Outcome::pass), warn = c.count(audit::Outcome::warn),
        fail = c.count(audit::Outcome::fail);
    if (pass + warn + fail > 0) c.score = (pass + 0.5 * warn) / (pass + warn + fail);
  }
  return out;
}

std::array<int, 5> outcome_totals(const std::vector<audit::Finding>& findings) {
  std::array<int, 5> t{};
  for (const auto& f : findings) ++t[static_cast<int>(f.outcome)];
  return t;
}

}  // namespace cmax::report
