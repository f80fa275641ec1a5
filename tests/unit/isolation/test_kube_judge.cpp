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
  EXPECT_EQ(all.size(), dangerous_permissions().size() + risky_pods().size() + 1);  // + storage.kube.rwx
  for (const auto& f : all) {
    EXPECT_EQ(f.outcome, Outcome::not_applicable);
    EXPECT_EQ(f.reason, "no Kubernetes API configured");
  }
}

// ReadWriteMany storage from the API server's lists. The items are the public StorageClass and
// PVC manifests in tests/data/audit/k8s-storage, as the API server returns them (JSON).
TEST(KubeRwxStorage, ABoundClaimOrASharedFilesystemClassPassesBlockClassesWarnAndUnreadListsAreUnverified) {
  using cmax::isolation::judge_rwx_storage;
  auto reply = [](int status, std::string body) { return cmax::Result<cmax::sched::KubeReply>(cmax::sched::KubeReply{status, "", std::move(body)}); };
  const std::string nfs_csi =
      R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"nfs-csi"},"provisioner":"nfs.csi.k8s.io",)"
      R"("parameters":{"server":"nfs-server.default.svc.cluster.local","share":"/"},"reclaimPolicy":"Retain","volumeBindingMode":"Immediate","mountOptions":["hard","nfsvers=4.1"]})";
  const std::string cephfs =
      R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"standard-rwx-retain"},"provisioner":"cephfs.csi.ceph.com","reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"})";
  const std::string ebs = R"({"kind":"StorageClass","metadata":{"name":"gp2"},"provisioner":"kubernetes.io/aws-ebs"})";
  const std::string ebs_csi = R"({"kind":"StorageClass","metadata":{"name":"ebs-sc"},"provisioner":"ebs.csi.aws.com"})";
  auto list = [](std::initializer_list<std::string> items) {
    std::string out = R"({"kind":"StorageClassList","apiVersion":"storage.k8s.io/v1","items":[)";
    bool first = true;
    for (const auto& i : items) out += (first ? "" : ",") + i, first = false;
    return out + "]}";
  };
  const std::string no_claims = R"({"kind":"PersistentVolumeClaimList","apiVersion":"v1","items":[]})";
  const std::string bound_rwx =
      R"({"kind":"PersistentVolumeClaimList","items":[{"metadata":{"name":"pvc-nfs-dynamic","namespace":"default"},)"
      R"("spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"10Gi"}},"storageClassName":"nfs-csi"},"status":{"phase":"Bound"}}]})";

  EXPECT_EQ(judge_rwx_storage("default", reply(200, list({ebs})), reply(200, bound_rwx)).outcome, Outcome::pass);
  auto f = judge_rwx_storage("default", reply(200, list({ebs, nfs_csi})), reply(200, no_claims));
  EXPECT_EQ(f.outcome, Outcome::pass);
  EXPECT_NE(f.observed.find("nfs-csi (nfs.csi.k8s.io)"), std::string::npos);
  EXPECT_EQ(judge_rwx_storage("default", reply(200, list({cephfs})), reply(200, no_claims)).outcome, Outcome::pass);
  f = judge_rwx_storage("default", reply(200, list({ebs, ebs_csi})), reply(200, no_claims));
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_NE(f.observed.find("gp2"), std::string::npos);
  f = judge_rwx_storage("default", reply(403, R"({"kind":"Status","reason":"Forbidden"})"), reply(200, no_claims));
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_NE(f.reason.find("list storageclasses"), std::string::npos);
  EXPECT_EQ(judge_rwx_storage("default", reply(200, "not json"), reply(200, no_claims)).outcome, Outcome::unverified);
  // Members of another type (a proxy or a broken webhook rewrote them) are read as absent, never a throw.
  const std::string odd_claims =
      R"({"items":[{"metadata":{"name":7},"spec":{"accessModes":["ReadWriteMany"],"storageClassName":[]},"status":{"phase":1}},)"
      R"({"metadata":"x","spec":{"accessModes":["ReadWriteMany"]},"status":{"phase":"Bound"}}]})";
  f = judge_rwx_storage("default", reply(200, list({R"({"metadata":{"name":3},"provisioner":9})"})), reply(200, odd_claims));
  EXPECT_EQ(f.outcome, Outcome::pass);  // the second claim is Bound RWX
  EXPECT_NE(f.observed.find("PVC ? is Bound ReadWriteMany (class default)"), std::string::npos) << f.observed;
  f = judge_rwx_storage("default", reply(200, list({R"({"metadata":{"name":3},"provisioner":9})"})), reply(200, no_claims));
  EXPECT_EQ(f.outcome, Outcome::warn);
}

}  // namespace
}  // namespace cmax::isolation

