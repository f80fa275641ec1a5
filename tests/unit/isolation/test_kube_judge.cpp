// Judging the Kubernetes permission answers: allowed is a fail (or warn), refused is a pass, and
// anything the API server would not answer is unverified, never a pass.

#include <gtest/gtest.h>

#include "isolation/kube_checks.h"
#include "support/fake_kube_reviews.h"

namespace cmax::isolation {
namespace {

using audit::Outcome;

std::string recorded(const std::string& name) { return test::FakeKubeReviews::recorded(name); }

const DangerousPermission& permission(std::string_view id) {
  for (const auto& p : dangerous_permissions())
    if (p.id == id) return p;
  throw std::runtime_error("no permission " + std::string(id));
}

const RiskyPod& pod(std::string_view id) {
  for (const auto& p : risky_pods())
    if (p.id == id) return p;
  throw std::runtime_error("no pod " + std::string(id));
}

Result<sched::KubeReply> reply(int status, const std::string& file,
                               std::string reason = "Created") {
  return sched::KubeReply{status, std::move(reason), recorded(file)};
}

TEST(KubeJudge, AllowedIsAFailAndWarnRowsWarn) {
  auto f = judge_permission(permission("secrets.get"), "team-a", reply(201, "ssar_allowed.json"),
                            nullptr);
  EXPECT_EQ(f.check_id, "isolation.kube.secrets.get");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(f.security);
  EXPECT_EQ(f.category, audit::Category::security);
  EXPECT_NE(f.reason.find("RoleBinding"), std::string::npos);
  EXPECT_FALSE(f.remediation.empty());

  auto w = judge_permission(permission("pods_exec.create"), "team-a",
                            reply(201, "ssar_allowed.json"), nullptr);
  EXPECT_EQ(w.outcome, Outcome::warn);
}

TEST(KubeJudge, NotAllowedAndDeniedPass) {
  auto f = judge_permission(permission("nodes_proxy.get"), "team-a",
                            reply(201, "ssar_not_allowed.json"), nullptr);
  EXPECT_EQ(f.outcome, Outcome::pass);
  auto d = judge_permission(permission("impersonate.users"), "team-a",
                            reply(201, "ssar_denied.json"), nullptr);
  EXPECT_EQ(d.outcome, Outcome::pass);
  EXPECT_NE(d.reason.find("tenant-guard"), std::string::npos);
}

TEST(KubeJudge, ForbiddenOrFailedReviewIsUnverifiedNeverPass) {
  auto f = judge_permission(permission("secrets.get"), "team-a",
                            reply(403, "status_403_ssar.json", "Forbidden"), nullptr);
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_EQ(f.observed, "not evaluated");
  EXPECT_EQ(f.reason.rfind("cannot ask the API server: ", 0), 0u) << f.reason;
  EXPECT_NE(f.reason.find("403"), std::string::npos);
  EXPECT_NE(f.reason.find("system:basic-user"), std::string::npos);

  auto u = judge_permission(permission("secrets.get"), "team-a",
                            sched::KubeReply{401, "Unauthorized", "{}"}, nullptr);
  EXPECT_EQ(u.outcome, Outcome::unverified);
  EXPECT_NE(u.reason.find("--kube-token-file"), std::string::npos);

  Result<sched::KubeReply> down = fail("POST {}: connection refused", kAccessReviewPath);
  auto t = judge_permission(permission("secrets.get"), "team-a", down, nullptr);
  EXPECT_EQ(t.outcome, Outcome::unverified);
  EXPECT_NE(t.reason.find("connection refused"), std::string::npos);

  auto junk = judge_permission(permission("secrets.get"), "team-a",
                               sched::KubeReply{201, "Created", "<html>proxy</html>"}, nullptr);
  EXPECT_EQ(junk.outcome, Outcome::unverified);
}

TEST(KubeJudge, EvaluationErrorWithoutAllowIsUnverified) {
  auto f = judge_permission(permission("rbac.bind_clusterroles"), "team-a",
                            reply(201, "ssar_evaluation_error.json"), nullptr);
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_NE(f.reason.find("tenant-extra"), std::string::npos);
}

TEST(KubeJudge, IncompleteRulesReviewIsALowerBound) {
  RulesAnswer rules = read_rules_answer("team-a", reply(201, "ssrr_incomplete.json"));
  ASSERT_TRUE(rules.read) << rules.problem;
  ASSERT_TRUE(rules.review.incomplete);
  // Listed: a fail even when the access review itself could not be asked.
  auto listed = judge_permission(permission("secrets.get"), "team-a",
                                 reply(403, "status_403_ssar.json", "Forbidden"), &rules);
  EXPECT_EQ(listed.outcome, Outcome::fail);
  EXPECT_NE(listed.reason.find("lower bound"), std::string::npos);
  // Not listed: the access review decides.
  auto absent = judge_permission(permission("pods_exec.create"), "team-a",
                                 reply(201, "ssar_not_allowed.json"), &rules);
  EXPECT_EQ(absent.outcome, Outcome::pass);
  // Not listed and the access review unanswered: unverified, not a pass.
  auto unknown = judge_permission(permission("pods_exec.create"), "team-a",
                                  reply(403, "status_403_ssar.json", "Forbidden"), &rules);
  EXPECT_EQ(unknown.outcome, Outcome::unverified);
  EXPECT_NE(unknown.reason.find("incomplete"), std::string::npos);
}

TEST(KubeJudge, RulesReviewRefusedIsAProblem) {
  RulesAnswer r = read_rules_answer("team-a", reply(403, "status_403_ssar.json", "Forbidden"));
  EXPECT_FALSE(r.read);
  EXPECT_EQ(r.problem.rfind("cannot ask the API server: ", 0), 0u);
  auto f = judge_permission(permission("secrets.get"), "team-a",
                            reply(403, "status_403_ssar.json", "Forbidden"), &r);
  EXPECT_EQ(f.outcome, Outcome::unverified);
}

TEST(KubeJudge, AdmissionOutcomes) {
  auto admitted =
      judge_admission(pod("privileged"), "team-a", reply(201, "pod_created_dry_run.json"));
  EXPECT_EQ(admitted.check_id, "isolation.kube.admission.privileged");
  EXPECT_EQ(admitted.outcome, Outcome::fail);
  EXPECT_NE(admitted.observed.find("nothing was created"), std::string::npos);

  auto pss = judge_admission(pod("hostpath"), "team-a",
                             reply(403, "status_403_podsecurity.json", "Forbidden"));
  EXPECT_EQ(pss.outcome, Outcome::pass);
  EXPECT_EQ(pss.observed, "refused by admission");
  EXPECT_NE(pss.reason.find("PodSecurity"), std::string::npos);

  auto rbac = judge_admission(pod("hostnetwork"), "team-a",
                              reply(403, "status_403_rbac_pods.json", "Forbidden"));
  EXPECT_EQ(rbac.outcome, Outcome::pass);
  EXPECT_NE(rbac.observed.find("RBAC"), std::string::npos);

  auto invalid = judge_admission(pod("hostnetwork"), "team-a",
                                 reply(422, "status_422_invalid.json", "Unprocessable Entity"));
  EXPECT_EQ(invalid.outcome, Outcome::unverified);
  auto proxy = judge_admission(pod("privileged"), "team-a",
                               sched::KubeReply{403, "Forbidden", "<html>denied by proxy</html>"});
  EXPECT_EQ(proxy.outcome, Outcome::unverified);
  Result<sched::KubeReply> down = fail("POST /api/v1/namespaces/team-a/pods: timed out");
  EXPECT_EQ(judge_admission(pod("privileged"), "team-a", down).outcome, Outcome::unverified);
}

TEST(KubeJudge, NotApplicableCoversEveryCheck) {
  auto all = kube_not_applicable("no Kubernetes API configured");
  EXPECT_EQ(all.size(), dangerous_permissions().size() + risky_pods().size());
  for (const auto& f : all) {
    EXPECT_EQ(f.outcome, Outcome::not_applicable);
    EXPECT_EQ(f.reason, "no Kubernetes API configured");
  }
}

}  // namespace
}  // namespace cmax::isolation
