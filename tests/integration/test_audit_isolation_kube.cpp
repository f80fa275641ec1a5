// `cmax audit isolation --kube-api` end to end: the real binary asks a loopback stand-in API server
// (tests/support/fake_kube_reviews.h, recorded answers) what its identity may do.

#include <gtest/gtest.h>
#include <unistd.h>

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

Cmd audit_isolation(std::vector<std::string> args) {
  std::vector<std::string> argv = {CMAX_BIN, "audit", "isolation"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cmax::core::run_process({std::move(argv), 60s, 16u << 20});
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
  for (const auto& q : api.requests()) {
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
            "no Kubernetes API configured (--kube-api or in-cluster service account)");

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
