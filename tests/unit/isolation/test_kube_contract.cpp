// Contract test of the Kubernetes permission checks: the real sched::KubeClient over HTTP to a
// loopback server answering with responses recorded from API servers, including an incomplete rules
// review and 403s (which must give "not evaluated", never a pass).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "isolation/kube_checks.h"
#include "support/fake_kube_reviews.h"

namespace cmax::isolation {
namespace {

using audit::Outcome;
using test::FakeKubeReviews;

std::map<std::string, audit::Finding> by_id(const std::vector<audit::Finding>& findings) {
  std::map<std::string, audit::Finding> out;
  for (const auto& f : findings) out.emplace(f.check_id, f);
  return out;
}

KubeCheckOptions options_for(const FakeKubeReviews& api) {
  KubeCheckOptions o;
  o.api.api_url = api.url();
  o.api.token_path.clear();
  o.api.timeout = std::chrono::milliseconds(3000);
  o.ns = "team-a";
  return o;
}

TEST(KubeContract, JudgesEveryRecordedAnswer) {
  FakeKubeReviews api;
  auto rec = FakeKubeReviews::recorded;
  api.set_rules_review("team-a", {201, rec("ssrr_incomplete.json")});
  api.set_rules_review("kube-system", {403, rec("status_403_ssar.json")});
  api.set_access_review("get  secrets team-a", {201, rec("ssar_allowed.json")});
  api.set_access_review("get  nodes/proxy ", {403, rec("status_403_ssar.json")});
  api.set_access_review("impersonate  users ", {201, rec("ssar_denied.json")});
  api.set_access_review("bind rbac.authorization.k8s.io clusterroles ",
                        {201, rec("ssar_evaluation_error.json")});
  api.set_access_review("create  pods/exec team-a", {201, rec("ssar_allowed.json")});
  api.set_access_review("get /logs", {201, rec("ssar_allowed.json")});
  api.set_pod_create("privileged", {201, rec("pod_created_dry_run.json")});
  api.set_pod_create("hostpath", {403, rec("status_403_podsecurity.json")});
  api.set_pod_create("hostnetwork", {403, rec("status_403_rbac_pods.json")});

  auto o = options_for(api);
  sched::KubeClient client(o.api);
  KubeRun run = run_kube_checks(o, client);
  auto f = by_id(run.findings);
  ASSERT_EQ(run.findings.size(), dangerous_permissions().size() + risky_pods().size() + 1);  // + storage.kube.rwx

  EXPECT_EQ(f["isolation.kube.secrets.get"].outcome, Outcome::fail);
  // list secrets: SSAR says not allowed, but the incomplete rules review lists it: still a fail.
  EXPECT_EQ(f["isolation.kube.secrets.list"].outcome, Outcome::fail);
  EXPECT_NE(f["isolation.kube.secrets.list"].reason.find("lower bound"), std::string::npos);
  // SSAR 403: not evaluated, never a pass.
  EXPECT_EQ(f["isolation.kube.nodes_proxy.get"].outcome, Outcome::unverified);
  EXPECT_EQ(f["isolation.kube.nodes_proxy.get"].observed, "not evaluated");
  EXPECT_NE(f["isolation.kube.nodes_proxy.get"].reason.find("cannot ask the API server"),
            std::string::npos);
  EXPECT_EQ(f["isolation.kube.impersonate.users"].outcome, Outcome::pass);
  EXPECT_EQ(f["isolation.kube.rbac.bind_clusterroles"].outcome, Outcome::unverified);
  EXPECT_EQ(f["isolation.kube.pods_exec.create"].outcome, Outcome::warn);
  // Not allowed per SSAR, rules review of kube-system refused: the SSAR answer stands.
  EXPECT_EQ(f["isolation.kube.pods.kube_system"].outcome, Outcome::pass);
  EXPECT_EQ(f["isolation.kube.admission.privileged"].outcome, Outcome::fail);
  EXPECT_EQ(f["isolation.kube.admission.hostpath"].outcome, Outcome::pass);
  EXPECT_EQ(f["isolation.kube.admission.hostpath"].observed, "refused by admission");
  EXPECT_EQ(f["isolation.kube.admission.hostnetwork"].outcome, Outcome::pass);
  EXPECT_NE(f["isolation.kube.admission.hostnetwork"].observed.find("RBAC"), std::string::npos);
  // A non-resource URL asked with nonResourceAttributes: /logs allowed is a fail.
  EXPECT_EQ(f["isolation.kube.nonresource.logs"].outcome, Outcome::fail);
  EXPECT_EQ(f["isolation.kube.nonresource.metrics"].outcome, Outcome::pass);

  // Every other check passes: the fake's default SSAR answer is "not allowed", team-a's rules
  // review lists none of them, and kube-system's was refused (so it is no evidence either way).
  const std::set<std::string> set_above = {"isolation.kube.secrets.get",
                                           "isolation.kube.secrets.list",
                                           "isolation.kube.nodes_proxy.get",
                                           "isolation.kube.impersonate.users",
                                           "isolation.kube.rbac.bind_clusterroles",
                                           "isolation.kube.pods_exec.create",
                                           "isolation.kube.admission.privileged",
                                           "isolation.kube.nonresource.logs"};
  for (const auto& finding : run.findings) {
    if (finding.check_id == "storage.kube.rwx") {  // a storage finding; the fake serves no storage lists
      EXPECT_EQ(finding.category, audit::Category::storage);
      EXPECT_EQ(finding.outcome, Outcome::unverified);
      continue;
    }
    EXPECT_EQ(finding.category, audit::Category::security);
    EXPECT_TRUE(finding.security);
    if (!set_above.count(finding.check_id)) {
      EXPECT_EQ(finding.outcome, Outcome::pass) << finding.check_id << ": " << finding.reason;
    }
  }

  std::map<std::string, std::string> facts(run.facts.begin(), run.facts.end());
  EXPECT_EQ(facts["isolation.kube.rules_review.team-a"].rfind("incomplete: webhook", 0), 0u);
  EXPECT_EQ(facts["isolation.kube.rules_review.kube-system"], "not read");
  EXPECT_EQ(facts["isolation.kube.namespace"], "team-a");
  ASSERT_FALSE(run.notes.empty());

  // Read-only: reviews and pod creates only, every pod create a dry run, no token sent.
  int pod_posts = 0;
  for (const auto& r : api.requests()) {
    EXPECT_TRUE(r.authorization.empty());
    if (r.method == "GET") {  // the only reads: the storage lists
      EXPECT_TRUE(r.path == "/apis/storage.k8s.io/v1/storageclasses" ||
                  r.path == "/api/v1/namespaces/team-a/persistentvolumeclaims")
          << r.path;
      continue;
    }
    EXPECT_EQ(r.method, "POST") << r.path;
    if (r.path == "/api/v1/namespaces/team-a/pods") {
      ++pod_posts;
      EXPECT_EQ(r.query, "dryRun=All");
    } else {
      EXPECT_TRUE(r.path == kRulesReviewPath || r.path == kAccessReviewPath) << r.path;
    }
  }
  EXPECT_EQ(pod_posts, 3);
  EXPECT_EQ(api.access_keys().size(), dangerous_permissions().size());
}

TEST(KubeContract, SendsTheTokenAndAsksEveryPermissionOnce) {
  FakeKubeReviews api;
  auto dir =
      std::filesystem::temp_directory_path() / ("cmax-kube-token-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "tenant-token\n";
  auto o = options_for(api);
  o.api.token_path = (dir / "token").string();
  sched::KubeClient client(o.api);
  KubeRun run = run_kube_checks(o, client);
  std::filesystem::remove_all(dir);
  for (const auto& r : api.requests()) EXPECT_EQ(r.authorization, "Bearer tenant-token");
  auto keys = api.access_keys();
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());
  // The default fake denies everything: every permission passes, every pod is refused by RBAC.
  for (const auto& f : run.findings) {
    if (f.check_id != "storage.kube.rwx") {
      EXPECT_EQ(f.outcome, Outcome::pass) << f.check_id;
    }
  }
}

TEST(KubeContract, UnreachableApiIsUnverifiedWithANote) {
  KubeCheckOptions o;
  o.api.api_url = "http://127.0.0.1:1";  // nothing listens on port 1
  o.api.token_path.clear();
  o.api.timeout = std::chrono::milliseconds(500);
  o.ns = "team-a";
  sched::KubeClient client(o.api);
  KubeRun run = run_kube_checks(o, client);
  for (const auto& f : run.findings) {
    EXPECT_EQ(f.outcome, Outcome::unverified) << f.check_id;
    EXPECT_EQ(f.reason.rfind("cannot ask the API server: ", 0), 0u) << f.reason;
  }
  ASSERT_FALSE(run.notes.empty());
  EXPECT_NE(run.notes.back().find("unverified"), std::string::npos);
  // Only the first request waited for the dead API server; the rest were not sent.
  EXPECT_NE(run.findings.back().reason.find("not sent"), std::string::npos);
}

}  // namespace
}  // namespace cmax::isolation
