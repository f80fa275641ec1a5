#include "score/render.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "report/audit_json.h"

namespace cmax::score {
namespace {

using nlohmann::ordered_json;

// Divides by a power of ten (exact) so the JSON shows 0.4281, not 0.42810000000000004.
double round_to(double v, double step) {
  double scale = std::round(1 / step);
  return std::round(v * scale) / scale;
}

ordered_json opt_points(const std::optional<double>& v) {
  return v ? ordered_json(round_to(*v, 0.01)) : ordered_json(nullptr);
}

std::string_view kind_name(Suggestion::Kind k) { return k == Suggestion::Kind::fix ? "fix" : "evidence"; }

ordered_json suggestion_json(const Suggestion& s) {
  return {{"kind", kind_name(s.kind)},
          {"category", audit::to_string(s.category)},
          {"item", s.item},
          {"text", s.text},
          {"gain", round_to(s.gain, 0.01)},
          {"confidence_gain", round_to(s.confidence_gain, 0.0001)}};
}

ordered_json card_json(const ScoreCard& c) {
  ordered_json j;
  j["label"] = c.label;
  j["dir"] = c.dir;
  j["host"] = c.host;
  j["documents"] = c.documents;
  j["warnings"] = c.warnings;
  j["total"] = opt_points(c.total);
  j["confidence"] = round_to(c.confidence, 0.0001);
  j["tier"] = c.tier;
  j["tier_reasons"] = c.tier_reasons;
  j["next_tier"] = c.next_tier ? ordered_json(*c.next_tier) : ordered_json(nullptr);
  j["needed"] = round_to(c.needed, 0.01);
  j["move_up"] = ordered_json::array();
  for (const auto& s : c.move_up) j["move_up"].push_back(suggestion_json(s));
  j["categories"] = ordered_json::array();
  for (const auto& cat : c.categories) {
    ordered_json cj;
    cj["category"] = audit::to_string(cat.category);
    cj["weight"] = cat.weight;
    cj["evaluated"] = cat.score.has_value();
    cj["score"] = opt_points(cat.score);
    cj["confidence"] = round_to(cat.confidence, 0.0001);
    cj["items"] = ordered_json::array();
    for (const auto& it : cat.items) {
      ordered_json ij;
      ij["id"] = it.id;
      ij["title"] = it.title;
      ij["source"] = it.source == Source::findings ? "findings" : "metric";
      ij["weight"] = it.weight;
      ij["present"] = it.points.has_value();
      ij["points"] = opt_points(it.points);
      ij["reason"] = it.reason;
      cj["items"].push_back(std::move(ij));
    }
    j["categories"].push_back(std::move(cj));
  }
  return j;
}

}  // namespace

std::string score_to_json(const Rubric& rubric, const std::vector<ScoreCard>& cards, const Ranking& ranking) {
  ordered_json j;
  j["schema"] = kScoreSchema;
  j["cmax_version"] = report::cmax_version();
  j["rubric"] = {{"origin", rubric.origin}, {"name", rubric.name}, {"version", rubric.version}};
  j["runs"] = ordered_json::array();
  for (const auto& c : cards) j["runs"].push_back(card_json(c));
  j["ranking"] = ordered_json::array();
  for (const auto& e : ranking.entries) {
    const auto& c = cards[e.run];
    ordered_json entry = {{"rank", e.rank ? ordered_json(*e.rank) : ordered_json(nullptr)},
                            {"tie", e.tie},
                            {"label", c.label},
                            {"dir", c.dir},
                            {"total", opt_points(c.total)},
                            {"confidence", round_to(c.confidence, 0.0001)},
                            {"tier", c.tier}};
    j["ranking"].push_back(std::move(entry));
  }
  j["notes"] = ranking.notes;
  return j.dump(2) + "\n";
}

std::string render_card(const ScoreCard& c, bool verbose) {
  std::string out = fmt::format("{} ({})\n", c.label, c.host.empty() ? c.dir : c.host);
  out += fmt::format("  evidence: {}\n", fmt::join(c.documents, ", "));
  for (const auto& w : c.warnings) out += fmt::format("  warning: {}\n", w);
  // A category with nothing evaluated reads "not rated": never a 0, and it is left out of the total.
  out += fmt::format("\n  {:<15} {:>7} {:>9} {:>11}\n", "category", "weight", "score", "confidence");
  for (const auto& cat : c.categories) {
    out += fmt::format("  {:<15} {:>7g} {:>9} {:>10.0f}%\n", audit::to_string(cat.category), cat.weight,
                       cat.score ? fmt::format("{:.1f}", *cat.score) : std::string(kNotRated), cat.confidence * 100);
    if (!verbose) continue;
    for (const auto& it : cat.items)
      out += fmt::format("      {:<32} {:>6} x{:<4g} {}\n", it.id,
                         it.points ? fmt::format("{:.1f}", *it.points) : std::string("--"), it.weight, it.reason);
  }
  out += fmt::format("\n  total {}   confidence {:.0f}%   {}\n",
                     c.total ? fmt::format("{:.1f}", *c.total) : std::string(kNotRated), c.confidence * 100,
                     c.tier == "no tier" || c.tier == "not rated" ? c.tier : "tier " + c.tier);
  for (const auto& r : c.tier_reasons) out += fmt::format("    {}\n", r);
  if (!c.move_up.empty()) {
    if (c.next_tier)
      out += fmt::format("\n  What would move it up to {} ({:.1f} points short of the cut-off; each gain alone):\n",
                         *c.next_tier, c.needed);
    else
      out += "\n  Evidence to collect:\n";
    for (const auto& s : c.move_up) {
      if (s.kind == Suggestion::Kind::fix)
        out += fmt::format("    - {} (+{:.1f} points)\n", s.text, s.gain);
      else
        out += fmt::format("    - {} (+{:.0f}% confidence)\n", s.text, s.confidence_gain * 100);
    }
  }
  return out;
}

}  // namespace cmax::score
