#include "score/compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cmax::score {
namespace {

// Totals are compared as shown, to one decimal.
long tenths(double v) { return std::lround(v * 10); }

std::string cell(const std::optional<double>& score, double confidence) {
  if (!score) return std::string(kNotRated);
  return fmt::format("{:.1f} ({:.0f}%)", *score, confidence * 100);
}

std::vector<std::string> evaluated(const ScoreCard& c) {
  std::vector<std::string> out;
  for (const auto& cat : c.categories)
    if (cat.score && cat.weight > 0) out.emplace_back(audit::to_string(cat.category));
  return out;
}

// What `a` has that `b` lacks, in `a`'s order.
std::vector<std::string> lacking(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

}  // namespace

std::optional<std::string> evidence_difference(const ScoreCard& a, const ScoreCard& b) {
  std::vector<std::string> parts;
  auto side = [&](const ScoreCard& x, const ScoreCard& y) {
    auto docs = lacking(x.documents, y.documents);
    auto cats = lacking(evaluated(x), evaluated(y));
    if (docs.empty() && cats.empty()) return;
    std::string s = x.label + " has";
    if (!docs.empty()) s += fmt::format(" {}", fmt::join(docs, ", "));
    if (!cats.empty()) s += fmt::format("{} evidence of {}", docs.empty() ? "" : " and", fmt::join(cats, ", "));
    parts.push_back(s + " that " + y.label + " lacks");
  };
  side(a, b);
  side(b, a);
  if (parts.empty()) return std::nullopt;
  return fmt::format("{} and {} differ in the evidence collected, not only in the cluster: {}; their order may rest "
                     "on that (collect the same stages in both)",
                     a.label, b.label, fmt::join(parts, "; "));
}

Ranking rank_runs(const std::vector<ScoreCard>& cards) {
  Ranking r;
  std::vector<std::size_t> rated, unrated;
  for (std::size_t i = 0; i < cards.size(); ++i) (cards[i].total ? rated : unrated).push_back(i);
  std::stable_sort(rated.begin(), rated.end(),
                   [&](std::size_t a, std::size_t b) { return tenths(*cards[a].total) > tenths(*cards[b].total); });
  for (std::size_t k = 0; k < rated.size(); ++k) {
    RankEntry e{rated[k], static_cast<int>(k) + 1, false};
    if (k > 0 && tenths(*cards[rated[k]].total) == tenths(*cards[rated[k - 1]].total)) {
      e.rank = r.entries.back().rank;
      e.tie = true;
      r.entries.back().tie = true;
      r.notes.push_back(fmt::format("{} and {} tie at {:.1f}", cards[rated[k - 1]].label, cards[rated[k]].label,
                                    *cards[rated[k]].total));
    }
    if (k > 0) {
      const auto& a = cards[rated[k - 1]];
      const auto& b = cards[rated[k]];
      if (std::abs(a.confidence - b.confidence) > 0.2)
        r.notes.push_back(fmt::format("{} ({:.0f}% confidence) and {} ({:.0f}%) are ranked on different evidence: "
                                      "collect the missing stages before reading much into their order",
                                      a.label, a.confidence * 100, b.label, b.confidence * 100));
      if (auto d = evidence_difference(a, b)) r.notes.push_back(*d);
    }
    r.entries.push_back(e);
  }
  for (std::size_t i : unrated) {
    r.entries.push_back({i, std::nullopt, false});
    r.notes.push_back(fmt::format("{} is not rated: no category has evidence", cards[i].label));
  }
  return r;
}

std::string render_side_by_side(const std::vector<ScoreCard>& cards, const Ranking& ranking) {
  std::vector<std::size_t> cols;
  for (const auto& e : ranking.entries) cols.push_back(e.run);
  std::size_t w = 16;
  for (std::size_t i : cols) w = std::max(w, cards[i].label.size() + 2);
  std::string out = fmt::format("{:<16}", "");
  for (std::size_t i : cols) out += fmt::format("{:>{}}", cards[i].label, w);
  out += "\n";
  if (cards.empty()) return out;
  for (std::size_t c = 0; c < cards[0].categories.size(); ++c) {
    out += fmt::format("{:<16}", audit::to_string(cards[0].categories[c].category));
    for (std::size_t i : cols) {
      const auto& cat = cards[i].categories[c];
      out += fmt::format("{:>{}}", cell(cat.score, cat.confidence), w);
    }
    out += "\n";
  }
  out += fmt::format("{:<16}", "total");
  for (std::size_t i : cols) out += fmt::format("{:>{}}", cell(cards[i].total, cards[i].confidence), w);
  out += "\n" + fmt::format("{:<16}", "tier");
  for (std::size_t i : cols) out += fmt::format("{:>{}}", cards[i].tier, w);
  out += "\n" + fmt::format("{:<16}", "rank");
  for (const auto& e : ranking.entries)
    out += fmt::format("{:>{}}", e.rank ? fmt::format("{}{}", *e.rank, e.tie ? " (tie)" : "") : std::string("--"), w);
  out += "\n";
  for (const auto& n : ranking.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace cmax::score
