// The capacity search (loadgen/capacity.h) against measurements whose edge is known.

#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "loadgen/capacity.h"

namespace {

using cmax::loadgen::CapacityConfig;
using cmax::loadgen::search_capacity;

TEST(Capacity, FindsAnIntegerEdgeByDoublingThenBisecting) {
  CapacityConfig c;  // concurrency, 1..1024, 3 repeats at the edge
  int measured = 0;
  auto r = search_capacity(c, [&](double x) -> std::optional<double> {
    ++measured;
    return x <= 52 ? 0.97 : 0.4;
  });
  EXPECT_EQ(r.edge, 52);
  EXPECT_GT(r.first_fail, 52);
  EXPECT_LE(r.first_fail, 52 + 52 * 0.05) << "bisected to the 5% tolerance";
  EXPECT_FALSE(r.reached_max);
  // 1,2,...,64 (7), bisect 32..64 to the tolerance (4), then two more at each end (4).
  EXPECT_LE(measured, 16);
  EXPECT_EQ(r.probes.size(), static_cast<std::size_t>(measured));
}

TEST(Capacity, ARateEdgeIsFoundToTheTolerance) {
  CapacityConfig c;
  c.integer = false;
  c.start = 1;
  c.max = 1000;
  c.tolerance = 0.02;
  auto r = search_capacity(c, [](double x) -> std::optional<double> { return x <= 159.0 ? 1.0 : 0.0; });
  EXPECT_LE(r.edge, 159.0);
  EXPECT_GE(r.edge, 159.0 / 1.02);
  EXPECT_GT(r.first_fail, 159.0);
  EXPECT_LE(r.first_fail, r.edge * 1.02 + 1e-9);
}

TEST(Capacity, NoisyMeasurementsAtTheEdgeAreDecidedByTheirMajority) {
  // 40 passes by luck once, fails otherwise; 39 always passes.
  CapacityConfig c;
  int seen40 = 0;
  auto r = search_capacity(c, [&](double x) -> std::optional<double> {
    if (x < 40) return 1.0;
    if (x == 40) return ++seen40 == 1 ? 0.95 : 0.5;
    return 0.0;
  });
  EXPECT_GE(r.edge, 38) << "the lucky 40 is overturned by its repeats and the search goes on below it";
  EXPECT_LE(r.edge, 39);
  EXPECT_EQ(r.first_fail, 40);
}

TEST(Capacity, EvenTheStartFailingIsAnEdgeOfZeroAndTheMaxPassingIsSaid) {
  CapacityConfig c;
  auto none = search_capacity(c, [](double) -> std::optional<double> { return 0.1; });
  EXPECT_EQ(none.edge, 0);
  EXPECT_EQ(none.first_fail, 1);
  c.max = 100;
  auto all = search_capacity(c, [](double) -> std::optional<double> { return 1.0; });
  EXPECT_EQ(all.edge, 100);
  EXPECT_TRUE(all.reached_max);
  EXPECT_EQ(all.first_fail, -1);
}

TEST(Capacity, AnInterruptionKeepsWhatWasMeasuredAndABoundHoldsWhateverTheNoise) {
  CapacityConfig c;
  int n = 0;
  auto r = search_capacity(c, [&](double) -> std::optional<double> {
    if (++n > 3) return std::nullopt;
    return 1.0;
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.probes.size(), 3u);
  EXPECT_EQ(r.edge, 4);
  std::mt19937 rng(1);
  c.max_probes = 12;
  auto noisy = search_capacity(c, [&](double) -> std::optional<double> { return std::uniform_real_distribution<>(0, 1)(rng); });
  EXPECT_LE(noisy.probes.size(), 12u);
}

}  // namespace
