#include "score/scorer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cmax::score {
namespace {

constexpr double kEps = 1e-9;

std::optional<int> verdict_index(audit::Outcome o) {
  switch (o) {
    case audit::Outcome::pass: return 0;
    case audit::Outcome::warn: return 1;
    case audit::Outcome::fail: return 2;
    default: return std::nullopt;
  }
}

std::string base_id(const std::string& id) { return id.substr(0, id.find('@')); }

std::string fmt_value(double v) {
  if (std::isinf(v)) return "never";
  return fmt::format("{:.4g}", v);
}

// A fix with its gain on the item's points; the caller scales it to the category and the total.
struct RawFix {
  std::string text;
  double item_gain;
};

ItemScore score_findings_item(const Rubric& r, const Item& item, const Evidence& ev, std::vector<RawFix>& fixes) {
  ItemScore s{item.id, item.title, item.source, item.weight, std::nullopt, "", "", {}};
  std::array<int, 3> counts{};
  int unverified = 0, not_applicable = 0;
  const audit::Finding* first_unverified = nullptr;
  std::map<std::string, std::vector<const audit::Finding*>> groups;  // by check id without "@node"
  for (const auto& f : ev.findings) {
    if (!item_matches(item, f)) continue;
    auto v = verdict_index(f.outcome);
    if (!v) {
      (f.outcome == audit::Outcome::unverified ? unverified : not_applicable)++;
      if (f.outcome == audit::Outcome::unverified && !first_unverified) first_unverified = &f;
      continue;
    }
    ++counts[*v];
    groups[base_id(f.check_id)].push_back(&f);
  }
  int n = counts[0] + counts[1] + counts[2];
  std::string others = unverified + not_applicable == 0
                           ? std::string()
                           : fmt::format(" ({} unverified, {} not applicable: not counted)", unverified, not_applicable);
  if (n == 0) {
    s.reason = fmt::format("missing: no finding with a verdict{}", others);
    // The checks ran and could not judge: say why, not "run them".
    if (first_unverified) {
      std::string why = !first_unverified->reason.empty()     ? first_unverified->reason
                        : !first_unverified->observed.empty() ? first_unverified->observed
                                                              : std::string("no reason given");
      s.gap = fmt::format("{} check(s) ran but reached no verdict (first: {}: {})", unverified,
                          first_unverified->check_id, why);
    } else if (not_applicable > 0) {
      s.gap = fmt::format("{} check(s) ran and do not apply here", not_applicable);
    }
    return s;
  }
  double sum = 0;
  for (int i = 0; i < 3; ++i) sum += counts[i] * r.outcome_points[i];
  s.points = sum / n;
  s.reason = fmt::format("{} pass, {} warn, {} fail{}", counts[0], counts[1], counts[2], others);
  const double best = r.outcome_points[0];
  for (const auto& [id, fs] : groups) {
    double gain = 0;
    int bad = 0;
    bool any_fail = false;
    const audit::Finding* example = nullptr;
    for (const auto* f : fs) {
      double pts = r.outcome_points[*verdict_index(f->outcome)];
      if (pts >= best) continue;
      gain += (best - pts) / n;
      ++bad;
      if (f->outcome == audit::Outcome::fail) any_fail = true;
      if (!example || (example->remediation.empty() && !f->remediation.empty())) example = f;
    }
    if (bad == 0 || gain <= kEps) continue;
    std::string what = !example->remediation.empty() ? example->remediation
                       : !example->expected.empty() ? "expected " + example->expected
                                                    : example->title;
    std::string where = fs.size() > 1 ? fmt::format(" on {} of {}", bad, fs.size()) : std::string();
    fixes.push_back({fmt::format("{} {}{}: {}", id, any_fail ? "fails" : "warns", where, what), gain});
  }
  return s;
}

ItemScore score_metric_item(const Item& item, const Evidence& ev, std::vector<RawFix>& fixes) {
  ItemScore s{item.id, item.title, item.source, item.weight, std::nullopt, "", "", {}};
  auto it = ev.metrics.find(item.metric);
  if (it == ev.metrics.end()) {
    const MetricSpec* spec = find_metric(item.metric);
    s.reason = fmt::format("missing: no {} ({})", item.metric, spec ? spec->document : "?");
    if (auto g = ev.gaps.find(item.metric); g != ev.gaps.end()) {
      s.gap = g->second;
      s.reason += ": " + g->second;
    }
    return s;
  }
  double v = it->second.value;
  double pts = map_points(item.points, v);
  s.points = pts;
  s.reason = fmt::format("{} = {} -> {:.1f} points ({})", item.metric, fmt_value(v), pts, it->second.source);
  double best = 0;
  for (const auto& p : item.points) best = std::max(best, p.second);
  if (best - pts > kEps) {
    // The nearest value that scores the best points.
    double target = 0, dist = INFINITY;
    for (const auto& p : item.points)
      if (p.second >= best - kEps && std::abs(p.first - v) < dist) {
        dist = std::abs(p.first - v);
        target = p.first;
      }
    std::string advice = item.advice.empty() ? item.title : item.advice;
    fixes.push_back({fmt::format("{} is {} ({:.0f} points): {}; {} scores {:.0f}", item.metric, fmt_value(v), pts, advice,
                                 fmt_value(target), best),
                     best - pts});
  }
  return s;
}

// A fix waiting for the total: its item and its gain to the item's category.
struct Pending {
  audit::Category category;
  std::string item;
  std::string text;
  double category_gain;
};

// What scoring the categories leaves for the tiers: the fixes, the evidence asked for, and the sums.
struct CategorySums {
  std::vector<Pending> pending;
  std::vector<Suggestion> evidence;
  double all_weight = 0, eval_weight = 0, weighted = 0, conf_weighted = 0;
};

// One category: each item's points, the category's score and confidence, its fixes (pending) and
// the evidence it lacks (asked for in proportion to the item's weight).
CategoryScore score_category(const Rubric& rubric, const CategoryRubric& cr, const Evidence& ev, CategorySums& sums) {
  CategoryScore cs;
  cs.category = cr.category;
  cs.weight = cr.weight;
  double asked = 0, present = 0, sum = 0;
  std::vector<std::vector<RawFix>> item_fixes;
  for (const auto& item : cr.items) {
    std::vector<RawFix> fixes;
    ItemScore is = item.source == Source::findings ? score_findings_item(rubric, item, ev, fixes)
                                                   : score_metric_item(item, ev, fixes);
    asked += item.weight;
    if (is.points) {
      present += item.weight;
      sum += item.weight * *is.points;
    } else if (is.gap.empty() && !item.collect.empty()) {
      is.reason += "; collect: " + item.collect;
    }
    item_fixes.push_back(std::move(fixes));
    cs.items.push_back(std::move(is));
  }
  cs.confidence = asked > 0 ? present / asked : 0;
  if (present > 0) cs.score = sum / present;
  for (std::size_t i = 0; i < cs.items.size(); ++i) {
    auto& is = cs.items[i];
    if (is.points) {
      for (const auto& f : item_fixes[i]) {
        double cat_gain = f.item_gain * is.weight / present;
        Suggestion s{Suggestion::Kind::fix, cr.category, is.id, f.text, cat_gain, 0};
        is.fixes.push_back(s);
        sums.pending.push_back({cr.category, is.id, f.text, cat_gain});
      }
    } else if (asked > 0) {
      // A stage that ran and gave nothing is not asked for again: its document says why.
      std::string text = !is.gap.empty()
                             ? fmt::format("{}: no evidence: {}", is.id, is.gap)
                             : fmt::format("{}: no evidence; collect: {}", is.id,
                                           cr.items[i].collect.empty() ? "see docs/score.md" : cr.items[i].collect);
      Suggestion s{Suggestion::Kind::evidence, cr.category, is.id, std::move(text), 0, cr.weight * is.weight / asked};
      sums.evidence.push_back(std::move(s));
    }
  }
  sums.all_weight += cr.weight;
  sums.conf_weighted += cr.weight * cs.confidence;
  if (cs.score) {
    sums.eval_weight += cr.weight;
    sums.weighted += cr.weight * *cs.score;
  }
  return cs;
}

// Whether the card reaches tier t on its total, every category and its confidence; why not, when
// why_not is given.
bool tier_holds(const ScoreCard& card, const Tier& t, std::vector<std::string>* why_not) {
  const double total = *card.total;
  bool ok = true;
  if (total + kEps < t.min_total) {
    ok = false;
    if (why_not) why_not->push_back(fmt::format("total {:.1f} < {:g}", total, t.min_total));
  }
  for (const auto& c : card.categories)
    if (c.score && c.weight > 0 && *c.score + kEps < t.min_category) {
      ok = false;
      if (why_not)
        why_not->push_back(fmt::format("{} {:.1f} < {:g} (every category)", audit::to_string(c.category), *c.score,
                                       t.min_category));
    }
  if (card.confidence + kEps < t.min_confidence) {
    ok = false;
    if (why_not) why_not->push_back(fmt::format("confidence {:.2f} < {:.2f}", card.confidence, t.min_confidence));
  }
  return ok;
}

// The rating gate: what evidence is missing for any tier (empty: the card may be rated).
std::vector<std::string> missing_for_rating(const Rubric& rubric, const ScoreCard& card) {
  std::vector<std::string> missing;
  if (card.confidence + kEps < rubric.rating.min_confidence)
    missing.push_back(fmt::format("confidence {:.0f}% < {:.0f}%", 100 * card.confidence,
                                  100 * rubric.rating.min_confidence));
  for (auto cat : rubric.rating.requires_)
    for (const auto& c : card.categories)
      if (c.category == cat && c.confidence <= kEps)
        missing.push_back(fmt::format("nothing measured {}", audit::to_string(cat)));
  return missing;
}

// Why the card has tier t: the total, the lowest category and the confidence against t's bars.
std::string tier_reason(const ScoreCard& card, const Tier& t) {
  std::string why = fmt::format("{}: total {:.1f} >= {:g}", t.name, *card.total, t.min_total);
  if (t.min_category > 0) {
    double lowest = 100;
    for (const auto& c : card.categories)
      if (c.score && c.weight > 0) lowest = std::min(lowest, *c.score);
    why += fmt::format(", lowest category {:.1f} >= {:g}", lowest, t.min_category);
  }
  if (t.min_confidence > 0) why += fmt::format(", confidence {:.2f} >= {:.2f}", card.confidence, t.min_confidence);
  return why;
}

// The fixes scaled to the total (a category's gain times its weight over the evaluated weight).
std::vector<Suggestion> total_fixes(const Rubric& rubric, const CategorySums& sums) {
  std::vector<Suggestion> fixes;
  for (const auto& p : sums.pending) {
    double w = 0;
    for (const auto& cr : rubric.categories)
      if (cr.category == p.category) w = cr.weight;
    fixes.push_back({Suggestion::Kind::fix, p.category, p.item, p.text, p.category_gain * w / sums.eval_weight, 0});
  }
  return fixes;
}

// How to reach the next tier: the largest gains until the total reaches the cut-off, then the best
// fixes of each category under the next tier's per-category floor until it clears it, then the
// evidence that lifts the confidence to the next tier's.
void plan_move_up(ScoreCard& card, const Tier& next, const CategorySums& sums, const std::vector<Suggestion>& fixes,
                  const std::vector<Suggestion>& evidence) {
  std::vector<std::size_t> order(fixes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Largest first; ties by text for a stable order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (std::abs(fixes[a].gain - fixes[b].gain) > kEps) return fixes[a].gain > fixes[b].gain;
    return fixes[a].text < fixes[b].text;
  });
  std::vector<bool> taken(fixes.size(), false);
  double covered = 0;
  for (std::size_t i : order) {
    if (covered + kEps >= card.needed || fixes[i].gain <= kEps) break;
    taken[i] = true;
    covered += fixes[i].gain;
  }
  for (const auto& c : card.categories) {
    if (!c.score || c.weight <= 0 || *c.score + kEps >= next.min_category) continue;
    double cat_covered = 0;
    for (std::size_t i : order) {
      const double cat_gain = sums.pending[i].category_gain;
      if (fixes[i].category != c.category || cat_gain <= kEps) continue;
      if (*c.score + cat_covered + kEps >= next.min_category) break;
      cat_covered += cat_gain;
      taken[i] = true;
    }
  }
  for (std::size_t i : order)
    if (taken[i]) card.move_up.push_back(fixes[i]);
  if (card.confidence + kEps < next.min_confidence) {
    double conf = card.confidence;
    for (const auto& s : evidence) {
      if (conf + kEps >= next.min_confidence) break;
      conf += s.confidence_gain;
      card.move_up.push_back(s);
    }
  }
}

}  // namespace

ScoreCard score_run(const Rubric& rubric, const Evidence& ev) {
  ScoreCard card;
  card.label = ev.label;
  card.dir = ev.dir;
  card.host = ev.host;
  card.documents = ev.documents;
  card.warnings = ev.warnings;

  CategorySums sums;
  for (const auto& cr : rubric.categories) card.categories.push_back(score_category(rubric, cr, ev, sums));
  card.confidence = sums.all_weight > 0 ? sums.conf_weighted / sums.all_weight : 0;
  auto& evidence = sums.evidence;
  for (auto& s : evidence) s.confidence_gain /= sums.all_weight > 0 ? sums.all_weight : 1;
  std::stable_sort(evidence.begin(), evidence.end(),
                   [](const Suggestion& a, const Suggestion& b) { return a.confidence_gain > b.confidence_gain; });

  if (sums.eval_weight <= 0) {
    card.tier = "not rated";
    card.tier_reasons.push_back("no category has evidence with a weight above 0: nothing to rate");
    card.move_up = evidence;
    return card;
  }
  card.total = sums.weighted / sums.eval_weight;

  // The rating gate: no tier on too little evidence; the categories keep their scores.
  if (auto missing = missing_for_rating(rubric, card); !missing.empty()) {
    card.tier = "no tier";
    card.tier_reasons.push_back(fmt::format("no tier: not enough evidence ({})", fmt::join(missing, "; ")));
    card.move_up = evidence;
    return card;
  }
  std::size_t reached = rubric.tiers.size() - 1;
  for (std::size_t i = 0; i < rubric.tiers.size(); ++i)
    if (tier_holds(card, rubric.tiers[i], nullptr)) {
      reached = i;
      break;
    }
  const Tier& t = rubric.tiers[reached];
  card.tier = t.name;
  card.tier_reasons.push_back(tier_reason(card, t));
  if (reached == 0) return card;

  const Tier& next = rubric.tiers[reached - 1];
  card.next_tier = next.name;
  std::vector<std::string> why_not;
  tier_holds(card, next, &why_not);
  for (const auto& w : why_not) card.tier_reasons.push_back(fmt::format("not {}: {}", next.name, w));
  card.needed = std::max(0.0, next.min_total - *card.total);
  plan_move_up(card, next, sums, total_fixes(rubric, sums), evidence);
  return card;
}

}  // namespace cmax::score
