// Workloads of cmax endpoint bench: deterministic block text, Mooncake replay, multi-turn sessions,
// fixed lengths, and the theoretical cache over what was sent (checked against the trace's own
// theoretical hit rate on the real Mooncake conversation trace).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "endpoint/openai_tokenize.h"
#include "endpoint/simulate.h"
#include "endpoint/trace.h"
#include "loadgen/workload.h"

namespace cmax::loadgen {
namespace {

// Timing bounds hold for optimised builds; sanitizers (the fuzz configuration instruments
// everything) slow this code by more than the margins.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kTimed = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kTimed = false;
#else
constexpr bool kTimed = true;
#endif
#else
constexpr bool kTimed = true;
#endif

std::size_t count_tokens(std::string_view text) { return endpoint::tokenize(text).size(); }

std::string render(const std::vector<Message>& messages) {
  std::vector<endpoint::ChatMessage> chat;
  chat.reserve(messages.size());
  for (const auto& m : messages) chat.push_back({m.role, m.content});
  return endpoint::render_chat(chat);
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto next = text.find(' ', 1);
    out.push_back(text.substr(0, next));
    text = next == std::string_view::npos ? std::string_view{} : text.substr(next);
  }
  return out;
}

endpoint::Trace parse(std::string_view jsonl) {
  auto t = endpoint::parse_mooncake(jsonl);
  EXPECT_TRUE(t.has_value());
  return t ? std::move(*t) : endpoint::Trace{};
}

const endpoint::Trace& conversation() {
  static const endpoint::Trace t = [] {
    std::ifstream in(std::string(CMAX_SOURCE_DIR) +
                     "/tests/golden/traces/mooncake_conversation_trace.jsonl");
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto parsed = endpoint::parse_mooncake(text);
    return parsed ? std::move(*parsed) : endpoint::Trace{};
  }();
  return t;
}

std::vector<RequestSpec> drain(Workload& w) {
  std::vector<RequestSpec> out;
  while (auto s = w.next()) out.push_back(std::move(*s));
  return out;
}

// --- block_text
// -----------------------------------------------------------------------------------

TEST(BlockText, EveryWordIsOneTokenOfOneToFourLowercaseLetters) {
  for (std::uint64_t id : {0ull, 1ull, 2ull, 511ull, 123456789ull, ~0ull}) {
    const std::string text = block_text(id, 2000);
    const auto ws = words(text);
    ASSERT_EQ(ws.size(), 2000u);
    std::set<std::size_t> lengths;
    for (auto w : ws) {
      ASSERT_GE(w.size(), 2u);
      ASSERT_LE(w.size(), 5u);
      ASSERT_EQ(w[0], ' ');
      for (char c : w.substr(1)) ASSERT_TRUE(c >= 'a' && c <= 'z') << w;
      ASSERT_EQ(count_tokens(w), 1u) << w;
      lengths.insert(w.size() - 1);
    }
    EXPECT_EQ(lengths, (std::set<std::size_t>{1, 2, 3, 4}));
  }
}

TEST(BlockText, TokenCountIsExactForManyIdsAndLengths) {
  for (std::uint64_t id = 0; id < 200; ++id) {
    for (std::uint32_t n : {0u, 1u, 2u, 3u, 15u, 16u, 17u, 100u, 511u, 512u, 513u}) {
      const std::uint64_t salt = id % 3;
      ASSERT_EQ(count_tokens(block_text(id * 7919 + n, n, salt)), n) << "id " << id << " n " << n;
    }
  }
  EXPECT_TRUE(block_text(42, 0).empty());
}

TEST(BlockText, ShorterIsAPrefixOfLonger) {
  for (std::uint64_t id : {0ull, 3ull, 99ull, 1ull << 40}) {
    const std::string full = block_text(id, 600, 5);
    for (std::uint32_t n : {1u, 2u, 10u, 255u, 512u, 599u}) {
      const std::string part = block_text(id, n, 5);
      ASSERT_EQ(full.compare(0, part.size(), part), 0) << n;
      // The cut falls between words: the next byte of the longer text starts a word.
      ASSERT_EQ(full[part.size()], ' ');
    }
  }
}

TEST(BlockText, DistinctIdsDifferInTheFirstFewWords) {
  std::set<std::string> heads;
  for (std::uint64_t id = 0; id < 20000; ++id) heads.insert(block_text(id, 3));
  EXPECT_EQ(heads.size(), 20000u);
  // And most already differ at the first word from their neighbour.
  int first_word_differs = 0;
  for (std::uint64_t id = 0; id < 1000; ++id)
    first_word_differs += words(block_text(id, 1))[0] != words(block_text(id + 1, 1))[0];
  EXPECT_GT(first_word_differs, 990);
}

TEST(BlockText, SaltSeparatesRunsAndIsDeterministic) {
  EXPECT_EQ(block_text(7, 64), block_text(7, 64, 0));
  EXPECT_EQ(block_text(7, 64, 9), block_text(7, 64, 9));
  EXPECT_NE(block_text(7, 64, 1), block_text(7, 64, 0));
  EXPECT_NE(block_text(7, 64, 1), block_text(7, 64, 2));
  // Pinned: the same id gives the same text in every build (caches of a server survive a client
  // upgrade, and results compare across versions).
  EXPECT_EQ(block_text(0, 6), " bkv xdu dic nxd bybo giz");
  EXPECT_EQ(block_text(1, 4, 7), " yh j v yxhb");
}

TEST(BlockText, ConcatenatedBlocksKeepTokenCountsAdditive) {
  std::string text;
  std::size_t expected = 0;
  for (std::uint64_t id = 0; id < 50; ++id) {
    const std::uint32_t n = static_cast<std::uint32_t>(1 + (id * 37) % 97);
    text += block_text(id, n, 11);
    expected += n;
    ASSERT_EQ(count_tokens(text), expected) << id;
  }
  // After the chat template's "\n" too: the content adds exactly its own tokens.
  const std::string empty = endpoint::render_chat(std::vector<endpoint::ChatMessage>{{"user", ""}});
  const std::string full =
      endpoint::render_chat(std::vector<endpoint::ChatMessage>{{"user", text}});
  EXPECT_EQ(count_tokens(full), count_tokens(empty) + expected);
}

TEST(BlockText, TwelveThousandTokensTakeWellUnderAMillisecond) {
  using clock = std::chrono::steady_clock;
  auto best = clock::duration::max();
  std::size_t bytes = 0;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = clock::now();
    const std::string s = block_text(static_cast<std::uint64_t>(i), 12000);
    best = std::min(best, clock::now() - t0);
    bytes += s.size();
  }
  EXPECT_GT(bytes, 0u);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(best).count();
  std::printf("block_text 12000 tokens: %lld us\n", static_cast<long long>(us));
  if (kTimed) {
    EXPECT_LT(us, 1000);
  }
}

// --- Mooncake
// -------------------------------------------------------------------------------------

constexpr std::string_view kSmallTrace =
    R"({"timestamp": 0, "input_length": 1100, "output_length": 50, "hash_ids": [0, 1, 2]}
{"timestamp": 250, "input_length": 1024, "output_length": 0, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 600, "output_length": 7000, "hash_ids": [0, 3]}
{"timestamp": 2000, "input_length": 1100, "output_length": 20, "hash_ids": [0, 1, 2]}
)";

TEST(Mooncake, OneUserMessageOfInputLengthTokensPerRequestInTraceOrder) {
  const auto trace = parse(kSmallTrace);
  auto w = mooncake_workload(trace, {});
  EXPECT_EQ(w->total(), 4u);
  EXPECT_FALSE(w->exhausted());
  EXPECT_FALSE(w->wants_reply_text());
  const auto specs = drain(*w);
  EXPECT_TRUE(w->exhausted());
  EXPECT_FALSE(w->next().has_value());
  ASSERT_EQ(specs.size(), 4u);
  const std::vector<double> at = {0, 0.25, 1.5, 2.0};
  const std::vector<std::uint32_t> max_tokens = {50, 1, 7000, 20};
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(s.session, 0u);
    EXPECT_EQ(s.turn, 0u);
    EXPECT_DOUBLE_EQ(s.at_s, at[i]);
    EXPECT_EQ(s.max_tokens, max_tokens[i]) << i;
    EXPECT_EQ(s.expected_prompt_tokens, trace.requests[i].input_tokens);
    ASSERT_EQ(s.messages.size(), 1u);
    EXPECT_EQ(s.messages[0].role, "user");
    EXPECT_EQ(count_tokens(s.messages[0].content), trace.requests[i].input_tokens) << i;
  }
}

TEST(Mooncake, TextIsTheConcatenationOfBlockTexts) {
  const auto trace = parse(kSmallTrace);
  auto w = mooncake_workload(trace, {.salt = 3});
  const auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].messages[0].content,
            block_text(0, 512, 3) + block_text(1, 512, 3) + block_text(2, 76, 3));
  EXPECT_EQ(specs[1].messages[0].content, block_text(0, 512, 3) + block_text(1, 512, 3));
  EXPECT_EQ(specs[2].messages[0].content, block_text(0, 512, 3) + block_text(3, 88, 3));
  // Equal ids are equal prefixes; the same request replayed is the same text.
  const auto& a = specs[0].messages[0].content;
  const auto& b = specs[1].messages[0].content;
  EXPECT_EQ(a.compare(0, b.size(), b), 0);
  EXPECT_EQ(specs[3].messages[0].content, a);
  // A different id diverges right at its block.
  const auto& c = specs[2].messages[0].content;
  const std::size_t first_block = block_text(0, 512, 3).size();
  EXPECT_EQ(a.compare(0, first_block, c, 0, first_block), 0);
  EXPECT_NE(a.substr(first_block, 20), c.substr(first_block, 20));
}

TEST(Mooncake, SaltChangesEveryRequest) {
  const auto trace = parse(kSmallTrace);
  auto a = drain(*mooncake_workload(trace, {.salt = 0}));
  auto b = drain(*mooncake_workload(trace, {.salt = 1}));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NE(a[i].messages[0].content.substr(0, 30), b[i].messages[0].content.substr(0, 30));
    EXPECT_EQ(count_tokens(b[i].messages[0].content), trace.requests[i].input_tokens);
  }
}

TEST(Mooncake, MaxRequestsAndMaxOutputTokensLimit) {
  const auto trace = parse(kSmallTrace);
  auto w = mooncake_workload(trace, {.max_requests = 3, .max_output_tokens = 100});
  EXPECT_EQ(w->total(), 3u);
  const auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].max_tokens, 50u);
  EXPECT_EQ(specs[1].max_tokens, 1u);  // output_length 0 still asks for one token
  EXPECT_EQ(specs[2].max_tokens, 100u);
  EXPECT_TRUE(w->exhausted());
  // More than the trace holds is the whole trace.
  EXPECT_EQ(mooncake_workload(trace, {.max_requests = 99})->total(), 4u);
}

TEST(Mooncake, RepliesChangeNothing) {
  const auto trace = parse(kSmallTrace);
  auto w = mooncake_workload(trace, {});
  auto s = w->next();
  ASSERT_TRUE(s);
  w->reply(*s, "whatever", false);
  w->reply(*s, "whatever", true);
  auto t = w->next();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->index, 1u);
}

TEST(Mooncake, OutlivesItsTrace) {
  std::unique_ptr<Workload> w;
  {
    const auto trace = parse(kSmallTrace);
    w = mooncake_workload(trace, {});
  }
  const auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(count_tokens(specs[0].messages[0].content), 1100u);
}

TEST(Mooncake, InconsistentLengthsAreClampedNotFatal) {
  // 3 ids need 1025..1536 tokens; 700 leaves the third block empty (and the second partial), 2000
  // has tokens no id covers, 0 has none; no ids at all with tokens.
  const auto trace = parse(
      R"({"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 1, 2]}
{"timestamp": 1, "input_length": 2000, "output_length": 5, "hash_ids": [0, 1, 2]}
{"timestamp": 2, "input_length": 0, "output_length": 5, "hash_ids": [0, 1]}
{"timestamp": 3, "input_length": 300, "output_length": 5, "hash_ids": []}
{"timestamp": 4, "input_length": 2000, "output_length": 5, "hash_ids": [0, 1, 2]}
)");
  const auto specs = drain(*mooncake_workload(trace, {}));
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].messages[0].content, block_text(0, 512) + block_text(1, 188));
  const auto& over = specs[1].messages[0].content;
  EXPECT_EQ(count_tokens(over), 2000u);
  const std::string covered = block_text(0, 512) + block_text(1, 512) + block_text(2, 512);
  EXPECT_EQ(over.compare(0, covered.size(), covered), 0);
  // The uncovered excess is unique to the request, not shared with an identical one.
  EXPECT_NE(over, specs[4].messages[0].content);
  EXPECT_TRUE(specs[2].messages[0].content.empty());
  EXPECT_EQ(count_tokens(specs[3].messages[0].content), 300u);
  for (std::size_t i = 0; i < specs.size(); ++i)
    EXPECT_EQ(specs[i].expected_prompt_tokens, trace.requests[i].input_tokens);
}

TEST(Mooncake, TheGoldenTraceBuildsFastAndExactly) {
  const auto& trace = conversation();
  ASSERT_EQ(trace.requests.size(), 12031u);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto w = mooncake_workload(trace, {.max_requests = 1000});
  const auto built = clock::now() - t0;
  std::uint64_t tokens = 0;
  std::size_t n = 0;
  std::vector<long long> twelve_k_ns;  // requests of 11k..13k tokens
  while (true) {
    const auto t1 = clock::now();
    auto s = w->next();
    const auto took = clock::now() - t1;
    if (!s) break;
    ASSERT_EQ(count_tokens(s->messages[0].content), trace.requests[n].input_tokens) << n;
    tokens += trace.requests[n].input_tokens;
    if (trace.requests[n].input_tokens >= 11000 && trace.requests[n].input_tokens <= 13000)
      twelve_k_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    ++n;
  }
  EXPECT_EQ(n, 1000u);
  ASSERT_GT(twelve_k_ns.size(), 10u);
  std::sort(twelve_k_ns.begin(), twelve_k_ns.end());
  const long long median_us = twelve_k_ns[twelve_k_ns.size() / 2] / 1000;
  const long long built_us = std::chrono::duration_cast<std::chrono::microseconds>(built).count();
  std::printf(
      "mooncake: construct %lld us; %llu tokens; median 11k..13k-token request %lld us (%zu of "
      "them)\n",
      built_us, static_cast<unsigned long long>(tokens), median_us, twelve_k_ns.size());
  if (kTimed) {
    EXPECT_LT(built_us, 10000);
  }
  // The median, so that a scheduling hiccup on a busy machine does not fail the suite.
  if (kTimed) {
    EXPECT_LT(median_us, 1000);
  }
}

// The acceptance check: the theoretical cache over the prompts this workload sends (rendered as
// the server renders a chat, at the server's 16-token blocks) agrees with the trace's own
// theoretical hit rate (512-token blocks by id).
TEST(Mooncake, TheoreticalCacheOfTheRenderedGoldenTraceMatchesTheTrace) {
  const auto& full = conversation();
  ASSERT_GE(full.requests.size(), 300u);
  endpoint::Trace head;
  head.block_tokens = full.block_tokens;
  for (std::size_t i = 0; i < 300; ++i) {
    auto r = full.requests[i];
    const auto ids = full.blocks(r);
    r.first_block = static_cast<std::uint32_t>(head.hashes.size());
    head.hashes.insert(head.hashes.end(), ids.begin(), ids.end());
    head.requests.push_back(r);
  }
  const double trace_rate = endpoint::theoretical_hit_rate(head);

  TheoreticalCache cache(16);
  auto w = mooncake_workload(full, {.max_requests = 300});
  std::uint64_t trace_tokens = 0;
  while (auto s = w->next()) {
    trace_tokens += s->expected_prompt_tokens;
    cache.add(render(s->messages));
  }
  std::printf(
      "first 300 requests: trace theoretical %.4f (blocks), TheoreticalCache@16 %.4f "
      "(%llu of %llu tokens; %llu template tokens)\n",
      trace_rate, cache.hit_rate(), static_cast<unsigned long long>(cache.cached_tokens()),
      static_cast<unsigned long long>(cache.prompt_tokens()),
      static_cast<unsigned long long>(cache.prompt_tokens() - trace_tokens));
  EXPECT_EQ(cache.prompt_tokens(),
            trace_tokens + 300 * 15);  // "<|user|>\n" 6 + "\n<|assistant|>\n" 9
  EXPECT_GT(trace_rate, 0.05);
  // The trace's rate counts blocks and a miss is mostly a request's short partial last block, so
  // weighting by tokens (as the cache does) comes out a little higher; the template's 6 leading
  // tokens shift the 16-token blocks but cost nothing, since a run of k whole 512-token blocks is
  // 6 + 512k tokens = 32k whole blocks and a few. Against the same trace count weighted by tokens
  // (with the template's tokens in the denominator) it agrees to rounding.
  EXPECT_NEAR(cache.hit_rate(), trace_rate, 0.02);
  std::set<std::vector<std::uint64_t>> seen;
  std::uint64_t hit_tokens = 0;
  for (const auto& r : head.requests) {
    const auto ids = head.blocks(r);
    std::vector<std::uint64_t> prefix;
    std::uint64_t hits = 0;
    for (std::uint64_t id : ids) {
      prefix.push_back(id);
      if (hits == prefix.size() - 1 && seen.contains(prefix)) ++hits;
      seen.insert(prefix);
    }
    hit_tokens += std::min<std::uint64_t>(r.input_tokens, hits * 512);
  }
  const double token_weighted =
      static_cast<double>(hit_tokens) / static_cast<double>(cache.prompt_tokens());
  std::printf("trace theoretical weighted by tokens: %.4f\n", token_weighted);
  EXPECT_NEAR(cache.hit_rate(), token_weighted, 0.002);
}

// --- multi-turn
// -----------------------------------------------------------------------------------

TEST(MultiTurn, TurnZeroOfEverySessionFirstThenFollowUpsInReplyOrder) {
  auto w = multiturn_workload(
      {.sessions = 3, .turns = 3, .shared_prefix_tokens = 40, .user_tokens = 10});
  EXPECT_EQ(w->total(), 9u);
  EXPECT_TRUE(w->wants_reply_text());
  std::vector<RequestSpec> first = drain(*w);
  ASSERT_EQ(first.size(), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(first[i].session, i + 1);
    EXPECT_EQ(first[i].turn, 0u);
    EXPECT_EQ(first[i].index, i);
    EXPECT_EQ(first[i].at_s, -1);
  }
  EXPECT_FALSE(w->exhausted());
  EXPECT_FALSE(w->next().has_value());  // everything waits on a reply

  // Replies arrive 3, 1 (2 is slow): their next turns come in that order.
  w->reply(first[2], " three", true);
  w->reply(first[0], " one", true);
  auto a = w->next();
  auto b = w->next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->session, 3u);
  EXPECT_EQ(a->turn, 1u);
  EXPECT_EQ(a->index, 3u);
  EXPECT_EQ(b->session, 1u);
  EXPECT_EQ(b->turn, 1u);
  EXPECT_EQ(b->index, 4u);
  EXPECT_FALSE(w->next().has_value());
}

TEST(MultiTurn, HistoryGrowsBySystemUserAssistant) {
  const MultiTurnConfig c{
      .sessions = 2, .turns = 3, .shared_prefix_tokens = 100, .user_tokens = 20, .max_tokens = 9};
  auto w = multiturn_workload(c);
  auto t0 = w->next();
  ASSERT_TRUE(t0);
  ASSERT_EQ(t0->messages.size(), 2u);
  EXPECT_EQ(t0->messages[0].role, "system");
  EXPECT_EQ(count_tokens(t0->messages[0].content), 100u);
  EXPECT_EQ(t0->messages[1].role, "user");
  const auto user0 = count_tokens(t0->messages[1].content);
  EXPECT_GE(user0, 10u);
  EXPECT_LE(user0, 30u);
  EXPECT_EQ(t0->max_tokens, 9u);
  EXPECT_EQ(t0->expected_prompt_tokens, 100 + user0);

  w->reply(*t0, " the gpu node", true);
  auto other = w->next();  // session 2's turn 0 was queued first
  ASSERT_TRUE(other);
  EXPECT_EQ(other->session, 2u);
  auto t1 = w->next();
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->session, 1u);
  EXPECT_EQ(t1->turn, 1u);
  ASSERT_EQ(t1->messages.size(), 4u);
  EXPECT_EQ(t1->messages[0].content, t0->messages[0].content);
  EXPECT_EQ(t1->messages[1].content, t0->messages[1].content);
  EXPECT_EQ(t1->messages[2].role, "assistant");
  EXPECT_EQ(t1->messages[2].content, " the gpu node");
  EXPECT_EQ(t1->messages[3].role, "user");
  EXPECT_EQ(t1->expected_prompt_tokens, 100 + user0 + 3 + count_tokens(t1->messages[3].content));
  // The earlier rendering is a prefix of the later one, as the server's cache needs.
  const std::string r0 = render(t0->messages), r1 = render(t1->messages);
  EXPECT_EQ(r1.compare(0, r0.size(), r0), 0);
}

TEST(MultiTurn, SystemPromptSharedUserMessagesUniqueAndSeeded) {
  auto w = multiturn_workload(
      {.sessions = 50, .turns = 2, .shared_prefix_tokens = 64, .user_tokens = 16});
  const auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 50u);
  std::set<std::string> users;
  for (const auto& s : specs) {
    EXPECT_EQ(s.messages[0].content, specs[0].messages[0].content);
    users.insert(s.messages[1].content);
  }
  EXPECT_EQ(users.size(), 50u);
  for (const auto& s : specs) w->reply(s, " ok", true);
  const auto second = drain(*w);
  ASSERT_EQ(second.size(), 50u);
  for (const auto& s : second) EXPECT_TRUE(users.insert(s.messages[3].content).second);

  // The same seed replays exactly; another seed shares nothing, system prompt included.
  auto again = drain(*multiturn_workload(
      {.sessions = 50, .turns = 2, .shared_prefix_tokens = 64, .user_tokens = 16}));
  auto other = drain(*multiturn_workload(
      {.sessions = 50, .turns = 2, .shared_prefix_tokens = 64, .user_tokens = 16, .seed = 2}));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(again[i].messages[1].content, specs[i].messages[1].content);
    EXPECT_NE(other[i].messages[1].content.substr(0, 20),
              specs[i].messages[1].content.substr(0, 20));
  }
  EXPECT_NE(other[0].messages[0].content.substr(0, 20), specs[0].messages[0].content.substr(0, 20));
}

TEST(MultiTurn, UserMessagesSpanHalfToOneAndAHalfTimesTheMean) {
  auto w = multiturn_workload(
      {.sessions = 400, .turns = 1, .shared_prefix_tokens = 0, .user_tokens = 64});
  std::size_t lo = 1000, hi = 0, sum = 0, n = 0;
  while (auto s = w->next()) {
    ASSERT_EQ(s->messages.size(), 1u);  // no shared prefix, no system message
    const auto t = count_tokens(s->messages[0].content);
    EXPECT_EQ(s->expected_prompt_tokens, t);
    lo = std::min(lo, t);
    hi = std::max(hi, t);
    sum += t;
    ++n;
  }
  EXPECT_GE(lo, 32u);
  EXPECT_LT(lo, 36u);
  EXPECT_LE(hi, 96u);
  EXPECT_GT(hi, 92u);
  EXPECT_NEAR(static_cast<double>(sum) / static_cast<double>(n), 64.0, 3.0);
}

TEST(MultiTurn, AFailureEndsTheSessionAndAllDoneIsExhausted) {
  auto w =
      multiturn_workload({.sessions = 2, .turns = 3, .shared_prefix_tokens = 8, .user_tokens = 4});
  auto a = w->next(), b = w->next();
  ASSERT_TRUE(a && b);
  w->reply(*a, "", false);  // session 1 ends
  EXPECT_FALSE(w->next().has_value());
  EXPECT_FALSE(w->exhausted());
  for (std::uint32_t turn = 0; turn < 3; ++turn) {
    ASSERT_EQ(b->session, 2u);
    ASSERT_EQ(b->turn, turn);
    EXPECT_FALSE(w->exhausted());
    w->reply(*b, " fine", true);
    if (turn < 2) {
      b = w->next();
      ASSERT_TRUE(b);
    }
  }
  EXPECT_FALSE(w->next().has_value());
  EXPECT_TRUE(w->exhausted());
  EXPECT_EQ(w->total(), 6u);  // at most; the failure cut it short
}

TEST(MultiTurn, StaleOrForeignRepliesAreIgnored) {
  auto w =
      multiturn_workload({.sessions = 1, .turns = 3, .shared_prefix_tokens = 8, .user_tokens = 4});
  auto t0 = w->next();
  ASSERT_TRUE(t0);
  RequestSpec foreign = *t0;
  foreign.session = 7;
  w->reply(foreign, " x", true);
  foreign.session = 0;
  w->reply(foreign, " x", false);
  EXPECT_FALSE(w->next().has_value());
  w->reply(*t0, " y", true);
  w->reply(*t0, " y", true);   // a second reply for the same turn
  w->reply(*t0, " y", false);  // and a late failure: neither ends nor advances anything
  auto t1 = w->next();
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->turn, 1u);
  EXPECT_FALSE(w->next().has_value());
  EXPECT_FALSE(w->exhausted());
}

TEST(MultiTurn, NoSessionsOrNoTurnsIsExhaustedAtOnce) {
  for (auto c : {MultiTurnConfig{.sessions = 0}, MultiTurnConfig{.sessions = 5, .turns = 0}}) {
    auto w = multiturn_workload(c);
    EXPECT_EQ(w->total(), 0u);
    EXPECT_TRUE(w->exhausted());
    EXPECT_FALSE(w->next().has_value());
  }
}

TEST(MultiTurn, TheoreticalCacheSeesTheSharedPrefixAndEachHistory) {
  auto w = multiturn_workload(
      {.sessions = 4, .turns = 2, .shared_prefix_tokens = 160, .user_tokens = 40});
  TheoreticalCache cache(16);
  auto first = drain(*w);
  ASSERT_EQ(first.size(), 4u);
  std::vector<std::size_t> first_tokens;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const std::string p = render(first[i].messages);
    first_tokens.push_back(count_tokens(p));
    const auto cached = cache.add(p);
    // "<|system|>\n" is 7 tokens and "\n<|user|>\n" 7 more, so sessions share 174 tokens: 10 whole
    // blocks (the user messages differ from their first word).
    EXPECT_EQ(cached, i == 0 ? 0u : 160u) << i;
  }
  for (const auto& s : first) w->reply(s, " the gpu", true);
  for (std::size_t i = 0; auto s = w->next(); ++i) {
    const auto cached = cache.add(render(s->messages));
    EXPECT_GE(cached, first_tokens[i] / 16 * 16) << i;
  }
}

// --- fixed
// ----------------------------------------------------------------------------------------

TEST(Fixed, ExactLengthsSharedPrefixUniqueRest) {
  const FixedConfig c{.requests = 20,
                      .input_tokens = 300,
                      .output_tokens = 33,
                      .shared_prefix_tokens = 128,
                      .seed = 4};
  auto w = fixed_workload(c);
  EXPECT_EQ(w->total(), 20u);
  EXPECT_FALSE(w->wants_reply_text());
  const auto specs = drain(*w);
  EXPECT_TRUE(w->exhausted());
  ASSERT_EQ(specs.size(), 20u);
  const std::string& first = specs[0].messages[0].content;
  std::set<std::string> rests;
  std::size_t prefix_bytes = 0;
  {
    // The prefix is the first 128 words of the first request.
    const auto ws = words(first);
    for (std::size_t i = 0; i < 128; ++i) prefix_bytes += ws[i].size();
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(s.max_tokens, 33u);
    EXPECT_EQ(s.expected_prompt_tokens, 300u);
    ASSERT_EQ(s.messages.size(), 1u);
    EXPECT_EQ(s.messages[0].role, "user");
    EXPECT_EQ(count_tokens(s.messages[0].content), 300u);
    EXPECT_EQ(s.messages[0].content.compare(0, prefix_bytes, first, 0, prefix_bytes), 0);
    rests.insert(s.messages[0].content.substr(prefix_bytes, 20));
  }
  EXPECT_EQ(rests.size(), 20u);  // unique from the first word after the prefix

  // Through the theoretical cache: every request after the first reuses the prefix's whole blocks.
  TheoreticalCache cache(16);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto cached = cache.add(render(specs[i].messages));
    EXPECT_EQ(cached, i == 0 ? 0u : (6 + 128) / 16 * 16u) << i;
  }
}

TEST(Fixed, EdgeCases) {
  // A prefix longer than the input is the whole input: every request is the same.
  auto all_shared =
      drain(*fixed_workload({.requests = 3, .input_tokens = 50, .shared_prefix_tokens = 80}));
  ASSERT_EQ(all_shared.size(), 3u);
  EXPECT_EQ(count_tokens(all_shared[0].messages[0].content), 50u);
  EXPECT_EQ(all_shared[1].messages[0].content, all_shared[0].messages[0].content);
  // No prefix: nothing shared.
  auto none = drain(*fixed_workload({.requests = 2, .input_tokens = 50}));
  EXPECT_NE(none[0].messages[0].content.substr(0, 15), none[1].messages[0].content.substr(0, 15));
  // No requests.
  auto empty = fixed_workload({.requests = 0});
  EXPECT_TRUE(empty->exhausted());
  EXPECT_FALSE(empty->next().has_value());
  // Seeds separate runs.
  auto s1 = drain(
      *fixed_workload({.requests = 1, .input_tokens = 50, .shared_prefix_tokens = 20, .seed = 1}));
  auto s2 = drain(
      *fixed_workload({.requests = 1, .input_tokens = 50, .shared_prefix_tokens = 20, .seed = 2}));
  EXPECT_NE(s1[0].messages[0].content.substr(0, 15), s2[0].messages[0].content.substr(0, 15));
}

// --- TheoreticalCache
// -----------------------------------------------------------------------------

TEST(TheoreticalCache, IdenticalPromptsAreCachedInWholeBlocks) {
  TheoreticalCache cache(16);
  const std::string p = block_text(1, 100);
  EXPECT_EQ(cache.add(p), 0u);
  EXPECT_EQ(cache.add(p), 96u);  // 6 whole blocks; the partial 4 tokens never hit
  EXPECT_EQ(cache.prompt_tokens(), 200u);
  EXPECT_EQ(cache.cached_tokens(), 96u);
  EXPECT_DOUBLE_EQ(cache.hit_rate(), 0.48);
  const std::string exact = block_text(2, 64);
  EXPECT_EQ(cache.add(exact), 0u);
  EXPECT_EQ(cache.add(exact), 64u);
}

TEST(TheoreticalCache, SharedLeadingBlocksAndOrder) {
  const std::string a = block_text(1, 48) + block_text(2, 32);            // blocks: 1 1 1 2 2
  const std::string b = block_text(1, 48) + block_text(3, 32);            // blocks: 1 1 1 3 3
  const std::string c = block_text(9, 16) + block_text(1, 48);  // differs in block 0
  {
    TheoreticalCache cache(16);
    EXPECT_EQ(cache.add(a), 0u);
    EXPECT_EQ(cache.add(b), 48u);
    EXPECT_EQ(cache.add(a), 80u);
    EXPECT_EQ(cache.add(b), 80u);
    EXPECT_EQ(cache.add(c),
              0u);  // later blocks equal in text are no hit after a miss (prefix cache)
    EXPECT_EQ(cache.add(block_text(1, 20)), 16u);
  }
  {
    TheoreticalCache cache(16);
    EXPECT_EQ(cache.add(b), 0u);
    EXPECT_EQ(cache.add(a), 48u);
  }
  {
    // A prefix of an earlier prompt hits its whole blocks; a longer one then extends the cache.
    TheoreticalCache cache(16);
    EXPECT_EQ(cache.add(block_text(5, 40)), 0u);
    EXPECT_EQ(cache.add(block_text(5, 200)), 32u);
    EXPECT_EQ(cache.add(block_text(5, 150)), 144u);
  }
}

TEST(TheoreticalCache, BlockSizeAndEdgeCases) {
  TheoreticalCache big(512);
  const std::string p = block_text(1, 1000);
  big.add(p);
  EXPECT_EQ(big.add(p), 512u);
  TheoreticalCache one(1);
  one.add("abc def");
  EXPECT_EQ(one.add("abc xyz"), 1u);  // "abc"; " xyz" is one token, unlike " def"
  TheoreticalCache empty(16);
  EXPECT_EQ(empty.add(""), 0u);
  EXPECT_EQ(empty.hit_rate(), 0.0);
  TheoreticalCache zero(0);  // taken as 1
  zero.add("abc");
  EXPECT_EQ(zero.add("abc"), 1u);
}

}  // namespace
}  // namespace cmax::loadgen
