// The Messages API side of cmax endpoint serve: what it accepts and refuses as Anthropic does, and
// the bodies and events it writes, in Anthropic's own usage shape and in vLLM's.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "endpoint/anthropic_protocol.h"

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;

CompletionRequest ok(const std::variant<CompletionRequest, ApiError>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<CompletionRequest>(r) ? std::get<CompletionRequest>(r) : CompletionRequest{};
}

std::string refused(std::string_view body) {
  auto r = parse_messages_request(body);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  if (!std::holds_alternative<ApiError>(r)) return {};
  EXPECT_EQ(std::get<ApiError>(r).status, 400);
  return std::get<ApiError>(r).message;
}

// The events of a stream, as (event name, data object).
std::vector<std::pair<std::string, json>> events(const std::string& text) {
  std::vector<std::pair<std::string, json>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find("\n\n", at);
    if (end == std::string::npos) break;
    std::string block = text.substr(at, end - at);
    at = end + 2;
    std::string name, data;
    std::size_t p = 0;
    while (p < block.size()) {
      auto nl = block.find('\n', p);
      if (nl == std::string::npos) nl = block.size();
      auto line = block.substr(p, nl - p);
      if (line.rfind("event: ", 0) == 0) name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data = line.substr(6);
      p = nl + 1;
    }
    out.emplace_back(name, data == "[DONE]" ? json("[DONE]") : json::parse(data));
  }
  return out;
}

TEST(AnthropicProtocol, ParsesARequestWithSystemBlocksAndMetadata) {
  const auto r = ok(parse_messages_request(R"({"model":"m","max_tokens":7,"stream":true,
      "system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
      "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},
                  {"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}},
                                             {"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}],
      "metadata":{"user_id":"cmax-1-4"}})"));
  EXPECT_EQ(r.api, Api::kMessages);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 7u);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "cmax-1-4");
  // The system text renders as the chat's first message: the same prompt, token for token, as the
  // OpenAI chat request with a system message.
  EXPECT_EQ(r.prompt, "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\nhello\n<|user|>\nab\n<|assistant|>\n");
  const auto chat = std::get<CompletionRequest>(parse_request(
      Api::kChat,
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},
          {"role":"assistant","content":"hello"},{"role":"user","content":"ab"}]})",
      16));
  EXPECT_EQ(r.prompt, chat.prompt);
  // A tool result's text is prompt text too.
  EXPECT_EQ(ok(parse_messages_request(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"42"}]}]}]})"))
                .prompt,
            "<|user|>\n42\n<|assistant|>\n");
}

TEST(AnthropicProtocol, RefusesWhatTheMessagesApiRefuses) {
  EXPECT_EQ(refused(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), "max_tokens: Field required");
  EXPECT_EQ(refused(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}]})"), "model: Field required");
  EXPECT_NE(refused(R"({"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]})")
                .find("top-level `system` parameter"),
            std::string::npos);
  EXPECT_NE(refused(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})").find("max_tokens"),
            std::string::npos);
  EXPECT_NE(refused(R"({"model":"m","max_tokens":1,"messages":[]})").find("messages"), std::string::npos);
  EXPECT_NE(refused(R"({"model":"m","max_tokens":1,"messages":[{"role":"user"}]})").find("messages.0.content"),
            std::string::npos);
  EXPECT_NE(refused(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text"}]}]})")
                .find("messages.0.content.0.text"),
            std::string::npos);
  EXPECT_NE(refused(R"({"model":"m","max_tokens":1,"stream":"yes","messages":[{"role":"user","content":"x"}]})")
                .find("stream"),
            std::string::npos);
  EXPECT_NE(refused("not json").find("JSON"), std::string::npos);
  EXPECT_NE(refused("[1]").find("object"), std::string::npos);
}

TEST(AnthropicProtocol, ErrorBodiesCarryAnthropicsTypeForTheStatus) {
  const auto j = json::parse(messages_error_body({429, "requests", "slow down", "", "rate_limit_exceeded"}));
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "rate_limit_error");
  EXPECT_EQ(j["error"]["message"], "slow down");
  EXPECT_EQ(json::parse(messages_error_body({400, "", "x", "", ""}))["error"]["type"], "invalid_request_error");
  EXPECT_EQ(json::parse(messages_error_body({401, "", "x", "", ""}))["error"]["type"], "authentication_error");
  EXPECT_EQ(json::parse(messages_error_body({404, "", "x", "", ""}))["error"]["type"], "not_found_error");
  EXPECT_EQ(json::parse(messages_error_body({500, "", "x", "", ""}))["error"]["type"], "api_error");
  EXPECT_EQ(json::parse(messages_error_body({529, "", "x", "", ""}))["error"]["type"], "overloaded_error");
}

TEST(AnthropicProtocol, AWholeMessageSplitsThePromptAsAnthropicDoes) {
  ResponseMeta m{Api::kMessages, "msg_cmax00000001", 0, "m", CacheFields::kOpenAi, true};
  const Usage u{100, 5, 64, 32};  // 64 read, 32 written, 4 neither
  auto j = json::parse(message_body(m, " a b", "length", u));
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_EQ(j["content"][0]["text"], " a b");
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_EQ(j["usage"]["input_tokens"], 4);
  EXPECT_EQ(j["usage"]["cache_read_input_tokens"], 64);
  EXPECT_EQ(j["usage"]["cache_creation_input_tokens"], 32);
  EXPECT_EQ(j["usage"]["output_tokens"], 5);
  // vLLM's shape: the whole prompt in input_tokens, no cache field.
  m.cache_fields = CacheFields::kNone;
  j = json::parse(message_body(m, "x", "stop", u));
  EXPECT_EQ(j["stop_reason"], "end_turn");
  EXPECT_EQ(j["usage"], json({{"input_tokens", 100}, {"output_tokens", 5}}));
}

TEST(AnthropicProtocol, AStreamHasAnthropicsEventsInOrder) {
  ResponseMeta m{Api::kMessages, "msg_cmax00000002", 0, "m", CacheFields::kAnthropic, true};
  const Usage u{50, 3, 16, 32};
  std::string text = messages_stream_head(m, u);
  for (const char* t : {" one", " \"two\"", " three"}) text += messages_text_event(t);
  text += messages_stream_tail(m, "stop", u);
  const auto ev = events(text);
  std::vector<std::string> names;
  for (const auto& [name, data] : ev) {
    names.push_back(name);
    EXPECT_EQ(data["type"], name) << "the event name repeats the data's type";
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping", "content_block_delta",
                                             "content_block_delta", "content_block_delta", "content_block_stop",
                                             "message_delta", "message_stop"}));
  const auto& start = ev[0].second["message"];
  EXPECT_EQ(start["id"], "msg_cmax00000002");
  EXPECT_EQ(start["usage"]["input_tokens"], 2);
  EXPECT_EQ(start["usage"]["cache_read_input_tokens"], 16);
  EXPECT_EQ(start["usage"]["cache_creation_input_tokens"], 32);
  EXPECT_EQ(start["usage"]["output_tokens"], 0);
  EXPECT_EQ(ev[4].second["delta"], json({{"type", "text_delta"}, {"text", " \"two\""}}));
  EXPECT_EQ(ev[7].second["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(ev[7].second["usage"], json({{"output_tokens", 3}}));

  // vLLM's: the prompt in input_tokens at both ends, and OpenAI's [DONE] after message_stop.
  m.cache_fields = CacheFields::kNone;
  const auto v = events(messages_stream_head(m, u) + messages_stream_tail(m, "length", u));
  EXPECT_EQ(v[0].second["message"]["usage"], json({{"input_tokens", 50}, {"output_tokens", 0}}));
  EXPECT_EQ(v[4].second["usage"], json({{"input_tokens", 50}, {"output_tokens", 3}}));
  EXPECT_EQ(v[4].second["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(v.back().second, json("[DONE]"));
}

}  // namespace
}  // namespace cmax::endpoint
