#pragma once
// Anthropic's Messages API (POST /v1/messages) as cmax endpoint serve speaks it: the request body
// in, the message body, the stream's events and error bodies out. The same CompletionRequest,
// Usage and ResponseMeta as the OpenAI side (openai_protocol.h), so the server's model and
// accounting do not care which API a request came in on. Pure (strings in, strings out).
//
// Two usage shapes, as the two kinds of server a bench meets write them:
//   - Anthropic's own (every CacheFields but kNone): input_tokens counts only the prompt tokens
//     that were neither read from nor written to the cache; cache_read_input_tokens and
//     cache_creation_input_tokens carry the rest, so the prompt is the sum of the three.
//   - vLLM's /v1/messages (kNone): input_tokens is the whole prompt, no cache field, the
//     message_delta repeats input_tokens, and the stream ends with OpenAI's "data: [DONE]" after
//     message_stop (vllm/entrypoints/anthropic/serving.py).

#include <string>
#include <string_view>
#include <variant>

#include "endpoint/openai_protocol.h"

namespace cmax::endpoint {

/// The "anthropic-version" a client sends (the only version the API has had since 2023).
inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

/// Parses a POST /v1/messages body: model, max_tokens (required, as Anthropic requires it),
/// messages (role user or assistant; content a string or blocks whose text blocks are read,
/// tool_result blocks' text too), system (a string or text blocks) rendered as a first "system"
/// message, stream, metadata.user_id (the session key), and vLLM's ignore_eos as on the OpenAI
/// routes. 400 errors name the field as Anthropic does ("max_tokens: Field required"). Pure.
std::variant<CompletionRequest, ApiError> parse_messages_request(std::string_view body);

/// An error as Anthropic returns it: {"type":"error","error":{"type","message"}}, the type from
/// the status (400 invalid_request_error, 401 authentication_error, 403 permission_error, 404
/// not_found_error, 413 request_too_large, 429 rate_limit_error, 529 overloaded_error, other 5xx
/// api_error).
std::string messages_error_body(const ApiError& e);

/// Anthropic's stop_reason for an OpenAI finish_reason: "stop" -> "end_turn", "length" ->
/// "max_tokens".
std::string_view stop_reason_of(std::string_view finish_reason);

/// A non-streaming message body: {"id","type":"message","role":"assistant","model","content":[{"type":
/// "text","text"}],"stop_reason","stop_sequence":null,"usage"}.
std::string message_body(const ResponseMeta& m, std::string_view text, std::string_view finish_reason, const Usage& u);

/// The stream's opening: message_start (usage with output_tokens 0), content_block_start of a text
/// block, and a ping, each a whole "event: ...\ndata: ...\n\n".
std::string messages_stream_head(const ResponseMeta& m, const Usage& u);
/// One token's content_block_delta event (text_delta), framed. Written by hand: once per token.
std::string messages_text_event(std::string_view text);
/// The stream's close: content_block_stop, message_delta (stop_reason, cumulative usage),
/// message_stop, and with kNone vLLM's trailing "data: [DONE]".
std::string messages_stream_tail(const ResponseMeta& m, std::string_view finish_reason, const Usage& u);

}  // namespace cmax::endpoint
