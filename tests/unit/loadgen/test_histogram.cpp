#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "loadgen/histogram.h"

namespace cmax::loadgen {
namespace {

constexpr std::uint64_t kTop = (std::uint64_t{1} << 40) - 1;

// Nearest rank over a sorted vector, with p in tenths of a percent so the rank is exact.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, int p_tenths) {
  const std::uint64_t n = sorted.size();
  std::uint64_t rank = (static_cast<std::uint64_t>(p_tenths) * n + 999) / 1000;
  rank = std::clamp<std::uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

std::vector<std::uint64_t> lognormal_us(std::uint32_t seed, std::size_t n, double median_us, double sigma) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(std::log(median_us), sigma);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = static_cast<std::uint64_t>(std::llround(dist(rng)));
  return v;
}

constexpr int kPercentilesTenths[] = {0, 1, 10, 100, 250, 500, 750, 900, 950, 990, 999, 1000};

TEST(Histogram, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.min_us(), 0u);
  EXPECT_EQ(h.max_us(), 0u);
  EXPECT_EQ(h.mean_us(), 0.0);
  for (double p : {0.0, 50.0, 99.0, 100.0}) EXPECT_EQ(h.percentile_us(p), 0u) << p;
}

TEST(Histogram, OneValueIsEveryPercentile) {
  Histogram h;
  h.record_us(123457);  // not on a bucket boundary: the cap at max_us() makes it exact
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.min_us(), 123457u);
  EXPECT_EQ(h.max_us(), 123457u);
  EXPECT_DOUBLE_EQ(h.mean_us(), 123457.0);
  for (double p : {0.0, 1.0, 50.0, 99.9, 100.0}) EXPECT_EQ(h.percentile_us(p), 123457u) << p;
}

TEST(Histogram, ZeroIsAValue) {
  Histogram h;
  h.record_us(0);
  h.record_us(0);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.min_us(), 0u);
  EXPECT_EQ(h.max_us(), 0u);
  EXPECT_EQ(h.percentile_us(100), 0u);
  h.record_us(10);
  EXPECT_EQ(h.percentile_us(0), 0u);
  EXPECT_EQ(h.percentile_us(66), 0u);
  EXPECT_EQ(h.percentile_us(67), 10u);
  EXPECT_EQ(h.percentile_us(100), 10u);
}

TEST(Histogram, SmallValuesAreExact) {
  // Below 2^(sub_bits + 1) every value has its own counter.
  Histogram h(10);
  std::vector<std::uint64_t> sorted;
  for (std::uint64_t v = 0; v < 2048; ++v) {
    h.record_us(v, v % 3 + 1);
    for (std::uint64_t i = 0; i < v % 3 + 1; ++i) sorted.push_back(v);
  }
  for (int t = 0; t <= 1000; ++t) EXPECT_EQ(h.percentile_us(t / 10.0), exact_percentile(sorted, t)) << t;
}

TEST(Histogram, HugeValuesClampToTheTop) {
  Histogram h;
  h.record_us(5);
  h.record_us(kTop);
  EXPECT_EQ(h.clamped(), 0u);
  h.record_us(std::uint64_t{1} << 45);
  h.record_us(UINT64_MAX, 2);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.clamped(), 3u);
  EXPECT_EQ(h.max_us(), kTop);
  EXPECT_EQ(h.min_us(), 5u);
  EXPECT_EQ(h.percentile_us(100), kTop);
  EXPECT_EQ(h.percentile_us(30), kTop);
  EXPECT_EQ(h.percentile_us(20), 5u);
  EXPECT_DOUBLE_EQ(h.mean_us(), (5.0 + 4.0 * static_cast<double>(kTop)) / 5.0);
}

TEST(Histogram, PercentileBoundsAndOrder) {
  Histogram h;
  for (std::uint64_t v : lognormal_us(7, 1000, 20000, 1.0)) h.record_us(v);
  EXPECT_EQ(h.percentile_us(-5), h.percentile_us(0));
  EXPECT_EQ(h.percentile_us(250), h.percentile_us(100));
  EXPECT_EQ(h.percentile_us(std::nan("")), h.percentile_us(0));
  EXPECT_EQ(h.percentile_us(100), h.max_us());
  std::uint64_t last = 0;
  for (int t = 0; t <= 1000; ++t) {
    const std::uint64_t v = h.percentile_us(t / 10.0);
    EXPECT_GE(v, last) << t;
    EXPECT_GE(v, h.min_us());
    EXPECT_LE(v, h.max_us());
    last = v;
  }
}

// The reported value is the top of the exact value's bucket: never below it, and above it by less
// than 2^-sub_bits of it.
void expect_within_precision(const Histogram& h, const std::vector<std::uint64_t>& sorted, int sub_bits) {
  const double rel = std::ldexp(1.0, -sub_bits);
  for (int t : kPercentilesTenths) {
    const std::uint64_t exact = exact_percentile(sorted, t);
    const std::uint64_t got = h.percentile_us(t / 10.0);
    EXPECT_GE(got, exact) << "p" << t / 10.0 << " sub_bits " << sub_bits;
    EXPECT_LT(static_cast<double>(got - exact), std::max(rel * static_cast<double>(exact), 1.0))
        << "p" << t / 10.0 << " sub_bits " << sub_bits << " exact " << exact << " got " << got;
  }
}

TEST(Histogram, LogNormalPercentilesWithinRelativeError) {
  for (int sub_bits : {1, 3, 7, 10, 12}) {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
      // Median 50 ms with a long tail (sigma 1.5 reaches minutes at p99.9).
      auto values = lognormal_us(seed * 100 + static_cast<std::uint32_t>(sub_bits), 100000, 50000, 1.5);
      Histogram h(sub_bits);
      long double sum = 0;
      for (std::uint64_t v : values) {
        h.record_us(v);
        sum += v;
      }
      std::sort(values.begin(), values.end());
      EXPECT_EQ(h.count(), values.size());
      EXPECT_EQ(h.min_us(), values.front());
      EXPECT_EQ(h.max_us(), values.back());
      EXPECT_NEAR(h.mean_us(), static_cast<double>(sum / values.size()), 1e-6);
      expect_within_precision(h, values, sub_bits);
    }
  }
}

TEST(Histogram, WideRangeWithinRelativeError) {
  // Uniform in log space from 1 us to 2^40 us: every bucket row is exercised.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> exponent(0.0, 40.0);
  std::vector<std::uint64_t> values(50000);
  for (auto& v : values) v = static_cast<std::uint64_t>(std::exp2(exponent(rng)));
  for (int sub_bits : {0, 2, 10}) {
    Histogram h(sub_bits);
    for (std::uint64_t v : values) h.record_us(v);
    auto sorted = values;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(h.clamped(), 0u);
    expect_within_precision(h, sorted, sub_bits);
  }
}

TEST(Histogram, BucketEdgesAreConsistent) {
  // With a huge second value the cap never applies, so percentile(1) is the bucket's top value:
  // top(v) >= v, top(top(v)) == top(v), and top(v) + 1 starts the next bucket.
  for (int sub_bits : {0, 1, 4, 10}) {
    auto top_of = [&](std::uint64_t v) {
      Histogram h(sub_bits);
      h.record_us(v);
      h.record_us(kTop);
      return h.percentile_us(1);
    };
    const double rel = std::ldexp(1.0, -sub_bits);
    for (int bit = 0; bit < 40; ++bit) {
      for (std::uint64_t offset : {0ull, 1ull, 3ull, 12345ull}) {
        const std::uint64_t v = (std::uint64_t{1} << bit) + (offset % (std::uint64_t{1} << bit));
        if (v >= kTop) continue;
        const std::uint64_t top = top_of(v);
        ASSERT_GE(top, v) << v;
        EXPECT_LT(static_cast<double>(top - v), std::max(rel * static_cast<double>(v), 1.0)) << v;
        EXPECT_EQ(top_of(top), top) << v;
        if (top + 1 < kTop) {
          EXPECT_GT(top_of(top + 1), top) << v;
        }
      }
    }
  }
}

TEST(Histogram, MergeEqualsRecordingBoth) {
  const auto a = lognormal_us(11, 20000, 30000, 1.2);
  const auto b = lognormal_us(12, 5000, 400000, 0.5);
  Histogram ha, hb, both;
  for (std::uint64_t v : a) {
    ha.record_us(v);
    both.record_us(v);
  }
  for (std::uint64_t v : b) {
    hb.record_us(v);
    both.record_us(v);
  }
  hb.record_us(UINT64_MAX);
  both.record_us(UINT64_MAX);
  ha.merge(hb);
  EXPECT_EQ(ha.count(), both.count());
  EXPECT_EQ(ha.clamped(), 1u);
  EXPECT_EQ(ha.min_us(), both.min_us());
  EXPECT_EQ(ha.max_us(), both.max_us());
  EXPECT_DOUBLE_EQ(ha.mean_us(), both.mean_us());
  for (int t = 0; t <= 1000; ++t) EXPECT_EQ(ha.percentile_us(t / 10.0), both.percentile_us(t / 10.0)) << t;
}

TEST(Histogram, MergeWithEmpty) {
  Histogram empty, h;
  h.record_us(700);
  h.record_us(900);
  h.merge(empty);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.min_us(), 700u);
  Histogram into;
  into.merge(h);
  EXPECT_EQ(into.count(), 2u);
  EXPECT_EQ(into.min_us(), 700u);
  EXPECT_EQ(into.max_us(), 900u);
  EXPECT_DOUBLE_EQ(into.mean_us(), 800.0);
  EXPECT_EQ(into.percentile_us(50), 700u);
}

TEST(Histogram, MergeOfDifferentPrecisionKeepsTheCoarserOne) {
  // Outside the contract; it still must not lose counts or go out of bounds.
  const auto values = lognormal_us(5, 10000, 50000, 1.0);
  Histogram coarse(4), fine(10);
  for (std::uint64_t v : values) coarse.record_us(v);
  fine.merge(coarse);
  EXPECT_EQ(fine.count(), coarse.count());
  EXPECT_EQ(fine.min_us(), coarse.min_us());
  EXPECT_EQ(fine.max_us(), coarse.max_us());
  auto sorted = values;
  std::sort(sorted.begin(), sorted.end());
  expect_within_precision(fine, sorted, 4);
  coarse.merge(fine);
  EXPECT_EQ(coarse.count(), 2 * values.size());
}

TEST(Histogram, ClearForgetsEverything) {
  Histogram h;
  h.record_us(5000);
  h.record_us(UINT64_MAX);
  h.clear();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.min_us(), 0u);
  EXPECT_EQ(h.max_us(), 0u);
  EXPECT_EQ(h.percentile_us(50), 0u);
  h.record_us(40);
  EXPECT_EQ(h.min_us(), 40u);
  EXPECT_EQ(h.percentile_us(100), 40u);
}

TEST(Histogram, RecordWithCount) {
  Histogram h;
  h.record_us(100, 5);
  h.record_us(300, 0);  // nothing
  h.record_us(200, 5);
  EXPECT_EQ(h.count(), 10u);
  EXPECT_EQ(h.max_us(), 200u);
  EXPECT_DOUBLE_EQ(h.mean_us(), 150.0);
  EXPECT_EQ(h.percentile_us(50), 100u);
  EXPECT_EQ(h.percentile_us(51), 200u);
}

TEST(Histogram, RecordSecondsRoundsToMicroseconds) {
  Histogram h;
  h.record_s(1.5);
  EXPECT_EQ(h.max_us(), 1500000u);
  h.record_s(0.0000004);  // 0.4 us
  EXPECT_EQ(h.min_us(), 0u);
  h.record_s(0.0000016);  // 1.6 us
  h.record_s(-1);
  h.record_s(-0.0);
  h.record_s(std::nan(""));
  EXPECT_EQ(h.count(), 4u);  // -0.0 is a zero, the rest are ignored
  h.record_s(1e30);
  h.record_s(INFINITY);
  EXPECT_EQ(h.clamped(), 2u);
  EXPECT_EQ(h.max_us(), kTop);
  Histogram g;
  g.record_s(0.0000016);
  EXPECT_EQ(g.min_us(), 2u);
}

TEST(Histogram, OutOfRangeSubBucketBitsAreClamped) {
  Histogram low(-3), high(60);
  for (Histogram* h : {&low, &high}) {
    h->record_us(123456789);
    h->record_us(kTop);
    EXPECT_EQ(h->count(), 2u);
    EXPECT_GE(h->percentile_us(50), 123456789u);
    EXPECT_EQ(h->percentile_us(100), kTop);
  }
}

}  // namespace
}  // namespace cmax::loadgen
