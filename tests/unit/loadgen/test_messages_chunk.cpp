// Reading Anthropic Messages API responses (loadgen/messages_chunk.h): events one by one, usage
// merged across message_start and message_delta, whole bodies, errors, and what is refused.

#include <gtest/gtest.h>

#include "loadgen/messages_chunk.h"

namespace cmax::loadgen {
namespace {

ChunkInfo ev(std::string_view event, std::string_view data, MessagesUsage& acc) {
  auto r = parse_messages_event(event, data, true, acc);
  EXPECT_TRUE(r.has_value()) << (r.has_value() ? "" : r.error().message);
  return r.has_value() ? *r : ChunkInfo{};
}

TEST(MessagesChunk, UsageIsMergedFromStartAndDeltaWithTheCacheAddedToThePrompt) {
  MessagesUsage acc;
  auto start = ev("message_start",
                  R"({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],
                      "model":"claude","stop_reason":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":188,
                      "cache_read_input_tokens":1024,"output_tokens":1}}})",
                  acc);
  EXPECT_EQ(start.id, "msg_01");
  ASSERT_TRUE(start.usage.present);
  EXPECT_EQ(start.usage.prompt_tokens, 21u + 188u + 1024u);
  EXPECT_EQ(start.usage.cached_tokens, 1024u);
  EXPECT_EQ(start.usage.cache_creation_tokens, 188u);
  EXPECT_EQ(start.usage.cache_source, CacheSource::kAnthropic);
  EXPECT_FALSE(start.has_content);

  auto delta = ev("content_block_delta",
                  R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}})", acc);
  EXPECT_TRUE(delta.has_content);
  EXPECT_EQ(delta.content, "Hello");
  EXPECT_FALSE(delta.usage.present) << "an event without usage leaves it alone";

  auto end = ev("message_delta",
                R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}})",
                acc);
  EXPECT_EQ(end.finish_reason, "end_turn");
  ASSERT_TRUE(end.usage.present);
  EXPECT_EQ(end.usage.completion_tokens, 15u);
  EXPECT_EQ(end.usage.prompt_tokens, 1233u) << "the prompt side stays from message_start";
  EXPECT_EQ(end.usage.cached_tokens, 1024u);

  EXPECT_TRUE(ev("message_stop", R"({"type":"message_stop"})", acc).done);
}

TEST(MessagesChunk, VllmsShapeHasNoCacheFieldAndEndsWithDone) {
  MessagesUsage acc;
  ev("message_start",
     R"({"type":"message_start","message":{"id":"chatcmpl-1","content":[],"model":"m","stop_reason":null,
         "stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":0}}})",
     acc);
  auto end = ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":40,"output_tokens":8}})", acc);
  EXPECT_EQ(end.usage.prompt_tokens, 40u);
  EXPECT_EQ(end.usage.completion_tokens, 8u);
  EXPECT_EQ(end.usage.cache_source, CacheSource::kNone);
  EXPECT_TRUE(ev("", "[DONE]", acc).done);
}

TEST(MessagesChunk, ThinkingAndToolInputAreGeneratedTokensAndASignatureIsNot) {
  MessagesUsage acc;
  EXPECT_TRUE(ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}})", acc).has_content);
  EXPECT_FALSE(ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}})", acc).has_content);
  EXPECT_TRUE(ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}})", acc).has_content);
  EXPECT_FALSE(ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}})", acc).has_content);
  EXPECT_FALSE(ev("ping", R"({"type": "ping"})", acc).has_content);
  EXPECT_FALSE(ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})", acc).has_content);
  EXPECT_FALSE(ev("content_block_stop", R"({"type":"content_block_stop","index":0})", acc).has_content);
  // The data's type decides; an event name alone is enough when the data has none.
  EXPECT_TRUE(ev("message_stop", "{}", acc).done);
}

TEST(MessagesChunk, AnErrorEventIsAnApiError) {
  MessagesUsage acc;
  auto e = ev("error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", acc);
  EXPECT_TRUE(e.is_error);
  EXPECT_EQ(e.error_type, "overloaded_error");
  EXPECT_EQ(e.error_message, "Overloaded");
}

TEST(MessagesChunk, MalformedEventsAreProtocolErrorsOnOneLine) {
  MessagesUsage acc;
  for (std::string_view bad : {"not json", "[1,2]", "{}", R"({"type":"message_delta","usage":{"output_tokens":-1}})",
                               R"({"type":"message_delta","usage":{"output_tokens":"12"}})",
                               R"({"type":"message_start","message":{"usage":{"input_tokens":1.5}}})"}) {
    auto r = parse_messages_event("", bad, false, acc);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  }
}

TEST(MessagesChunk, WholeBodiesAndErrorBodies) {
  auto r = parse_messages_body(R"({"id":"msg_02","type":"message","role":"assistant","model":"m",
      "content":[{"type":"thinking","thinking":"hm","signature":"x"},{"type":"text","text":"Hi "},{"type":"text","text":"there"}],
      "stop_reason":"end_turn","stop_sequence":null,
      "usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":0,"output_tokens":4}})",
                               true);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->id, "msg_02");
  EXPECT_TRUE(r->has_content);
  EXPECT_EQ(r->content, "hmHi there");
  EXPECT_EQ(r->finish_reason, "end_turn");
  EXPECT_EQ(r->usage.prompt_tokens, 13u);
  EXPECT_EQ(r->usage.cached_tokens, 10u);
  EXPECT_EQ(r->usage.completion_tokens, 4u);

  auto e = parse_messages_body(R"({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"})", false);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->is_error);
  EXPECT_EQ(e->error_type, "rate_limit_error");
  EXPECT_NE(e->error_message.find("per-minute"), std::string::npos);

  // An OpenAI completion is not a Messages response: said so, not read as an empty one.
  auto wrong = parse_messages_body(R"({"object":"chat.completion","choices":[]})", false);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message.find("not a Messages API response"), std::string::npos);
}

}  // namespace
}  // namespace cmax::loadgen

namespace cmax::loadgen {
namespace {

// content_block_delta has a fast path for its exact wire shape; every variant here must read as the
// DOM reader reads it, whether or not the fast path takes it.
TEST(MessagesChunk, TheContentDeltaFastPathReadsWhatTheDomReaderReads) {
  const char* events[] = {
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}})",
      R"({"type":"content_block_delta","index":12,"delta":{"type":"thinking_delta","thinking":"hmm"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\\n"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9 \u00e9t\u00e9"}})",
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\xC3\xA9\"}}",
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"bad\xC3\"}}",
      R"({"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} )",
      R"({"type":"content_block_delta", "index":0,"delta":{"type":"text_delta","text":"x"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"usage":{"output_tokens":3}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}})",
      // vLLM's order (pydantic field order) and cmax serve's (sorted keys).
      R"({"type":"content_block_delta","delta":{"type":"text_delta","text":" the"},"index":0})",
      R"({"delta":{"text":" fast","type":"text_delta"},"index":0,"type":"content_block_delta"})",
      R"({"delta":{"text":"x","type":"thinking_delta"},"index":0,"type":"content_block_delta"})",
      R"({"delta":{"thinking":"x","type":"thinking_delta"},"index":3,"type":"content_block_delta"})",
      R"({"type":"content_block_delta","type":"ping","delta":{"type":"text_delta","text":"x"}})",
      R"({"type":"content_block_delta","delta":{"type":"text_delta","text":"x","text":"y"}})",
      R"({"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}})",
      R"({"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":"x"}})",
      R"({"type":"content_block_start","index":0,"delta":{"type":"text_delta","text":"x"}})",
      // Tool input and a bare "text" type: the field text_field names for each.
      R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}})",
      R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"a":1"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text","text":"x"}})",
      R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","thinking":"x"}})",
  };
  for (const char* e : events) {
    for (bool want_text : {false, true}) {
      MessagesUsage a, b;
      const auto fast = parse_messages_event("content_block_delta", e, want_text, a);
      const auto dom = detail::parse_messages_event_dom("content_block_delta", e, want_text, b);
      ASSERT_EQ(fast.has_value(), dom.has_value()) << e;
      if (!fast) {
        EXPECT_EQ(fast.error().message, dom.error().message) << e;
        continue;
      }
      EXPECT_EQ(fast->has_content, dom->has_content) << e;
      EXPECT_EQ(fast->content, dom->content) << e;
      EXPECT_EQ(fast->usage.present, dom->usage.present) << e;
      EXPECT_EQ(a.output, b.output) << e;
    }
  }
  MessagesUsage acc;
  const auto r = parse_messages_event("", events[0], true, acc);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->has_content);
  EXPECT_EQ(r->content, "Hello");
  const auto bad = parse_messages_event("", events[6], true, acc);
  EXPECT_FALSE(bad) << "invalid UTF-8 is refused as the DOM reader refuses it";
}

}  // namespace
}  // namespace cmax::loadgen
