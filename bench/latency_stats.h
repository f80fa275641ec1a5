#pragma once
// Percentiles of latency samples and the one-line summary the cmaxd benches print.

#include <algorithm>
#include <cstdio>
#include <vector>

namespace cmax::bench {

/// The p-th percentile (nearest rank) of `v`; 0 when empty.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

/// "what  n=N  p50 ... p90 ... p99 ... max ..." with `what` padded to `width`.
inline void report(const char* what, const std::vector<double>& v, int width = 46) {
  std::printf("%-*s n=%zu  p50 %7.2f ms  p90 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n", width, what, v.size(),
              percentile(v, 50), percentile(v, 90), percentile(v, 99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
}

}  // namespace cmax::bench
