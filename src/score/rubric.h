#pragma once
// The scoring rubric as data (schema cmax.rubric/1, data/rubric.json, docs/score.md): per ClusterMAX
// category a weight and the evidence items it is scored from, each item's map to 0..100 points and
// its weight; tier cut-offs on the weighted total. The built-in copy is data/rubric.json embedded at
// build time; `cmax score --rubric FILE` reads another without recompiling.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/model.h"
#include "core/result.h"

namespace cmax::score {

inline constexpr std::string_view kRubricSchema = "cmax.rubric/1";

enum class Source { findings, metric };

/// One piece of evidence a category is scored from.
struct Item {
  std::string id;
  std::string title;
  double weight = 1;  ///< > 0, relative within its category
  Source source = Source::findings;
  // findings: a finding counts when it matches every filter given.
  std::optional<audit::Category> category;
  std::vector<std::string> prefixes;          ///< check-id prefixes; empty: any
  std::vector<std::string> exclude_prefixes;  ///< check-id prefixes that never count
  // metric: a named value from a stage document (evidence.h) mapped piecewise-linearly.
  std::string metric;
  std::vector<std::pair<double, double>> points;  ///< (value, points 0..100), value strictly increasing
  std::string advice;   ///< what to do when the metric scores under 100
  std::string collect;  ///< how to produce the evidence when it is missing
};

struct CategoryRubric {
  audit::Category category = audit::Category::security;
  double weight = 0;  ///< >= 0, relative across categories
  std::vector<Item> items;
};

/// A tier is reached when every condition holds; tiers are listed best first.
struct Tier {
  std::string name;
  double min_total = 0;
  double min_category = 0;    ///< every evaluated category at least this
  double min_confidence = 0;  ///< the total's confidence at least this (0..1)
};

/// When a tier may be given at all: below this evidence, the categories are scored and the card
/// says "no tier" with what is missing (a CPU-only VM with no fabric and no scheduler is not rated).
struct RatingGate {
  double min_confidence = 0;                 ///< the total's confidence at least this (0..1)
  std::vector<audit::Category> requires_;    ///< each of these categories has some evidence
};

struct Rubric {
  std::string name, version, origin;  ///< origin: "built-in" or the file's path
  RatingGate rating;
  std::vector<std::string> notes;
  std::array<double, 3> outcome_points{100, 50, 0};  ///< pass, warn, fail
  std::vector<CategoryRubric> categories;            ///< all ten, in audit::Category order
  std::vector<Tier> tiers;                           ///< best first; min_total strictly decreasing
};

/// Parses and validates. Errors name `origin` and the JSON path: "r.json: categories[2].weight: ...".
Result<Rubric> parse_rubric(std::string_view text, std::string_view origin);

/// The built-in rubric (data/rubric.json as built), or the file at `path`.
Result<Rubric> load_rubric(const std::optional<std::string>& path);

/// The piecewise-linear map of an item, clamped to the first and last points.
double map_points(const std::vector<std::pair<double, double>>& points, double value);

/// Whether a check id counts for a findings item (category and prefix filters).
bool item_matches(const Item& item, const audit::Finding& f);

}  // namespace cmax::score
