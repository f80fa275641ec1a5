#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "endpoint/fleet.h"
#include "endpoint/prefix_cache.h"

namespace cmax::endpoint {
namespace {

using Chain = std::vector<std::uint64_t>;

FleetConfig one_replica(int slots) {
  FleetConfig c;
  c.replicas = 1;
  c.cache_blocks = 100;
  c.block_tokens = 100;
  c.policy = Policy::kRoundRobin;
  c.timing.prefill_tokens_per_s = 1000;
  c.timing.decode_tokens_per_s = 10;
  c.timing.batch_slowdown = 0;
  c.timing.max_concurrent = slots;
  return c;
}

TEST(Fleet, PrefillSkipsCachedBlocks) {
  Fleet f(one_replica(4));
  const Chain p{1, 2, 3, 4, 5};
  const Admission a = f.admit(p, 500, 11, "", 0.0);
  EXPECT_EQ(a.cached_blocks, 0u);
  EXPECT_DOUBLE_EQ(a.start_s, 0.0);
  EXPECT_DOUBLE_EQ(a.first_token_s, 0.5);           // 500 tokens at 1000/s
  EXPECT_DOUBLE_EQ(a.per_token_s, 0.1);             // 10 tok/s alone
  EXPECT_DOUBLE_EQ(a.finish_s, 0.5 + 10 * 0.1);     // 10 more tokens
  f.finish(0, a.finish_s);
  const Admission b = f.admit(Chain{1, 2, 3, 4, 9}, 480, 1, "", 10.0);
  EXPECT_EQ(b.cached_blocks, 4u);
  EXPECT_EQ(b.cached_tokens, 400u);
  EXPECT_DOUBLE_EQ(b.first_token_s, 10.0 + 0.08);  // only 80 uncached tokens
  EXPECT_DOUBLE_EQ(b.finish_s, b.first_token_s);   // one output token
  EXPECT_EQ(f.cache(0).size(), 6u);
}

TEST(Fleet, CachedTokensNeverExceedThePrompt) {
  Fleet f(one_replica(4));
  f.admit(Chain{1, 2}, 150, 1, "", 0.0);
  const Admission a = f.admit(Chain{1, 2}, 150, 1, "", 1.0);
  EXPECT_EQ(a.cached_blocks, 2u);
  EXPECT_EQ(a.cached_tokens, 150u);
}

TEST(Fleet, QueuesWhenMaxConcurrentIsReached) {
  Fleet f(one_replica(2));
  // Three requests at t=0, no cache hits, 100 prompt tokens (0.1 s prefill each, one at a time),
  // 11 output tokens (1 s of decode).
  const Admission a = f.admit(Chain{1}, 100, 11, "", 0.0);
  const Admission b = f.admit(Chain{2}, 100, 11, "", 0.0);
  const Admission c = f.admit(Chain{3}, 100, 11, "", 0.0);
  EXPECT_DOUBLE_EQ(a.start_s, 0.0);
  EXPECT_DOUBLE_EQ(b.start_s, 0.1) << "prefill is one at a time";
  EXPECT_DOUBLE_EQ(a.finish_s, 1.1);
  EXPECT_DOUBLE_EQ(b.finish_s, 1.2);
  // Both slots are taken: the third waits for the first to finish.
  EXPECT_DOUBLE_EQ(c.start_s, a.finish_s);
  EXPECT_DOUBLE_EQ(c.first_token_s, 1.2);
  EXPECT_EQ(f.running(), std::vector<int>{3});
  f.finish(0, 1.1);
  EXPECT_EQ(f.running(), std::vector<int>{2});
}

TEST(Fleet, DecodeSlowsWithTheBatch) {
  auto cfg = one_replica(8);
  cfg.timing.batch_slowdown = 0.5;
  cfg.timing.prefill_tokens_per_s = 1e9;
  Fleet f(cfg);
  const Admission a = f.admit(Chain{1}, 100, 100, "", 0.0);
  const Admission b = f.admit(Chain{2}, 100, 100, "", 0.0);
  EXPECT_NEAR(a.per_token_s, 0.1, 1e-9);
  EXPECT_NEAR(b.per_token_s, 0.1 * 1.5, 1e-9) << "batch of 2: rate / (1 + 0.5)";
}

TEST(Fleet, EarlyFinishFreesTheSlot) {
  Fleet f(one_replica(1));
  const Admission a = f.admit(Chain{1}, 100, 1000, "", 0.0);  // would run ~100 s
  f.finish(0, 2.0);                                          // the client went away
  const Admission b = f.admit(Chain{2}, 100, 1, "", 3.0);
  EXPECT_LT(b.start_s, a.finish_s);
  EXPECT_DOUBLE_EQ(b.start_s, 3.0);
}

TEST(Fleet, LeastLoadedSpreadsAndFinishRebalances) {
  FleetConfig c = one_replica(64);
  c.replicas = 3;
  c.policy = Policy::kLeastLoaded;
  Fleet f(c);
  for (std::uint64_t i = 0; i < 6; ++i) f.admit(Chain{i}, 100, 1, "", 0.0);
  EXPECT_EQ(f.running(), (std::vector<int>{2, 2, 2}));
  f.finish(1, 1.0);
  EXPECT_EQ(f.admit(Chain{99}, 100, 1, "", 1.0).replica, 1);
}

}  // namespace
}  // namespace cmax::endpoint
