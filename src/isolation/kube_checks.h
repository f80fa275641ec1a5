#pragma once
// The Kubernetes half of `cmax audit isolation`: what the tenant's identity may do. One
// SelfSubjectRulesReview per namespace asked about, one SelfSubjectAccessReview per dangerous
// permission, and one pod create with dryRun=All per risky pod. Nothing is created: the reviews are
// read-only and every pod POST carries dryRun=All. A request that could not be answered makes its
// finding unverified, never a pass.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/model.h"
#include "core/result.h"
#include "isolation/kube_review.h"
#include "sched/kube_client.h"
#include "sched/kubernetes.h"

namespace cmax::isolation {

/// Where the Kubernetes checks ask, and as whom (options.token_path).
struct KubeCheckOptions {
  sched::KubernetesOptions api;
  std::string ns = "default";  ///< the tenant's namespace
};

/// What a SelfSubjectRulesReview gave: the rules, or why there are none.
struct RulesAnswer {
  bool read = false;  ///< `review` holds the API server's answer
  RulesReview review;
  std::string problem;  ///< why not read ("cannot ask the API server: ... 403 Forbidden ...")
};

/// Pure: the finding for `p` from its SelfSubjectAccessReview reply and the rules review of its
/// namespace (`rules` may be null: cluster-scoped permissions use the access review alone, since a
/// namespace's rules review also lists namespaced grants of cluster resources).
audit::Finding judge_permission(const DangerousPermission& p, std::string_view tenant_ns,
                                const Result<sched::KubeReply>& access_reply,
                                const RulesAnswer* rules);

/// Pure: the finding for a dry-run create of `pod`: admitted is a fail; a 403 from admission or
/// RBAC is a pass; anything else is unverified.
audit::Finding judge_admission(const RiskyPod& pod, std::string_view ns,
                               const Result<sched::KubeReply>& reply);

/// Pure: what a SelfSubjectRulesReview reply says.
RulesAnswer read_rules_answer(std::string_view ns, const Result<sched::KubeReply>& reply);

/// Pure: one not_applicable finding per permission and risky pod, with `reason`.
std::vector<audit::Finding> kube_not_applicable(std::string_view reason);

/// Pure: can the tenant get a ReadWriteMany volume? A Bound RWX claim in its namespace proves it;
/// else a StorageClass whose provisioner serves RWX (NFS, CephFS, EFS, Filestore, Azure Files, FSx
/// for Lustre, Weka, Spectrum Scale, BeeGFS, JuiceFS, VAST) says the cluster offers it; classes
/// that are all block storage warn; replies that could not be read leave it unverified.
audit::Finding judge_rwx_storage(std::string_view ns, const Result<sched::KubeReply>& classes,
                                 const Result<sched::KubeReply>& claims);

/// What run_kube_checks found.
struct KubeRun {
  std::vector<audit::Finding> findings;
  std::vector<std::pair<std::string, std::string>> facts;  ///< isolation.kube.* key, value
  std::vector<std::string> notes;  ///< lines for stderr: what could not be asked and what to do
};

/// Asks the API server through `client` (requests bounded by its options' timeout, run one after
/// another). Never fails: an unanswered request is an unverified finding and a note.
KubeRun run_kube_checks(const KubeCheckOptions& options, const sched::KubeClient& client);

}  // namespace cmax::isolation
