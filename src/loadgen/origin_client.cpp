#include "loadgen/origin_client.h"

#include <fmt/format.h>

#include "core/strings.h"
#include "loadgen/collect.h"

namespace cmax::loadgen {

OriginClient::OriginClient(const ClientConfig& base, std::string origin, const EngineFactory& make_engine,
                           const std::atomic<bool>* stop)
    : origin_(std::move(origin)), stop_(stop) {
  ClientConfig c = base;
  c.base_url = origin_;
  c.max_connections = 2;
  if (auto e = make_engine(c)) engine_ = std::move(*e);
  else why_not_ = e.error().message;
}

std::optional<EngineCacheMetrics> OriginClient::scrape() {
  if (!engine_ || gave_up_) return std::nullopt;
  Collect c;
  engine_->get("/metrics", &c);
  if (!c.wait(*engine_, std::chrono::seconds(5), stop_))
    return give_up(fmt::format("GET {}/metrics: no answer within 5 s", origin_));
  if (c.result.transport != ErrorClass::kNone) return give_up(fmt::format("GET {}/metrics: {}", origin_, c.result.detail));
  if (c.result.http_status != 200)
    return give_up(fmt::format("GET {}/metrics: HTTP {} (the endpoint publishes no engine metrics there)", origin_,
                               c.result.http_status));
  auto m = parse_engine_metrics(c.body);
  if (!m.any()) return give_up(fmt::format("GET {}/metrics: no vLLM or SGLang prefix-cache metrics in it", origin_));
  return m;
}

int OriginClient::post(std::string_view path, std::string& detail) {
  if (!engine_) {
    detail = why_not_;
    return 0;
  }
  static const std::string kEmpty = "{}";
  Collect c;
  engine_->post(path, kEmpty, false, &c);
  if (!c.wait(*engine_, std::chrono::seconds(10), stop_)) {
    detail = "no answer within 10 s";
    return 0;
  }
  if (c.result.transport != ErrorClass::kNone) {
    detail = c.result.detail;
    return 0;
  }
  detail = core::clip(std::string(core::trim(c.body)), 160);
  return c.result.http_status;
}

std::optional<EngineCacheMetrics> OriginClient::give_up(std::string why) {
  gave_up_ = true;
  why_not_ = std::move(why);
  return std::nullopt;
}

CacheFlush flush_server_cache(OriginClient& origin, std::size_t level, std::vector<std::string>& warnings) {
  std::string detail;
  std::string path = "/flush_cache";
  int status = origin.post(path, detail);
  if (status == 404 || status == 405) {
    path = "/reset_prefix_cache";
    status = origin.post(path, detail);
  }
  const bool ok = status >= 200 && status < 300;
  if (!ok)
    warnings.push_back(fmt::format(
        "level {}: the server's prefix cache was not flushed (POST {}{}: {}{}); this level starts with what the last "
        "left (SGLang answers /flush_cache when idle; vLLM /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1)",
        level + 1, origin.origin(), path, status ? fmt::format("HTTP {}", status) : std::string("no answer"),
        detail.empty() ? "" : ", " + detail));
  return {level, path, status, ok};
}

}  // namespace cmax::loadgen
