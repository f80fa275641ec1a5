#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "endpoint/openai_protocol.h"
#include "loadgen/chunk.h"
#include "loadgen/chunk_reference.h"

using namespace cmax::loadgen;
using namespace std::string_literals;

namespace {

ChunkInfo ok(std::string_view data, bool want_text = true) {
  auto r = parse_stream_data(data, want_text);
  EXPECT_TRUE(r.has_value()) << data << "\n  -> " << (r ? "" : r.error().message);
  return r ? std::move(r).value() : ChunkInfo{};
}

std::string bad(std::string_view data) {
  auto r = parse_stream_data(data, true);
  EXPECT_FALSE(r.has_value()) << data;
  return r ? "" : r.error().message;
}

ChunkInfo body_ok(std::string_view body) {
  auto r = parse_completion_body(body, true);
  EXPECT_TRUE(r.has_value()) << body << "\n  -> " << (r ? "" : r.error().message);
  return r ? std::move(r).value() : ChunkInfo{};
}

cmax::endpoint::ResponseMeta meta(cmax::endpoint::Api api, cmax::endpoint::CacheFields fields, bool usage) {
  cmax::endpoint::ResponseMeta m;
  m.api = api;
  m.id = api == cmax::endpoint::Api::kChat ? "chatcmpl-3f9c2a7d41e54b0f9a1c6e2d8b7f4a10" : "cmpl-77aa";
  m.created = 1733240000;
  m.model = "meta-llama/Llama-3.1-8B-Instruct";
  m.cache_fields = fields;
  m.include_usage = usage;
  return m;
}

constexpr std::string_view kOpenAiContent =
    R"({"id":"chatcmpl-AbC123","object":"chat.completion.chunk","created":1733240000,"model":"gpt-4o-mini-2024-07-18",)"
    R"("system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,)"
    R"("finish_reason":null}],"usage":null})";

TEST(ChunkParse, OpenAiContentChunk) {
  const ChunkInfo c = ok(kOpenAiContent);
  EXPECT_FALSE(c.done);
  EXPECT_TRUE(c.has_content);
  EXPECT_EQ(c.content, " world");
  EXPECT_EQ(c.id, "chatcmpl-AbC123");
  EXPECT_EQ(c.finish_reason, "");
  EXPECT_FALSE(c.usage.present);
  EXPECT_FALSE(c.is_error);
  const ChunkInfo no_text = ok(kOpenAiContent, false);
  EXPECT_TRUE(no_text.has_content);
  EXPECT_EQ(no_text.content, "");
}

TEST(ChunkParse, Done) {
  for (std::string_view d : {"[DONE]", " [DONE]", "[DONE] ", "\n[DONE]\r\n", "\t[DONE]"}) {
    const ChunkInfo c = ok(d);
    EXPECT_TRUE(c.done) << d;
    EXPECT_FALSE(c.has_content);
  }
  EXPECT_NE(bad("[DONE]x").find("not JSON"), std::string::npos);
  EXPECT_NE(bad("[done]").find("not JSON"), std::string::npos);
}

TEST(ChunkParse, RoleAndNullContent) {
  EXPECT_FALSE(ok(R"({"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":[{"index":0,"delta":{"content":null}}]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":[{"index":0,"delta":{}}]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":[{"index":0,"delta":null}]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":[]})").has_content);
  EXPECT_FALSE(ok(R"({"choices":null})").has_content);
  EXPECT_FALSE(ok(R"({})").has_content);
  // Tool-call deltas are not content.
  EXPECT_FALSE(
      ok(R"({"choices":[{"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"{\"a"}}]}}]})")
          .has_content);
}

TEST(ChunkParse, ReasoningContent) {
  const ChunkInfo c = ok(R"({"choices":[{"index":0,"delta":{"reasoning_content":"Let me think","content":null}}]})");
  EXPECT_TRUE(c.has_content);
  EXPECT_EQ(c.content, "Let me think");
  const ChunkInfo both = ok(R"({"choices":[{"delta":{"reasoning_content":"a","content":"b"}}]})");
  EXPECT_EQ(both.content, "ab");
}

TEST(ChunkParse, CompletionsChunk) {
  const ChunkInfo c = ok(
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the",)"
      R"("logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})");
  EXPECT_TRUE(c.has_content);
  EXPECT_EQ(c.content, " the");
  EXPECT_EQ(c.id, "cmpl-1");
  EXPECT_FALSE(ok(R"({"choices":[{"text":"","finish_reason":"length"}]})").has_content);
  EXPECT_EQ(ok(R"({"choices":[{"text":"","finish_reason":"length"}]})").finish_reason, "length");
}

TEST(ChunkParse, SeveralChoices) {
  const ChunkInfo c = ok(
      R"({"choices":[{"index":0,"delta":{"content":"A"},"finish_reason":"stop"},)"
      R"({"index":1,"delta":{"content":"B"},"finish_reason":"length"}]})");
  EXPECT_EQ(c.content, "AB");
  EXPECT_EQ(c.finish_reason, "stop");  // of choices[0]
  EXPECT_EQ(ok(R"({"choices":[{"index":0,"delta":{}},{"index":1,"finish_reason":"length"}]})").finish_reason, "");
}

TEST(ChunkParse, FinalUsageChunk) {
  const ChunkInfo c = ok(
      R"({"id":"chatcmpl-AbC123","object":"chat.completion.chunk","created":1733240000,"model":"gpt-4o-mini",)"
      R"("system_fingerprint":"fp_0ba0d124f1","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":46,)"
      R"("total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},)"
      R"("completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,)"
      R"("rejected_prediction_tokens":0}}})");
  EXPECT_FALSE(c.has_content);
  ASSERT_TRUE(c.usage.present);
  EXPECT_EQ(c.usage.prompt_tokens, 1117U);
  EXPECT_EQ(c.usage.completion_tokens, 46U);
  EXPECT_EQ(c.usage.cached_tokens, 1024U);
  EXPECT_EQ(c.usage.cache_creation_tokens, 0U);
  EXPECT_EQ(c.usage.cache_source, CacheSource::kOpenAi);
}

TEST(ChunkParse, UsageCacheConventions) {
  struct Case {
    std::string_view usage;
    std::uint64_t cached, creation;
    CacheSource source;
  };
  const Case cases[] = {
      {R"({"prompt_tokens":10,"completion_tokens":2})", 0, 0, CacheSource::kNone},
      {R"({"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":null})", 0, 0, CacheSource::kNone},
      {R"({"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{}})", 0, 0, CacheSource::kNone},
      {R"({"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":null}})", 0, 0,
       CacheSource::kNone},
      {R"({"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}})", 0, 0,
       CacheSource::kOpenAi},
      {R"({"prompt_tokens":10,"completion_tokens":2,"cache_read_input_tokens":8,"cache_creation_input_tokens":2})", 8,
       2, CacheSource::kAnthropic},
      {R"({"prompt_tokens":10,"completion_tokens":2,"cache_creation_input_tokens":6})", 0, 6, CacheSource::kAnthropic},
      {R"({"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":4,"prompt_cache_miss_tokens":6})", 4, 0,
       CacheSource::kDeepSeek},
      // Precedence: OpenAI's, else Anthropic's, else DeepSeek's.
      {R"({"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":3},"cache_read_input_tokens":8,)"
       R"("cache_creation_input_tokens":1,"prompt_cache_hit_tokens":4})",
       3, 1, CacheSource::kOpenAi},
      {R"({"prompt_tokens":10,"prompt_tokens_details":null,"cache_read_input_tokens":8,"prompt_cache_hit_tokens":4})",
       8, 0, CacheSource::kAnthropic},
      {R"({"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":null},"prompt_cache_hit_tokens":4})", 4, 0,
       CacheSource::kDeepSeek},
      {R"({"prompt_tokens":10,"cache_read_input_tokens":null,"prompt_cache_hit_tokens":4})", 4, 0,
       CacheSource::kDeepSeek},
  };
  for (const Case& c : cases) {
    const ChunkInfo i = ok(R"({"choices":[],"usage":)"s + std::string(c.usage) + "}");
    ASSERT_TRUE(i.usage.present) << c.usage;
    EXPECT_EQ(i.usage.prompt_tokens, 10U) << c.usage;
    EXPECT_EQ(i.usage.cached_tokens, c.cached) << c.usage;
    EXPECT_EQ(i.usage.cache_creation_tokens, c.creation) << c.usage;
    EXPECT_EQ(i.usage.cache_source, c.source) << c.usage;
  }
  EXPECT_FALSE(ok(R"({"choices":[],"usage":null})").usage.present);
  EXPECT_TRUE(ok(R"({"choices":[],"usage":{}})").usage.present);
  // Null counts are absent: 0.
  const ChunkInfo n = ok(R"({"usage":{"prompt_tokens":null,"completion_tokens":null}})");
  EXPECT_TRUE(n.usage.present);
  EXPECT_EQ(n.usage.prompt_tokens, 0U);
  // "-0" is zero, and the largest count we take.
  EXPECT_EQ(ok(R"({"usage":{"prompt_tokens":-0}})").usage.prompt_tokens, 0U);
  EXPECT_EQ(ok(R"({"usage":{"prompt_tokens":9007199254740992}})").usage.prompt_tokens, 9007199254740992U);
}

TEST(ChunkParse, BadCountsNameTheField) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {R"({"usage":{"prompt_tokens":-1}})", "usage.prompt_tokens is -1"},
      {R"({"usage":{"completion_tokens":1.5}})", "usage.completion_tokens is not a whole number"},
      {R"({"usage":{"completion_tokens":2.0}})", "usage.completion_tokens is not a whole number"},
      {R"({"usage":{"completion_tokens":1e3}})", "usage.completion_tokens is not a whole number"},
      {R"({"usage":{"prompt_tokens":"12"}})", "usage.prompt_tokens is a string, expected a non-negative integer"},
      {R"({"usage":{"prompt_tokens":true}})", "usage.prompt_tokens is a boolean"},
      {R"({"usage":{"prompt_tokens":{}}})", "usage.prompt_tokens is an object"},
      {R"({"usage":{"prompt_tokens":[1]}})", "usage.prompt_tokens is an array"},
      {R"({"usage":{"prompt_tokens":9007199254740993}})", "usage.prompt_tokens is 9007199254740993, more than"},
      {R"({"usage":{"prompt_tokens":18446744073709551615}})", "usage.prompt_tokens is 18446744073709551615"},
      {R"({"usage":{"prompt_tokens":18446744073709551616}})", "usage.prompt_tokens is not a whole number"},
      {R"({"usage":{"prompt_tokens":-99999999999999999999}})", "usage.prompt_tokens is not a whole number"},
      {R"({"usage":{"prompt_tokens_details":{"cached_tokens":-5}}})",
       "usage.prompt_tokens_details.cached_tokens is -5"},
      {R"({"usage":{"prompt_tokens_details":7}})", "usage.prompt_tokens_details is a number, expected an object"},
      {R"({"usage":{"cache_read_input_tokens":-2}})", "usage.cache_read_input_tokens is -2"},
      {R"({"usage":{"cache_creation_input_tokens":0.5}})", "usage.cache_creation_input_tokens is not a whole"},
      {R"({"usage":{"prompt_cache_hit_tokens":"x"}})", "usage.prompt_cache_hit_tokens is a string"},
      {R"({"usage":[]})", "usage is an array, expected an object or null"},
      {R"({"usage":0})", "usage is a number"},
      // A bad field is an error even where precedence would not use it.
      {R"({"usage":{"prompt_tokens_details":{"cached_tokens":1},"prompt_cache_hit_tokens":-1}})",
       "usage.prompt_cache_hit_tokens is -1"},
  };
  for (const auto& [data, want] : cases) {
    const std::string e = bad(data);
    EXPECT_NE(e.find(want), std::string::npos) << data << "\n  -> " << e;
    EXPECT_EQ(e.rfind("stream event: ", 0), 0U) << e;
  }
}

TEST(ChunkParse, IllTypedFieldsNameTheField) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {R"({"choices":{}})", "choices is an object, expected an array"},
      {R"({"choices":"x"})", "choices is a string"},
      {R"({"choices":[{"delta":{"content":"a"}},3]})", "choices[1] is a number, expected an object"},
      {R"({"choices":[null]})", "choices[0] is null"},
      {R"({"choices":[{"delta":{"content":5}}]})", "choices[0].delta.content is a number, expected a string or null"},
      {R"({"choices":[{},{"delta":{"reasoning_content":[]}}]})", "choices[1].delta.reasoning_content is an array"},
      {R"({"choices":[{"delta":"x"}]})", "choices[0].delta is a string, expected an object or null"},
      {R"({"choices":[{"text":{}}]})", "choices[0].text is an object"},
      {R"({"choices":[{"finish_reason":1}]})", "choices[0].finish_reason is a number"},
      {R"({"choices":[{"message":{"content":true}}]})", "choices[0].message.content is a boolean"},
      {R"({"id":5})", "id is a number"},
      {"[]", "stream event is an array, not a JSON object"},
      {"\"x\"", "stream event is a string, not a JSON object"},
      {"42", "stream event is a number, not a JSON object"},
      {"null", "stream event is null, not a JSON object"},
  };
  for (const auto& [data, want] : cases) {
    const std::string e = bad(data);
    EXPECT_NE(e.find(want), std::string::npos) << data << "\n  -> " << e;
  }
}

TEST(ChunkParse, NotJson) {
  for (std::string_view d : {"", " ", "{", "{\"choices\":[}", "{\"a\":1}x", "<html>502 Bad Gateway</html>",
                             "{'a':1}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}",
                             "{\"a\":\"\\ud800\"}", "{\"a\":1e999}", "{\"a\":NaN}", "{\"a\":1,}"}) {
    const std::string e = bad(d);
    EXPECT_EQ(e.rfind("stream event is not JSON (", 0), 0U) << testing::PrintToString(std::string(d)) << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(ChunkParse, StringsAreDecoded) {
  EXPECT_EQ(ok(R"({"choices":[{"delta":{"content":"a\nb\t\"c\"\\\/\u00e9\u4e2d\ud83d\ude00"}}]})").content,
            "a\nb\t\"c\"\\/\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  EXPECT_EQ(ok("{\"choices\":[{\"delta\":{\"content\":\"\xE4\xB8\xAD\xF0\x9F\x98\x80\"}}]}").content,
            "\xE4\xB8\xAD\xF0\x9F\x98\x80");
  EXPECT_EQ(ok(R"({"choices":[{"delta":{"content":"\u0000"}}]})").content, "\0"s);
  // An escaped key is still the key.
  EXPECT_EQ(ok(R"({"choices":[{"delta":{"cont\u0065nt":"x"}}]})").content, "x");
}

TEST(ChunkParse, ExtraFieldsAreIgnored) {
  const ChunkInfo c = ok(
      R"({"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi",)"
      R"("logprob":-0.0001,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-1e-4,"bytes":null}]}]},)"
      R"("finish_reason":null,"stop_reason":null,"matched_stop":null}],"system_fingerprint":null,)"
      R"("service_tier":"default","obfuscation":"aBc","x":[[[[[[[[[[{"deep":[true,false,null]}]]]]]]]]]]})");
  EXPECT_EQ(c.content, "Hi");
  EXPECT_EQ(c.id, "x");
  // Deeper than the fast reader goes.
  std::string deep = R"({"x":)" + std::string(200, '[') + std::string(200, ']') + R"(,"choices":[{"text":"y"}]})";
  EXPECT_EQ(ok(deep).content, "y");
}

TEST(ChunkParse, ErrorEvents) {
  const ChunkInfo e = ok(
      R"({"error":{"message":"The server had an error while processing your request. Sorry about that!",)"
      R"("type":"server_error","param":null,"code":null}})");
  EXPECT_TRUE(e.is_error);
  EXPECT_EQ(e.error_message, "The server had an error while processing your request. Sorry about that!");
  EXPECT_EQ(e.error_type, "server_error");
  EXPECT_EQ(e.error_code, "");
  const ChunkInfo code = ok(R"({"error":{"message":"m","type":"BadRequestError","code":400}})");
  EXPECT_EQ(code.error_code, "400");
  EXPECT_EQ(ok(R"({"error":{"message":"m","code":"rate_limit_exceeded"}})").error_code, "rate_limit_exceeded");
  const ChunkInfo s = ok(R"({"error":"upstream\nfailed"})");
  EXPECT_TRUE(s.is_error);
  EXPECT_EQ(s.error_message, "upstream failed");  // one line
  EXPECT_TRUE(ok(R"({"error":{}})").is_error);
  EXPECT_TRUE(ok(R"({"error":42})").is_error);
  EXPECT_TRUE(ok(R"({"error":[1]})").is_error);
  EXPECT_FALSE(ok(R"({"error":null,"choices":[]})").is_error);
  // vLLM's and SGLang's ErrorResponse.
  const ChunkInfo v = ok(
      R"({"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError",)"
      R"("param":null,"code":400})");
  EXPECT_TRUE(v.is_error);
  EXPECT_EQ(v.error_message, "This model's maximum context length is 4096 tokens.");
  EXPECT_EQ(v.error_type, "BadRequestError");
  EXPECT_EQ(v.error_code, "400");
  // A long message is cut to 300 bytes.
  const ChunkInfo l = ok(R"({"error":{"message":")" + std::string(1000, 'x') + R"("}})");
  EXPECT_EQ(l.error_message.size(), 300U);
}

TEST(ChunkParse, ServeChunksRoundTrip) {
  using cmax::endpoint::Api;
  using cmax::endpoint::CacheFields;
  for (bool usage : {false, true}) {
    const auto m = meta(Api::kChat, CacheFields::kOpenAi, usage);
    const ChunkInfo role = ok(cmax::endpoint::chat_role_chunk(m));
    EXPECT_FALSE(role.has_content);
    EXPECT_EQ(role.id, m.id);
    EXPECT_FALSE(role.usage.present);
    const ChunkInfo c = ok(cmax::endpoint::content_chunk(m, "Hello, \"world\"\n\xE4\xB8\xAD", ""));
    EXPECT_EQ(c.content, "Hello, \"world\"\n\xE4\xB8\xAD");
    EXPECT_FALSE(c.usage.present);
    EXPECT_EQ(ok(cmax::endpoint::content_chunk(m, "", "length")).finish_reason, "length");
    const auto cm = meta(Api::kCompletions, CacheFields::kOpenAi, usage);
    EXPECT_EQ(ok(cmax::endpoint::content_chunk(cm, " tok", "")).content, " tok");
  }
  const cmax::endpoint::Usage u{1200, 64, 1024, 160};
  const struct {
    CacheFields fields;
    CacheSource source;
  } conventions[] = {{CacheFields::kOpenAi, CacheSource::kOpenAi},
                     {CacheFields::kAnthropic, CacheSource::kOpenAi},  // serve always writes OpenAI's field too
                     {CacheFields::kDeepSeek, CacheSource::kOpenAi},
                     {CacheFields::kAll, CacheSource::kOpenAi}};
  for (const auto& c : conventions) {
    const ChunkInfo i = ok(cmax::endpoint::usage_chunk(meta(Api::kChat, c.fields, true), u));
    ASSERT_TRUE(i.usage.present);
    EXPECT_EQ(i.usage.prompt_tokens, 1200U);
    EXPECT_EQ(i.usage.completion_tokens, 64U);
    EXPECT_EQ(i.usage.cached_tokens, 1024U);
    EXPECT_EQ(i.usage.cache_source, c.source);
    const bool anthropic = c.fields == CacheFields::kAnthropic || c.fields == CacheFields::kAll;
    EXPECT_EQ(i.usage.cache_creation_tokens, anthropic ? 160U : 0U);
  }
  const ChunkInfo e = ok(cmax::endpoint::error_body({429, "rate_limit_error", "slow down", "", "rate_limited"}));
  EXPECT_TRUE(e.is_error);
  EXPECT_EQ(e.error_message, "slow down");
  EXPECT_EQ(e.error_type, "rate_limit_error");
  EXPECT_EQ(e.error_code, "rate_limited");
}

TEST(ChunkParse, CompletionBodies) {
  using cmax::endpoint::Api;
  using cmax::endpoint::CacheFields;
  const cmax::endpoint::Usage u{20, 3, 16, 0};
  const ChunkInfo chat = body_ok(
      cmax::endpoint::completion_body(meta(Api::kChat, CacheFields::kDeepSeek, false), "Hi there", "stop", u));
  EXPECT_TRUE(chat.has_content);
  EXPECT_EQ(chat.content, "Hi there");
  EXPECT_EQ(chat.finish_reason, "stop");
  EXPECT_EQ(chat.usage.prompt_tokens, 20U);
  EXPECT_EQ(chat.usage.cached_tokens, 16U);
  const ChunkInfo text = body_ok(
      cmax::endpoint::completion_body(meta(Api::kCompletions, CacheFields::kOpenAi, false), " ok", "length", u));
  EXPECT_EQ(text.content, " ok");
  EXPECT_EQ(text.finish_reason, "length");
  EXPECT_FALSE(body_ok(R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[]}}]})").has_content);
  const ChunkInfo err = body_ok(R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})");
  EXPECT_TRUE(err.is_error);
  EXPECT_EQ(err.error_message, "Invalid API key");
  const auto no_choices = parse_completion_body(R"({"id":"x","usage":{"prompt_tokens":1}})", true);
  ASSERT_FALSE(no_choices.has_value());
  EXPECT_NE(no_choices.error().message.find("no \"choices\""), std::string::npos);
  const auto not_json = parse_completion_body("<html>", true);
  ASSERT_FALSE(not_json.has_value());
  EXPECT_EQ(not_json.error().message.rfind("response body is not JSON", 0), 0U) << not_json.error().message;
  EXPECT_FALSE(parse_completion_body("[DONE]", true).has_value());
}

TEST(ChunkParse, ErrorBodyMessage) {
  EXPECT_EQ(error_body_message(R"({"error":{"message":"Rate limit reached","type":"requests","code":"x"}})"),
            "Rate limit reached");
  EXPECT_EQ(error_body_message(R"({"error":"Bad gateway"})"), "Bad gateway");
  EXPECT_EQ(error_body_message(R"({"object":"error","message":"model not found","code":404})"), "model not found");
  EXPECT_EQ(error_body_message(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_body_message(R"({"error":{"code":500}})"), R"({"error":{"code":500}})");
  EXPECT_EQ(error_body_message("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>\r\n"),
            "<html> <head><title>502 Bad Gateway</title></head> </html>");
  EXPECT_EQ(error_body_message(""), "");
  EXPECT_EQ(error_body_message("upstream connect error\xff"), "upstream connect error?");
  const std::string cut = error_body_message(std::string(1000, 'a'));
  EXPECT_EQ(cut.size(), 300U);
  EXPECT_EQ(cut.substr(297), "...");
  EXPECT_EQ(error_body_message(std::string(300, 'a')), std::string(300, 'a'));
  // A cut never splits a character.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "\xE4\xB8\xAD";
  const std::string w = error_body_message(wide);
  EXPECT_LE(w.size(), 300U);
  EXPECT_EQ((w.size() - 3) % 3, 0U);
  EXPECT_EQ(error_body_message(R"({"error":{"message":"line1\nline2"}})"), "line1 line2");
}

// The fast reader and nlohmann's agree, on inputs chosen to walk the fast reader's edges.
TEST(ChunkParse, FastPathAgreesWithNlohmann) {
  const std::vector<std::string> inputs = {
      std::string(kOpenAiContent),
      R"({"choices":[{"delta":{"content":"\ud83d\ude00 \uD83D\uDE00"}}]})",
      R"({"choices":[{"delta":{"content":"\udc00"}}]})",
      R"({"choices":[{"delta":{"content":"\ud800\u0041"}}]})",
      R"({"choices":[{"delta":{"content":"\u12"}}]})",
      R"({"choices":[{"delta":{"content":"\x"}}]})",
      "\xEF\xBB\xBF{\"choices\":[]}",
      " \xEF\xBB\xBF{\"choices\":[]}",
      "{\"choices\":[{\"text\":\"\xED\xA0\x80\"}]}",
      "{\"choices\":[{\"text\":\"\xF4\x90\x80\x80\"}]}",
      "{\"choices\":[{\"text\":\"\xC0\xAF\"}]}",
      "{\"choices\":[{\"text\":\"\xF0\x9F\x98\"}]}",
      R"({"usage":{"prompt_tokens":-0,"completion_tokens":0e0}})",
      R"({"usage":{"prompt_tokens":1E+2}})",
      R"({"usage":{"prompt_tokens":12345678901234567890}})",
      R"({"usage":{"prompt_tokens":1234567890123456789}})",
      R"({"usage":{"prompt_tokens":-123456789012345678}})",
      R"({"usage":{"prompt_tokens":-1234567890123456789}})",
      R"({"x":1e-400,"choices":[]})",
      R"({"x":-1e400})",
      R"({"x":-})",
      R"({"x":1e})",
      R"({"x":1e+})",
      R"({"x":.5})",
      R"({"choices":[{"delta":{"content":01}}]})",
      R"({"choices":[{"delta":{"content":"a"}}]} )",
      R"({"choices":[{"delta":{"content":"a"}}]} {})",
      R"({"choices":[{"delta":{"content":"a","content":"b"}}],"usage":{"prompt_tokens":1},"usage":null})",
      R"({"id":"a","id":null,"error":{"message":"x"},"error":null})",
      R"({"choices":[{"finish_reason":"stop","finish_reason":null}]})",
      R"({"object":"error","message":1,"type":[],"code":{"a":1}})",
      R"({"object":"error","message":"m","code":-3})",
      R"({"error":{"message":{"nested":"x"},"code":1.5}})",
      R"({"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]})",
      "{\"a\":tru}",
      "{\"a\":nul}",
      "{\"a\":true,\"b\":false,\"c\":null}",
      "{\"a\"  :  [ 1 , 2 ] , \"b\" : { } }",
      "{\"a\":[1,]}",
      "{,}",
      "{\"a\" 1}",
      std::string("{\"a\":\"\0\"}", 8),
      std::string("{\"a\":\"\\u0000\"}\0", 15),
      R"({"choices":[{"delta":{"content":"a"}}])",
  };
  for (const std::string& in : inputs) {
    for (bool want_text : {false, true}) {
      const auto fast = parse_stream_data(in, want_text);
      const auto slow = detail::parse_json_nlohmann(in, detail::JsonDoc::kStream, want_text);
      ASSERT_EQ(fast.has_value(), slow.has_value()) << testing::PrintToString(in);
      if (!fast) {
        EXPECT_EQ(fast.error().message, slow.error().message);
        continue;
      }
      EXPECT_EQ(fast->has_content, slow->has_content) << in;
      EXPECT_EQ(fast->content, slow->content) << in;
      EXPECT_EQ(fast->finish_reason, slow->finish_reason) << in;
      EXPECT_EQ(fast->id, slow->id) << in;
      EXPECT_EQ(fast->is_error, slow->is_error) << in;
      EXPECT_EQ(fast->error_message, slow->error_message) << in;
      EXPECT_EQ(fast->error_type, slow->error_type) << in;
      EXPECT_EQ(fast->error_code, slow->error_code) << in;
      EXPECT_EQ(fast->usage.present, slow->usage.present) << in;
      EXPECT_EQ(fast->usage.prompt_tokens, slow->usage.prompt_tokens) << in;
      EXPECT_EQ(fast->usage.completion_tokens, slow->usage.completion_tokens) << in;
      EXPECT_EQ(fast->usage.cached_tokens, slow->usage.cached_tokens) << in;
      EXPECT_EQ(fast->usage.cache_creation_tokens, slow->usage.cache_creation_tokens) << in;
      EXPECT_EQ(fast->usage.cache_source, slow->usage.cache_source) << in;
    }
  }
}

}  // namespace
