#pragma once
// Private to http_client.cpp and its transports: the interface HttpEngine drives, and the two
// implementations (libcurl for TLS and HTTP/2; a lean native HTTP/1.1 client for cleartext).

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.h"
#include "loadgen/http_client.h"

namespace cmax::loadgen::detail {

class Transport {
 public:
  virtual ~Transport() = default;
  /// `header`: one more "Name: value" line for this request only ("" none); it must stay alive
  /// until the request is sent (the caller keeps it with `body`).
  virtual void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler,
                    std::string_view header) = 0;
  virtual void get(std::string_view path, ExchangeHandler* handler) = 0;
  virtual int poll(std::chrono::milliseconds timeout) = 0;
  virtual void cancel_all() = 0;
  virtual int running() const = 0;
};

/// With at least config.coalesce_from exchanges running, sleeps until config.wake_interval after
/// `last_wake` (at most `timeout`), so that bytes gather and are read in one pass: each wake-up
/// costs a context switch, and at a thousand streams they dominate the client's CPU.
inline void coalesce_wakeups(const ClientConfig& config, int active, std::chrono::steady_clock::time_point last_wake,
                             std::chrono::milliseconds timeout) {
  if (config.wake_interval.count() <= 0 || active < config.coalesce_from) return;
  const auto next = last_wake + config.wake_interval;
  const auto now = std::chrono::steady_clock::now();
  if (now < next) std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next - now, timeout));
}

Result<std::unique_ptr<Transport>> make_curl_transport(const ClientConfig& config);
/// http:// only. Resolves the host once, here.
Result<std::unique_ptr<Transport>> make_native_transport(const ClientConfig& config);

}  // namespace cmax::loadgen::detail
