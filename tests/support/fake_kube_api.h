#pragma once
// The other side of the Kubernetes contract tests: a thin API server on 127.0.0.1 holding one Node
// object and the pods bound to it. No Kubernetes API server can run here, so this stands in for
// one, as thinly as it can: it applies JSON Patches (RFC 6902, with the "test" op) to the node and
// strategic merge patches of status.conditions by type to /status, as the real one does; it lists
// pods filtered by `fieldSelector=spec.nodeName=NAME`. Tests change the node and pods directly to
// play another controller (node-problem-detector, a scheduler, an operator).

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace cmax::test {

class FakeKubeApi {
 public:
  /// Serves node `name` (Ready, labels pool=gpu, no taints) and no pods on a free port.
  explicit FakeKubeApi(std::string name = "k1");
  ~FakeKubeApi();
  FakeKubeApi(const FakeKubeApi&) = delete;
  FakeKubeApi& operator=(const FakeKubeApi&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// A copy of the node as it is now.
  nlohmann::json node();
  /// Changes the node under the lock (bumping its resourceVersion), as another controller would.
  void update_node(const std::function<void(nlohmann::json&)>& change);
  /// Replaces the pods (a JSON array of Pod objects; each one's spec.nodeName says where it runs).
  void set_pods(nlohmann::json pods);
  /// When the first PATCH of the node arrived.
  std::optional<std::chrono::steady_clock::time_point> first_patch();
  /// GET requests served so far.
  int gets();

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::string name_;
  nlohmann::json node_;
  nlohmann::json pods_ = nlohmann::json::array();
  int version_ = 1, gets_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_patch_;
};

/// A Pod object for set_pods: `name` in namespace default on `node`, phase Running; owned by a
/// DaemonSet when `daemonset`.
nlohmann::json make_pod(const std::string& name, const std::string& node, bool daemonset = false,
                        const std::string& phase = "Running");

}  // namespace cmax::test
