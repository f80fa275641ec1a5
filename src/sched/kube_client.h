#pragma once
// Requests to a Kubernetes API server: one HTTP(S) request per call with the bearer token, CA
// bundle and timeout of KubernetesOptions. Shared by the node agent's KubernetesScheduler and
// cmax run's pod fan-out (src/cluster/kube_fanout.h). cpp-httplib stays in the .cpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/result.h"
#include "sched/kubernetes.h"
#include "sched/kubernetes_parse.h"

namespace cmax::sched {

/// An answer from the API server, whatever its status.
struct KubeReply {
  int status = 0;
  std::string reason;  ///< the HTTP reason phrase (the standard one when the server sent none)
  std::string body;
};

/// How a watch ended: the server closed it (its timeoutSeconds), the handler or a stop ended it,
/// or the server answered with an error status instead of a stream.
struct WatchEnd {
  int status = 0;            ///< the HTTP status of the answer
  bool stopped = false;      ///< the handler returned false, or `stop` was requested
  std::uint64_t events = 0;  ///< lines handed to the handler
  std::uint64_t bytes = 0;   ///< bytes read from the stream
  std::string error;         ///< a non-2xx answer, described (describe_reply); "" otherwise
};

/// Requests to one API server. Thread-safe: each request reads the token file again (bound
/// service-account tokens rotate) and, by default, opens its own connection. With keep_alive, the
/// requests of send() share one kept-alive connection, one at a time (copies share it too): a
/// burst of requests then costs one TLS handshake, not one each. A watch always has its own.
class KubeClient {
 public:
  /// Answers larger than this are refused (a NodeList page of 500 fat nodes fits).
  static constexpr std::size_t kDefaultMaxBody = 64u << 20;

  explicit KubeClient(KubernetesOptions options, bool keep_alive = false);

  /// Sends `method path` (path and query encoded by the caller) with `body` as `content_type` when
  /// not empty; bounded by options.timeout for connect, read and write each. An error, naming the
  /// request, only when no answer came (transport, token, CA); an HTTP error status is a reply.
  /// `accept` is the Accept header (application/json; a metadata-only list asks for
  /// PartialObjectMetadataList).
  Result<KubeReply> send(std::string_view method, const std::string& path, std::string_view content_type = {},
                         const std::string& body = {}, std::size_t max_body = kDefaultMaxBody,
                         std::string_view accept = "application/json") const;

  /// Opens the watch `path` (a GET with watch=1, encoded by the caller) and hands each event line
  /// (one JSON object per line) to `on_line` as it arrives, until the server ends the stream,
  /// `on_line` returns false, or `stop` is requested (which closes the socket at once, from the
  /// thread that requests it). `idle_timeout` bounds the connect (options.timeout) and each wait
  /// for bytes: it must be longer than the watch's own timeoutSeconds. An error only when the
  /// stream broke (transport, token, CA, an idle timeout); an error status is WatchEnd::error.
  Result<WatchEnd> watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                         std::stop_token stop, std::chrono::milliseconds idle_timeout) const;

  const KubernetesOptions& options() const { return options_; }

 private:
  KubernetesOptions options_;
  Result<kube::ApiEndpoint> endpoint_;
  struct Connection;                  ///< the kept-alive connection and its lock (keep_alive only)
  std::shared_ptr<Connection> conn_;  ///< null: a connection per request
};

/// "POST /api/v1/namespaces/ns/pods: 403 Forbidden: <the API's message>" for a reply that is not
/// 2xx; the caller adds what to do.
std::string describe_reply(std::string_view method, std::string_view path, const KubeReply& reply);

}  // namespace cmax::sched
