#include "isolation/kube_review.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include "core/json_fields.h"

namespace cmax::isolation {
namespace {

using audit::Outcome;
using nlohmann::json;

constexpr std::string_view kRbac = "rbac.authorization.k8s.io";
constexpr std::string_view kAdmission = "admissionregistration.k8s.io";

constexpr std::string_view kSecretsWhy =
    "Secrets hold service-account tokens, registry and cloud credentials; reading them lets a "
    "tenant act as whoever they belong to.";
constexpr std::string_view kSecretsFix =
    "Remove get/list/watch on secrets from the tenant's Roles and ClusterRoles; mount the few "
    "secrets a workload needs instead.";
constexpr std::string_view kImpersonateWhy =
    "Impersonation lets the tenant send requests as any user, group or service account, "
    "cluster-admin included.";
constexpr std::string_view kImpersonateFix =
    "Remove the impersonate verb from every role bound to the tenant.";
constexpr std::string_view kRbacWhy =
    "bind and escalate let the tenant grant itself (or anyone) permissions it does not hold, up to "
    "cluster-admin.";
constexpr std::string_view kRbacFix =
    "Remove bind and escalate on roles and clusterroles from the tenant's roles; let a platform "
    "controller create RoleBindings from an allow-list.";
constexpr std::string_view kWebhookWhy =
    "An admission webhook sees (and a mutating one rewrites) every object sent to the API server, "
    "every other tenant's included.";
constexpr std::string_view kWebhookFix =
    "Only the platform may create or patch admission webhook configurations; remove these verbs "
    "from the tenant's ClusterRoles.";

constexpr std::array kPermissions = {
    DangerousPermission{"secrets.get", "get", "", "secrets", "", KubeWhere::tenant_namespace,
                        Outcome::fail, kSecretsWhy, kSecretsFix},
    DangerousPermission{"secrets.list", "list", "", "secrets", "", KubeWhere::tenant_namespace,
                        Outcome::fail, kSecretsWhy, kSecretsFix},
    DangerousPermission{"secrets.list_all_namespaces", "list", "", "secrets", "",
                        KubeWhere::cluster, Outcome::fail, kSecretsWhy, kSecretsFix},
    DangerousPermission{
        "secrets.kube_system", "get", "", "secrets", "", KubeWhere::kube_system, Outcome::fail,
        "kube-system's secrets include controller and add-on tokens with cluster-wide rights.",
        kSecretsFix},
    DangerousPermission{"pods_exec.create", "create", "", "pods", "exec",
                        KubeWhere::tenant_namespace, Outcome::warn,
                        "exec runs commands in the namespace's pods as their user and with their "
                        "mounted credentials; acceptable for a tenant's own pods only when every "
                        "pod there is the tenant's.",
                        "Grant pods/exec only to the people who own every pod in the namespace."},
    DangerousPermission{"pods_exec.kube_system", "create", "", "pods", "exec",
                        KubeWhere::kube_system, Outcome::fail,
                        "exec into kube-system's pods runs commands inside the cluster's own "
                        "components, with their credentials.",
                        "Remove create pods/exec in kube-system from the tenant's roles."},
    DangerousPermission{"pods.kube_system", "create", "", "pods", "", KubeWhere::kube_system,
                        Outcome::fail,
                        "A pod in kube-system can mount that namespace's privileged service "
                        "accounts and usually escapes PodSecurity enforcement.",
                        "Remove create pods in kube-system from the tenant's roles."},
    DangerousPermission{"nodes_proxy.get", "get", "", "nodes", "proxy", KubeWhere::cluster,
                        Outcome::fail,
                        "nodes/proxy reaches the kubelet API of every node: exec into any pod on "
                        "it, any tenant's included, bypassing admission and audit.",
                        "Remove nodes/proxy from every ClusterRole bound to the tenant."},
    DangerousPermission{"nodes.patch", "patch", "", "nodes", "", KubeWhere::cluster, Outcome::fail,
                        "Patching nodes (labels, taints) steers other tenants' workloads onto "
                        "nodes of the tenant's choosing, or off the cluster.",
                        "Remove patch and update on nodes from the tenant's ClusterRoles."},
    DangerousPermission{"impersonate.users", "impersonate", "", "users", "", KubeWhere::cluster,
                        Outcome::fail, kImpersonateWhy, kImpersonateFix},
    DangerousPermission{"impersonate.groups", "impersonate", "", "groups", "", KubeWhere::cluster,
                        Outcome::fail, kImpersonateWhy, kImpersonateFix},
    DangerousPermission{"impersonate.serviceaccounts", "impersonate", "", "serviceaccounts", "",
                        KubeWhere::cluster, Outcome::fail, kImpersonateWhy, kImpersonateFix},
    DangerousPermission{"rbac.bind_clusterroles", "bind", kRbac, "clusterroles", "",
                        KubeWhere::cluster, Outcome::fail, kRbacWhy, kRbacFix},
    DangerousPermission{"rbac.escalate_clusterroles", "escalate", kRbac, "clusterroles", "",
                        KubeWhere::cluster, Outcome::fail, kRbacWhy, kRbacFix},
    DangerousPermission{"rbac.bind_roles", "bind", kRbac, "roles", "", KubeWhere::tenant_namespace,
                        Outcome::fail, kRbacWhy, kRbacFix},
    DangerousPermission{"rbac.escalate_roles", "escalate", kRbac, "roles", "",
                        KubeWhere::tenant_namespace, Outcome::fail, kRbacWhy, kRbacFix},
    DangerousPermission{"rbac.create_clusterrolebindings", "create", kRbac, "clusterrolebindings",
                        "", KubeWhere::cluster, Outcome::fail, kRbacWhy, kRbacFix},
    DangerousPermission{"webhooks.mutating_create", "create", kAdmission,
                        "mutatingwebhookconfigurations", "", KubeWhere::cluster, Outcome::fail,
                        kWebhookWhy, kWebhookFix},
    DangerousPermission{"webhooks.mutating_patch", "patch", kAdmission,
                        "mutatingwebhookconfigurations", "", KubeWhere::cluster, Outcome::fail,
                        kWebhookWhy, kWebhookFix},
    DangerousPermission{"webhooks.validating_create", "create", kAdmission,
                        "validatingwebhookconfigurations", "", KubeWhere::cluster, Outcome::fail,
                        kWebhookWhy, kWebhookFix},
    DangerousPermission{"webhooks.validating_patch", "patch", kAdmission,
                        "validatingwebhookconfigurations", "", KubeWhere::cluster, Outcome::fail,
                        kWebhookWhy, kWebhookFix},
    DangerousPermission{"serviceaccount_token.create", "create", "", "serviceaccounts", "token",
                        KubeWhere::tenant_namespace, Outcome::warn,
                        "Minting tokens for the namespace's service accounts gives the tenant "
                        "long-lived credentials of every account there, whatever it is bound to.",
                        "Grant create serviceaccounts/token only where every account in the "
                        "namespace is the tenant's own."},
    DangerousPermission{
        "serviceaccount_token.kube_system", "create", "", "serviceaccounts", "token",
        KubeWhere::kube_system, Outcome::fail,
        "A token for a kube-system service account carries the rights of the cluster's "
        "controllers.",
        "Remove create serviceaccounts/token in kube-system from the tenant's roles."},
    DangerousPermission{"persistentvolumes.create", "create", "", "persistentvolumes", "",
                        KubeWhere::cluster, Outcome::fail,
                        "A PersistentVolume of type hostPath mounts any directory of a node into "
                        "the tenant's pod, bypassing PodSecurity's hostPath rule.",
                        "Remove create on persistentvolumes; let a provisioner create them."},
    DangerousPermission{"nonresource.logs", "get", "", "", "", KubeWhere::cluster, Outcome::fail,
                        "The API server's /logs serves the control-plane host's log files "
                        "(/var/log: the API server's and kubelet's logs, audit logs): other "
                        "tenants' users, addresses and requests.",
                        "Remove get on the nonResourceURLs /logs, /logs/* and * from the tenant's "
                        "ClusterRoles (cluster-admin-like roles grant them).",
                        "/logs"},
    DangerousPermission{"nonresource.debug_pprof", "get", "", "", "", KubeWhere::cluster,
                        Outcome::warn,
                        "/debug/pprof/ profiles the API server on demand: its goroutines and heap, "
                        "and a profile that loads a shared control plane.",
                        "Remove get on /debug/* and * from the tenant's ClusterRoles, or run the "
                        "API server with --profiling=false.",
                        "/debug/pprof/"},
    DangerousPermission{"nonresource.metrics", "get", "", "", "", KubeWhere::cluster, Outcome::warn,
                        "The API server's /metrics counts requests per resource, verb and client: "
                        "what every other tenant runs, and when.",
                        "Grant get on /metrics to monitoring service accounts only.", "/metrics"},
};

constexpr std::array kRiskyPods = {
    RiskyPod{"privileged", "Privileged pod admitted",
             "A privileged container holds every capability and the host's devices: it owns the "
             "node and every tenant's pod on it."},
    RiskyPod{"hostpath", "Pod mounting the node's / admitted",
             "A hostPath volume of / gives the pod the node's files: kubelet credentials, other "
             "pods' volumes and secrets."},
    RiskyPod{"hostnetwork", "Pod on the host network admitted",
             "hostNetwork puts the pod in the node's network namespace: it listens and sniffs on "
             "the node's interfaces and reaches node-local services."},
};

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

bool has(const std::vector<std::string>& values, std::string_view want) {
  return std::any_of(values.begin(), values.end(),
                     [&](const std::string& v) { return v == "*" || v == want; });
}

bool resource_matches(const std::vector<std::string>& rule, const DangerousPermission& p) {
  std::string combined(p.resource);
  if (!p.subresource.empty()) combined += "/" + std::string(p.subresource);
  for (const auto& r : rule) {
    if (r == "*" || r == combined) return true;
    if (!p.subresource.empty() && r == "*/" + std::string(p.subresource)) return true;
  }
  return false;
}

Result<json> parse_object(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("read the {} answer: not a JSON object", what);
  return j;
}


}  // namespace

std::span<const DangerousPermission> dangerous_permissions() { return kPermissions; }

std::span<const RiskyPod> risky_pods() { return kRiskyPods; }

std::string permission_namespace(const DangerousPermission& p, std::string_view tenant_ns) {
  if (!p.path.empty()) return "";
  switch (p.where) {
    case KubeWhere::tenant_namespace:
      return std::string(tenant_ns);
    case KubeWhere::kube_system:
      return "kube-system";
    case KubeWhere::cluster:
      return "";
  }
  return "";
}

std::string describe_permission(const DangerousPermission& p, std::string_view tenant_ns) {
  if (!p.path.empty()) return fmt::format("{} {} (non-resource URL)", p.verb, p.path);
  std::string out = fmt::format("{} {}", p.verb, p.resource);
  if (!p.subresource.empty()) out += fmt::format("/{}", p.subresource);
  if (!p.group.empty()) out += fmt::format(".{}", p.group);
  std::string ns = permission_namespace(p, tenant_ns);
  if (p.where == KubeWhere::tenant_namespace && ns.empty())
    out += " in the tenant's namespace";
  else if (!ns.empty())
    out += fmt::format(" in namespace {}", ns);
  else if (p.resource == "secrets")
    out += " in every namespace";
  return out;
}

std::string rules_review_body(std::string_view ns) {
  json j = {{"apiVersion", "authorization.k8s.io/v1"},
            {"kind", "SelfSubjectRulesReview"},
            {"spec", {{"namespace", std::string(ns)}}}};
  return j.dump();
}

Result<RulesReview> parse_rules_review(std::string_view text) {
  auto j = parse_object(text, "SelfSubjectRulesReview");
  if (!j) return Unexpected<Error>{j.error()};
  auto status = j->find("status");
  if (status == j->end() || !status->is_object())
    return fail("read the SelfSubjectRulesReview answer: no status");
  RulesReview out;
  auto flag = status->find("incomplete");
  out.incomplete = flag != status->end() && flag->is_boolean() && flag->get<bool>();
  out.evaluation_error = core::string_field(*status, "evaluationError");
  if (auto rules = status->find("resourceRules"); rules != status->end() && rules->is_array())
    for (const auto& r : *rules) {
      if (!r.is_object()) continue;
      out.resource_rules.push_back({strings(r, "verbs"), strings(r, "apiGroups"),
                                    strings(r, "resources"), strings(r, "resourceNames")});
    }
  if (auto rules = status->find("nonResourceRules"); rules != status->end() && rules->is_array())
    for (const auto& r : *rules) {
      if (!r.is_object()) continue;
      out.non_resource_rules.push_back({strings(r, "verbs"), strings(r, "nonResourceURLs")});
    }
  return out;
}

bool rules_allow(const RulesReview& review, const DangerousPermission& p) {
  if (!p.path.empty())
    return std::any_of(review.non_resource_rules.begin(), review.non_resource_rules.end(),
                       [&](const NonResourceRule& r) {
                         return has(r.verbs, p.verb) &&
                                std::any_of(r.urls.begin(), r.urls.end(), [&](const std::string& u) {
                                  return u == p.path ||
                                         (u.ends_with('*') &&
                                          p.path.starts_with(std::string_view(u).substr(0, u.size() - 1)));
                                });
                       });
  return std::any_of(review.resource_rules.begin(), review.resource_rules.end(),
                     [&](const ResourceRule& r) {
                       return r.resource_names.empty() && has(r.verbs, p.verb) &&
                              has(r.api_groups, p.group) && resource_matches(r.resources, p);
                     });
}

std::string access_review_body(const DangerousPermission& p, std::string_view tenant_ns) {
  if (!p.path.empty())
    return json{{"apiVersion", "authorization.k8s.io/v1"},
                {"kind", "SelfSubjectAccessReview"},
                {"spec",
                 {{"nonResourceAttributes", {{"path", std::string(p.path)}, {"verb", std::string(p.verb)}}}}}}
        .dump();
  json attrs = {{"verb", std::string(p.verb)},
                {"group", std::string(p.group)},
                {"resource", std::string(p.resource)}};
  if (!p.subresource.empty()) attrs["subresource"] = std::string(p.subresource);
  std::string ns = permission_namespace(p, tenant_ns);
  if (!ns.empty()) attrs["namespace"] = ns;
  json j = {{"apiVersion", "authorization.k8s.io/v1"},
            {"kind", "SelfSubjectAccessReview"},
            {"spec", {{"resourceAttributes", attrs}}}};
  return j.dump();
}

Result<AccessReview> parse_access_review(std::string_view text) {
  auto j = parse_object(text, "SelfSubjectAccessReview");
  if (!j) return Unexpected<Error>{j.error()};
  auto status = j->find("status");
  if (status == j->end() || !status->is_object())
    return fail("read the SelfSubjectAccessReview answer: no status");
  auto allowed = status->find("allowed");
  if (allowed == status->end() || !allowed->is_boolean())
    return fail("read the SelfSubjectAccessReview answer: status.allowed is missing");
  AccessReview out;
  out.allowed = allowed->get<bool>();
  auto denied = status->find("denied");
  out.denied = denied != status->end() && denied->is_boolean() && denied->get<bool>();
  out.reason = core::string_field(*status, "reason");
  out.evaluation_error = core::string_field(*status, "evaluationError");
  return out;
}

std::string dry_run_pod_path(std::string_view ns) {
  return fmt::format("/api/v1/namespaces/{}/pods?dryRun=All", ns);
}

std::string risky_pod_body(const RiskyPod& pod, std::string_view ns) {
  json container = {{"name", "probe"},
                    {"image", "registry.k8s.io/pause:3.9"},
                    {"resources", {{"limits", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}};
  json spec = {{"restartPolicy", "Never"}, {"automountServiceAccountToken", false}};
  if (pod.id == "privileged") {
    container["securityContext"] = {{"privileged", true}};
  } else if (pod.id == "hostpath") {
    container["volumeMounts"] = json::array({{{"name", "host"}, {"mountPath", "/host"}}});
    spec["volumes"] = json::array({{{"name", "host"}, {"hostPath", {{"path", "/"}}}}});
  } else if (pod.id == "hostnetwork") {
    spec["hostNetwork"] = true;
  }
  spec["containers"] = json::array({container});
  json j = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"generateName", fmt::format("cmax-isolation-{}-", pod.id)},
              {"namespace", std::string(ns)},
              {"labels", {{"app.kubernetes.io/managed-by", "cmax"}}}}},
            {"spec", spec}};
  return j.dump();
}

std::optional<std::string> status_message(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || core::string_field(j, "kind") != "Status") return std::nullopt;
  return core::string_field(j, "message");
}

bool is_rbac_forbidden(std::string_view message) {
  return message.find(" cannot create resource ") != std::string_view::npos;
}

}  // namespace cmax::isolation
