// `cmax audit isolation` against a real kube-apiserver: what it reports about a tenant's identity is
// what RBAC and admission really do. For every isolation.kube.* permission it reports, the test
// tries the permission itself as that tenant (a read of a name that does not exist, a dryRun=All
// create, an impersonation header: authorization is decided before existence) and compares: a 403
// must be a pass, anything else a fail or warn. The risky pods are sent by the test as well, as the
// tenant, with dryRun=All. A wrong, revoked or untrusted credential leaves every finding unverified
// with the reason.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "integration/audit_json_util.h"
#include "isolation/kube_review.h"
#include "support/kube_cluster.h"
#include "support/kube_test.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using cmax::isolation::DangerousPermission;
using cmax::isolation::KubeWhere;
using cmax::test::KubeCluster;

struct Cmd {
  int code = -1;
  std::string out, err;
};

Cmd audit_isolation(std::vector<std::string> args) {
  std::vector<std::string> argv = {CMAX_BIN, "audit", "isolation"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cmax::core::run_process(
      {std::move(argv), 120s, 16u << 20, {"HOME=/nonexistent-cmax-test-home", "KUBECONFIG="}});
  if (!r) return {-1, "", r.error().message};
  if (r->exit_code < 0)
    return {-1, r->out, fmt::format("{}cmax ended by signal {}{}", r->err, r->signal, r->timed_out ? " (timed out)" : "")};
  return {r->exit_code, r->out, r->err};
}

// A real attempt at `p` as `token`: method, path (with query), body, extra headers.
struct Attempt {
  std::string method, path, body, content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

std::string ns_of(const DangerousPermission& p, const std::string& tenant_ns) {
  switch (p.where) {
    case KubeWhere::tenant_namespace: return tenant_ns;
    case KubeWhere::kube_system: return "kube-system";
    case KubeWhere::cluster: return "";
  }
  return "";
}

std::string collection(const DangerousPermission& p, const std::string& ns) {
  std::string base = p.group.empty() ? "/api/v1" : fmt::format("/apis/{}/v1", p.group);
  return ns.empty() ? fmt::format("{}/{}", base, p.resource) : fmt::format("{}/namespaces/{}/{}", base, ns, p.resource);
}

// What an object of `p.resource` needs to pass validation, so that a permitted dry-run create
// answers 201 (a 422 would do as well: only 403 counts as refused).
json minimal_object(const DangerousPermission& p, const std::string& ns) {
  const std::string r(p.resource);
  json meta = {{"generateName", "cmax-probe-"}};
  if (!ns.empty()) meta["namespace"] = ns;
  if (r == "pods")
    return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta},
            {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}};
  if (r == "persistentvolumes")
    return {{"apiVersion", "v1"}, {"kind", "PersistentVolume"}, {"metadata", meta},
            {"spec", {{"capacity", {{"storage", "1Gi"}}}, {"accessModes", {"ReadWriteOnce"}},
                      {"hostPath", {{"path", "/"}}}}}};
  if (r == "clusterrolebindings")
    return {{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRoleBinding"}, {"metadata", meta},
            {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "cmax-test-empty"}}},
            {"subjects", json::array({{{"kind", "User"}, {"name", "nobody"}, {"apiGroup", "rbac.authorization.k8s.io"}}})}};
  if (r == "mutatingwebhookconfigurations" || r == "validatingwebhookconfigurations")
    return {{"apiVersion", "admissionregistration.k8s.io/v1"},
            {"kind", r == "mutatingwebhookconfigurations" ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration"},
            {"metadata", meta}};
  return {{"metadata", meta}};
}

Attempt attempt_for(const DangerousPermission& p, const std::string& tenant_ns, const std::string& tenant_user) {
  const std::string ns = ns_of(p, tenant_ns);
  if (!p.path.empty()) return {"GET", std::string(p.path)};
  const std::string verb(p.verb), sub(p.subresource);
  if (verb == "impersonate") {
    Attempt a{"GET", "/api"};
    if (p.resource == "users") a.headers = {{"Impersonate-User", "someone-else"}};
    if (p.resource == "serviceaccounts") a.headers = {{"Impersonate-User", "system:serviceaccount:kube-system:default"}};
    if (p.resource == "groups") a.headers = {{"Impersonate-User", tenant_user}, {"Impersonate-Group", "system:masters"}};
    return a;
  }
  if (verb == "bind") {
    // A RoleBinding (in the tenant's namespace) to a role the tenant does not hold.
    json rb = {{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "RoleBinding"},
               {"metadata", {{"generateName", "cmax-probe-"}, {"namespace", tenant_ns}}},
               {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"},
                            {"kind", p.resource == "clusterroles" ? "ClusterRole" : "Role"},
                            {"name", p.resource == "clusterroles" ? "cluster-admin" : "cmax-test-secrets"}}},
               {"subjects", json::array({{{"kind", "User"}, {"name", "nobody"}, {"apiGroup", "rbac.authorization.k8s.io"}}})}};
    return {"POST", fmt::format("/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings?dryRun=All", tenant_ns),
            rb.dump()};
  }
  if (verb == "escalate") {
    json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", p.resource == "clusterroles" ? "ClusterRole" : "Role"},
                 {"metadata", {{"generateName", "cmax-probe-"}}},
                 {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"secrets"}}, {"verbs", {"get"}}}})}};
    std::string path = p.resource == "clusterroles"
                           ? "/apis/rbac.authorization.k8s.io/v1/clusterroles?dryRun=All"
                           : fmt::format("/apis/rbac.authorization.k8s.io/v1/namespaces/{}/roles?dryRun=All", tenant_ns);
    return {"POST", path, role.dump()};
  }
  const std::string coll = collection(p, ns);
  if (verb == "list") return {"GET", coll};
  if (verb == "get") return {"GET", coll + "/cmax-probe-absent" + (sub.empty() ? "" : "/" + sub)};
  if (verb == "patch") return {"PATCH", coll + "/cmax-probe-absent", "{}", "application/merge-patch+json"};
  if (verb == "create" && !sub.empty()) {
    if (sub == "exec") return {"POST", coll + "/cmax-probe-absent/exec?command=true&stdout=true"};
    if (sub == "token")
      return {"POST", coll + "/cmax-probe-absent/token",
              R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}})"};
  }
  if (verb == "create") return {"POST", coll + "?dryRun=All", minimal_object(p, ns).dump()};
  ADD_FAILURE() << "no real attempt for " << p.id;
  return {"GET", "/api"};
}

// 403 from the real server: refused. Anything else (200, 201, 404 for a name that does not exist,
// 422, an exec that wants an upgrade) got past authorization.
bool really_allowed(const KubeCluster& kube, const Attempt& a, const std::string& token, std::string* got) {
  auto r = kube.request(a.method, a.path, a.body, a.content_type, token, a.headers);
  if (!r) {
    *got = r.error().message;
    return false;
  }
  *got = fmt::format("{} {}", r->status, r->text.substr(0, 200));
  return r->status != 403;
}

class AuditIsolationRealApiServer : public cmax::test::RealApiServerTest {
 protected:
  void SetUp() override {
    RealApiServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // A loose tenant: its namespace runs privileged pods, and it was given more than it should.
    ASSERT_TRUE(kube_->add_namespace("tenant-b", {{"pod-security.kubernetes.io/enforce", "privileged"}}));
    for (const json& o : {
             json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "tenant"}, {"namespace", "tenant-b"}}}},
             json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "Role"},
                  {"metadata", {{"name", "loose"}, {"namespace", "tenant-b"}}},
                  {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"secrets"}}, {"verbs", {"get", "list"}}},
                                         {{"apiGroups", {""}}, {"resources", {"pods", "pods/exec", "serviceaccounts/token"}},
                                          {"verbs", {"get", "list", "create"}}}})}},
             json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "RoleBinding"},
                  {"metadata", {{"name", "loose"}, {"namespace", "tenant-b"}}},
                  {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "loose"}}},
                  {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "tenant"}, {"namespace", "tenant-b"}}})}},
             json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRole"}, {"metadata", {{"name", "tenant-b-nodes"}}},
                  {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"nodes/proxy"}}, {"verbs", {"get"}}},
                                         {{"apiGroups", {""}}, {"resources", {"persistentvolumes"}}, {"verbs", {"create"}}},
                                         {{"nonResourceURLs", {"/metrics"}}, {"verbs", {"get"}}}})}},
             json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRoleBinding"}, {"metadata", {{"name", "tenant-b-nodes"}}},
                  {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "tenant-b-nodes"}}},
                  {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "tenant"}, {"namespace", "tenant-b"}}})}},
             json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRole"}, {"metadata", {{"name", "cmax-test-empty"}}},
                  {"rules", json::array()}},
         })
      ASSERT_TRUE(kube_->apply(o)) << o.dump();
    auto token = kube_->service_account_token("tenant-b", "tenant");
    ASSERT_TRUE(token) << token.error().message;
    loose_token_ = *token;
    loose_token_file_ = (kube_->dir() / "tenant-b.token").string();
    std::ofstream(loose_token_file_) << loose_token_ << "\n";
  }

  // Runs the audit as `token_file` in `ns` and compares each kube finding with a real attempt.
  void expect_verdicts_match_reality(const std::string& token_file, const std::string& token, const std::string& ns,
                                     const std::string& user, int* allowed_count) {
    auto r = audit_isolation({"--kube-api", kube_->url(), "--kube-token-file", token_file, "--kube-ca-file",
                              kube_->ca_file(), "--namespace", ns, "--scope", "127.0.0.1", "--ports", "grafana",
                              "--no-metadata", "--json"});
    ASSERT_NE(r.code, 3) << r.err;
    auto j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 500) << r.err;
    *allowed_count = 0;
    for (const auto& p : cmax::isolation::dangerous_permissions()) {
      const std::string id = fmt::format("isolation.kube.{}", p.id);
      const std::string reported = cmax::test::audit_result(j, id);
      std::string got;
      bool allowed = really_allowed(*kube_, attempt_for(p, ns, user), token, &got);
      if (allowed) ++*allowed_count;
      if (allowed)
        EXPECT_TRUE(reported == "fail" || reported == "warn")
            << id << " reported " << reported << " but the tenant really could: " << got;
      else
        EXPECT_EQ(reported, "pass") << id << " but the real attempt was refused: " << got;
    }
    for (const auto& pod : cmax::isolation::risky_pods()) {
      const std::string id = fmt::format("isolation.kube.admission.{}", pod.id);
      auto real = kube_->request("POST", cmax::isolation::dry_run_pod_path(ns),
                                 cmax::isolation::risky_pod_body(pod, ns), "application/json", token);
      ASSERT_TRUE(real);
      const std::string reported = cmax::test::audit_result(j, id);
      if (real->status == 201)
        EXPECT_EQ(reported, "fail") << id << ": the real server admitted it";
      else
        EXPECT_EQ(reported, "pass") << id << ": the real server answered " << real->status << " "
                                    << real->text.substr(0, 300);
    }
  }

  std::string loose_token_, loose_token_file_;
};

TEST_F(AuditIsolationRealApiServer, VerdictsOfALeastPrivilegeTenantMatchWhatItCanReallyDo) {
  int allowed = -1;
  expect_verdicts_match_reality(kube_->tenant().token_file, kube_->tenant().token, "tenant-a", kube_->tenant().user,
                                &allowed);
  EXPECT_EQ(allowed, 0) << "the tenant of tenant-a holds nothing dangerous";
}

TEST_F(AuditIsolationRealApiServer, ATenantsKubeconfigGivesTheSameVerdictsAsTheFlags) {
  // The harness's kubeconfig: server, certificate-authority (a file), user tokenFile, namespace.
  auto by_flags = audit_isolation({"--kube-api", kube_->url(), "--kube-token-file", kube_->tenant().token_file,
                                   "--kube-ca-file", kube_->ca_file(), "--namespace", "tenant-a", "--scope", "127.0.0.1",
                                   "--ports", "grafana", "--no-metadata", "--json"});
  auto by_config = audit_isolation({"--kubeconfig", kube_->tenant().kubeconfig, "--scope", "127.0.0.1", "--ports",
                                    "grafana", "--no-metadata", "--json"});
  ASSERT_NE(by_config.code, 3) << by_config.err;
  EXPECT_NE(by_config.err.find("context tenant of " + kube_->tenant().kubeconfig), std::string::npos) << by_config.err;
  auto a = json::parse(by_flags.out, nullptr, false), b = json::parse(by_config.out, nullptr, false);
  ASSERT_FALSE(a.is_discarded() || b.is_discarded());
  int compared = 0;
  for (const auto& f : a["findings"]) {
    const std::string id = f["id"];
    if (!id.starts_with("isolation.kube.")) continue;
    ++compared;
    EXPECT_EQ(cmax::test::audit_result(b, id), f["result"].get<std::string>()) << id;
  }
  EXPECT_GE(compared, 20);
}

TEST_F(AuditIsolationRealApiServer, VerdictsOfALooseTenantMatchWhatItCanReallyDo) {
  int allowed = -1;
  expect_verdicts_match_reality(loose_token_file_, loose_token_, "tenant-b", "system:serviceaccount:tenant-b:tenant",
                                &allowed);
  // secrets get/list, pods/exec, serviceaccounts/token, nodes/proxy, persistentvolumes, /metrics.
  EXPECT_GE(allowed, 7) << "the loose tenant's grants were not all seen as allowed";
}

TEST_F(AuditIsolationRealApiServer, BadCredentialsLeaveEveryKubeFindingUnverified) {
  // A token the server never issued; a bound token whose ServiceAccount was deleted; a CA that did
  // not sign the server's certificate.
  const auto wrong = (kube_->dir() / "wrong.token").string();
  std::ofstream(wrong) << "not-a-token\n";
  auto doomed = kube_->service_account_token("tenant-b", "tenant");
  ASSERT_TRUE(doomed);
  const auto revoked = (kube_->dir() / "revoked.token").string();
  std::ofstream(revoked) << *doomed << "\n";
  auto del = kube_->request("DELETE", "/api/v1/namespaces/tenant-b/serviceaccounts/tenant");
  ASSERT_TRUE(del && del->status == 200);
  const auto other_ca = (kube_->dir() / "other-ca").string();
  auto pki = cmax::core::run_process({{std::string(CMAX_SOURCE_DIR) + "/tests/kube/gen_pki.sh", other_ca}, 60s, 1u << 16, {}});
  ASSERT_TRUE(pki && pki->exit_code == 0);

  struct Case {
    std::string what, token_file, ca, reason_has;
  };
  for (const Case& c : {Case{"wrong token", wrong, kube_->ca_file(), "401"},
                        Case{"revoked token", revoked, kube_->ca_file(), "401"},
                        Case{"unknown CA", kube_->tenant().token_file, other_ca + "/ca.crt", "certificate"}}) {
    auto r = audit_isolation({"--kube-api", kube_->url(), "--kube-token-file", c.token_file, "--kube-ca-file", c.ca,
                              "--namespace", "tenant-b", "--scope", "127.0.0.1", "--ports", "grafana", "--no-metadata",
                              "--json"});
    ASSERT_NE(r.code, 3) << c.what << ": " << r.err;
    ASSERT_GE(r.code, 0) << c.what << ": " << r.err;
    auto j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << c.what << ": exit " << r.code << " " << r.out.substr(0, 300) << r.err;
    int kube_findings = 0;
    for (const auto& f : j["findings"]) {
      const std::string id = f["id"];
      if (!id.starts_with("isolation.kube.")) continue;
      ++kube_findings;
      EXPECT_EQ(f["result"], "unverified") << c.what << ": " << id << " " << f.dump();
      EXPECT_NE(f.value("reason", "").find(c.reason_has), std::string::npos) << c.what << ": " << id << " " << f.dump();
    }
    EXPECT_GE(kube_findings, 20) << c.what;
    EXPECT_NE(r.err.find("unverified"), std::string::npos) << c.what << ": " << r.err;
  }
}

}  // namespace

namespace {

TEST_F(AuditIsolationRealApiServer, RwxStorageIsJudgedFromTheRealClassesAndClaims) {
  auto rwx = [&]() {
    auto r = audit_isolation({"--kube-api", kube_->url(), "--kube-token-file", kube_->tenant().token_file,
                              "--kube-ca-file", kube_->ca_file(), "--namespace", "tenant-a", "--scope", "127.0.0.1",
                              "--ports", "grafana", "--no-metadata", "--json"});
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.err;
    const json* f = cmax::test::audit_finding(j, "storage.kube.rwx");
    return f ? *f : json{};
  };
  // A least-privilege tenant may not list StorageClasses (cluster-scoped): nothing proves RWX.
  auto refused = rwx();
  EXPECT_EQ(refused["result"], "unverified") << refused.dump();
  EXPECT_NE(refused.value("reason", "").find("403"), std::string::npos) << refused.dump();

  // Most managed clusters let every tenant read the classes.
  for (const json& o : {
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRole"}, {"metadata", {{"name", "storage-reader"}}},
                {"rules", json::array({{{"apiGroups", {"storage.k8s.io"}}, {"resources", {"storageclasses"}}, {"verbs", {"get", "list"}}}})}},
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRoleBinding"}, {"metadata", {{"name", "storage-reader"}}},
                {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "storage-reader"}}},
                {"subjects", json::array({{{"kind", "Group"}, {"name", "system:serviceaccounts"}, {"apiGroup", "rbac.authorization.k8s.io"}}})}},
           json{{"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"}, {"metadata", {{"name", "gp3"}}}, {"provisioner", "ebs.csi.aws.com"}}})
    ASSERT_TRUE(kube_->apply(o));
  auto block = rwx();
  EXPECT_EQ(block["result"], "warn") << block.dump();
  EXPECT_NE(block.value("observed", "").find("gp3 (ebs.csi.aws.com)"), std::string::npos) << block.dump();

  ASSERT_TRUE(kube_->apply({{"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"}, {"metadata", {{"name", "nfs"}}},
                            {"provisioner", "nfs.csi.k8s.io"}}));
  auto shared = rwx();
  EXPECT_EQ(shared["result"], "pass") << shared.dump();

  // A Bound ReadWriteMany claim in the tenant's namespace proves it outright (the test plays the
  // PV controller that would bind it).
  ASSERT_TRUE(kube_->request("DELETE", "/apis/storage.k8s.io/v1/storageclasses/nfs"));
  ASSERT_TRUE(kube_->apply({{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"},
                            {"metadata", {{"name", "shared"}, {"namespace", "tenant-a"}}},
                            {"spec", {{"accessModes", {"ReadWriteMany"}}, {"storageClassName", "weka"},
                                      {"resources", {{"requests", {{"storage", "1Ti"}}}}}}}}));
  auto bound = kube_->request("PATCH", "/api/v1/namespaces/tenant-a/persistentvolumeclaims/shared/status",
                              R"({"status":{"phase":"Bound","accessModes":["ReadWriteMany"],"capacity":{"storage":"1Ti"}}})",
                              "application/merge-patch+json");
  ASSERT_TRUE(bound && bound->status == 200) << (bound ? bound->text : bound.error().message);
  auto claimed = rwx();
  EXPECT_EQ(claimed["result"], "pass") << claimed.dump();
  EXPECT_NE(claimed.value("observed", "").find("PVC shared is Bound ReadWriteMany"), std::string::npos) << claimed.dump();
}

}  // namespace

namespace {

// The contract test's recorded answers (tests/golden/kube_review, served by
// tests/support/fake_kube_reviews.h) against what this real server answers in the same situation:
// same kinds, codes, reasons, status fields and message grammar.
json recorded(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/golden/kube_review/" + name);
  return json::parse(in, nullptr, false);
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> k;
  if (j.is_object())
    for (const auto& [key, v] : j.items()) k.insert(key);
  return k;
}

TEST_F(AuditIsolationRealApiServer, TheContractTestsRecordedAnswersHaveTheRealServersShape) {
  const auto& tenant = kube_->tenant();
  auto post = [&](const std::string& path, const json& body, const std::string& token) {
    auto r = kube_->request("POST", path, body.dump(), "application/json", token);
    EXPECT_TRUE(r);
    return r ? r->body : json{};
  };
  // An allowed access review: the RBAC authorizer's reason names the binding.
  auto allowed = post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                      {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SelfSubjectAccessReview"},
                       {"spec", {{"resourceAttributes", {{"namespace", "tenant-b"}, {"verb", "get"}, {"resource", "secrets"}}}}}},
                      loose_token_);
  auto rec_allowed = recorded("ssar_allowed.json");
  EXPECT_EQ(allowed["kind"], rec_allowed["kind"]);
  EXPECT_EQ(allowed["apiVersion"], rec_allowed["apiVersion"]);
  EXPECT_EQ(keys(allowed["status"]), keys(rec_allowed["status"])) << allowed.dump();
  EXPECT_TRUE(std::regex_search(allowed["status"].value("reason", ""), std::regex(R"(^RBAC: allowed by RoleBinding ".+/.+" of Role ".+" to ServiceAccount ".+/.+")")))
      << allowed.dump() << " vs recorded " << rec_allowed["status"]["reason"];
  // A plain no: only allowed=false.
  auto no = post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                 {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SelfSubjectAccessReview"},
                  {"spec", {{"resourceAttributes", {{"verb", "get"}, {"resource", "nodes"}, {"subresource", "proxy"}}}}}},
                 tenant.token);
  EXPECT_EQ(keys(no["status"]), keys(recorded("ssar_not_allowed.json")["status"])) << no.dump();
  EXPECT_EQ(no["status"]["allowed"], false);
  // A rules review: the fields the recorded ones carry (incomplete, resource and non-resource rules).
  auto rules = post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                    {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SelfSubjectRulesReview"}, {"spec", {{"namespace", "tenant-a"}}}},
                    tenant.token);
  auto rec_rules = recorded("ssrr_complete.json");
  EXPECT_EQ(rules["kind"], rec_rules["kind"]);
  EXPECT_EQ(keys(rules["status"]), keys(rec_rules["status"])) << rules["status"].dump() << " vs " << rec_rules["status"].dump();
  // Refusals: RBAC's and Pod Security's 403 Status objects.
  auto rbac = kube_->request("POST", "/api/v1/namespaces/kube-system/pods?dryRun=All",
                             cmax::isolation::risky_pod_body(cmax::isolation::risky_pods()[0], "kube-system"),
                             "application/json", tenant.token);
  ASSERT_TRUE(rbac);
  auto rec_rbac = recorded("status_403_rbac_pods.json");
  EXPECT_EQ(rbac->status, rec_rbac["code"]);
  EXPECT_EQ(keys(rbac->body), keys(rec_rbac)) << rbac->text;
  EXPECT_EQ(rbac->body["reason"], rec_rbac["reason"]);
  EXPECT_TRUE(std::regex_search(rbac->body.value("message", ""),
                                std::regex(R"(^pods is forbidden: User "system:serviceaccount:[^"]+" cannot create resource "pods" in API group "" in the namespace "[^"]+"$)")))
      << rbac->text;
  auto psa = kube_->request("POST", cmax::isolation::dry_run_pod_path("tenant-a"),
                            cmax::isolation::risky_pod_body(cmax::isolation::risky_pods()[1], "tenant-a"), "application/json",
                            tenant.token);
  ASSERT_TRUE(psa);
  auto rec_psa = recorded("status_403_podsecurity.json");
  EXPECT_EQ(psa->status, rec_psa["code"]);
  EXPECT_EQ(keys(psa->body), keys(rec_psa)) << psa->text;
  EXPECT_EQ(keys(psa->body["details"]), keys(rec_psa["details"])) << psa->text;
  EXPECT_TRUE(std::regex_search(psa->body.value("message", ""),
                                std::regex(R"(^pods "[^"]+" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes \(volume "[^"]+"\))")))
      << psa->text;
  // An admitted dry-run create: a Pod with a generated name, nothing stored.
  auto created = kube_->request("POST", cmax::isolation::dry_run_pod_path("tenant-b"),
                                cmax::isolation::risky_pod_body(cmax::isolation::risky_pods()[0], "tenant-b"),
                                "application/json", loose_token_);
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201) << created->text;
  EXPECT_EQ(created->body["kind"], recorded("pod_created_dry_run.json")["kind"]);
  EXPECT_FALSE(created->body["metadata"].value("name", "").empty());
  auto listed = kube_->get("/api/v1/namespaces/tenant-b/pods");
  ASSERT_TRUE(listed);
  EXPECT_TRUE((*listed)["items"].empty()) << "dryRun=All stores nothing";
}

}  // namespace
