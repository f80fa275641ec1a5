#include "score/rubric.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "score/evidence.h"

namespace cmax::score {

extern const char kBuiltinRubric[];

namespace {

using nlohmann::json;

// Validation fails with the JSON path of the first bad value; thrown inside this file only.
struct Invalid {
  std::string path, message;
};

[[noreturn]] void invalid(const std::string& path, std::string message) { throw Invalid{path, std::move(message)}; }

const json& need(const json& obj, const std::string& path, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) invalid(path, fmt::format("missing \"{}\"", key));
  return *it;
}

double number(const json& v, const std::string& path, double lo, double hi) {
  if (!v.is_number()) invalid(path, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) invalid(path, fmt::format("{} is outside [{:g}, {:g}]", d, lo, hi));
  return d;
}

std::string text(const json& v, const std::string& path, bool allow_empty = false) {
  if (!v.is_string()) invalid(path, "must be a string");
  auto s = v.get<std::string>();
  if (s.empty() && !allow_empty) invalid(path, "must not be empty");
  return s;
}

std::string sub_path(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

std::string opt_text(const json& obj, const std::string& path, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? std::string() : text(*it, sub_path(path, key), true);
}

std::vector<std::string> strings(const json& obj, const std::string& path, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end()) return out;
  if (!it->is_array()) invalid(sub_path(path, key), "must be an array of strings");
  for (std::size_t i = 0; i < it->size(); ++i) out.push_back(text((*it)[i], fmt::format("{}[{}]", sub_path(path, key), i)));
  return out;
}

Item parse_item(const json& j, const std::string& path) {
  if (!j.is_object()) invalid(path, "must be an object");
  Item it;
  it.id = text(need(j, path, "id"), path + ".id");
  it.title = opt_text(j, path, "title");
  if (it.title.empty()) it.title = it.id;
  it.weight = number(need(j, path, "weight"), path + ".weight", 0, 1e6);
  if (it.weight <= 0) invalid(path + ".weight", "must be greater than 0 (remove the item to drop it)");
  std::string source = text(need(j, path, "source"), path + ".source");
  it.collect = opt_text(j, path, "collect");
  it.advice = opt_text(j, path, "advice");
  if (source == "findings") {
    it.source = Source::findings;
    if (auto c = j.find("category"); c != j.end()) {
      auto cat = audit::parse_category(text(*c, path + ".category"));
      if (!cat) invalid(path + ".category", fmt::format("unknown category \"{}\"", c->get<std::string>()));
      it.category = cat;
    }
    it.prefixes = strings(j, path, "prefixes");
    it.exclude_prefixes = strings(j, path, "exclude_prefixes");
    if (j.contains("metric") || j.contains("points")) invalid(path, "a findings item takes no \"metric\" or \"points\"");
  } else if (source == "metric") {
    it.source = Source::metric;
    it.metric = text(need(j, path, "metric"), path + ".metric");
    if (!find_metric(it.metric)) {
      std::string known;
      for (const auto& m : kMetrics) known += (known.empty() ? "" : ", ") + std::string(m.name);
      invalid(path + ".metric", fmt::format("unknown metric \"{}\"; known: {}", it.metric, known));
    }
    const json& pts = need(j, path, "points");
    if (!pts.is_array() || pts.size() < 2) invalid(path + ".points", "must be an array of at least two [value, points] pairs");
    for (std::size_t i = 0; i < pts.size(); ++i) {
      std::string p = fmt::format("{}.points[{}]", path, i);
      if (!pts[i].is_array() || pts[i].size() != 2) invalid(p, "must be a [value, points] pair");
      double x = number(pts[i][0], p + "[0]", -1e12, 1e12);
      double y = number(pts[i][1], p + "[1]", 0, 100);
      if (!it.points.empty() && x <= it.points.back().first)
        invalid(p + "[0]", fmt::format("values must increase: {:g} after {:g}", x, it.points.back().first));
      it.points.emplace_back(x, y);
    }
    if (j.contains("category") || j.contains("prefixes") || j.contains("exclude_prefixes"))
      invalid(path, "a metric item takes no finding filters (category, prefixes, exclude_prefixes)");
  } else {
    invalid(path + ".source", fmt::format("\"{}\" is not findings or metric", source));
  }
  return it;
}

Rubric parse(const json& j) {
  if (!j.is_object()) invalid("(top)", "must be an object");
  Rubric r;
  std::string schema = text(need(j, "(top)", "schema"), "schema");
  if (schema != kRubricSchema) invalid("schema", fmt::format("\"{}\" is not {}", schema, kRubricSchema));
  r.name = opt_text(j, "", "name");
  r.version = opt_text(j, "", "version");
  r.notes = strings(j, "", "notes");
  if (auto op = j.find("outcome_points"); op != j.end()) {
    if (!op->is_object()) invalid("outcome_points", "must be an object {pass, warn, fail}");
    const char* keys[] = {"pass", "warn", "fail"};
    for (int i = 0; i < 3; ++i)
      r.outcome_points[i] = number(need(*op, "outcome_points", keys[i]), std::string("outcome_points.") + keys[i], 0, 100);
  }
  const json& cats = need(j, "(top)", "categories");
  if (!cats.is_array()) invalid("categories", "must be an array");
  std::vector<std::optional<CategoryRubric>> by_cat(audit::kCategoryCount);
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < cats.size(); ++i) {
    std::string path = fmt::format("categories[{}]", i);
    const json& c = cats[i];
    if (!c.is_object()) invalid(path, "must be an object");
    std::string name = text(need(c, path, "category"), path + ".category");
    auto cat = audit::parse_category(name);
    if (!cat) invalid(path + ".category", fmt::format("unknown category \"{}\"", name));
    if (by_cat[static_cast<int>(*cat)]) invalid(path + ".category", fmt::format("\"{}\" appears twice", name));
    CategoryRubric cr;
    cr.category = *cat;
    cr.weight = number(need(c, path, "weight"), path + ".weight", 0, 1e6);
    const json& items = need(c, path, "items");
    if (!items.is_array()) invalid(path + ".items", "must be an array");
    for (std::size_t k = 0; k < items.size(); ++k) {
      std::string ip = fmt::format("{}.items[{}]", path, k);
      cr.items.push_back(parse_item(items[k], ip));
      for (const auto& seen : ids)
        if (seen == cr.items.back().id) invalid(ip + ".id", fmt::format("\"{}\" is used twice", seen));
      ids.push_back(cr.items.back().id);
    }
    by_cat[static_cast<int>(*cat)] = std::move(cr);
  }
  double total_weight = 0;
  for (int i = 0; i < audit::kCategoryCount; ++i) {
    if (!by_cat[i])
      invalid("categories", fmt::format("category \"{}\" is missing (give it weight 0 to leave it out)",
                                        audit::to_string(static_cast<audit::Category>(i))));
    total_weight += by_cat[i]->weight;
    r.categories.push_back(std::move(*by_cat[i]));
  }
  if (total_weight <= 0) invalid("categories", "the category weights add up to 0");
  if (auto g = j.find("rating"); g != j.end()) {
    if (!g->is_object()) invalid("rating", "must be an object: {\"min_confidence\": 0.5, \"requires\": [...]}");
    if (auto m = g->find("min_confidence"); m != g->end()) r.rating.min_confidence = number(*m, "rating.min_confidence", 0, 1);
    if (auto q = g->find("requires"); q != g->end()) {
      if (!q->is_array()) invalid("rating.requires", "must be an array of category names");
      for (const auto& c : *q) {
        auto cat = c.is_string() ? audit::parse_category(c.get<std::string>()) : std::nullopt;
        if (!cat) invalid("rating.requires", "must name ClusterMAX categories (security, networking, ...)");
        r.rating.requires_.push_back(*cat);
      }
    }
  }
  const json& tiers = need(j, "(top)", "tiers");
  if (!tiers.is_array() || tiers.empty()) invalid("tiers", "must be a non-empty array, best tier first");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    std::string path = fmt::format("tiers[{}]", i);
    const json& t = tiers[i];
    if (!t.is_object()) invalid(path, "must be an object");
    Tier tier;
    tier.name = text(need(t, path, "tier"), path + ".tier");
    tier.min_total = number(need(t, path, "min_total"), path + ".min_total", 0, 100);
    if (auto m = t.find("min_category"); m != t.end()) tier.min_category = number(*m, path + ".min_category", 0, 100);
    if (auto m = t.find("min_confidence"); m != t.end()) tier.min_confidence = number(*m, path + ".min_confidence", 0, 1);
    if (!r.tiers.empty() && tier.min_total >= r.tiers.back().min_total)
      invalid(path + ".min_total", fmt::format("tiers are listed best first: {:g} must be below {:g}", tier.min_total,
                                               r.tiers.back().min_total));
    r.tiers.push_back(std::move(tier));
  }
  if (r.tiers.back().min_total != 0 || r.tiers.back().min_category != 0 || r.tiers.back().min_confidence != 0)
    invalid(fmt::format("tiers[{}]", tiers.size() - 1), "the last tier must take every total: min_total 0, no other condition");
  return r;
}

}  // namespace

Result<Rubric> parse_rubric(std::string_view text_in, std::string_view origin) {
  json j;
  try {
    j = json::parse(text_in);
  } catch (const json::parse_error& e) {
    return fail("{}: not JSON: {}", origin, e.what());
  }
  try {
    Rubric r = parse(j);
    r.origin = std::string(origin);
    return r;
  } catch (const Invalid& e) {
    return fail("{}: {}: {}; see docs/score.md for the rubric's fields", origin, e.path.empty() ? "(top)" : e.path,
                e.message);
  } catch (const json::exception& e) {
    return fail("{}: {}; see docs/score.md for the rubric's fields", origin, e.what());
  }
}

Result<Rubric> load_rubric(const std::optional<std::string>& path) {
  if (!path) return parse_rubric(kBuiltinRubric, "built-in");
  std::ifstream in(*path, std::ios::binary);
  if (!in) return fail("open rubric {}: {}; pass --rubric a cmax.rubric/1 file (data/rubric.json)", *path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_rubric(ss.str(), *path);
}

double map_points(const std::vector<std::pair<double, double>>& pts, double v) {
  if (pts.empty()) return 0;
  if (std::isnan(v)) return pts.front().second;
  if (v <= pts.front().first) return pts.front().second;
  if (v >= pts.back().first) return pts.back().second;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (v > pts[i].first) continue;
    auto [x0, y0] = pts[i - 1];
    auto [x1, y1] = pts[i];
    return y0 + (y1 - y0) * (v - x0) / (x1 - x0);
  }
  return pts.back().second;
}

bool item_matches(const Item& item, const audit::Finding& f) {
  if (item.source != Source::findings) return false;
  if (item.category && *item.category != f.category) return false;
  auto starts = [&](const std::string& p) { return f.check_id.compare(0, p.size(), p) == 0; };
  for (const auto& p : item.exclude_prefixes)
    if (starts(p)) return false;
  if (item.prefixes.empty()) return true;
  for (const auto& p : item.prefixes)
    if (starts(p)) return true;
  return false;
}

}  // namespace cmax::score
