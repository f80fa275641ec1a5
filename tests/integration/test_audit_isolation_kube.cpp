// `cmax audit isolation --kube-api` end to end: the real binary asks a loopback stand-in API server
// (tests/support/fake_kube_reviews.h, recorded answers) what its identity may do.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "audit_json_util.h"
#include "core/process.h"
#include "support/fake_kube_reviews.h"

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Cmd {
  int code = -1;
  std::string out, err;
};

// HOME points at an empty directory and KUBECONFIG is empty unless `env` sets them, so that a
// kubeconfig of the machine running the tests is never read.
Cmd audit_isolation(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {CMAX_BIN, "audit", "isolation"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> extra = env;
  for (std::string fallback : {"HOME=/nonexistent-cmax-test-home", "KUBECONFIG="}) {
    const std::string key = fallback.substr(0, fallback.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(key); }))
      extra.push_back(fallback);
  }
  auto r = cmax::core::run_process({std::move(argv), 60s, 16u << 20, extra});
  if (!r) return {-1, "", r.error().message};
  return {r->exit_code, r->out, r->err};
}

const json* finding(const json& report, std::string_view id) { return cmax::test::audit_finding(report, id); }
std::string result_of(const json& report, std::string_view id) { return cmax::test::audit_result(report, id); }

}  // namespace

TEST(AuditIsolationKube, AsksTheApiServerAndCreatesNothing) {
  cmax::test::FakeKubeReviews api;
  auto rec = cmax::test::FakeKubeReviews::recorded;
  api.set_rules_review("team-a", {201, rec("ssrr_incomplete.json")});
  api.set_access_review("get  secrets team-a", {201, rec("ssar_allowed.json")});
  api.set_access_review("get  nodes/proxy ", {403, rec("status_403_ssar.json")});
  api.set_pod_create("privileged", {201, rec("pod_created_dry_run.json")});
  api.set_pod_create("hostpath", {403, rec("status_403_podsecurity.json")});
  auto dir =
      std::filesystem::temp_directory_path() / ("cmax-iso-kube-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "tenant-token\n";

  auto r = audit_isolation({"--kube-api", api.url(), "--kube-token-file", (dir / "token").string(),
                            "--namespace", "team-a", "--scope", "127.0.0.1", "--ports", "grafana",
                            "--no-metadata", "--json"});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.code, 2) << r.err << r.out.substr(0, 2000);  // security fails
  auto j = json::parse(r.out);
  EXPECT_EQ(result_of(j, "isolation.kube.secrets.get"), "fail");
  EXPECT_EQ(result_of(j, "isolation.kube.secrets.list"),
            "fail");  // listed by the incomplete SSRR
  EXPECT_EQ(result_of(j, "isolation.kube.nodes_proxy.get"), "unverified");
  EXPECT_NE((*finding(j, "isolation.kube.nodes_proxy.get"))["reason"].get<std::string>().find(
                "cannot ask the API server"),
            std::string::npos);
  EXPECT_EQ(result_of(j, "isolation.kube.impersonate.users"), "pass");
  EXPECT_EQ(result_of(j, "isolation.kube.admission.privileged"), "fail");
  EXPECT_EQ(result_of(j, "isolation.kube.admission.hostpath"), "pass");
  EXPECT_EQ(result_of(j, "isolation.kube.admission.hostnetwork"),
            "pass");  // RBAC 403
  EXPECT_NE(r.err.find("incomplete"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unverified"), std::string::npos) << r.err;

  int pod_posts = 0;
  EXPECT_EQ(result_of(j, "storage.kube.rwx"), "unverified");  // the fake answers no storage lists
  for (const auto& q : api.requests()) {
    // Reviews and dry-run creates are POSTs; the only reads are the two storage lists.
    if (q.method == "GET") {
      EXPECT_TRUE(q.path == "/apis/storage.k8s.io/v1/storageclasses" ||
                  q.path == "/api/v1/namespaces/team-a/persistentvolumeclaims")
          << q.path;
      continue;
    }
    EXPECT_EQ(q.method, "POST") << q.path;
    EXPECT_EQ(q.authorization, "Bearer tenant-token");
    if (q.path.find("/pods") != std::string::npos) {
      ++pod_posts;
      EXPECT_EQ(q.path, "/api/v1/namespaces/team-a/pods");
      EXPECT_EQ(q.query, "dryRun=All");
    }
  }
  EXPECT_EQ(pod_posts, 3);
}

TEST(AuditIsolationKube, WithoutAnApiTheChecksAreNotApplicable) {
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr)
    GTEST_SKIP() << "running in a pod: the in-cluster API would be asked";
  auto r =
      audit_isolation({"--scope", "127.0.0.1", "--ports", "grafana", "--no-metadata", "--json"});
  ASSERT_NE(r.code, 3) << r.err;
  auto j = json::parse(r.out);
  const json* f = finding(j, "isolation.kube.secrets.get");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["result"], "not_applicable");
  EXPECT_EQ((*f)["reason"],
            "no Kubernetes API configured (--kube-api, a kubeconfig, or in-cluster service account)");

  auto off = audit_isolation(
      {"--no-kube", "--scope", "127.0.0.1", "--ports", "grafana", "--no-metadata", "--json"});
  auto k = json::parse(off.out);
  EXPECT_EQ(result_of(k, "isolation.kube.admission.privileged"), "not_applicable");
  EXPECT_EQ((*finding(k, "isolation.kube.admission.privileged"))["reason"], "not asked: --no-kube");
}

TEST(AuditIsolationKube, PlainHttpToARemoteApiIsAUsageError) {
  auto r = audit_isolation({"--kube-api", "http://192.0.2.1:6443", "--scope", "127.0.0.1",
                            "--ports", "grafana", "--no-metadata", "--json"});
  EXPECT_EQ(r.code, 3) << r.out.substr(0, 500);
  EXPECT_NE(r.err.find("--kube-api"), std::string::npos) << r.err;
}

TEST(AuditIsolationKube, DryRunSaysWhatItWouldAsk) {
  auto r = audit_isolation({"--kube-api", "http://127.0.0.1:1", "--namespace", "team-a", "--scope",
                            "127.0.0.1", "--ports", "grafana", "--no-metadata", "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("dryRun=All"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("namespace team-a"), std::string::npos) << r.out;
}

TEST(AuditIsolationKube, TakesServerTokenAndNamespaceFromAKubeconfig) {
  cmax::test::FakeKubeReviews api;
  auto rec = cmax::test::FakeKubeReviews::recorded;
  api.set_access_review("get  secrets team-b", {201, rec("ssar_allowed.json")});
  auto dir = std::filesystem::temp_directory_path() / ("cmax-iso-kubeconfig-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "config").string();
  std::ofstream(good) << "apiVersion: v1\nkind: Config\ncurrent-context: tenant\n"
                         "clusters:\n- name: lab\n  cluster:\n    server: "
                      << api.url()
                      << "\nusers:\n- name: tenant-b\n  user:\n    token: kubeconfig-token\n"
                         "contexts:\n- name: tenant\n  context:\n    cluster: lab\n    user: tenant-b\n"
                         "    namespace: team-b\n";
  const std::string eks = (dir / "eks").string();
  std::ofstream(eks) << "kind: Config\ncurrent-context: e\nclusters: [{name: c, cluster: {server: "
                        "'https://x.eks.amazonaws.com'}}]\nusers: [{name: u, user: {exec: {command: aws}}}]\n"
                        "contexts: [{name: e, context: {cluster: c, user: u}}]\n";

  // Explicit --kubeconfig.
  auto r = audit_isolation({"--kubeconfig", good, "--no-metadata", "--json"});
  ASSERT_EQ(r.code, 2) << r.err << r.out.substr(0, 1000);
  auto j = json::parse(r.out);
  EXPECT_EQ(result_of(j, "isolation.kube.secrets.get"), "fail");  // asked in the context's namespace
  EXPECT_NE(r.err.find("context tenant of " + good), std::string::npos) << r.err;
  ASSERT_FALSE(api.requests().empty());
  for (const auto& q : api.requests()) EXPECT_EQ(q.authorization, "Bearer kubeconfig-token") << q.path;

  // Found through $KUBECONFIG (a list with a missing entry), as kubectl would.
  auto before = api.requests().size();
  auto implicit = audit_isolation({"--no-metadata", "--json"}, {"KUBECONFIG=" + (dir / "missing").string() + ":" + good});
  EXPECT_EQ(implicit.code, 2) << implicit.err;
  EXPECT_GT(api.requests().size(), before);

  // A kubeconfig cmax will not use: an error when named, a not_applicable with the reason when
  // merely found.
  auto named = audit_isolation({"--kubeconfig", eks, "--no-metadata", "--json"});
  EXPECT_EQ(named.code, 3);
  EXPECT_NE(named.err.find("exec credential plugin aws"), std::string::npos) << named.err;
  auto found = audit_isolation({"--no-metadata", "--json"}, {"KUBECONFIG=" + eks});
  EXPECT_NE(found.code, 3) << found.err;
  EXPECT_NE(found.err.find("exec credential plugin aws"), std::string::npos) << found.err;
  auto k = json::parse(found.out);
  EXPECT_EQ(result_of(k, "isolation.kube.secrets.get"), "not_applicable");
  EXPECT_NE((*finding(k, "isolation.kube.secrets.get"))["reason"].get<std::string>().find("kubeconfig"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}
