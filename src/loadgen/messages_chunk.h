#pragma once
// Reading what an endpoint of Anthropic's Messages API (POST /v1/messages) sends back: one stream
// event (its `event:` name and `data`), a whole message body, an error. The same ChunkInfo as the
// OpenAI reader (chunk.h), so the run loop times and counts both alike. Pure.
//
// The events: message_start (the id, the prompt side of the usage), content_block_start,
// content_block_delta (text_delta, thinking_delta and input_json_delta carry generated tokens;
// signature_delta does not), content_block_stop, message_delta (stop_reason, cumulative usage),
// message_stop (the end), ping, error. A server may repeat fields or add its own: vLLM's
// /v1/messages repeats input_tokens in message_delta and writes OpenAI's "data: [DONE]" after
// message_stop, which reads as the end too.
//
// Usage: Anthropic's input_tokens counts only what was neither read from nor written to the cache,
// so the prompt is input_tokens + cache_read_input_tokens + cache_creation_input_tokens; the cache
// source is "anthropic" when either cache field was present, "none" when neither was (vLLM).

#include <cstdint>
#include <string_view>

#include "core/result.h"
#include "loadgen/chunk.h"

namespace cmax::loadgen {

/// A Messages response's usage as its events report it, each field -1 until some event carried it;
/// a later value of a field replaces the earlier one (message_delta's counts are cumulative).
struct MessagesUsage {
  std::int64_t input = -1, cache_read = -1, cache_creation = -1, output = -1;
  /// As the run loop keeps it; not present until input or output tokens were reported.
  Usage usage() const;
};

/// One stream event. `event` is its `event:` field ("" when absent: the data's "type" decides, as
/// it does when both are there). Usage fields it carries are merged into `acc`, and the returned
/// ChunkInfo's usage is acc.usage() when this event carried any. Fails (a protocol error, one line)
/// on data that is not a JSON object, an event without a type, or a count that is not a
/// non-negative integer. ChunkInfo::done on message_stop or "[DONE]".
Result<ChunkInfo> parse_messages_event(std::string_view event, std::string_view data, bool want_text,
                                       MessagesUsage& acc);

namespace detail {
/// parse_messages_event without its fast path for content_block_delta: every event through
/// nlohmann's DOM. The reference the fuzzer holds the fast path to.
Result<ChunkInfo> parse_messages_event_dom(std::string_view event, std::string_view data, bool want_text,
                                           MessagesUsage& acc);
}  // namespace detail

/// A non-streaming response: {"type":"message",...} (text blocks concatenated; thinking counts as
/// content) or {"type":"error","error":{...}}.
Result<ChunkInfo> parse_messages_body(std::string_view body, bool want_text);

}  // namespace cmax::loadgen
