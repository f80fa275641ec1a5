#pragma once
// An asynchronous HTTP client for many concurrent exchanges on one thread: libcurl's multi
// interface driven by epoll (curl_multi_socket_action), so a thousand open streams cost one
// epoll_wait and the bytes that arrive. HTTP/1.1 keep-alive, HTTP/2 (multiplexed) and TLS come
// from libcurl. Not thread-safe: one thread owns an HttpEngine.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "loadgen/record.h"

namespace cmax::loadgen {

enum class HttpVersion { kHttp11, kHttp2, kAuto };  ///< kAuto: HTTP/2 over TLS when offered, else 1.1
/// "1.1", "2", "auto"; false otherwise.
bool http_version_from_name(std::string_view name, HttpVersion& out);
std::string_view http_version_name(HttpVersion v);

/// kAuto: native for http:// over HTTP/1.1, libcurl otherwise. kNative: a lean epoll HTTP/1.1
/// client (cleartext only: one recv per readable socket and no per-read poll, about half of
/// libcurl's CPU per streamed token). kCurl: libcurl for everything (TLS, HTTP/2, proxies).
enum class TransportKind { kAuto, kNative, kCurl };
bool transport_from_name(std::string_view name, TransportKind& out);  ///< "auto", "native", "curl"
std::string_view transport_name(TransportKind k);

struct ClientConfig {
  TransportKind transport = TransportKind::kAuto;
  std::string base_url;  ///< e.g. "http://127.0.0.1:8000/v1" (no trailing slash needed)
  std::string api_key;   ///< sent as "Authorization: Bearer ..."; empty = no header. Never logged.
  /// Where the key goes: "" = Authorization: Bearer KEY (OpenAI); a header name sends it bare in
  /// that header ("x-api-key": Anthropic).
  std::string api_key_header;
  HttpVersion http = HttpVersion::kAuto;
  std::string ca_file;   ///< TLS trust anchors; empty = the system's
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{600'000};  ///< whole exchange
  std::chrono::seconds stall_timeout{60};  ///< no byte for this long: a timeout (a stalled stream)
  int max_connections = 1024;  ///< open connections at most (HTTP/1.1: one per in-flight exchange)
  std::vector<std::string> extra_headers;  ///< "Name: value"
  /// With at least `coalesce_from` exchanges running, poll() sleeps so that wake-ups are at least
  /// this far apart and reads what arrived meanwhile in one pass: far fewer wake-ups at a thousand
  /// streams, at the price of that much timestamp resolution. 0 = wake on every byte.
  std::chrono::microseconds wake_interval{1000};
  int coalesce_from = 128;
};

/// The header line that carries the key ("Authorization: Bearer KEY" or "x-api-key: KEY"), without
/// CR LF; "" when there is no key.
std::string api_key_line(const ClientConfig& config);

/// How an exchange ended at the transport level.
struct TransferResult {
  int http_status = 0;           ///< 0 when no response arrived
  ErrorClass transport = ErrorClass::kNone;  ///< kTimeout, kConnect, kDropped, kProtocol (not HTTP) or
                                             ///< kCanceled; kNone = the response arrived whole
                                             ///< (whatever its status)
  std::string detail;            ///< the transport's message for a failure
  double retry_after_s = -1;     ///< the Retry-After header (seconds form), -1 none
};

/// Receives one exchange's events, on the engine's thread.
class ExchangeHandler {
 public:
  virtual ~ExchangeHandler() = default;
  /// A chunk of the response body, as it arrived. Return false to abort (then on_done gets kCanceled).
  virtual bool on_body(std::string_view bytes, int http_status) = 0;
  /// Exactly once per started exchange.
  virtual void on_done(const TransferResult& result) = 0;
};

class HttpEngine {
 public:
  /// Fails when libcurl cannot be set up or the URL is not http(s)://.
  static Result<std::unique_ptr<HttpEngine>> create(const ClientConfig& config);
  ~HttpEngine();
  HttpEngine(const HttpEngine&) = delete;
  HttpEngine& operator=(const HttpEngine&) = delete;

  /// Starts POST base_url + path with a JSON body; `stream` asks for text/event-stream. `header`
  /// is one more "Name: value" line for this request only (a session id), "" none. `body`,
  /// `header` and `handler` must stay alive until handler->on_done.
  void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler,
            std::string_view header = {});
  /// Starts GET base_url + path.
  void get(std::string_view path, ExchangeHandler* handler);
  /// Waits for I/O at most `timeout`, delivers what arrived; returns the exchanges still running.
  int poll(std::chrono::milliseconds timeout);
  /// Ends every running exchange now (each gets on_done with kCanceled).
  void cancel_all();
  int running() const;
  /// Which transport this engine uses ("native" or "curl").
  std::string_view transport() const { return transport_; }

 private:
  struct Impl;
  HttpEngine(std::unique_ptr<Impl> impl, std::string_view transport);
  std::unique_ptr<Impl> impl_;
  std::string_view transport_;
};

}  // namespace cmax::loadgen
