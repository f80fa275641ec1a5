#pragma once
// The endpoint's origin (scheme://host:port of the base URL) beside the API: its /metrics, read
// before and after each level (loadgen/server_metrics.h), and its prefix-cache flush.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "loadgen/http_client.h"
#include "loadgen/server_metrics.h"

namespace cmax::loadgen {

/// Makes an engine for a client configuration (HttpEngine::create, or a test's).
using EngineFactory = std::function<Result<std::unique_ptr<HttpEngine>>(const ClientConfig&)>;

/// A small engine (2 connections) at the origin. Not thread-safe.
class OriginClient {
 public:
  /// `base`: the bench's client configuration (key, headers, TLS); its URL is replaced by `origin`.
  OriginClient(const ClientConfig& base, std::string origin, const EngineFactory& make_engine,
               const std::atomic<bool>* stop);
  /// One GET /metrics; nullopt when there is none to be had (the reason is kept in why_not()).
  /// After one failure it asks no more: a gateway without /metrics is asked once.
  std::optional<EngineCacheMetrics> scrape();
  /// POST origin + path with an empty JSON body: its HTTP status, or 0 with `detail` set.
  int post(std::string_view path, std::string& detail);
  const std::string& origin() const { return origin_; }
  const std::string& why_not() const { return why_not_; }

 private:
  std::optional<EngineCacheMetrics> give_up(std::string why);
  std::string origin_, why_not_;
  std::unique_ptr<HttpEngine> engine_;
  const std::atomic<bool>* stop_;
  bool gave_up_ = false;
};

/// One attempt to empty the server's prefix cache before a level.
struct CacheFlush {
  std::size_t level = 0;  ///< the level's index (0-based)
  std::string path;       ///< the last path tried
  int status = 0;         ///< its HTTP status; 0 no answer
  bool flushed = false;
};

/// SGLang's POST /flush_cache, else (404, 405) vLLM's POST /reset_prefix_cache. A failure adds a
/// warning to `warnings`, not an error: the level runs with what the last left.
CacheFlush flush_server_cache(OriginClient& origin, std::size_t level, std::vector<std::string>& warnings);

}  // namespace cmax::loadgen
