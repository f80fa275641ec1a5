#include "endpoint/anthropic_protocol.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "endpoint/openai_tokenize.h"

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;

ApiError bad(std::string message) { return ApiError{400, "invalid_request_error", std::move(message), "", ""}; }

// The text of a content value: a string, or blocks whose "text" blocks (and tool_result blocks'
// string or text-block content) are concatenated; other blocks (image, tool_use, thinking) carry
// no prompt text this server counts.
std::variant<std::string, ApiError> block_text(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return bad(where + ": Input should be a valid string or a list of content blocks");
  std::string out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const auto& b = c[i];
    const auto here = where + "." + std::to_string(i);
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return bad(here + ".type: Field required");
    const auto& type = b["type"].get_ref<const std::string&>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return bad(here + ".text: Field required");
      out += b["text"].get<std::string>();
    } else if (type == "tool_result" && b.contains("content")) {
      auto inner = block_text(b["content"], here + ".content");
      if (auto* e = std::get_if<ApiError>(&inner)) return std::move(*e);
      out += std::get<std::string>(inner);
    }
  }
  return out;
}

json usage_object(const Usage& u, CacheFields fields, std::uint32_t output_tokens) {
  if (fields == CacheFields::kNone) return {{"input_tokens", u.prompt_tokens}, {"output_tokens", output_tokens}};
  const std::uint32_t read = std::min(u.cached_tokens, u.prompt_tokens);
  const std::uint32_t created = std::min(u.cache_creation_tokens, u.prompt_tokens - read);
  return {{"input_tokens", u.prompt_tokens - read - created},
          {"cache_creation_input_tokens", created},
          {"cache_read_input_tokens", read},
          {"output_tokens", output_tokens}};
}

std::string event(std::string_view name, const json& data) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: ";
  out += data.dump();
  out += "\n\n";
  return out;
}

std::string_view error_type_of(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_messages_request(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("There was an error parsing the body of your request: not valid JSON");
  if (!j.is_object()) return bad("the request body must be a JSON object");
  CompletionRequest r;
  r.api = Api::kMessages;
  if (!j.contains("model") || !j["model"].is_string()) return bad("model: Field required");
  r.model = j["model"].get<std::string>();
  if (!j.contains("max_tokens") || j["max_tokens"].is_null()) return bad("max_tokens: Field required");
  const auto& mt = j["max_tokens"];
  if (!mt.is_number_integer() || mt.get<std::int64_t>() < 1 ||
      mt.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
    return bad("max_tokens: Input should be an integer greater than or equal to 1");
  r.max_tokens = static_cast<std::uint32_t>(mt.get<std::int64_t>());

  std::vector<ChatMessage> chat;
  if (j.contains("system") && !j["system"].is_null()) {
    auto text = block_text(j["system"], "system");
    if (auto* e = std::get_if<ApiError>(&text)) return std::move(*e);
    chat.push_back({"system", std::get<std::string>(std::move(text))});
  }
  if (!j.contains("messages")) return bad("messages: Field required");
  const auto& ms = j["messages"];
  if (!ms.is_array() || ms.empty()) return bad("messages: at least one message is required");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    const auto where = "messages." + std::to_string(i);
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) return bad(where + ".role: Field required");
    const auto& role = m["role"].get_ref<const std::string&>();
    if (role != "user" && role != "assistant")
      return bad(where + ": Unexpected role \"" + role +
                 "\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.");
    if (!m.contains("content")) return bad(where + ".content: Field required");
    auto text = block_text(m["content"], where + ".content");
    if (auto* e = std::get_if<ApiError>(&text)) return std::move(*e);
    chat.push_back({role, std::get<std::string>(std::move(text))});
  }
  r.prompt = render_chat(chat);

  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return bad("stream: Input should be a valid boolean");
    r.stream = j["stream"].get<bool>();
  }
  r.include_usage = r.stream;  // a Messages stream always carries usage
  // vLLM's extension, taken here as on the OpenAI routes (vLLM's own /v1/messages drops it).
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_null()) {
    if (!j["ignore_eos"].is_boolean()) return bad("ignore_eos: Input should be a valid boolean");
    r.ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (j.contains("metadata") && j["metadata"].is_object()) {
    const auto& md = j["metadata"];
    if (md.contains("user_id") && md["user_id"].is_string()) r.user = md["user_id"].get<std::string>();
  }
  return r;
}

std::string messages_error_body(const ApiError& e) {
  return json{{"type", "error"}, {"error", {{"type", std::string(error_type_of(e.status))}, {"message", e.message}}}}
      .dump();
}

std::string_view stop_reason_of(std::string_view finish_reason) {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "stop") return "end_turn";
  return finish_reason;
}

std::string message_body(const ResponseMeta& m, std::string_view text, std::string_view finish_reason, const Usage& u) {
  return json{{"id", m.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", m.model},
              {"content", json::array({{{"type", "text"}, {"text", std::string(text)}}})},
              {"stop_reason", std::string(stop_reason_of(finish_reason))},
              {"stop_sequence", nullptr},
              {"usage", usage_object(u, m.cache_fields, u.completion_tokens)}}
      .dump();
}

std::string messages_stream_head(const ResponseMeta& m, const Usage& u) {
  std::string out = event("message_start", {{"type", "message_start"},
                                            {"message",
                                             {{"id", m.id},
                                              {"type", "message"},
                                              {"role", "assistant"},
                                              {"model", m.model},
                                              {"content", json::array()},
                                              {"stop_reason", nullptr},
                                              {"stop_sequence", nullptr},
                                              {"usage", usage_object(u, m.cache_fields, 0)}}}});
  out += event("content_block_start",
               {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
  out += event("ping", {{"type", "ping"}});
  return out;
}

std::string messages_text_event(std::string_view text) {
  std::string out;
  out.reserve(128 + text.size());
  out += "event: content_block_delta\ndata: {\"delta\":{\"text\":";
  core::append_json_string(out, text);
  out += ",\"type\":\"text_delta\"},\"index\":0,\"type\":\"content_block_delta\"}\n\n";
  return out;
}

std::string messages_stream_tail(const ResponseMeta& m, std::string_view finish_reason, const Usage& u) {
  std::string out = event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
  json usage = m.cache_fields == CacheFields::kNone ? usage_object(u, m.cache_fields, u.completion_tokens)
                                                    : json{{"output_tokens", u.completion_tokens}};
  out += event("message_delta", {{"type", "message_delta"},
                                 {"delta", {{"stop_reason", std::string(stop_reason_of(finish_reason))}, {"stop_sequence", nullptr}}},
                                 {"usage", std::move(usage)}});
  out += event("message_stop", {{"type", "message_stop"}});
  if (m.cache_fields == CacheFields::kNone) out += kSseDone;
  return out;
}

}  // namespace cmax::endpoint
