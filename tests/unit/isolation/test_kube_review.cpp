// The pure builders and parsers of the Kubernetes permission checks, on answers recorded from API
// servers (tests/golden/kube_review/).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "isolation/kube_review.h"
#include "support/fake_kube_reviews.h"

namespace cmax::isolation {
namespace {

using nlohmann::json;

std::string recorded(const std::string& name) { return test::FakeKubeReviews::recorded(name); }

const DangerousPermission& permission(std::string_view id) {
  for (const auto& p : dangerous_permissions())
    if (p.id == id) return p;
  throw std::runtime_error("no permission " + std::string(id));
}

TEST(KubeTable, IdsAreUniqueAndEveryRowSaysWhyAndWhat) {
  std::set<std::string_view> ids;
  for (const auto& p : dangerous_permissions()) {
    EXPECT_TRUE(ids.insert(p.id).second) << p.id;
    EXPECT_FALSE(p.verb.empty()) << p.id;
    // Exactly one of a resource and a non-resource URL.
    EXPECT_NE(p.resource.empty(), p.path.empty()) << p.id;
    if (!p.path.empty()) {
      EXPECT_TRUE(p.path.starts_with('/')) << p.id;
    }
    EXPECT_FALSE(p.why.empty()) << p.id;
    EXPECT_FALSE(p.fix.empty()) << p.id;
    EXPECT_TRUE(p.when_allowed == audit::Outcome::fail || p.when_allowed == audit::Outcome::warn)
        << p.id;
  }
  for (std::string_view want :
       {"secrets.get", "pods_exec.create", "nodes_proxy.get", "impersonate.users",
        "rbac.bind_clusterroles", "rbac.escalate_roles", "webhooks.mutating_create",
        "webhooks.validating_patch", "serviceaccount_token.create", "pods.kube_system",
        "nonresource.logs", "nonresource.debug_pprof", "nonresource.metrics"})
    EXPECT_TRUE(ids.count(want)) << want;
}

TEST(KubeReview, RulesReviewBodyNamesTheNamespace) {
  json j = json::parse(rules_review_body("team-a"));
  EXPECT_EQ(j["kind"], "SelfSubjectRulesReview");
  EXPECT_EQ(j["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(j["spec"]["namespace"], "team-a");
}

TEST(KubeReview, AccessReviewBodyCarriesResourceAttributes) {
  json exec = json::parse(access_review_body(permission("pods_exec.kube_system"), "team-a"));
  EXPECT_EQ(exec["kind"], "SelfSubjectAccessReview");
  const auto& a = exec["spec"]["resourceAttributes"];
  EXPECT_EQ(a["verb"], "create");
  EXPECT_EQ(a["group"], "");
  EXPECT_EQ(a["resource"], "pods");
  EXPECT_EQ(a["subresource"], "exec");
  EXPECT_EQ(a["namespace"], "kube-system");

  json bind = json::parse(access_review_body(permission("rbac.bind_clusterroles"), "team-a"));
  const auto& b = bind["spec"]["resourceAttributes"];
  EXPECT_EQ(b["group"], "rbac.authorization.k8s.io");
  EXPECT_FALSE(b.contains("namespace"));  // cluster-scoped: asked cluster-wide
  EXPECT_FALSE(b.contains("subresource"));

  EXPECT_EQ(describe_permission(permission("secrets.get"), "team-a"),
            "get secrets in namespace team-a");
  EXPECT_EQ(describe_permission(permission("secrets.get"), ""),
            "get secrets in the tenant's namespace");
  EXPECT_EQ(describe_permission(permission("rbac.bind_clusterroles"), "team-a"),
            "bind clusterroles.rbac.authorization.k8s.io");
  EXPECT_EQ(describe_permission(permission("secrets.list_all_namespaces"), "team-a"),
            "list secrets in every namespace");
  json secrets = json::parse(access_review_body(permission("secrets.get"), "team-a"));
  EXPECT_EQ(secrets["spec"]["resourceAttributes"]["namespace"], "team-a");
}

TEST(KubeReview, ParsesIncompleteRulesReview) {
  auto r = parse_rules_review(recorded("ssrr_incomplete.json"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->incomplete);
  EXPECT_EQ(r->evaluation_error, "webhook authorizer does not support user rule resolution");
  ASSERT_EQ(r->resource_rules.size(), 4u);
  EXPECT_EQ(r->resource_rules[1].resources, std::vector<std::string>{"secrets"});
  EXPECT_EQ(r->resource_rules[2].resource_names, std::vector<std::string>{"team-a-config"});
  ASSERT_EQ(r->non_resource_rules.size(), 1u);
  EXPECT_EQ(r->non_resource_rules[0].urls.size(), 5u);
  // Listed grants count even though the review is incomplete.
  EXPECT_TRUE(rules_allow(*r, permission("secrets.get")));
  EXPECT_TRUE(rules_allow(*r, permission("secrets.list")));
  // Omitted ones are not evidence of anything: rules_allow only says "not listed".
  EXPECT_FALSE(rules_allow(*r, permission("pods_exec.create")));
}

TEST(KubeReview, RulesMatchWildcardsAndSubresources) {
  auto r = parse_rules_review(recorded("ssrr_complete.json"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->incomplete);
  EXPECT_TRUE(rules_allow(*r, permission("pods_exec.kube_system")));  // "*/exec"
  EXPECT_TRUE(rules_allow(*r, permission("pods.kube_system")));       // "*" verbs on pods
  EXPECT_FALSE(rules_allow(*r, permission("secrets.kube_system")));
  EXPECT_FALSE(rules_allow(*r, permission("serviceaccount_token.kube_system")));

  RulesReview names;
  names.resource_rules.push_back({{"get"}, {""}, {"secrets"}, {"only-this-one"}});
  EXPECT_FALSE(rules_allow(names, permission("secrets.get")));  // one named secret: not all
  RulesReview star;
  star.resource_rules.push_back({{"*"}, {"*"}, {"*"}, {}});
  star.non_resource_rules.push_back({{"*"}, {"*"}});
  for (const auto& p : dangerous_permissions()) EXPECT_TRUE(rules_allow(star, p)) << p.id;
  // Resource rules never grant a non-resource URL, nor the other way round.
  RulesReview resources_only;
  resources_only.resource_rules.push_back({{"*"}, {"*"}, {"*"}, {}});
  EXPECT_FALSE(rules_allow(resources_only, permission("nonresource.logs")));
  RulesReview urls_only;
  urls_only.non_resource_rules.push_back({{"*"}, {"*"}});
  EXPECT_FALSE(rules_allow(urls_only, permission("secrets.get")));
}

TEST(KubeReview, NonResourceUrlsMatchLikeRbac) {
  // The incomplete review's URLs are the system:public-info-viewer set: none is dangerous.
  auto r = parse_rules_review(recorded("ssrr_incomplete.json"));
  ASSERT_TRUE(r);
  for (const char* id : {"nonresource.logs", "nonresource.debug_pprof", "nonresource.metrics"})
    EXPECT_FALSE(rules_allow(*r, permission(id))) << id;
  RulesReview glob;
  glob.non_resource_rules.push_back({{"get"}, {"/logs/*", "/debug/*"}});
  EXPECT_FALSE(rules_allow(glob, permission("nonresource.logs")));  // "/logs/*" is not "/logs"
  EXPECT_TRUE(rules_allow(glob, permission("nonresource.debug_pprof")));
  EXPECT_FALSE(rules_allow(glob, permission("nonresource.metrics")));
  RulesReview exact;
  exact.non_resource_rules.push_back({{"list"}, {"/logs", "/metrics"}});
  EXPECT_FALSE(rules_allow(exact, permission("nonresource.logs")));  // the verb must match
  exact.non_resource_rules.push_back({{"get"}, {"/metrics"}});
  EXPECT_TRUE(rules_allow(exact, permission("nonresource.metrics")));

  const auto& logs = permission("nonresource.logs");
  EXPECT_EQ(permission_namespace(logs, "team-a"), "");
  EXPECT_EQ(describe_permission(logs, "team-a"), "get /logs (non-resource URL)");
  auto body = nlohmann::json::parse(access_review_body(logs, "team-a"));
  EXPECT_EQ(body["spec"]["nonResourceAttributes"]["path"], "/logs");
  EXPECT_EQ(body["spec"]["nonResourceAttributes"]["verb"], "get");
  EXPECT_FALSE(body["spec"].contains("resourceAttributes"));
}

TEST(KubeReview, ParsesAccessReviews) {
  auto allowed = parse_access_review(recorded("ssar_allowed.json"));
  ASSERT_TRUE(allowed);
  EXPECT_TRUE(allowed->allowed);
  EXPECT_NE(allowed->reason.find("RoleBinding"), std::string::npos);

  auto no = parse_access_review(recorded("ssar_not_allowed.json"));
  ASSERT_TRUE(no);
  EXPECT_FALSE(no->allowed);
  EXPECT_FALSE(no->denied);

  auto denied = parse_access_review(recorded("ssar_denied.json"));
  ASSERT_TRUE(denied);
  EXPECT_TRUE(denied->denied);

  auto err = parse_access_review(recorded("ssar_evaluation_error.json"));
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->allowed);
  EXPECT_NE(err->evaluation_error.find("tenant-extra"), std::string::npos);
}

TEST(KubeReview, MalformedAnswersAreErrors) {
  EXPECT_FALSE(parse_rules_review("not json"));
  EXPECT_FALSE(parse_rules_review("[]"));
  EXPECT_FALSE(parse_rules_review(R"({"kind":"SelfSubjectRulesReview"})"));
  EXPECT_FALSE(parse_access_review(R"({"status":{}})"));
  EXPECT_FALSE(parse_access_review(recorded("status_403_ssar.json")));
  auto e = parse_access_review("");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("SelfSubjectAccessReview"), std::string::npos);
}

TEST(KubeReview, RiskyPodsAreDryRunAndCarryOneRiskEach) {
  EXPECT_EQ(dry_run_pod_path("team-a"), "/api/v1/namespaces/team-a/pods?dryRun=All");
  for (const auto& pod : risky_pods()) {
    json j = json::parse(risky_pod_body(pod, "team-a"));
    EXPECT_EQ(j["kind"], "Pod");
    EXPECT_EQ(j["metadata"]["namespace"], "team-a");
    EXPECT_EQ(j["metadata"]["generateName"], "cmax-isolation-" + std::string(pod.id) + "-");
    const auto& spec = j["spec"];
    const auto& c = spec["containers"][0];
    bool privileged = c.contains("securityContext") && c["securityContext"]["privileged"] == true;
    bool host_path = spec.contains("volumes") && spec["volumes"][0]["hostPath"]["path"] == "/";
    bool host_network = spec.value("hostNetwork", false);
    EXPECT_EQ(privileged, pod.id == "privileged");
    EXPECT_EQ(host_path, pod.id == "hostpath");
    EXPECT_EQ(host_network, pod.id == "hostnetwork");
  }
}

TEST(KubeReview, StatusMessagesTellRbacFromAdmission) {
  auto rbac = status_message(recorded("status_403_rbac_pods.json"));
  ASSERT_TRUE(rbac);
  EXPECT_TRUE(is_rbac_forbidden(*rbac));
  auto pss = status_message(recorded("status_403_podsecurity.json"));
  ASSERT_TRUE(pss);
  EXPECT_FALSE(is_rbac_forbidden(*pss));
  EXPECT_FALSE(status_message(recorded("pod_created_dry_run.json")));
  EXPECT_FALSE(status_message("garbage"));
}

}  // namespace
}  // namespace cmax::isolation
