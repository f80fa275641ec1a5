#pragma once
// The other side of the Kubernetes contract tests: a thin API server on 127.0.0.1 holding one Node
// object and the pods bound to it. No Kubernetes API server can run here, so this stands in for
// one, as thinly as it can: it applies JSON Patches (RFC 6902, with the "test" op) to the node and
// strategic merge patches of status.conditions by type to /status, as the real one does; it lists
// pods filtered by `fieldSelector=spec.nodeName=NAME`. Tests change the node and pods directly to
// play another controller (node-problem-detector, a scheduler, an operator).
//
// For the collect fan-out it also holds more nodes (add_node; GET /api/v1/nodes filters them by an
// equality labelSelector) and plays the kubelet for pods created through the API: POST, GET, GET
// .../log and DELETE of /api/v1/namespaces/NS/pods[/NAME]. A test hook decides each created pod's
// fate (PodFate) when it is created; each GET of the pod moves it on one step.

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace cmax::test {

/// What becomes of a pod created through the fake: decided by the test's hook at the POST.
struct PodFate {
  enum class End {
    succeed,        ///< phase Succeeded, container exit code 0, `log` served as its log
    fail,           ///< phase Failed, container exit code `exit_code`, reason and message as set
    stay_pending,   ///< Pending forever, waiting ContainerCreating (a node that never starts it)
    unschedulable,  ///< Pending with condition PodScheduled False, reason Unschedulable
    reject,         ///< Failed before any container ran, pod reason `reason` (OutOfcpu...)
  };
  End end = End::succeed;
  int polls = 1;  ///< GETs answered Pending (the first) or Running before the end shows
  std::string log;
  int exit_code = 1;
  std::string reason;
  std::string message;
  int create_status = 0;  ///< non-zero: the POST is answered with this status, nothing is stored
};

class FakeKubeApi {
 public:
  using PodHook = std::function<PodFate(const nlohmann::json& pod)>;

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

  /// Adds a node to GET /api/v1/nodes (make_node builds one); the constructor's node stays first.
  void add_node(nlohmann::json node);
  /// Decides the fate of each pod created from now on; by default it succeeds after one poll with
  /// log "{}". Called under the fake's lock: it must not call back into the fake.
  void set_pod_hook(PodHook hook);
  /// "METHOD /path" of each pod request (POST, GET, GET log, DELETE) and node list, in order.
  std::vector<std::string> pod_requests();
  /// Names of the pods created through the API and not deleted.
  std::vector<std::string> live_pods();
  /// A created pod as the fake holds it (its body as posted, status as last served); null when
  /// none by that name.
  nlohmann::json created_pod(const std::string& name);

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

  struct Created {
    nlohmann::json pod;
    PodFate fate;
    int polls = 0;
  };
  void add_pod_routes();
  nlohmann::json advance(Created& c);
  std::vector<nlohmann::json> more_nodes_;
  PodHook hook_;
  std::vector<std::pair<std::string, Created>> created_;  // by creation order
  std::vector<std::string> pod_requests_;
};

/// A Node for add_node: `name` with `labels`, condition Ready `ready` ("True", "False",
/// "Unknown"), cordoned when `unschedulable`.
/// Applies an RFC 6902 JSON Patch as kube-apiserver does (evanphx/json-patch): like nlohmann's
/// patch(), except that a "test" of null passes when the path is missing (the way to test that a
/// member is absent). Throws json::exception when an op fails, as patch() does.
nlohmann::json apply_json_patch(const nlohmann::json& doc, const nlohmann::json& ops);

nlohmann::json make_node(const std::string& name, nlohmann::json labels, const std::string& ready = "True",
                         bool unschedulable = false);

/// A Pod object for set_pods: `name` in namespace default on `node`, phase Running; owned by a
/// DaemonSet when `daemonset`.
nlohmann::json make_pod(const std::string& name, const std::string& node, bool daemonset = false,
                        const std::string& phase = "Running");

}  // namespace cmax::test
