#include "support/kube_cluster.h"

#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "core/process.h"
#include "support/ports.h"
#include "support/yaml_json.h"

namespace cmax::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kAttempts = 3;
constexpr std::string_view kAdminToken = "admin-token";

std::filesystem::path bin_dir() { return std::filesystem::path(CMAX_BINARY_DIR) / "kube"; }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Result<void> write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out.flush()) return fail("write {}", p.string());
  return ok();
}

std::string now_rfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}


// Where objects of a kind are created: the collection path ("{ns}" for namespaced kinds).
struct KindPath {
  std::string_view kind;
  std::string_view path;
};
constexpr KindPath kKinds[] = {
    {"Namespace", "/api/v1/namespaces"},
    {"ServiceAccount", "/api/v1/namespaces/{ns}/serviceaccounts"},
    {"ConfigMap", "/api/v1/namespaces/{ns}/configmaps"},
    {"PersistentVolumeClaim", "/api/v1/namespaces/{ns}/persistentvolumeclaims"},
    {"Pod", "/api/v1/namespaces/{ns}/pods"},
    {"ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
    {"ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
    {"Role", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"},
    {"RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"},
    {"DaemonSet", "/apis/apps/v1/namespaces/{ns}/daemonsets"},
    {"StorageClass", "/apis/storage.k8s.io/v1/storageclasses"},
    {"RuntimeClass", "/apis/node.k8s.io/v1/runtimeclasses"},
};

std::string kubeconfig_text(const std::string& server, const std::string& ca, const std::string& name,
                            const std::string& token_file, const std::string& ns) {
  return fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n"
      "    certificate-authority: {}\nusers:\n- name: {}\n  user:\n    tokenFile: {}\ncontexts:\n"
      "- name: {}\n  context:\n    cluster: test\n    user: {}\n{}current-context: {}\n",
      server, ca, name, token_file, name, name, ns.empty() ? "" : fmt::format("    namespace: {}\n", ns), name);
}

}  // namespace

std::optional<std::string> KubeCluster::unavailable() {
  auto why = read_file(bin_dir() / "unavailable");
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!why.empty()) return "no real kube-apiserver here: " + why;
  for (const char* b : {"kube-apiserver", "etcd"})
    if (::access((bin_dir() / b).c_str(), X_OK) != 0)
      return fmt::format("no real kube-apiserver here: {} is not built (tests/kube/build_server.sh {} builds it; ctest's "
                         "kube.build_server runs it)",
                         (bin_dir() / b).string(), bin_dir().string());
  if (!find_system_program("openssl")) return "no real kube-apiserver here: openssl (for its certificates) is not installed";
  return std::nullopt;
}

Result<std::unique_ptr<KubeCluster>> KubeCluster::start(std::chrono::milliseconds ready_timeout) {
  if (auto why = unavailable()) return fail("start kube-apiserver: {}", *why);
  std::unique_ptr<KubeCluster> c(new KubeCluster);
  std::string tmpl = (std::filesystem::temp_directory_path() / "cmax-kube-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return fail("start kube-apiserver: mkdtemp {}: {}", tmpl, std::strerror(errno));
  c->dir_ = tmpl;
  auto pki = core::run_process({{std::string(CMAX_SOURCE_DIR) + "/tests/kube/gen_pki.sh", (c->dir_ / "pki").string()},
                                60s, 1u << 16, {}});
  if (!pki || pki->exit_code != 0)
    return fail("start kube-apiserver: tests/kube/gen_pki.sh failed: {}", pki ? pki->err : pki.error().message);
  std::mt19937_64 rng(port_seed());
  for (int attempt = 1;; ++attempt) {
    auto up = c->launch(rng(), ready_timeout);
    if (up) up = c->bootstrap();
    if (up) return c;
    c->stop_daemons();
    if (!c->retry_ || attempt == kAttempts)
      return fail("start kube-apiserver (attempt {} of {}): {}", attempt, kAttempts, up.error().message);
  }
}

KubeCluster::~KubeCluster() {
  stop_daemons();
  std::error_code ec;
  if (!dir_.empty() && !std::getenv("CMAX_KEEP_KUBE")) std::filesystem::remove_all(dir_, ec);
}

void KubeCluster::stop_daemons() {
  if (apiserver_) apiserver_->stop();
  if (etcd_) etcd_->stop();
  apiserver_.reset();
  etcd_.reset();
}

std::string KubeCluster::url() const { return fmt::format("https://127.0.0.1:{}", port_); }

std::string KubeCluster::apiserver_log_tail() const { return tail_of_file((dir_ / "apiserver.log").string(), 3000); }

Result<void> KubeCluster::launch(std::uint64_t seed, std::chrono::milliseconds ready_timeout) {
  retry_ = false;
  std::error_code ec;
  std::filesystem::remove_all(dir_ / "etcd-data", ec);
  std::mt19937_64 rng(seed);
  auto base = pick_ports(rng, 3);
  if (!base) return Unexpected<Error>{base.error()};
  etcd_port_ = *base;
  port_ = *base + 2;
  const auto etcd_url = fmt::format("http://127.0.0.1:{}", etcd_port_);
  const auto pki = dir_ / "pki";
  auto etcd = Daemon::start({(bin_dir() / "etcd").string(), "--data-dir=" + (dir_ / "etcd-data").string(),
                             "--listen-client-urls=" + etcd_url, "--advertise-client-urls=" + etcd_url,
                             fmt::format("--listen-peer-urls=http://127.0.0.1:{}", *base + 1),
                             "--unsafe-no-fsync=true", "--log-level=warn"},
                            {}, dir_ / "etcd.log");
  if (!etcd) return Unexpected<Error>{etcd.error()};
  etcd_.emplace(std::move(*etcd));
  auto deadline = std::chrono::steady_clock::now() + ready_timeout;
  for (;;) {
    if (!etcd_->running()) {
      retry_ = true;
      return fail("etcd ended at start ({}): {}", etcd_->exit_status(), tail_of_file((dir_ / "etcd.log").string()));
    }
    httplib::Client c("127.0.0.1", etcd_port_);
    c.set_connection_timeout(1s);
    auto r = c.Get("/health");
    if (r && r->status == 200 && r->body.find("\"health\":\"true\"") != std::string::npos) break;
    if (std::chrono::steady_clock::now() > deadline) return fail("etcd not healthy at {} in time", etcd_url);
    std::this_thread::sleep_for(50ms);
  }
  // Every request of cmax's agents (the cmax-system service accounts) is audited, once, when it
  // arrives: what the fleet tests count requests per agent by (the User-Agent names the node).
  {
    std::ofstream policy(pki / "audit-policy.yaml");
    policy << "apiVersion: audit.k8s.io/v1\nkind: Policy\n"
              "omitStages: [\"ResponseStarted\", \"ResponseComplete\", \"Panic\"]\n"
              "rules:\n- level: Metadata\n  userGroups: [\"system:serviceaccounts:cmax-system\"]\n- level: None\n";
    if (!policy) return fail("write {}: {}", (pki / "audit-policy.yaml").string(), std::strerror(errno));
  }
  auto api = Daemon::start(
      {(bin_dir() / "kube-apiserver").string(), "--audit-policy-file=" + (pki / "audit-policy.yaml").string(),
       "--audit-log-path=" + audit_log().string(), "--etcd-servers=" + etcd_url, "--bind-address=127.0.0.1",
       "--advertise-address=127.0.0.1", fmt::format("--secure-port={}", port_),
       "--tls-cert-file=" + (pki / "apiserver.crt").string(), "--tls-private-key-file=" + (pki / "apiserver.key").string(),
       "--client-ca-file=" + (pki / "ca.crt").string(), "--token-auth-file=" + (pki / "tokens.csv").string(),
       "--authorization-mode=Node,RBAC", "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
       "--service-account-key-file=" + (pki / "sa.pub").string(),
       "--service-account-signing-key-file=" + (pki / "sa.key").string(), "--service-cluster-ip-range=10.0.0.0/24",
       "--endpoint-reconciler-type=none", "--enable-admission-plugins=NodeRestriction",
       "--admission-control-config-file=" + (pki / "admission.yaml").string(), "--allow-privileged=true",
       "--enable-priority-and-fairness=false", "--v=1"},
      {}, dir_ / "apiserver.log");
  if (!api) return Unexpected<Error>{api.error()};
  apiserver_.emplace(std::move(*api));
  std::string last;
  for (;;) {
    if (!apiserver_->running()) {
      retry_ = true;
      return fail("kube-apiserver ended at start ({}): {}", apiserver_->exit_status(), apiserver_log_tail());
    }
    auto r = request("GET", "/readyz");
    if (r && r->status == 200) return ok();
    last = r ? fmt::format("{} {}", r->status, r->text.substr(0, 300)) : r.error().message;
    if (std::chrono::steady_clock::now() > deadline)
      return fail("kube-apiserver not ready at {} within {} s (last /readyz: {}); log: {}", url(),
                  std::chrono::duration_cast<std::chrono::seconds>(ready_timeout).count(), last, apiserver_log_tail());
    std::this_thread::sleep_for(50ms);
  }
}

Result<KubeAnswer> KubeCluster::request(std::string_view method, const std::string& path, const std::string& body,
                                        std::string_view content_type, std::string_view token,
                                        const std::vector<std::pair<std::string, std::string>>& headers) const {
  // SSL_write to a connection the server closed (an exec it refused) raises SIGPIPE: an error here.
  static const bool sigpipe_ignored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  httplib::SSLClient c("127.0.0.1", port_);
  c.set_ca_cert_path(ca_file().c_str());
  c.enable_server_certificate_verification(true);
  c.set_tcp_nodelay(true);  // else a body waits 40 ms for the delayed ACK of the headers
  c.set_connection_timeout(5s);
  c.set_read_timeout(30s);
  c.set_write_timeout(30s);
  httplib::Request req;
  req.method = std::string(method);
  req.path = path;
  req.headers.emplace("Authorization", fmt::format("Bearer {}", token.empty() ? kAdminToken : token));
  req.headers.emplace("Accept", "application/json");
  for (const auto& [k, v] : headers) req.headers.emplace(k, v);
  if (!body.empty()) {
    req.body = body;
    req.headers.emplace("Content-Type", std::string(content_type));
  }
  auto res = c.send(req);
  if (!res) return fail("{} {}{}: no answer ({})", method, url(), path, httplib::to_string(res.error()));
  KubeAnswer a;
  a.status = res->status;
  a.text = res->body;
  a.body = json::parse(res->body, nullptr, false);
  if (a.body.is_discarded()) a.body = nullptr;
  return a;
}

Result<json> KubeCluster::get(const std::string& path) const {
  auto r = request("GET", path);
  if (!r) return Unexpected<Error>{r.error()};
  if (r->status != 200) return fail("GET {}: {} {}", path, r->status, r->text.substr(0, 500));
  return r->body;
}

Result<json> KubeCluster::create(const std::string& path, const json& object) const {
  auto r = request("POST", path, object.dump());
  if (!r) return Unexpected<Error>{r.error()};
  if (r->status != 201 && r->status != 200) return fail("POST {}: {} {}", path, r->status, r->text.substr(0, 500));
  return r->body;
}

Result<void> KubeCluster::apply(const json& object) const {
  const std::string kind = object.value("kind", "");
  for (const auto& k : kKinds) {
    if (k.kind != kind) continue;
    std::string path(k.path);
    if (auto at = path.find("{ns}"); at != std::string::npos)
      path.replace(at, 4, object["metadata"].value("namespace", "default"));
    auto r = request("POST", path, object.dump());
    if (!r) return Unexpected<Error>{r.error()};
    if (r->status == 201 || r->status == 200 || r->status == 409) return ok();
    return fail("create {} {}: {} {}", kind, object["metadata"].value("name", ""), r->status, r->text.substr(0, 500));
  }
  return fail("apply: kind '{}' is not one this harness creates", kind);
}

Result<void> KubeCluster::apply_yaml_file(const std::filesystem::path& file) const {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAllFromFile(file.string());
  } catch (const std::exception& e) {
    return fail("read {}: {}", file.string(), e.what());
  }
  for (const auto& d : docs) {
    if (!d.IsMap()) continue;
    if (auto r = apply(yaml_to_json(d)); !r) return fail("apply {}: {}", file.string(), r.error().message);
  }
  return ok();
}

Result<void> KubeCluster::add_namespace(const std::string& name, const std::map<std::string, std::string>& labels) const {
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  if (!labels.empty()) ns["metadata"]["labels"] = labels;
  if (auto r = apply(ns); !r) return r;
  return apply({{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "default"}, {"namespace", name}}}});
}

Result<std::string> KubeCluster::service_account_token(const std::string& ns, const std::string& name,
                                                      int expiration_seconds) const {
  json req = {{"apiVersion", "authentication.k8s.io/v1"},
              {"kind", "TokenRequest"},
              {"spec", {{"expirationSeconds", expiration_seconds}}}};
  auto r = create(fmt::format("/api/v1/namespaces/{}/serviceaccounts/{}/token", ns, name), req);
  if (!r) return Unexpected<Error>{r.error()};
  if (!(*r)["status"].contains("token")) return fail("TokenRequest for {}/{}: no token in {}", ns, name, r->dump());
  return (*r)["status"]["token"].get<std::string>();
}

Result<KubeIdentity> KubeCluster::identity(const std::string& name, const std::string& user, const std::string& ns,
                                           const std::string& token) const {
  KubeIdentity id{name, user, ns, token, (dir_ / (name + ".token")).string(), (dir_ / (name + ".kubeconfig")).string()};
  if (auto w = write_file(id.token_file, token + "\n"); !w) return Unexpected<Error>{w.error()};
  if (auto w = write_file(id.kubeconfig, kubeconfig_text(url(), ca_file(), name, id.token_file, ns)); !w)
    return Unexpected<Error>{w.error()};
  return id;
}

Result<void> KubeCluster::bootstrap() {
  // The bootstrap RBAC roles and namespaces are there once /readyz says so.
  auto admin = identity("admin", "kube-admin", "", std::string(kAdminToken));
  if (!admin) return Unexpected<Error>{admin.error()};
  admin_ = *admin;
  if (auto r = add_namespace("default"); !r) return r;
  if (auto r = apply_yaml_file(std::filesystem::path(CMAX_SOURCE_DIR) / "deploy/kubernetes/cmaxd.yaml"); !r) return r;
  if (auto r = add_namespace("cmax-system"); !r) return r;
  auto cmaxd_token = service_account_token("cmax-system", "cmaxd");
  if (!cmaxd_token) return Unexpected<Error>{cmaxd_token.error()};
  auto cmaxd = identity("cmaxd", "system:serviceaccount:cmax-system:cmaxd", "cmax-system", *cmaxd_token);
  if (!cmaxd) return Unexpected<Error>{cmaxd.error()};
  cmaxd_ = *cmaxd;

  // A tenant: its own namespace, a ServiceAccount, and a Role there only.
  if (auto r = add_namespace("tenant-a"); !r) return r;
  for (const json& o : {
           json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "tenant"}, {"namespace", "tenant-a"}}}},
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "Role"},
                {"metadata", {{"name", "tenant"}, {"namespace", "tenant-a"}}},
                {"rules", json::array({{{"apiGroups", {""}},
                                        {"resources", {"pods", "configmaps", "persistentvolumeclaims"}},
                                        {"verbs", {"get", "list", "watch", "create", "delete"}}},
                                       {{"apiGroups", {""}}, {"resources", {"pods/log"}}, {"verbs", {"get"}}}})}},
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "RoleBinding"},
                {"metadata", {{"name", "tenant"}, {"namespace", "tenant-a"}}},
                {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "tenant"}}},
                {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "tenant"}, {"namespace", "tenant-a"}}})}},
       })
    if (auto r = apply(o); !r) return r;
  auto tenant_token = service_account_token("tenant-a", "tenant");
  if (!tenant_token) return Unexpected<Error>{tenant_token.error()};
  auto tenant = identity("tenant", "system:serviceaccount:tenant-a:tenant", "tenant-a", *tenant_token);
  if (!tenant) return Unexpected<Error>{tenant.error()};
  tenant_ = *tenant;
  return ok();
}

Result<json> KubeCluster::add_node(const KubeNodeSpec& spec) const {
  json res = {{"cpu", "64"}, {"memory", "1024Gi"}, {"pods", "110"}};
  if (spec.gpus > 0) res["nvidia.com/gpu"] = std::to_string(spec.gpus);
  const auto now = now_rfc3339();
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}, {"labels", spec.labels}}},
               {"status",
                {{"capacity", res},
                 {"allocatable", res},
                 {"conditions", json::array({{{"type", "Ready"},
                                              {"status", spec.ready ? "True" : "False"},
                                              {"reason", spec.ready ? "KubeletReady" : "KubeletNotReady"},
                                              {"message", "registered by the test"},
                                              {"lastHeartbeatTime", now},
                                              {"lastTransitionTime", now}}})}}}};
  node["metadata"]["labels"]["kubernetes.io/hostname"] = spec.name;
  auto created = create("/api/v1/nodes", node);
  if (!created || !spec.ready) return created;
  // Admission (TaintNodesByCondition) taints every new node node.kubernetes.io/not-ready; the node
  // lifecycle controller, which does not run here, removes it once Ready is True. Play it.
  json taints = json::array();
  for (const auto& t : (*created)["spec"].value("taints", json::array()))
    if (t.value("key", "") != "node.kubernetes.io/not-ready") taints.push_back(t);
  auto r = request("PATCH", "/api/v1/nodes/" + spec.name, json{{"spec", {{"taints", taints}}}}.dump(),
                   "application/merge-patch+json");
  if (!r) return Unexpected<Error>{r.error()};
  if (r->status != 200) return fail("untaint node {}: {} {}", spec.name, r->status, r->text.substr(0, 300));
  return r->body;
}

Result<json> KubeCluster::node(std::string_view name) const { return get(fmt::format("/api/v1/nodes/{}", name)); }

sched::KubernetesOptions KubeCluster::options(const KubeIdentity& who) const {
  sched::KubernetesOptions o;
  o.api_url = url();
  o.token_path = who.token_file;
  o.ca_path = ca_file();
  o.timeout = 10s;
  return o;
}

}  // namespace cmax::test
