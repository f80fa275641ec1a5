#pragma once
// A real Kubernetes control plane on 127.0.0.1 for tests: etcd and kube-apiserver (v1.37, built from
// the Go module proxy by tests/kube/build_server.sh into BUILD/kube), with RBAC, the default
// admission plugins and Pod Security (enforce baseline), self-signed serving certificates, on free
// ports in a fresh temporary directory. No controller-manager, scheduler or kubelet runs: Node
// objects are registered by the test, pods are admitted but never scheduled or started, and nothing
// garbage-collects. Everything it started goes when it does.
//
// Identities, each with a bearer-token file and a kubeconfig in dir():
//   admin   the static token "admin-token", group system:masters
//   cmaxd   ServiceAccount cmax-system/cmaxd bound to the ClusterRole of deploy/kubernetes/cmaxd.yaml
//           (that file is applied as it is: Namespace, ServiceAccount, ClusterRole, Binding, DaemonSet)
//   tenant  ServiceAccount tenant-a/tenant with only a namespaced Role in tenant-a (pods, pods/log,
//           configmaps, persistentvolumeclaims)
// Service-account tokens come from the TokenRequest API, signed by the server's key: real bound
// tokens.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "sched/kubernetes.h"
#include "support/daemon.h"

namespace cmax::test {

/// One identity's credentials.
struct KubeIdentity {
  std::string name;        ///< "admin", "cmaxd", "tenant"
  std::string user;        ///< "kube-admin", "system:serviceaccount:cmax-system:cmaxd", ...
  std::string ns;          ///< its namespace ("" for admin)
  std::string token;
  std::string token_file;  ///< the token alone, with a newline
  std::string kubeconfig;  ///< server, CA file, token, namespace
};

/// An answer from the API server.
struct KubeAnswer {
  int status = 0;
  nlohmann::json body;  ///< parsed; null when the body was not JSON
  std::string text;     ///< the raw body
};

/// A GPU node to register.
struct KubeNodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  int gpus = 8;           ///< allocatable and capacity nvidia.com/gpu (0: none)
  bool ready = true;      ///< condition Ready True (else False, KubeletNotReady)
};

/// A running control plane. Owns its directory and both daemons.
class KubeCluster {
 public:
  /// Why no control plane can start here (the build script could not build it, and said why; not
  /// built; no openssl), or nullopt.
  static std::optional<std::string> unavailable();
  /// Starts etcd and kube-apiserver, waits for /readyz, applies deploy/kubernetes/cmaxd.yaml, makes
  /// the tenant namespace and identities. Retries on other ports when a daemon dies at start.
  static Result<std::unique_ptr<KubeCluster>> start(std::chrono::milliseconds ready_timeout = std::chrono::seconds(90));

  KubeCluster(const KubeCluster&) = delete;
  KubeCluster& operator=(const KubeCluster&) = delete;
  ~KubeCluster();

  const std::filesystem::path& dir() const { return dir_; }
  /// "https://127.0.0.1:PORT"
  std::string url() const;
  std::string ca_file() const { return (dir_ / "pki" / "ca.crt").string(); }
  const KubeIdentity& admin() const { return admin_; }
  const KubeIdentity& cmaxd() const { return cmaxd_; }
  const KubeIdentity& tenant() const { return tenant_; }

  /// `method path` with `body` (JSON unless `content_type` says otherwise) as `token` (the admin's
  /// when empty), with `headers` added (Impersonate-User). An error only when no answer came.
  Result<KubeAnswer> request(std::string_view method, const std::string& path, const std::string& body = {},
                             std::string_view content_type = "application/json", std::string_view token = {},
                             const std::vector<std::pair<std::string, std::string>>& headers = {}) const;
  /// GET as the admin: the object, or an error naming the path and status.
  Result<nlohmann::json> get(const std::string& path) const;
  /// POST `object` to `path` as the admin (201 or 200 expected).
  Result<nlohmann::json> create(const std::string& path, const nlohmann::json& object) const;
  /// Creates every object of a multi-document YAML file as the admin (kinds this harness knows:
  /// Namespace, ServiceAccount, ClusterRole(Binding), Role(Binding), DaemonSet, StorageClass,
  /// RuntimeClass, PersistentVolumeClaim, ConfigMap, Pod); an object that exists already is left as it is.
  Result<void> apply_yaml_file(const std::filesystem::path& file) const;
  /// Creates one object of a kind apply_yaml_file knows.
  Result<void> apply(const nlohmann::json& object) const;
  /// Registers a Node (labels, allocatable GPUs, Ready condition with the current time). A Ready
  /// node then loses the not-ready taint admission gave it, as the node lifecycle controller would.
  Result<nlohmann::json> add_node(const KubeNodeSpec& spec) const;
  /// The node as the API server holds it now.
  Result<nlohmann::json> node(std::string_view name) const;
  /// A namespace with its "default" ServiceAccount (no controller makes it here, and pod admission
  /// needs it), with `labels`.
  Result<void> add_namespace(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
  /// A bound token for ServiceAccount ns/name from the TokenRequest API.
  Result<std::string> service_account_token(const std::string& ns, const std::string& name,
                                            int expiration_seconds = 3600) const;
  /// Options for cmax's KubernetesScheduler and KubeClient as `who`.
  sched::KubernetesOptions options(const KubeIdentity& who) const;
  /// The audit log: one JSON line per request of the cmax-system service accounts (cmaxd), written
  /// when the request arrives, with its verb, URI and userAgent.
  std::filesystem::path audit_log() const { return dir_ / "audit.log"; }
  /// The API server's log, for failure messages.
  std::string apiserver_log_tail() const;
  /// The daemons' process ids (for CPU and memory accounting); -1 when not running.
  pid_t apiserver_pid() const { return apiserver_ ? apiserver_->pid() : -1; }
  pid_t etcd_pid() const { return etcd_ ? etcd_->pid() : -1; }

 private:
  KubeCluster() = default;
  Result<void> launch(std::uint64_t seed, std::chrono::milliseconds ready_timeout);
  Result<void> bootstrap();
  Result<KubeIdentity> identity(const std::string& name, const std::string& user, const std::string& ns,
                                const std::string& token) const;
  void stop_daemons();

  std::filesystem::path dir_;
  int port_ = 0;
  int etcd_port_ = 0;
  std::optional<Daemon> etcd_;
  std::optional<Daemon> apiserver_;
  bool retry_ = false;
  KubeIdentity admin_, cmaxd_, tenant_;
};

}  // namespace cmax::test
