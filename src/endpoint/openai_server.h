#pragma once
// cmax endpoint serve: an OpenAI-compatible HTTP server whose answers come from the fleet model.
// Each request is tokenized, its block hash chain admitted by a Fleet (under a mutex), and its
// tokens paced by the Admission's timing; usage reports the fleet's real cache state.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "endpoint/fleet.h"
#include "endpoint/openai_protocol.h"

namespace cmax::endpoint {

/// Faults a client under test can be made to meet; each draw comes from the server's seeded RNG.
struct ServeFaults {
  double rate_429 = 0;          ///< share of completion requests answered 429 rate_limit_exceeded
  double rate_5xx = 0;          ///< share answered 500 server_error
  double drop_stream_rate = 0;  ///< share of streams whose connection is closed mid-stream
  std::chrono::milliseconds slow_first_token{0};  ///< added to every request's first token (wall time)
};

struct ServeConfig {
  FleetConfig fleet;  ///< the model behind the endpoint; block_tokens is the tokenizer's block size
  std::string host = "127.0.0.1";
  int port = 8000;  ///< 0 = the kernel picks one (port() says which)
  std::string model = "cmax-sim";
  CacheFields cache_fields = CacheFields::kOpenAi;
  /// Wall seconds per model second: 1 = real time, 0.01 = 100x faster, 0 = no pacing.
  double time_scale = 1.0;
  std::uint32_t default_max_tokens = 16;
  std::size_t max_body_bytes = 1u << 20;
  int threads = 1100;  ///< connection threads; a stream holds one while it sleeps between tokens
  ServeFaults faults;
  std::uint64_t seed = 1;  ///< fault draws (the fleet has its own in fleet.seed)
  /// Non-empty: /v1/* requests must carry "Authorization: Bearer <api_key>", else 401
  /// invalid_api_key. Never logged or echoed.
  std::string api_key;
  /// Tokens written together (vLLM's --stream-interval): the first token alone, then this many
  /// per write, each still its own SSE event. 1 = every token as soon as it is due.
  std::uint32_t stream_interval = 1;
  /// Requests kept in the /cmax/requests log (the oldest are dropped beyond it).
  std::size_t request_log_max = 1'000'000;
};

/// A `--listen` value: "HOST:PORT", "[v6]:PORT". Refuses a wildcard host (0.0.0.0, ::, empty):
/// a non-loopback address must be named. Pure.
Result<std::pair<std::string, int>> parse_listen(std::string_view listen);
/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

/// The server. bind() opens the socket; run() serves until stop(). Thread-safe: stop() and
/// stats_json() may be called from any thread.
class OpenAiServer {
 public:
  static Result<std::unique_ptr<OpenAiServer>> bind(ServeConfig config);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  /// The bound port.
  int port() const;
  /// Serves until stop(); false when the listener failed.
  bool run();
  /// Stops accepting, wakes every paced stream (they close) and makes run() return. Idempotent.
  void stop();
  /// GET /cmax/stats: {"schema":"cmax.endpoint.serve.stats/1", totals, per replica}.
  std::string stats_json() const;
  /// GET /cmax/requests: one JSON object per line for each completion request the fleet admitted or
  /// a fault answered, with the server's own timestamps (docs/endpoint-serve.md).
  std::string requests_jsonl() const;

 private:
  struct Impl;
  explicit OpenAiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmax::endpoint
