#include "health/judge.h"

#include <fmt/format.h>

#include <cmath>

namespace cmax::health {

using audit::Outcome;

Bounds read_bounds(const Thresholds& t, std::string_view key) {
  Bounds b;
  b.key = std::string(key);
  b.min = t.get(b.key + ".min");
  b.max = t.get(b.key + ".max");
  b.warn_min = t.get(b.key + ".warn_min");
  b.warn_max = t.get(b.key + ".warn_max");
  return b;
}

namespace {

std::string number(double v) { return fmt::format("{:.4g}", v); }

std::string describe(const Measurement& m) {
  return fmt::format("{} {}{}", m.name, number(m.value), m.unit.empty() ? "" : " " + m.unit);
}

}  // namespace

Judgement judge(Measurement& m, const Bounds& b) {
  m.min = b.min ? b.min : b.warn_min;
  m.max = b.max ? b.max : b.warn_max;
  if (!std::isfinite(m.value))
    return {Outcome::unverified, fmt::format("{} is not a number: measured, not judged", m.name)};
  if (!b.any())
    return {Outcome::unverified,
            fmt::format("no threshold {}.{{min,max,warn_min,warn_max}} in the table: {} measured, "
                        "not judged",
                        b.key, describe(m))};
  const std::string& key = b.key;
  if (b.min && m.value < *b.min)
    return {Outcome::fail, fmt::format("{} is below the fail bound {} ({}.min)", describe(m),
                                       number(*b.min), key)};
  if (b.max && m.value > *b.max)
    return {Outcome::fail, fmt::format("{} is above the fail bound {} ({}.max)", describe(m),
                                       number(*b.max), key)};
  if (b.warn_min && m.value < *b.warn_min)
    return {Outcome::warn, fmt::format("{} is below the warn bound {} ({}.warn_min)", describe(m),
                                       number(*b.warn_min), key)};
  if (b.warn_max && m.value > *b.warn_max)
    return {Outcome::warn, fmt::format("{} is above the warn bound {} ({}.warn_max)", describe(m),
                                       number(*b.warn_max), key)};
  return {Outcome::pass, {}};
}

Judgement judge(Measurement& m, const Thresholds& t, std::string_view key) {
  return judge(m, read_bounds(t, key));
}

Outcome worse(Outcome a, Outcome b) {
  auto rank = [](Outcome o) {
    switch (o) {
      case Outcome::fail:
        return 4;
      case Outcome::warn:
        return 3;
      case Outcome::unverified:
        return 2;
      case Outcome::not_applicable:
        return 1;
      case Outcome::pass:
        return 0;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace cmax::health
