#pragma once
// Reading what an OpenAI-compatible endpoint sends back: one streamed chunk's `data`, a whole
// non-streaming body, an error body. Usage cache fields of three conventions are read:
// OpenAI usage.prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens /
// cache_creation_input_tokens, DeepSeek prompt_cache_hit_tokens. Pure.

#include <string>
#include <string_view>

#include "core/result.h"
#include "loadgen/record.h"

namespace cmax::loadgen {

struct ChunkInfo {
  bool done = false;          ///< the data was "[DONE]"
  bool has_content = false;   ///< some choice carried non-empty content: delta.content, delta.reasoning_content
                              ///< (chat chunks), text (completions chunks), message.content (a whole body)
  std::string content;        ///< that content, filled only when asked (want_text)
  std::string finish_reason;  ///< of choices[0], "" when null
  std::string id;             ///< the object's id, "" when absent
  Usage usage;                ///< present = a non-null usage object
  bool is_error = false;      ///< the object was {"error": ...} (an error event, or an error body)
  std::string error_message, error_type, error_code;
};

/// One stream event's data: "[DONE]", a chat.completion.chunk / text_completion chunk, or an error
/// object. Fails (a protocol error, naming what is wrong) on data that is not JSON or not an object.
/// Usage precedence for cached_tokens: OpenAI's field, else Anthropic's, else DeepSeek's; with
/// none, cache_source is kNone.
Result<ChunkInfo> parse_stream_data(std::string_view data, bool want_text);

/// A non-streaming chat.completion or text_completion body, or an error body.
Result<ChunkInfo> parse_completion_body(std::string_view body, bool want_text);

/// The message of an error response body ({"error":{"message":...}} or {"error":"..."} or
/// {"message":...}), cut to one line of at most 300 bytes; the body itself (cut) when it is not JSON.
std::string error_body_message(std::string_view body);

/// `s` on one line of at most `max_bytes` (>= 3): whitespace runs and control bytes become one
/// space, bytes that are not UTF-8 become '?', a cut never splits a character ("..." marks it).
/// What every message of these readers quotes from a peer.
std::string one_line_utf8(std::string_view s, std::size_t max_bytes);

}  // namespace cmax::loadgen
