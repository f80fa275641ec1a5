#include "loadgen/capacity.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cmax::loadgen {
namespace {

// Each load's measurements: passes and total.
struct Tally {
  int pass = 0, total = 0;
  bool mostly_passes() const { return 2 * pass > total; }
};

}  // namespace

CapacityResult search_capacity(const CapacityConfig& c, const std::function<std::optional<double>(double)>& measure) {
  CapacityResult out;
  std::map<double, Tally> tally;
  auto round = [&](double x) { return c.integer ? std::max(1.0, std::floor(x)) : x; };
  auto probe = [&](double x) -> std::optional<bool> {
    if (static_cast<int>(out.probes.size()) >= c.max_probes) return std::nullopt;
    auto a = measure(x);
    if (!a) {
      out.interrupted = true;
      return std::nullopt;
    }
    const bool pass = *a >= c.attainment;
    out.probes.push_back({x, *a, pass});
    auto& t = tally[x];
    t.total += 1;
    t.pass += pass ? 1 : 0;
    return pass;
  };
  auto close_enough = [&](double lo, double hi) {
    return c.integer ? hi - lo <= std::max(1.0, std::floor(c.tolerance * lo)) : hi - lo <= c.tolerance * lo;
  };

  // 1. Double until a measurement fails.
  double lo = 0, hi = -1;
  for (double x = std::min(round(c.start), c.max);;) {
    auto p = probe(x);
    if (!p) break;
    if (!*p) {
      hi = x;
      break;
    }
    lo = x;
    if (x >= c.max) break;
    x = std::min(c.max, round(x * 2));
  }
  // 2. Bisect between the last pass and the first fail; 3. measure both ends again until each has
  // `repeats` measurements. An end its repeats overturn moves the bracket, and the search goes on.
  bool stop = out.interrupted;
  auto bisect = [&] {
    while (!stop && hi > 0 && !close_enough(lo, hi)) {
      const double mid = round((lo + hi) / 2);
      if (mid <= lo || mid >= hi) break;
      auto p = probe(mid);
      if (!p) {
        stop = true;
        break;
      }
      (*p ? lo : hi) = mid;
    }
  };
  auto confirm = [&](double x) {
    while (!stop && x > 0 && tally[x].total < c.repeats)
      if (!probe(x)) stop = true;
    return x > 0 && tally[x].mostly_passes();
  };
  while (!stop && hi > 0) {
    bisect();
    if (lo > 0 && !confirm(lo)) {  // the last pass was luck: the edge is below it
      hi = lo;
      lo = 0;
      for (const auto& [x, t] : tally)
        if (x < hi && t.mostly_passes()) lo = x;
      if (lo == 0) break;
      continue;
    }
    if (stop) break;
    if (confirm(hi)) {  // the first fail was bad luck: the edge is above it
      lo = hi;
      hi = -1;
      for (const auto& [x, t] : tally)
        if (x > lo && !t.mostly_passes()) {
          hi = x;
          break;
        }
      continue;
    }
    break;
  }
  // The edge: walking up the measured loads, the last that mostly passed before the first that
  // mostly failed.
  for (const auto& [x, t] : tally) {
    if (t.total == 0) continue;
    if (!t.mostly_passes()) {
      out.first_fail = x;
      break;
    }
    out.edge = x;
  }
  out.reached_max = out.first_fail < 0 && out.edge >= round(c.max);
  return out;
}

}  // namespace cmax::loadgen
