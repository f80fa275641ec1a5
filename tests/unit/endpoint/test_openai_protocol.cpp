#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "endpoint/openai_protocol.h"
#include "endpoint/openai_server.h"

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;

// By value: the argument is a temporary.
CompletionRequest ok(const std::variant<CompletionRequest, ApiError>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<CompletionRequest>(r) ? std::get<CompletionRequest>(r) : CompletionRequest{};
}

ApiError err(const std::variant<CompletionRequest, ApiError>& r) {
  EXPECT_TRUE(std::holds_alternative<ApiError>(r));
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(OpenAiProtocol, ParsesAChatRequest) {
  const auto r = ok(parse_request(Api::kChat,
                                   R"({"model":"m","messages":[{"role":"system","content":"s"},
                                      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
                                      "stream":true,"stream_options":{"include_usage":true},
                                      "max_tokens":5,"max_completion_tokens":7,"user":"u1"})",
                                   16));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "<|system|>\ns\n<|user|>\nab\n<|assistant|>\n");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.max_tokens, 7u);
  EXPECT_EQ(r.user, "u1");
  EXPECT_EQ(ok(parse_request(Api::kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}]})", 16)).max_tokens,
            16u);
}

TEST(OpenAiProtocol, ParsesCompletionPrompts) {
  EXPECT_EQ(ok(parse_request(Api::kCompletions, R"({"model":"m","prompt":"hi"})", 16)).prompt, "hi");
  EXPECT_EQ(ok(parse_request(Api::kCompletions, R"({"model":"m","prompt":["hi"]})", 16)).prompt, "hi");
  EXPECT_EQ(ok(parse_request(Api::kCompletions, R"({"model":"m","prompt":[1,2,3]})", 16)).token_ids.size(), 3u);
  EXPECT_EQ(ok(parse_request(Api::kCompletions, R"({"model":"m","prompt":[[1,2]]})", 16)).token_ids.size(), 2u);
  EXPECT_EQ(err(parse_request(Api::kCompletions, R"({"model":"m","prompt":["a","b"]})", 16)).param, "prompt");
}

TEST(OpenAiProtocol, RefusesMalformedRequestsWith400) {
  auto e = err(parse_request(Api::kChat, "{not json", 16));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_EQ(err(parse_request(Api::kChat, R"({"model":"m"})", 16)).param, "messages");
  EXPECT_EQ(err(parse_request(Api::kChat, R"({"model":"m","messages":[]})", 16)).param, "messages");
  EXPECT_EQ(err(parse_request(Api::kCompletions, R"({"model":"m"})", 16)).param, "prompt");
  EXPECT_EQ(err(parse_request(Api::kChat, R"({"messages":[{"role":"user","content":"x"}]})", 16)).param, "model");
  EXPECT_EQ(err(parse_request(Api::kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":0})", 16))
                .param,
            "max_tokens");
  EXPECT_EQ(err(parse_request(Api::kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"n":2})", 16)).param,
            "n");
  EXPECT_EQ(err(parse_request(Api::kChat,
                              R"({"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})",
                              16))
                .param,
            "stream_options");
  EXPECT_EQ(err(parse_request(Api::kChat, "[1]", 16)).status, 400);
}

TEST(OpenAiProtocol, ErrorBodyHasOpenAisShape) {
  auto j = json::parse(error_body({404, "invalid_request_error", "no such model", "model", "model_not_found"}));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  j = json::parse(error_body({400, "invalid_request_error", "x", "", ""}));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
}

TEST(OpenAiProtocol, UsageCarriesTheChosenCacheFields) {
  const Usage u{100, 10, 64, 32};
  auto j = json::parse(usage_json(u, CacheFields::kOpenAi));
  EXPECT_EQ(j["total_tokens"], 110);
  EXPECT_EQ(j["prompt_tokens_details"]["cached_tokens"], 64);
  EXPECT_FALSE(j.contains("cache_read_input_tokens"));
  EXPECT_FALSE(j.contains("prompt_cache_hit_tokens"));
  j = json::parse(usage_json(u, CacheFields::kAnthropic));
  EXPECT_EQ(j["cache_read_input_tokens"], 64);
  EXPECT_EQ(j["cache_creation_input_tokens"], 32);
  j = json::parse(usage_json(u, CacheFields::kDeepSeek));
  EXPECT_EQ(j["prompt_cache_hit_tokens"], 64);
  EXPECT_EQ(j["prompt_cache_miss_tokens"], 36);
  j = json::parse(usage_json(u, CacheFields::kAll));
  EXPECT_TRUE(j.contains("cache_read_input_tokens") && j.contains("prompt_cache_miss_tokens"));
  CacheFields f;
  EXPECT_TRUE(cache_fields_from_name("deepseek", f));
  EXPECT_EQ(f, CacheFields::kDeepSeek);
  EXPECT_FALSE(cache_fields_from_name("gemini", f));
}

TEST(OpenAiProtocol, StreamChunksAreFramedAsOpenAiSendsThem) {
  ResponseMeta m{Api::kChat, "chatcmpl-1", 1700000000, "m", CacheFields::kOpenAi, true};
  EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  auto role = json::parse(chat_role_chunk(m));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(role["usage"].is_null() && role.contains("usage"));
  auto c = json::parse(content_chunk(m, " the", ""));
  EXPECT_EQ(c["choices"][0]["delta"]["content"], " the");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  c = json::parse(content_chunk(m, " gpu", "length"));
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  auto u = json::parse(usage_chunk(m, Usage{5, 2, 0, 0}));
  EXPECT_TRUE(u["choices"].is_array() && u["choices"].empty());
  EXPECT_EQ(u["usage"]["completion_tokens"], 2);

  m.api = Api::kCompletions;
  m.include_usage = false;
  c = json::parse(content_chunk(m, " the", "stop"));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], " the");
  EXPECT_FALSE(c.contains("usage"));
}

TEST(OpenAiProtocol, NonStreamingBodiesAndTheModelList) {
  ResponseMeta m{Api::kChat, "chatcmpl-1", 1, "m", CacheFields::kOpenAi, false};
  auto j = json::parse(completion_body(m, " a b", "stop", Usage{3, 2, 0, 0}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], " a b");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  m.api = Api::kCompletions;
  j = json::parse(completion_body(m, " a", "length", Usage{3, 1, 0, 0}));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], " a");
  j = json::parse(models_body("m", 5));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "m");
  EXPECT_EQ(j["data"][0]["owned_by"], "cmax");
}

TEST(OpenAiServe, ListenNamesOneAddress) {
  auto l = parse_listen("127.0.0.1:0");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->first, "127.0.0.1");
  EXPECT_EQ(l->second, 0);
  l = parse_listen("[::1]:8000");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->first, "::1");
  EXPECT_FALSE(parse_listen("0.0.0.0:8000"));
  EXPECT_FALSE(parse_listen(":8000"));
  EXPECT_FALSE(parse_listen("[::]:8000"));
  EXPECT_FALSE(parse_listen("127.0.0.1"));
  EXPECT_FALSE(parse_listen("127.0.0.1:70000"));
  EXPECT_TRUE(parse_listen("10.0.0.5:8000"));
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("10.0.0.5"));
}

}  // namespace
}  // namespace cmax::endpoint

namespace {

TEST(OpenAiProtocol, ReadsVllmsIgnoreEos) {
  using namespace cmax::endpoint;
  auto r = parse_request(Api::kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"ignore_eos":true})", 16);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  EXPECT_TRUE(std::get<CompletionRequest>(r).ignore_eos);
  auto bad = parse_request(Api::kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"ignore_eos":1})", 16);
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).param, "ignore_eos");
}

// content_chunk is written by hand for speed: byte for byte what nlohmann would write (sorted keys,
// its escapes), for both APIs, with and without usage, odd text and non-ASCII (which falls back).
TEST(OpenAiProtocol, TheHandWrittenContentChunkIsNlohmannsBytes) {
  using namespace cmax::endpoint;
  for (const auto api : {Api::kChat, Api::kCompletions}) {
    for (const bool usage : {false, true}) {
      for (const std::string text : {" word", "", "q\"b\\s\n\t\r\b\f\x01\x1f end", "h\xc3\xa9llo"}) {
        for (const std::string finish : {"", "length", "stop"}) {
          ResponseMeta m;
          m.api = api;
          m.id = "chatcmpl-cmax00000042";
          m.created = 1764000000;
          m.model = "cmax-sim";
          m.include_usage = usage;
          const auto got = content_chunk(m, text, finish);
          EXPECT_EQ(got, nlohmann::json::parse(got).dump()) << got;
          const auto j = nlohmann::json::parse(got);
          EXPECT_EQ(api == Api::kChat ? j["choices"][0]["delta"]["content"] : j["choices"][0]["text"], text);
          EXPECT_EQ(j.contains("usage"), usage);
          if (finish.empty()) EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
          else EXPECT_EQ(j["choices"][0]["finish_reason"], finish);
        }
      }
    }
  }
}

}  // namespace
