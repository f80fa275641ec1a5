#pragma once
// Private to http_client.cpp and its transports: the interface HttpEngine drives, and the two
// implementations (libcurl for TLS and HTTP/2; a lean native HTTP/1.1 client for cleartext).

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "loadgen/http_client.h"

namespace cmax::loadgen::detail {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler) = 0;
  virtual void get(std::string_view path, ExchangeHandler* handler) = 0;
  virtual int poll(std::chrono::milliseconds timeout) = 0;
  virtual void cancel_all() = 0;
  virtual int running() const = 0;
};

Result<std::unique_ptr<Transport>> make_curl_transport(const ClientConfig& config);
/// http:// only. Resolves the host once, here.
Result<std::unique_ptr<Transport>> make_native_transport(const ClientConfig& config);

}  // namespace cmax::loadgen::detail
