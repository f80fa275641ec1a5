#pragma once
// The fan-out's requests to the Kubernetes API server: one HTTP(S) request per call, with the
// bearer token, CA bundle and timeout of sched::KubernetesOptions (the same settings, and the same
// in-cluster config, as the node agent's KubernetesScheduler). cpp-httplib stays in the .cpp.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"
#include "sched/kubernetes.h"
#include "sched/kubernetes_parse.h"

namespace cmax::cluster {

/// An answer from the API server, whatever its status.
struct KubeReply {
  int status = 0;
  std::string body;
};

/// Requests to one API server. Thread-safe: each request opens its own connection and reads the
/// token file again (bound service-account tokens rotate).
class KubeHttp {
 public:
  /// Answers larger than this are refused (a NodeList page of 500 nodes fits).
  static constexpr std::size_t kDefaultMaxBody = 64u << 20;

  explicit KubeHttp(sched::KubernetesOptions options);

  /// Sends `method path` (path and query encoded by the caller) with `body` as `content_type` when
  /// not empty; bounded by options.timeout for connect, read and write each. An error only when no
  /// answer came (transport, token, CA); an HTTP error status is a reply.
  Result<KubeReply> send(std::string_view method, const std::string& path,
                         std::string_view content_type = {}, const std::string& body = {},
                         std::size_t max_body = kDefaultMaxBody) const;

  const sched::KubernetesOptions& options() const { return options_; }

 private:
  sched::KubernetesOptions options_;
  Result<sched::kube::ApiEndpoint> endpoint_;
};

/// "POST /api/v1/namespaces/ns/pods: 403 Forbidden: <the API's message>" for a reply that is not
/// 2xx; the caller adds what to do.
std::string describe_reply(std::string_view method, std::string_view path, const KubeReply& reply);

}  // namespace cmax::cluster
