#include <gtest/gtest.h>

#include <set>
#include <string>

#include "endpoint/trace.h"

namespace cmax::endpoint {
namespace {

TEST(Mooncake, ParsesLines) {
  auto t = parse_mooncake(
      "{\"timestamp\": 1500, \"input_length\": 700, \"output_length\": 20, \"hash_ids\": [0, 1]}\n"
      "\n"
      "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [0]}\r\n");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->requests.size(), 2u);
  EXPECT_EQ(t->skipped_lines, 0u);
  // Sorted by arrival.
  EXPECT_DOUBLE_EQ(t->requests[0].arrival_s, 0.0);
  EXPECT_DOUBLE_EQ(t->requests[1].arrival_s, 1.5);
  EXPECT_EQ(t->requests[1].input_tokens, 700u);
  EXPECT_EQ(t->requests[1].output_tokens, 20u);
  const auto b = t->blocks(t->requests[1]);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1], 1u);
  EXPECT_EQ(t->block_tokens, 512);
}

TEST(Mooncake, SkipsAndNamesMalformedLines) {
  auto t = parse_mooncake(
      "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 1, \"input_length\": 100\n"
      "{\"timestamp\": 2, \"input_length\": -4, \"output_length\": 5, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 3, \"input_length\": 4, \"output_length\": 5, \"hash_ids\": [0, \"x\"]}\n"
      "[1, 2]\n"
      "{\"timestamp\": 4, \"input_length\": 4, \"output_length\": 5}\n");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->requests.size(), 1u);
  EXPECT_EQ(t->skipped_lines, 5u);
  ASSERT_EQ(t->warnings.size(), 5u);
  EXPECT_EQ(t->warnings[0], "line 2: not JSON");
  EXPECT_EQ(t->warnings[1], "line 3: \"input_length\" is not a non-negative integer");
  EXPECT_NE(t->warnings[2].find("line 4: \"hash_ids\""), std::string::npos);
  EXPECT_EQ(t->warnings[3], "line 5: not a JSON object");
  EXPECT_EQ(t->warnings[4], "line 6: missing \"hash_ids\"");
  EXPECT_EQ(t->hashes.size(), 1u) << "a bad line's ids are not kept";
}

TEST(Mooncake, FailsOnlyWhenNothingIsUsable) {
  auto empty = parse_mooncake("\n\n");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty"), std::string::npos);
  auto bad = parse_mooncake("hello\nworld\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("no usable request in 2 lines (line 1: not JSON)"), std::string::npos)
      << bad.error().message;
}

TEST(Synthetic, IsDeterministicAndShapedAsDocumented) {
  SyntheticConfig c;
  c.sessions = 20;
  c.turns = 4;
  const Trace a = synthetic_trace(c), b = synthetic_trace(c);
  ASSERT_EQ(a.requests.size(), 80u);
  EXPECT_EQ(a.hashes, b.hashes);
  for (std::size_t i = 1; i < a.requests.size(); ++i) EXPECT_LE(a.requests[i - 1].arrival_s, a.requests[i].arrival_s);
  // All sessions share the system prompt's full blocks (2048 / 512 = 4).
  std::set<std::uint64_t> first4;
  for (const auto& r : a.requests) {
    const auto bl = a.blocks(r);
    ASSERT_GE(bl.size(), 4u);
    first4.insert(bl[3]);
  }
  EXPECT_EQ(first4.size(), 1u);
  // A session's later turn extends its earlier turn's full blocks.
  const TraceRequest* turn[2] = {nullptr, nullptr};
  for (const auto& r : a.requests)
    if (r.session == 3) {
      if (!turn[0]) turn[0] = &r;
      else if (!turn[1]) turn[1] = &r;
    }
  ASSERT_TRUE(turn[0] && turn[1]);
  const auto b0 = a.blocks(*turn[0]), b1 = a.blocks(*turn[1]);
  const std::size_t full0 = turn[0]->input_tokens / 512;
  ASSERT_GT(b1.size(), full0);
  for (std::size_t k = 0; k < full0; ++k) EXPECT_EQ(b0[k], b1[k]) << k;
  EXPECT_GT(turn[1]->input_tokens, turn[0]->input_tokens + turn[0]->output_tokens);
  c.seed = 2;
  EXPECT_NE(synthetic_trace(c).hashes, a.hashes);
}

}  // namespace
}  // namespace cmax::endpoint
