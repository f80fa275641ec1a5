#pragma once
// What cmax endpoint bench keeps of one request: timings, token counts as the endpoint reported
// them, and how it failed. Every other loadgen module reads or writes these; nothing here does I/O.

#include <cstdint>
#include <string>
#include <string_view>

namespace cmax::loadgen {

/// Why a request failed, by the class an operator acts on. kNone: it succeeded.
enum class ErrorClass {
  kNone,
  kHttp429,    ///< rate limited (429)
  kHttp4xx,    ///< another 4xx: the request or the key is wrong (not retried)
  kHttp5xx,    ///< a 5xx
  kTimeout,    ///< no response, or the stream stalled, past the timeout
  kConnect,    ///< could not connect (refused, DNS, TLS handshake)
  kDropped,    ///< the connection closed or reset mid-response (a stream with no [DONE])
  kProtocol,   ///< the response could not be read: not JSON, not SSE, no choices
  kApiError,   ///< a 200 whose body or stream carried {"error": ...}
  kCanceled,   ///< the run was interrupted (Ctrl-C, --duration) while it was in flight
};
inline constexpr int kErrorClassCount = 10;
/// "ok", "http_429", "http_4xx", "http_5xx", "timeout", "connect", "dropped", "protocol",
/// "api_error", "canceled".
std::string_view error_class_name(ErrorClass c);
/// The inverse; false for an unknown name.
bool error_class_from_name(std::string_view name, ErrorClass& out);
/// Whether the retry policy may retry this class: 429, 5xx, timeout, connect, and dropped when no
/// content had arrived yet (the caller checks that).
bool retryable(ErrorClass c);

/// Token counts from one response's usage object. Which provider's names carried the cached count
/// is kept so a report can say so.
enum class CacheSource { kNone, kOpenAi, kAnthropic, kDeepSeek };
std::string_view cache_source_name(CacheSource s);  ///< "none", "openai", "anthropic", "deepseek"

struct Usage {
  bool present = false;  ///< the response carried a usage object
  std::uint64_t prompt_tokens = 0;
  std::uint64_t completion_tokens = 0;
  std::uint64_t cached_tokens = 0;          ///< read from the provider's prompt cache
  std::uint64_t cache_creation_tokens = 0;  ///< written to it (Anthropic's cache_creation_input_tokens)
  CacheSource cache_source = CacheSource::kNone;  ///< kNone: no cache field at all (not "0 cached")
};

/// One request of a run. Times are seconds since the run started (steady clock); -1 = never.
struct RequestRecord {
  std::uint64_t index = 0;     ///< order the workload produced it in
  std::uint32_t session = 0;   ///< multi-turn session + 1; 0 none
  std::uint32_t turn = 0;      ///< turn within the session, from 0
  int concurrency = 0;         ///< the sweep level it ran under (0 when not a sweep)
  double scheduled_s = -1;     ///< when the schedule wanted it sent (open loop); -1 closed loop
  double sent_s = -1;          ///< when the final attempt was handed to the connection
  double first_sent_s = -1;    ///< when the first attempt was
  double queue_s = 0;          ///< client-side queueing: first_sent_s - scheduled_s (>= 0; 0 closed loop)
  double ttft_s = -1;          ///< sent_s -> first content token (streams; non-streams: the body)
  double e2e_s = -1;           ///< sent_s -> last byte
  double tpot_s = -1;          ///< (e2e - ttft) / (completion_tokens - 1) when completion_tokens > 1
  std::uint32_t attempts = 1;
  int http_status = 0;         ///< of the final attempt; 0 = none received
  ErrorClass error = ErrorClass::kNone;
  std::string error_detail;    ///< the endpoint's error message or the transport's, one line
  Usage usage;                 ///< as reported; zero when absent
  std::uint32_t content_chunks = 0;  ///< stream events that carried content
  std::uint64_t expected_prompt_tokens = 0;  ///< the workload's own count (the trace's input_length); 0 unknown
  std::uint32_t max_tokens = 0;
  std::string response_id;     ///< "chatcmpl-..." as the endpoint named it
  bool ok() const { return error == ErrorClass::kNone; }
};

}  // namespace cmax::loadgen
