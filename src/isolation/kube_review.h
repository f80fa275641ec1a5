#pragma once
// What a tenant's Kubernetes identity may do: the table of dangerous permissions, and pure builders
// and parsers of the three requests that ask the API server about them without changing anything
// (SelfSubjectRulesReview, SelfSubjectAccessReview, a pod create with dryRun=All).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audit/model.h"
#include "core/result.h"

namespace cmax::isolation {

/// Where a permission is asked: the tenant's namespace, kube-system, or cluster-wide (no
/// namespace).
enum class KubeWhere { tenant_namespace, kube_system, cluster };

/// One permission a tenant should not hold. Checked with a SelfSubjectAccessReview.
struct DangerousPermission {
  std::string_view id;  ///< finding id suffix: "secrets.get" -> isolation.kube.secrets.get
  std::string_view verb;
  std::string_view group;  ///< API group, "" for core
  std::string_view resource;
  std::string_view subresource;  ///< "" for none
  KubeWhere where = KubeWhere::tenant_namespace;
  audit::Outcome when_allowed = audit::Outcome::fail;  ///< fail or warn
  std::string_view why;                                ///< what a tenant could do with it
  std::string_view fix;                                ///< what to do about it
  /// A non-resource URL ("/logs"): the verb applies to it, group and resource are empty, and it
  /// is asked as spec.nonResourceAttributes (cluster-wide).
  std::string_view path = {};
};

/// The table, in report order.
std::span<const DangerousPermission> dangerous_permissions();

/// The namespace a permission is asked in: `tenant_ns`, "kube-system", or "" (cluster).
std::string permission_namespace(const DangerousPermission& p, std::string_view tenant_ns);

/// "get secrets in namespace team-a", "bind clusterroles.rbac.authorization.k8s.io"; with an
/// empty `tenant_ns`, "get secrets in the tenant's namespace".
std::string describe_permission(const DangerousPermission& p, std::string_view tenant_ns);

inline constexpr std::string_view kRulesReviewPath =
    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
inline constexpr std::string_view kAccessReviewPath =
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// One rule of a SelfSubjectRulesReview's status.resourceRules.
struct ResourceRule {
  std::vector<std::string> verbs, api_groups, resources, resource_names;
};

/// One rule of status.nonResourceRules.
struct NonResourceRule {
  std::vector<std::string> verbs, urls;
};

/// A SelfSubjectRulesReview's status. With `incomplete` the rules are a lower bound: what they
/// allow is allowed, what they omit may still be allowed.
struct RulesReview {
  std::vector<ResourceRule> resource_rules;
  std::vector<NonResourceRule> non_resource_rules;
  bool incomplete = false;
  std::string evaluation_error;
};

/// The SelfSubjectRulesReview to POST for namespace `ns` (JSON).
std::string rules_review_body(std::string_view ns);
/// Parses a SelfSubjectRulesReview answer; an error naming what is malformed.
Result<RulesReview> parse_rules_review(std::string_view json);
/// True when a rule without resourceNames grants `p` (RBAC matching: "*" verbs, groups and
/// resources; "resource/subresource" and "*/subresource"); for a non-resource `p`, a
/// nonResourceRule whose URL is "*", the path, or a prefix ending in "*".
bool rules_allow(const RulesReview& review, const DangerousPermission& p);

/// A SelfSubjectAccessReview's status.
struct AccessReview {
  bool allowed = false;
  bool denied = false;  ///< an authorizer said no outright (not merely "no rule allows it")
  std::string reason;
  std::string evaluation_error;
};

/// The SelfSubjectAccessReview to POST for `p` in `tenant_ns` (JSON, spec.resourceAttributes, or
/// spec.nonResourceAttributes for a non-resource `p`).
std::string access_review_body(const DangerousPermission& p, std::string_view tenant_ns);
/// Parses a SelfSubjectAccessReview answer; an error naming what is malformed.
Result<AccessReview> parse_access_review(std::string_view json);

/// A pod a tenant should not be admitted to create, sent with dryRun=All.
struct RiskyPod {
  std::string_view id;  ///< "privileged" -> isolation.kube.admission.privileged
  std::string_view title;
  std::string_view why;
};

/// privileged, hostpath (/ of the node), hostnetwork.
std::span<const RiskyPod> risky_pods();

/// "/api/v1/namespaces/NS/pods?dryRun=All": the API server validates and admits, stores nothing.
std::string dry_run_pod_path(std::string_view ns);
/// The Pod to POST (JSON): generateName cmax-isolation-<id>-, one pause container, and the one
/// risky setting of `pod`.
std::string risky_pod_body(const RiskyPod& pod, std::string_view ns);

/// The message of a Kubernetes Status body (`{"kind":"Status","message":...}`); nullopt when the
/// body is not one.
std::optional<std::string> status_message(std::string_view json);

/// True for a 403 message written by RBAC ("... cannot create resource \"pods\" ..."), as opposed
/// to one from an admission controller or webhook.
bool is_rbac_forbidden(std::string_view message);

}  // namespace cmax::isolation
