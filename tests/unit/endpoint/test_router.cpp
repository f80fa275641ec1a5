#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "endpoint/fleet.h"
#include "endpoint/router.h"

namespace cmax::endpoint {
namespace {

using Chain = std::vector<std::uint64_t>;

FleetConfig config(Policy p, int replicas = 4) {
  FleetConfig c;
  c.policy = p;
  c.replicas = replicas;
  c.cache_blocks = 1000;
  return c;
}

TEST(Policy, NamesRoundTrip) {
  ASSERT_EQ(all_policies().size(), 7u);
  for (Policy p : all_policies()) {
    Policy back;
    ASSERT_TRUE(policy_from_name(policy_name(p), back));
    EXPECT_EQ(back, p);
  }
  Policy x;
  EXPECT_FALSE(policy_from_name("fastest", x));
}

TEST(Router, JumpConsistentHashIsStableAndMovesFewKeys) {
  int moved = 0;
  for (std::uint64_t k = 0; k < 10000; ++k) {
    const int a = jump_consistent_hash(k * 0x9e3779b97f4a7c15ull, 8);
    ASSERT_GE(a, 0);
    ASSERT_LT(a, 8);
    EXPECT_EQ(a, jump_consistent_hash(k * 0x9e3779b97f4a7c15ull, 8));
    const int b = jump_consistent_hash(k * 0x9e3779b97f4a7c15ull, 9);
    if (a != b) {
      ++moved;
      EXPECT_EQ(b, 8) << "a key moves only to the new bucket";
    }
  }
  EXPECT_NEAR(moved, 10000 / 9, 200);
}

TEST(Router, LoadImbalanceIsSGLangsTest) {
  EXPECT_FALSE(load_imbalanced(std::array{0, 32}, 32, 1.1)) << "gap must exceed abs";
  EXPECT_TRUE(load_imbalanced(std::array{0, 33}, 32, 1.1));
  EXPECT_FALSE(load_imbalanced(std::array{400, 433}, 32, 1.1)) << "433 < 1.1 x 400";
  EXPECT_TRUE(load_imbalanced(std::array{100, 150}, 32, 1.1));
}

TEST(Router, LeastLoadedBreaksTiesFromStart) {
  EXPECT_EQ(least_loaded(std::array{3, 1, 2, 1}, 0), 1);
  EXPECT_EQ(least_loaded(std::array{3, 1, 2, 1}, 2), 3);
  EXPECT_EQ(least_loaded(std::array{0, 0, 0}, 2), 2);
}

TEST(Router, RoundRobinCycles) {
  Router r(config(Policy::kRoundRobin, 3));
  std::vector<int> load(3, 0);
  std::vector<int> got;
  for (int i = 0; i < 6; ++i) got.push_back(r.pick(Chain{1}, "", load, {}).replica);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(Router, RandomIsSeededAndCoversAll) {
  Router a(config(Policy::kRandom)), b(config(Policy::kRandom));
  std::vector<int> load(4, 0);
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const int x = a.pick(Chain{1}, "", load, {}).replica;
    EXPECT_EQ(x, b.pick(Chain{1}, "", load, {}).replica);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(Router, LeastLoadedPicksFewestRunning) {
  Router r(config(Policy::kLeastLoaded));
  std::vector<int> load{5, 2, 7, 3};
  EXPECT_EQ(r.pick(Chain{1}, "", load, {}).replica, 1);
}

TEST(Router, ConsistentHashKeysOnSessionElseFirstBlock) {
  Router r(config(Policy::kConsistentHash, 8));
  std::vector<int> load(8, 0);
  const int s = r.pick(Chain{1, 2}, "user-42", load, {}).replica;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.pick(Chain{9, 9, 9}, "user-42", load, {}).replica, s);
  const int f = r.pick(Chain{77, 1}, "", load, {}).replica;
  EXPECT_EQ(r.pick(Chain{77, 2, 3}, "", load, {}).replica, f);
  EXPECT_EQ(f, jump_consistent_hash(77, 8));
}

TEST(Router, CacheAwareFollowsItsOwnHistory) {
  Router r(config(Policy::kCacheAware));
  std::vector<int> load{0, 0, 0, 0};
  const Chain a{1, 2, 3, 4};
  const Route first = r.pick(a, "", load, {});
  EXPECT_EQ(first.reason, RouteReason::kCacheMiss);
  r.routed(first.replica, a, 1);
  load[static_cast<std::size_t>(first.replica)] = 5;  // busier now, but within the balance thresholds
  // 3 of 4 blocks match (0.75 > 0.3): the same replica despite its load.
  const Route again = r.pick(Chain{1, 2, 3, 9}, "", load, {});
  EXPECT_EQ(again.replica, first.replica);
  EXPECT_EQ(again.reason, RouteReason::kCacheMatch);
  EXPECT_EQ(again.matched_blocks, 3u);
  // 1 of 4 (0.25, not above 0.3): the least loaded instead.
  const Route low = r.pick(Chain{1, 7, 8, 9}, "", load, {});
  EXPECT_EQ(low.reason, RouteReason::kCacheMiss);
  EXPECT_NE(low.replica, first.replica);
}

TEST(Router, CacheAwareBalancesWhenImbalanced) {
  Router r(config(Policy::kCacheAware));
  const Chain a{1, 2, 3, 4};
  r.routed(2, a, 1);
  std::vector<int> load{10, 10, 100, 10};  // 90 > 64 and 100 > 1.5 x 10
  const Route x = r.pick(a, "", load, {});
  EXPECT_EQ(x.reason, RouteReason::kImbalance);
  EXPECT_NE(x.replica, 2);
}

TEST(Router, CacheAwareFollowsAMatchOnlyAboveTheThreshold) {
  // The routers' rule: match_rate > cache_threshold. Exactly at it is a miss.
  auto c = config(Policy::kCacheAware);
  c.cache_threshold = 0.5;
  Router r(c);
  std::vector<int> load{0, 0, 0, 0};
  r.routed(3, Chain{1, 2, 3, 4}, 1);
  EXPECT_EQ(r.pick(Chain{1, 2, 8, 9}, "", load, {}).reason, RouteReason::kCacheMiss) << "2 of 4 is 0.5, not above";
  EXPECT_EQ(r.pick(Chain{1, 2, 3, 9}, "", load, {}).reason, RouteReason::kCacheMatch);
}

TEST(Router, PowerOfTwoTakesTheLessLoadedOfTwoDistinctDraws) {
  Router r(config(Policy::kPowerOfTwo));
  std::vector<int> load{0, 100, 100, 100};
  // Replica 0 wins whenever it is drawn; three of the six pairs hold it, so about half the picks.
  int zero = 0;
  std::set<int> seen;
  for (int i = 0; i < 600; ++i) {
    const int x = r.pick(Chain{1}, "", load, {}).replica;
    zero += x == 0;
    seen.insert(x);
  }
  EXPECT_GT(zero, 240);
  EXPECT_LT(zero, 360);
  EXPECT_EQ(seen.size(), 4u) << "two busy replicas drawn together: the first drawn";
  Router one(config(Policy::kPowerOfTwo, 1));
  std::vector<int> single{3};
  EXPECT_EQ(one.pick(Chain{1}, "", single, {}).replica, 0);
}

TEST(Router, PreciseWeighsPrefillAgainstLoad) {
  auto c = config(Policy::kPrecise, 2);
  std::vector<PrefixCache> caches;
  caches.emplace_back(100);
  caches.emplace_back(100);
  const Chain a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  caches[1].insert(a, 1);
  Router r(c);
  // Replica 1 saves 10 prefill blocks and runs 5 more requests: cost 0 + 5 < 10 + 0.
  EXPECT_EQ(r.pick(a, "", std::vector<int>{0, 5}, caches).replica, 1);
  // 11 more running outweighs the 10 saved blocks.
  EXPECT_EQ(r.pick(a, "", std::vector<int>{0, 11}, caches).replica, 0);
  // A larger overlap weight prefers the cache again.
  c.overlap_weight = 2;
  Router heavy(c);
  EXPECT_EQ(heavy.pick(a, "", std::vector<int>{0, 11}, caches).replica, 1);
}

}  // namespace
}  // namespace cmax::endpoint
