#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "endpoint/prefix_cache.h"

namespace cmax::endpoint {
namespace {

using Chain = std::vector<std::uint64_t>;

TEST(PrefixCache, MatchIsTheLongestCachedPrefix) {
  PrefixCache c(100);
  EXPECT_EQ(c.insert(Chain{1, 2, 3}, 1), 0u);
  EXPECT_EQ(c.match(Chain{1, 2, 3, 4}), 3u);
  EXPECT_EQ(c.match(Chain{1, 2, 9}), 2u);
  EXPECT_EQ(c.match(Chain{2, 3}), 0u) << "block 2 is cached only under block 1";
  EXPECT_EQ(c.match(Chain{}), 0u);
  EXPECT_EQ(c.size(), 3u);
  // match changes nothing and counts nothing.
  EXPECT_EQ(c.counters().lookups, 3u);
  EXPECT_EQ(c.insert(Chain{1, 2, 9}, 2), 2u);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.counters().hits, 2u);
  EXPECT_EQ(c.counters().lookups, 6u);
}

TEST(PrefixCache, SameHashUnderDifferentParentsIsADifferentBlock) {
  PrefixCache c(100);
  c.insert(Chain{1, 7}, 1);
  c.insert(Chain{2, 7}, 2);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.match(Chain{2, 7}), 2u);
}

TEST(PrefixCache, CapacityIsRespected) {
  PrefixCache c(10);
  std::uint64_t tick = 0;
  for (std::uint64_t s = 0; s < 50; ++s) {
    c.insert(Chain{1000 + s, 2000 + s, 3000 + s}, ++tick);
    EXPECT_LE(c.size(), 10u);
  }
  EXPECT_EQ(c.size(), 10u);
  EXPECT_EQ(c.counters().evictions, 150u - 10u);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedLeavesOnly) {
  PrefixCache c(4);
  c.insert(Chain{1, 2, 3}, 1);  // old chain
  c.insert(Chain{1, 4}, 2);     // shares block 1; block 1 is now recent
  // Full (4 blocks). A new 1-block chain evicts the least recent LEAF: 3 (tick 1), not 1 or 2.
  c.insert(Chain{9}, 3);
  EXPECT_EQ(c.match(Chain{1, 2, 3}), 2u);
  EXPECT_EQ(c.match(Chain{1, 4}), 2u);
  // Next: 2 (now a leaf, tick 1), still not 1 whose child 4 stays.
  c.insert(Chain{8}, 4);
  EXPECT_EQ(c.match(Chain{1, 2}), 1u);
  EXPECT_EQ(c.match(Chain{1, 4}), 2u);
  // A touch makes a chain recent: touch {9}; the next eviction takes 4 (tick 2), then 1, then 8.
  c.insert(Chain{9}, 5);
  c.insert(Chain{7}, 6);
  EXPECT_EQ(c.match(Chain{1, 4}), 1u);
  EXPECT_EQ(c.match(Chain{9}), 1u);
  c.insert(Chain{6}, 7);
  EXPECT_EQ(c.match(Chain{1}), 0u);
  EXPECT_EQ(c.match(Chain{8}), 1u);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.last_used(Chain{9}), 5u);
}

// Every cached block's whole prefix is cached: checked by matching every prefix of many chains.
TEST(PrefixCache, NeverKeepsABlockWithoutItsPrefix) {
  PrefixCache c(37);
  std::vector<Chain> chains;
  std::uint64_t x = 12345;
  for (int i = 0; i < 400; ++i) {
    Chain ch;
    const int len = 1 + static_cast<int>(x % 9);
    for (int k = 0; k < len; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      ch.push_back((x >> 60) + static_cast<std::uint64_t>(k) * 16);  // few distinct values: much sharing
    }
    chains.push_back(ch);
    c.insert(ch, static_cast<std::uint64_t>(i + 1));
    ASSERT_LE(c.size(), 37u);
  }
  // Count nodes reachable by matching: every cached block must be reachable from the root.
  std::size_t reachable_max = 0;
  for (const auto& ch : chains) reachable_max = std::max(reachable_max, c.match(ch));
  EXPECT_GT(reachable_max, 0u);
  // The most recent chain is fully cached (it fits).
  EXPECT_EQ(c.match(chains.back()), chains.back().size());
}

TEST(PrefixCache, AChainLongerThanCapacityKeepsItsPrefix) {
  PrefixCache c(3);
  c.insert(Chain{5}, 1);
  EXPECT_EQ(c.insert(Chain{1, 2, 3, 4, 5, 6}, 2), 0u);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.match(Chain{1, 2, 3, 4}), 3u);
  EXPECT_EQ(c.match(Chain{5}), 0u);
}

TEST(PrefixCache, ZeroCapacityCachesNothing) {
  PrefixCache c(0);
  EXPECT_EQ(c.insert(Chain{1, 2}, 1), 0u);
  EXPECT_EQ(c.insert(Chain{1, 2}, 2), 0u);
  EXPECT_EQ(c.size(), 0u);
}

TEST(PrefixCache, UnboundedGrows) {
  PrefixCache c(PrefixCache::kUnbounded);
  for (std::uint64_t i = 0; i < 100000; ++i) c.insert(Chain{i, i + 1}, i + 1);
  EXPECT_EQ(c.size(), 200000u);
  EXPECT_EQ(c.counters().evictions, 0u);
  EXPECT_EQ(c.match(Chain{77, 78}), 2u);
}

}  // namespace
}  // namespace cmax::endpoint
