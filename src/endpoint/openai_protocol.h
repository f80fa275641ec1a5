#pragma once
// The OpenAI wire protocol as cmax endpoint serve speaks it: request bodies in, response bodies,
// SSE chunks and error bodies out. Pure (strings in, strings out); nlohmann::json stays in the .cpp.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cmax::endpoint {

/// Which API a request came in on: OpenAI's chat or completions, or Anthropic's Messages
/// (endpoint/anthropic_protocol.h).
enum class Api { kChat, kCompletions, kMessages };
/// "chat", "completions", "messages".
std::string_view api_name(Api api);

/// Which providers' cache fields the usage object carries. OpenAI's
/// prompt_tokens_details.cached_tokens is there but with kNone (vLLM without
/// --enable-prompt-tokens-details, SGLang without --enable-cache-report: no cache field at all);
/// kAnthropic adds cache_read_input_tokens / cache_creation_input_tokens, kDeepSeek
/// prompt_cache_hit_tokens / prompt_cache_miss_tokens.
enum class CacheFields { kOpenAi, kAnthropic, kDeepSeek, kAll, kNone };
/// "openai", "anthropic", "deepseek", "all", "none"; false for anything else.
bool cache_fields_from_name(std::string_view name, CacheFields& out);

/// An error as OpenAI returns it: {"error":{"message","type","param","code"}}.
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  ///< "" is written as null
  std::string code;   ///< "" is written as null
};
/// The JSON body of `e`.
std::string error_body(const ApiError& e);

/// What serve needs from a chat or completions request.
struct CompletionRequest {
  Api api = Api::kChat;
  std::string model;
  std::string prompt;                  ///< the chat rendered by render_chat, or the completion prompt
  std::vector<std::uint64_t> token_ids;  ///< a completions prompt given as token ids (then prompt is "")
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
  std::uint32_t max_tokens = 0;  ///< max_completion_tokens, else max_tokens, else the default
  std::string user;            ///< the `user` field: the consistent-hash session key
  bool ignore_eos = false;     ///< vLLM's extension: generate max_tokens tokens, past the natural end
};

/// Parses a POST body for `api`. 400 errors for malformed JSON, a missing or ill-typed field, n != 1
/// or several prompts; `default_max_tokens` when the body names none. The model name is not
/// checked here (the server knows which it serves). Pure.
std::variant<CompletionRequest, ApiError> parse_request(Api api, std::string_view body,
                                                        std::uint32_t default_max_tokens);

/// Token counts of one response.
struct Usage {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
  std::uint32_t cached_tokens = 0;          ///< read from the prefix cache
  std::uint32_t cache_creation_tokens = 0;  ///< full blocks written to the cache by this request
};

/// What every response object and chunk of one request repeats.
struct ResponseMeta {
  Api api = Api::kChat;
  std::string id;  ///< "chatcmpl-..." or "cmpl-..."
  std::int64_t created = 0;  ///< Unix seconds
  std::string model;
  CacheFields cache_fields = CacheFields::kOpenAi;
  bool include_usage = false;  ///< streaming: chunks carry "usage": null, then a usage chunk
};

/// The usage object as JSON text.
std::string usage_json(const Usage& u, CacheFields fields);
/// A non-streaming chat.completion or text_completion body.
std::string completion_body(const ResponseMeta& m, std::string_view text, std::string_view finish_reason,
                            const Usage& u);
/// The first chunk of a chat stream: delta {"role":"assistant","content":""}.
std::string chat_role_chunk(const ResponseMeta& m);
/// One content chunk; `finish_reason` "" is null (set it on the last one: "length" or "stop").
std::string content_chunk(const ResponseMeta& m, std::string_view text, std::string_view finish_reason);
/// The final usage chunk of a stream with include_usage: "choices": [] and the usage.
std::string usage_chunk(const ResponseMeta& m, const Usage& u);
/// `json` framed as one server-sent event: "data: " json "\n\n".
std::string sse_event(std::string_view json);
/// The stream's terminator, "data: [DONE]\n\n".
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
/// GET /v1/models: a list holding one model owned by "cmax".
std::string models_body(std::string_view model, std::int64_t created);

}  // namespace cmax::endpoint
