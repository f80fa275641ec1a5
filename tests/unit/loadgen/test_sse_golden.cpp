// Golden streams (tests/golden/sse/*.sse, see the README there) through SseParser and
// parse_stream_data (parse_messages_event for messages_*.sse), compared with the summary in <name>.expected.json. Each stream is fed whole,
// one byte at a time, and in random pieces (fixed seeds): the summary must not depend on the split.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/chunk.h"
#include "loadgen/messages_chunk.h"
#include "loadgen/sse.h"

using namespace cmax::loadgen;
using nlohmann::json;

namespace {

const std::filesystem::path kDir = std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "sse";

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What a client keeps of one response, built from the events as they come.
struct Summary : SseSink {
  explicit Summary(bool messages_api) : messages(messages_api) {}
  bool messages;      // Anthropic's Messages API (messages_*.sse): parse_messages_event
  MessagesUsage acc;  // its usage, merged across events
  std::size_t content_chunks = 0;
  std::string content, finish_reason, id;
  json usage = nullptr, error = nullptr, protocol_errors = json::array();
  bool done = false;

  void on_event(const SseEvent& e) override {
    auto r = messages ? parse_messages_event(e.event, e.data, true, acc) : parse_stream_data(e.data, true);
    if (!r) {
      protocol_errors.push_back(r.error().message);
      return;
    }
    const ChunkInfo& c = *r;
    if (c.done) done = true;
    if (c.has_content) {
      ++content_chunks;
      content += c.content;
    }
    if (!c.finish_reason.empty()) finish_reason = c.finish_reason;
    if (id.empty()) id = c.id;
    if (c.usage.present) {
      usage = {{"prompt_tokens", c.usage.prompt_tokens},
               {"completion_tokens", c.usage.completion_tokens},
               {"cached_tokens", c.usage.cached_tokens},
               {"cache_creation_tokens", c.usage.cache_creation_tokens},
               {"cache_source", std::string(cache_source_name(c.usage.cache_source))}};
    }
    if (c.is_error && error.is_null())
      error = {{"message", c.error_message}, {"type", c.error_type}, {"code", c.error_code}};
  }
};

json summarize(const std::string& stream, const std::vector<std::size_t>& piece_sizes, bool messages) {
  SseParser parser;
  Summary s(messages);
  std::size_t at = 0, i = 0;
  while (at < stream.size()) {
    const std::size_t n = piece_sizes.empty() ? stream.size() : piece_sizes[i++ % piece_sizes.size()];
    parser.feed(std::string_view(stream).substr(at, n), s);
    at += n;
  }
  EXPECT_FALSE(parser.overflow());
  return {{"events", parser.events()},
          {"comments", parser.comments()},
          {"content_chunks", s.content_chunks},
          {"content", s.content},
          {"done", s.done},
          {"finish_reason", s.finish_reason},
          {"id", s.id},
          {"usage", s.usage},
          {"error", s.error},
          {"protocol_errors", s.protocol_errors},
          {"partial", parser.finish()},
          {"retry_ms", parser.retry_ms()}};
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kDir, ec))
    if (e.path().extension() == ".sse") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class SseGolden : public testing::TestWithParam<std::string> {};

TEST_P(SseGolden, MatchesExpectedSummary) {
  const std::string stream = read_file(kDir / (GetParam() + ".sse"));
  ASSERT_FALSE(stream.empty());
  const json expected = json::parse(read_file(kDir / (GetParam() + ".expected.json")));
  const bool messages = GetParam().starts_with("messages_");
  EXPECT_EQ(summarize(stream, {}, messages), expected) << "whole: got\n" << summarize(stream, {}, messages).dump(2);
  EXPECT_EQ(summarize(stream, {1}, messages), expected) << "byte by byte";
  for (unsigned seed : {1U, 2U, 3U, 42U}) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<std::size_t> size(1, 64);
    std::vector<std::size_t> pieces(257);
    for (auto& p : pieces) p = size(rng);
    EXPECT_EQ(summarize(stream, pieces, messages), expected) << "random pieces, seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(SseStreams, SseGolden, testing::ValuesIn(golden_names()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(SseGoldenFiles, EveryStreamHasAnExpectation) {
  const auto names = golden_names();
  EXPECT_GE(names.size(), 10U) << "tests/golden/sse lost streams";
  for (const auto& n : names) EXPECT_TRUE(std::filesystem::exists(kDir / (n + ".expected.json"))) << n;
}

}  // namespace
