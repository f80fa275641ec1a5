#include "endpoint/openai_protocol.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "endpoint/openai_tokenize.h"

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;

ApiError bad(std::string message, std::string param, std::string code = "") {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
}

json null_or(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// Message content: a string, null (an assistant turn with tool calls), or an array of parts whose
// text parts are concatenated.
std::variant<std::string, ApiError> content_text(const json& c, std::size_t i) {
  const auto param = "messages[" + std::to_string(i) + "].content";
  if (c.is_null()) return std::string();
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return bad("'content' must be a string or an array of content parts", param);
  std::string out;
  for (const auto& part : c) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return bad("each content part must be an object with a 'type'", param);
    if (part["type"] == "text") {
      if (!part.contains("text") || !part["text"].is_string())
        return bad("a text content part needs a string 'text'", param);
      out += part["text"].get<std::string>();
    }
  }
  return out;
}

std::variant<std::string, ApiError> chat_prompt(const json& body) {
  if (!body.contains("messages")) return bad("you must provide a 'messages' parameter", "messages");
  const auto& ms = body["messages"];
  if (!ms.is_array() || ms.empty())
    return bad("'messages' must be a non-empty array of messages", "messages");
  std::vector<ChatMessage> messages;
  messages.reserve(ms.size());
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    const auto param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return bad("each message must be an object with a string 'role'", param + ".role");
    auto text = content_text(m.contains("content") ? m["content"] : json(nullptr), i);
    if (auto* e = std::get_if<ApiError>(&text)) return std::move(*e);
    messages.push_back({m["role"].get<std::string>(), std::get<std::string>(std::move(text))});
  }
  return render_chat(messages);
}

// A completions prompt: a string, [string], [int...] or [[int...]]; several prompts are refused.
std::variant<std::string, ApiError> completion_prompt(const json& body, std::vector<std::uint64_t>& ids) {
  if (!body.contains("prompt") || body["prompt"].is_null())
    return bad("you must provide a 'prompt' parameter", "prompt");
  const json* p = &body["prompt"];
  if (p->is_string()) return p->get<std::string>();
  if (!p->is_array() || p->empty()) return bad("'prompt' must be a string or an array", "prompt");
  if (p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) return p->get<std::string>();
  for (const auto& t : *p) {
    if (t.is_string() || t.is_array())
      return bad("cmax endpoint serve takes one prompt per request; send the prompts separately", "prompt");
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0)
      return bad("a token-id prompt must be an array of non-negative integers", "prompt");
    ids.push_back(t.get<std::uint64_t>());
  }
  if (ids.empty()) return bad("'prompt' must not be empty", "prompt");
  return std::string();
}

json usage_object(const Usage& u, CacheFields fields) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}, {"audio_tokens", 0}}},
            {"completion_tokens_details", {{"reasoning_tokens", 0}, {"audio_tokens", 0}}}};
  if (fields == CacheFields::kNone) j.erase("prompt_tokens_details");
  if (fields == CacheFields::kAnthropic || fields == CacheFields::kAll) {
    j["cache_read_input_tokens"] = u.cached_tokens;
    j["cache_creation_input_tokens"] = u.cache_creation_tokens;
  }
  if (fields == CacheFields::kDeepSeek || fields == CacheFields::kAll) {
    j["prompt_cache_hit_tokens"] = u.cached_tokens;
    j["prompt_cache_miss_tokens"] = u.prompt_tokens - u.cached_tokens;
  }
  return j;
}

json chunk_head(const ResponseMeta& m) {
  json j = {{"id", m.id},
            {"object", m.api == Api::kChat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "fp_cmax"}};
  return j;
}

json finish_or_null(std::string_view finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(std::string(finish_reason));
}

}  // namespace

std::string_view api_name(Api api) {
  switch (api) {
    case Api::kCompletions: return "completions";
    case Api::kMessages: return "messages";
    case Api::kChat: break;
  }
  return "chat";
}

bool cache_fields_from_name(std::string_view name, CacheFields& out) {
  if (name == "openai") out = CacheFields::kOpenAi;
  else if (name == "anthropic") out = CacheFields::kAnthropic;
  else if (name == "deepseek") out = CacheFields::kDeepSeek;
  else if (name == "all") out = CacheFields::kAll;
  else if (name == "none") out = CacheFields::kNone;
  else return false;
  return true;
}

std::string error_body(const ApiError& e) {
  return json{{"error",
               {{"message", e.message}, {"type", e.type}, {"param", null_or(e.param)}, {"code", null_or(e.code)}}}}
      .dump();
}

std::variant<CompletionRequest, ApiError> parse_request(Api api, std::string_view body,
                                                        std::uint32_t default_max_tokens) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return bad("We could not parse the JSON body of your request. (HINT: This likely means you aren't "
               "using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
               "", "invalid_json");
  if (!j.is_object()) return bad("the request body must be a JSON object", "");
  CompletionRequest r;
  r.api = api;
  if (!j.contains("model") || !j["model"].is_string())
    return bad("you must provide a model parameter", "model");
  r.model = j["model"].get<std::string>();

  auto prompt = api == Api::kChat ? chat_prompt(j) : completion_prompt(j, r.token_ids);
  if (auto* e = std::get_if<ApiError>(&prompt)) return std::move(*e);
  r.prompt = std::get<std::string>(std::move(prompt));

  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return bad("'stream' must be a boolean", "stream");
    r.stream = j["stream"].get<bool>();
  }
  if (j.contains("stream_options") && !j["stream_options"].is_null()) {
    const auto& so = j["stream_options"];
    if (!r.stream)
      return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options");
    if (!so.is_object()) return bad("'stream_options' must be an object", "stream_options");
    if (so.contains("include_usage") && !so["include_usage"].is_null()) {
      if (!so["include_usage"].is_boolean())
        return bad("'include_usage' must be a boolean", "stream_options.include_usage");
      r.include_usage = so["include_usage"].get<bool>();
    }
  }
  r.max_tokens = default_max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (api == Api::kCompletions && std::string_view(key) == "max_completion_tokens") continue;
    if (!j.contains(key) || j[key].is_null()) continue;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 ||
        v.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      return bad(std::string("'") + key + "' must be an integer >= 1", key);
    r.max_tokens = static_cast<std::uint32_t>(v.get<std::int64_t>());  // max_completion_tokens wins
  }
  if (j.contains("n") && !j["n"].is_null() && !(j["n"].is_number_integer() && j["n"].get<std::int64_t>() == 1))
    return bad("cmax endpoint serve generates one choice per request; set n to 1", "n");
  if (j.contains("user") && j["user"].is_string()) r.user = j["user"].get<std::string>();
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_null()) {
    if (!j["ignore_eos"].is_boolean()) return bad("'ignore_eos' must be a boolean", "ignore_eos");
    r.ignore_eos = j["ignore_eos"].get<bool>();
  }
  return r;
}

std::string usage_json(const Usage& u, CacheFields fields) { return usage_object(u, fields).dump(); }

std::string completion_body(const ResponseMeta& m, std::string_view text, std::string_view finish_reason,
                            const Usage& u) {
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_or_null(finish_reason)}};
  if (m.api == Api::kChat)
    choice["message"] = {{"role", "assistant"}, {"content", std::string(text)}, {"refusal", nullptr}};
  else
    choice["text"] = std::string(text);
  json j = {{"id", m.id},
            {"object", m.api == Api::kChat ? "chat.completion" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "fp_cmax"},
            {"choices", json::array({choice})},
            {"usage", usage_object(u, m.cache_fields)}};
  return j.dump();
}

std::string chat_role_chunk(const ResponseMeta& m) {
  json j = chunk_head(m);
  j["choices"] = json::array({{{"index", 0},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  if (m.include_usage) j["usage"] = nullptr;
  return j.dump();
}

// Once per streamed token, so written out by hand: the bytes nlohmann::json::dump() would write
// (keys in its sorted order, its escapes), about ten times cheaper. Invalid UTF-8 becomes U+FFFD
// (core::append_json_string) where nlohmann would throw.
std::string content_chunk(const ResponseMeta& m, std::string_view text, std::string_view finish_reason) {
  std::string out;
  out.reserve(192 + text.size() + m.id.size() + m.model.size());
  auto finish = [&] {
    out += "\"finish_reason\":";
    if (finish_reason.empty()) out += "null";
    else core::append_json_string(out, finish_reason);
  };
  if (m.api == Api::kChat) {
    out += "{\"choices\":[{\"delta\":{\"content\":";
    core::append_json_string(out, text);
    out += "},";
    finish();
    out += ",\"index\":0,\"logprobs\":null}]";
  } else {
    out += "{\"choices\":[{";
    finish();
    out += ",\"index\":0,\"logprobs\":null,\"text\":";
    core::append_json_string(out, text);
    out += "}]";
  }
  out += ",\"created\":";
  out += std::to_string(m.created);
  out += ",\"id\":";
  core::append_json_string(out, m.id);
  out += ",\"model\":";
  core::append_json_string(out, m.model);
  out += m.api == Api::kChat ? ",\"object\":\"chat.completion.chunk\"" : ",\"object\":\"text_completion\"";
  out += ",\"system_fingerprint\":\"fp_cmax\"";
  if (m.include_usage) out += ",\"usage\":null";
  out += '}';
  return out;
}

std::string usage_chunk(const ResponseMeta& m, const Usage& u) {
  json j = chunk_head(m);
  j["choices"] = json::array();
  j["usage"] = usage_object(u, m.cache_fields);
  return j.dump();
}

std::string sse_event(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size() + 8);
  out += "data: ";
  out += json_text;
  out += "\n\n";
  return out;
}

std::string models_body(std::string_view model, std::int64_t created) {
  return json{{"object", "list"},
              {"data", json::array({{{"id", std::string(model)},
                                     {"object", "model"},
                                     {"created", created},
                                     {"owned_by", "cmax"}}})}}
      .dump();
}

}  // namespace cmax::endpoint
