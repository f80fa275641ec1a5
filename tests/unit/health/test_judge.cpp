#include <gtest/gtest.h>

#include <cmath>

#include "health/judge.h"

using namespace cmax::health;
using cmax::audit::Outcome;

namespace {

Thresholds fraction_table() {
  Thresholds t;
  t.set("memory.bandwidth.fraction_of_ceiling.warn_min", 0.6);
  t.set("memory.bandwidth.fraction_of_ceiling.min", 0.4);
  t.set("cpu.stall.max_wakeup_ms.warn_max", 20);
  t.set("cpu.stall.max_wakeup_ms.max", 200);
  return t;
}

Measurement m(double v, std::string name = "fraction_of_ceiling") {
  return Measurement{std::move(name), v, "", std::nullopt, std::nullopt};
}

}  // namespace

TEST(Judge, MinBounds) {
  auto t = fraction_table();
  const std::string key = "memory.bandwidth.fraction_of_ceiling";
  auto x = m(0.75);
  auto j = judge(x, t, key);
  EXPECT_EQ(j.outcome, Outcome::pass);
  EXPECT_TRUE(j.reason.empty());
  EXPECT_EQ(x.min, 0.4);  // the fail bound is the one recorded
  EXPECT_FALSE(x.max);

  x = m(0.5);
  j = judge(x, t, key);
  EXPECT_EQ(j.outcome, Outcome::warn);
  EXPECT_EQ(j.reason,
            "fraction_of_ceiling 0.5 is below the warn bound 0.6 "
            "(memory.bandwidth.fraction_of_ceiling.warn_min)");
  x = m(0.3);
  j = judge(x, t, key);
  EXPECT_EQ(j.outcome, Outcome::fail);
  EXPECT_NE(j.reason.find("below the fail bound 0.4"), std::string::npos);
  x = m(0.4);  // on the bound is not below it
  EXPECT_EQ(judge(x, t, key).outcome, Outcome::warn);
}

TEST(Judge, MaxBoundsWithUnits) {
  auto t = fraction_table();
  auto x = Measurement{"max_wakeup_ms", 250, "ms", std::nullopt, std::nullopt};
  auto j = judge(x, t, "cpu.stall.max_wakeup_ms");
  EXPECT_EQ(j.outcome, Outcome::fail);
  EXPECT_EQ(j.reason,
            "max_wakeup_ms 250 ms is above the fail bound 200 (cpu.stall.max_wakeup_ms.max)");
  EXPECT_EQ(x.max, 200);
  x.value = 21;
  EXPECT_EQ(judge(x, t, "cpu.stall.max_wakeup_ms").outcome, Outcome::warn);
  x.value = 2;
  EXPECT_EQ(judge(x, t, "cpu.stall.max_wakeup_ms").outcome, Outcome::pass);
}

TEST(Judge, OnlyWarnBoundsAreRecordedWhenNoFailBound) {
  Bounds b;
  b.key = "storage.fsync.p99_us";
  b.warn_max = 5000;
  auto x = m(6000, "p99_us");
  EXPECT_EQ(judge(x, b).outcome, Outcome::warn);
  EXPECT_EQ(x.max, 5000);
}

TEST(Judge, NoBoundsOrNaNIsUnverifiedNeverPass) {
  Thresholds empty;
  auto x = m(0.9);
  auto j = judge(x, empty, "memory.bandwidth.fraction_of_ceiling");
  EXPECT_EQ(j.outcome, Outcome::unverified);
  EXPECT_NE(j.reason.find("measured, not judged"), std::string::npos);
  auto t = fraction_table();
  x = m(std::nan(""));
  EXPECT_EQ(judge(x, t, "memory.bandwidth.fraction_of_ceiling").outcome, Outcome::unverified);
}

TEST(Judge, Worse) {
  EXPECT_EQ(worse(Outcome::pass, Outcome::warn), Outcome::warn);
  EXPECT_EQ(worse(Outcome::fail, Outcome::warn), Outcome::fail);
  EXPECT_EQ(worse(Outcome::unverified, Outcome::warn), Outcome::warn);
  EXPECT_EQ(worse(Outcome::pass, Outcome::unverified), Outcome::unverified);
  EXPECT_EQ(worse(Outcome::not_applicable, Outcome::pass), Outcome::not_applicable);
}
