#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "health/active.h"

namespace cmax::health {

extern const char kBuiltinHealthThresholds[];  // generated from data/health-thresholds.json

namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "cmax.health-thresholds/1";
constexpr std::string_view kBounds[] = {"min", "max", "warn_min", "warn_max"};
// Members of a threshold entry that document it and carry no bound.
constexpr std::string_view kTextMembers[] = {"unit", "doc"};

bool is_bound(std::string_view name) {
  for (auto b : kBounds)
    if (b == name) return true;
  return false;
}

bool is_text(std::string_view name) {
  for (auto t : kTextMembers)
    if (t == name) return true;
  return false;
}

// The bound `key`.`name` of `entry`, when present; the two must not contradict each other.
std::optional<double> bound(const std::map<std::string, double, std::less<>>& v,
                            const std::string& key, std::string_view name) {
  auto it = v.find(key + "." + std::string(name));
  return it == v.end() ? std::nullopt : std::optional(it->second);
}

Result<void> check_order(const std::map<std::string, double, std::less<>>& v,
                         const std::string& key, std::string_view where) {
  auto min = bound(v, key, "min"), max = bound(v, key, "max");
  auto wmin = bound(v, key, "warn_min"), wmax = bound(v, key, "warn_max");
  if (min && max && *min > *max)
    return fail("{}: '{}': min {} is above max {}; a value could never pass", where, key, *min, *max);
  if (min && wmin && *wmin < *min)
    return fail("{}: '{}': warn_min {} is below min {}; the warn bound must lie inside the fail "
                "bound (warn_min >= min)", where, key, *wmin, *min);
  if (max && wmax && *wmax > *max)
    return fail("{}: '{}': warn_max {} is above max {}; the warn bound must lie inside the fail "
                "bound (warn_max <= max)", where, key, *wmax, *max);
  return {};
}

}  // namespace

Result<Thresholds> Thresholds::parse(std::string_view json_text, std::string_view origin) {
  const std::string where = fmt::format("read health thresholds {}", origin);
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded())
    return fail("{}: not valid JSON; fix the file (see data/health-thresholds.json) or drop "
                "--thresholds", where);
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>() != kSchema)
    return fail("{}: \"schema\" must be \"{}\"", where, kSchema);
  auto it = doc.find("thresholds");
  if (it == doc.end() || !it->is_object())
    return fail("{}: \"thresholds\" must be an object of \"<check id>.<measurement>\": "
                "{{\"min\", \"max\", \"warn_min\", \"warn_max\"}}", where);
  Thresholds t;
  t.origin_ = std::string(origin);
  for (const auto& [key, entry] : it->items()) {
    if (key.find('.') == std::string::npos)
      return fail("{}: key '{}' must be '<check id>.<measurement>', like "
                  "'storage.metadata.p99_us'", where, key);
    if (!entry.is_object())
      return fail("{}: '{}' must be an object with min, max, warn_min or warn_max", where, key);
    for (const auto& [name, value] : entry.items()) {
      if (is_text(name)) {
        if (!value.is_string()) return fail("{}: '{}.{}' must be a string", where, key, name);
        continue;
      }
      if (!is_bound(name))
        return fail("{}: '{}' has an unknown member '{}'; use min, max, warn_min, warn_max, "
                    "unit or doc", where, key, name);
      if (!value.is_number())
        return fail("{}: '{}.{}' must be a number, got {}", where, key, name, value.dump());
      t.values_[key + "." + name] = value.get<double>();
    }
    if (auto r = check_order(t.values_, key, where); !r) return Unexpected<Error>{r.error()};
  }
  return t;
}

Result<Thresholds> Thresholds::builtin() {
  return parse(kBuiltinHealthThresholds, "built-in data/health-thresholds.json");
}

Result<Thresholds> Thresholds::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("read health thresholds {}: cannot open the file; check the --thresholds path",
                path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail("read health thresholds {}: read error; check the file", path);
  return parse(ss.str(), path);
}

std::optional<double> Thresholds::get(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::nullopt : std::optional(it->second);
}

}  // namespace cmax::health
