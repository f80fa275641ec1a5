#pragma once
// The run loop of cmax endpoint bench: takes requests from a Workload, sends them through an
// HttpEngine on a schedule (a concurrency sweep, an open-loop Poisson rate, or the trace's own
// timestamps), reads the responses (SSE or whole bodies), retries per policy, and measures. One
// thread; bounded in requests and time; stops cleanly on a stop flag with partial results.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "endpoint/openai_protocol.h"
#include "loadgen/http_client.h"
#include "loadgen/metrics.h"
#include "loadgen/record.h"
#include "loadgen/workload.h"

namespace cmax::loadgen {

enum class ScheduleKind { kConcurrency, kRate, kTrace };
std::string_view schedule_kind_name(ScheduleKind k);  ///< "concurrency", "rate", "trace"

struct Schedule {
  ScheduleKind kind = ScheduleKind::kConcurrency;
  std::vector<int> levels = {1};          ///< concurrency: each level in turn (closed loop)
  std::size_t requests_per_level = 0;     ///< concurrency: requests per level; 0 = max(20, 4 x level)
  double rate_per_s = 1;                  ///< rate: Poisson arrivals per second
  double trace_speed = 1;                 ///< trace: 2 replays twice as fast
  int max_inflight = 1000;                ///< rate and trace: more wait in the client's queue (measured)
};

/// Requests a concurrency level sends: requests_per_level, else max(20, 4 x level). Pure.
std::size_t requests_at_level(const Schedule& s, int level);
/// The sum of that over the schedule's levels: what a concurrency sweep sends in all. Pure.
std::size_t requests_in_sweep(const Schedule& s);

struct RunConfig {
  std::string model;
  endpoint::Api api = endpoint::Api::kChat;
  bool stream = true;
  bool include_usage = true;   ///< stream_options.include_usage (streams only)
  bool ignore_eos = false;     ///< vLLM's extension: exactly max_tokens tokens
  /// A JSON object (serialized) merged into every request body over cmax's fields; "" = none.
  std::string extra_body;
  /// A session id per conversation (multi-turn sessions; a workload without sessions sends none),
  /// for session and consistent-hash routing: in the body's `user` field ...
  bool session_user = false;
  /// ... and in this header ("X-Session-Id", smg's "X-SMG-Routing-Key"); "" = no header. (The
  /// Messages API has no `user`: its metadata.user_id carries the id.)
  std::string session_header;
  /// Messages API: mark the last turn cache_control ephemeral (Anthropic caches only up to a mark).
  bool cache_breakpoint = true;
  Schedule schedule;
  std::size_t max_requests = 0;  ///< over the whole run; 0 = as many as the workload has
  double duration_s = 0;         ///< wall bound on the whole run; 0 = none
  int retries = 2;               ///< per request, for retryable classes
  double max_backoff_s = 8;      ///< cap on one backoff (Retry-After is honoured up to this)
  Slo slo;
  int theory_block_tokens = 16;  ///< TheoreticalCache block size
  std::uint64_t seed = 1;        ///< Poisson draws and backoff jitter
};

/// What the progress line shows; passed to the hook at most four times a second.
struct Progress {
  std::string phase;  ///< "c=4" or "rate 5/s" or "trace x2"
  std::size_t issued = 0, finished = 0, failed = 0, total = 0;
  int inflight = 0;
  double elapsed_s = 0;
  double output_tokens_per_s = 0;  ///< over the last second or so
  double cache_hit_rate = -1;      ///< so far
};

struct RunHooks {
  std::function<void(const RequestRecord&)> on_record;  ///< each finished request, in finishing order
  std::function<void(const Progress&)> on_progress;
  const std::atomic<bool>* stop = nullptr;  ///< set (e.g. by SIGINT): stop sending, cancel, return
  /// Called with the level's index before its first request and again once it has drained (the
  /// engine is idle both times: a hook may use it, e.g. to scrape the server's /metrics).
  std::function<void(std::size_t level, bool drained)> on_level;
};

struct LevelResult {
  int concurrency = 0;
  Summary summary;
};

struct RunResult {
  std::vector<RequestRecord> records;  ///< in finishing order
  Summary overall;
  std::vector<LevelResult> levels;     ///< concurrency sweeps
  double duration_s = 0;
  bool interrupted = false;
  std::string stop_reason;             ///< "" completed; "interrupted"; "duration"
  double theoretical_hit_rate = -1;    ///< TheoreticalCache over the prompts sent
  std::uint64_t theory_prompt_tokens = 0, theory_cached_tokens = 0;
  std::size_t sessions_ended = 0;      ///< multi-turn sessions cut short by a failed turn
  std::vector<std::string> warnings;
};

/// The path under the base URL an API is posted to: "/chat/completions", "/completions",
/// "/messages". Pure.
std::string_view api_path(endpoint::Api api);
/// The JSON body of one request (chat: messages; completions: the one message's content, or the
/// rendered chat; messages: Anthropic's shape, system messages on top, metadata.user_id). Pure.
std::string request_body(const RequestSpec& spec, const RunConfig& config);
/// A multi-turn session's id, the same for every turn and every run with the same seed:
/// "cmax-<seed>-<session>"; "" for a request of no session. Pure.
std::string session_id(const RequestSpec& spec, const RunConfig& config);

/// Pure: `--extra-body` text -> the serialized object, or an error naming what is wrong (not JSON,
/// not an object, a key cmax must set itself: model, messages, prompt, stream, stream_options, system).
Result<std::string> parse_extra_body(std::string_view text);
/// Pure: the name of a `--header` "Name: value", or an error (no colon, a name that is not an HTTP
/// token, a CR or LF anywhere, a header the transport sets: Host, Content-Length, Content-Type,
/// Transfer-Encoding, Connection).
Result<std::string> header_name(std::string_view header);
/// The prompt as the test server renders it (for TheoreticalCache). Pure.
std::string rendered_prompt(const RequestSpec& spec, endpoint::Api api);

RunResult run_bench(HttpEngine& engine, Workload& workload, const RunConfig& config, const RunHooks& hooks);

}  // namespace cmax::loadgen
