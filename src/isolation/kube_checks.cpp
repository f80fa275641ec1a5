#include "isolation/kube_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>

#include "isolation/finding.h"

namespace cmax::isolation {
namespace {

using audit::Finding;
using audit::Outcome;

constexpr std::string_view kCriterion =
    "Security: tenant isolation (what the tenant's Kubernetes identity may do)";
constexpr std::size_t kClip = 400;

std::string clip(std::string_view s) {
  if (s.size() <= kClip) return std::string(s);
  return std::string(s.substr(0, kClip)) + "...";
}

bool ok(int status) { return status >= 200 && status < 300; }

// Why a reply is no answer, and what to do about it.
std::string reply_problem(std::string_view method, std::string_view path,
                          const Result<sched::KubeReply>& reply, std::string_view needs) {
  if (!reply) return "cannot ask the API server: " + reply.error().message;
  std::string what = sched::describe_reply(method, path, *reply);
  if (reply->status == 401)
    return fmt::format(
        "cannot ask the API server: {}: the token was refused; give a valid one with "
        "--kube-token-file",
        what);
  if (reply->status == 403)
    return fmt::format("cannot ask the API server: {}: the identity may not {}", what, needs);
  return fmt::format("cannot ask the API server: {}", what);
}

Finding permission_base(const DangerousPermission& p, std::string_view ns) {
  Finding f = security_finding(fmt::format("isolation.kube.{}", p.id),
                               fmt::format("Tenant may {}", describe_permission(p, ns)), kCriterion);
  f.expected = "denied to the tenant's identity";
  f.evidence_source = fmt::format("POST {} ({})", kAccessReviewPath, describe_permission(p, ns));
  f.description = std::string(p.why);
  f.remediation = std::string(p.fix);
  return f;
}

Finding pod_base(const RiskyPod& pod, std::string_view ns) {
  Finding f = security_finding(fmt::format("isolation.kube.admission.{}", pod.id), std::string(pod.title),
                               kCriterion);
  f.expected = "refused by RBAC or by admission (PodSecurity baseline or restricted, or a policy)";
  f.evidence_source = fmt::format("POST {} (dry run, nothing created)", dry_run_pod_path(ns));
  f.description = std::string(pod.why);
  f.remediation =
      "Enforce PodSecurity baseline or restricted on tenant namespaces (label "
      "pod-security.kubernetes.io/enforce), or an admission policy with the same rules.";
  return f;
}

// Provisioners whose volumes can be mounted ReadWriteMany (shared filesystems), by suffix.
constexpr std::string_view kRwxProvisioners[] = {
    "nfs.csi.k8s.io",          "cephfs.csi.ceph.com",      "efs.csi.aws.com",         "filestore.csi.storage.gke.io",
    "file.csi.azure.com",      "fsx.csi.aws.com",          "csi.weka.io",             "spectrumscale.csi.ibm.com",
    "beegfs.csi.netapp.com",   "csi.juicefs.com",          "csi.vastdata.com",        "kubernetes.io/azure-file",
    "nfs-subdir-external-provisioner", "nfs-provisioner",  "lustre.csi.hpe.com",      "csi.ddn.com",
};

bool rwx_provisioner(std::string_view p) {
  for (auto k : kRwxProvisioners)
    if (p == k || p.ends_with(std::string(".") + std::string(k)) || p.ends_with(std::string("/") + std::string(k)) ||
        (k.find('.') == std::string_view::npos && p.find(k) != std::string_view::npos))
      return true;
  return false;
}

}  // namespace

RulesAnswer read_rules_answer(std::string_view ns, const Result<sched::KubeReply>& reply) {
  RulesAnswer out;
  if (!reply || !ok(reply->status)) {
    out.problem = reply_problem("POST", kRulesReviewPath, reply,
                                fmt::format("create selfsubjectrulesreviews (namespace {})", ns));
    return out;
  }
  auto review = parse_rules_review(reply->body);
  if (!review) {
    out.problem = "cannot ask the API server: " + review.error().message;
    return out;
  }
  out.read = true;
  out.review = std::move(*review);
  return out;
}

Finding judge_permission(const DangerousPermission& p, std::string_view tenant_ns,
                         const Result<sched::KubeReply>& access_reply, const RulesAnswer* rules) {
  Finding f = permission_base(p, tenant_ns);
  const bool listed = rules && rules->read && rules_allow(rules->review, p);
  const std::string incomplete =
      rules && rules->read && rules->review.incomplete
          ? fmt::format("; the rules review was incomplete ({}), so its rules are a lower bound",
                        rules->review.evaluation_error.empty() ? "no reason given"
                                                               : rules->review.evaluation_error)
          : std::string();
  if (listed) {
    // A rule the API server lists is a grant even when the list is incomplete.
    f.outcome = p.when_allowed;
    f.observed = "allowed: the SelfSubjectRulesReview lists a rule granting it";
    f.reason = f.observed + incomplete;
  }
  if (!access_reply || !ok(access_reply->status)) {
    f.evidence_value = access_reply ? clip(access_reply->body) : std::string();
    if (listed) return f;
    f.outcome = Outcome::unverified;
    f.observed = "not evaluated";
    f.reason = reply_problem("POST", kAccessReviewPath, access_reply,
                             "create selfsubjectaccessreviews (grant the system:basic-user "
                             "ClusterRole, or run with an identity that has it)") +
               incomplete;
    return f;
  }
  f.evidence_value = clip(access_reply->body);
  auto review = parse_access_review(access_reply->body);
  if (!review) {
    if (listed) return f;
    f.outcome = Outcome::unverified;
    f.observed = "not evaluated";
    f.reason = "cannot ask the API server: " + review.error().message;
    return f;
  }
  if (review->allowed) {
    f.outcome = p.when_allowed;
    f.observed = "allowed";
    f.reason = fmt::format("the API server allows it{}",
                           review->reason.empty() ? "" : ": " + review->reason);
    return f;
  }
  if (listed) return f;
  if (!review->evaluation_error.empty() && !review->denied) {
    // Not allowed only because an authorizer failed: absence of a grant is not shown.
    f.outcome = Outcome::unverified;
    f.observed = "not evaluated";
    f.reason = fmt::format("the API server could not evaluate every rule: {}{}",
                           review->evaluation_error, incomplete);
    return f;
  }
  f.outcome = Outcome::pass;
  f.observed = review->denied ? "denied" : "not allowed";
  f.reason = fmt::format("the SelfSubjectAccessReview answered {}{}", f.observed,
                         review->reason.empty() ? "" : ": " + review->reason);
  return f;
}

Finding judge_admission(const RiskyPod& pod, std::string_view ns,
                        const Result<sched::KubeReply>& reply) {
  Finding f = pod_base(pod, ns);
  const std::string path = dry_run_pod_path(ns);
  if (!reply) {
    f.outcome = Outcome::unverified;
    f.observed = "not evaluated";
    f.reason = "cannot ask the API server: " + reply.error().message;
    return f;
  }
  f.evidence_value = clip(reply->body);
  if (ok(reply->status)) {
    f.outcome = Outcome::fail;
    f.observed =
        fmt::format("admitted ({} {}; dry run, nothing was created)", reply->status, reply->reason);
    f.reason = "the API server would create this pod for the tenant";
    return f;
  }
  auto status = status_message(reply->body);
  if (reply->status == 403 && status) {
    // Only a Kubernetes Status says who refused; a proxy's bare 403 is no evidence either way.
    const std::string& message = *status;
    f.outcome = Outcome::pass;
    if (is_rbac_forbidden(message)) {
      f.observed = "refused by RBAC: the identity may not create pods";
      f.reason = fmt::format("RBAC forbids creating pods in namespace {}: {}", ns, clip(message));
    } else {
      f.observed = "refused by admission";
      f.reason = fmt::format("admission refused the pod: {}", clip(message));
    }
    return f;
  }
  f.outcome = Outcome::unverified;
  f.observed = "not evaluated";
  f.reason =
      fmt::format("cannot ask the API server: {}", sched::describe_reply("POST", path, *reply));
  return f;
}

namespace {

// obj[section][key] (obj[key] when section is null) when it is a string, else "": answers of any
// shape, since nlohmann's value() throws on a member of another type.
std::string string_in(const nlohmann::json& obj, const char* section, const char* key) {
  const nlohmann::json* at = &obj;
  if (section) {
    if (!at->is_object() || !at->contains(section)) return "";
    at = &(*at)[section];
  }
  if (!at->is_object()) return "";
  auto it = at->find(key);
  return it != at->end() && it->is_string() ? it->get<std::string>() : "";
}

std::string or_default(std::string s, const char* fallback) { return s.empty() ? fallback : s; }

}  // namespace

Finding judge_rwx_storage(std::string_view ns, const Result<sched::KubeReply>& classes,
                          const Result<sched::KubeReply>& claims) {
  Finding f;
  f.check_id = "storage.kube.rwx";
  f.category = audit::Category::storage;
  f.severity = audit::Severity::config;
  f.security = false;
  f.title = "A ReadWriteMany volume is available to the tenant";
  f.criterion = "Storage: shared (ReadWriteMany) volumes for multi-node jobs on Kubernetes";
  f.expected = "a Bound ReadWriteMany claim, or a StorageClass of a shared filesystem";
  f.description =
      "Multi-node training and checkpointing on Kubernetes need a volume every pod mounts read-write "
      "(ReadWriteMany); block storage classes cannot give one.";
  f.remediation = "Install a shared-filesystem CSI driver (NFS, CephFS, Lustre, Weka, ...) and a StorageClass for it.";
  std::string claims_path = fmt::format("/api/v1/namespaces/{}/persistentvolumeclaims", ns);
  f.evidence_source = fmt::format("GET /apis/storage.k8s.io/v1/storageclasses, GET {}", claims_path);
  std::vector<std::string> problems;
  if (claims && ok(claims->status)) {
    auto doc = nlohmann::json::parse(claims->body, nullptr, false);
    if (doc.is_object() && doc.contains("items") && doc["items"].is_array())
      for (const auto& pvc : doc["items"]) {
        if (!pvc.is_object()) continue;
        bool rwx = false;
        if (pvc.contains("spec") && pvc["spec"].is_object() && pvc["spec"].contains("accessModes") &&
            pvc["spec"]["accessModes"].is_array())
          for (const auto& m : pvc["spec"]["accessModes"]) rwx = rwx || m == "ReadWriteMany";
        bool bound = pvc.contains("status") && pvc["status"].is_object() && string_in(pvc, "status", "phase") == "Bound";
        if (rwx && bound) {
          f.outcome = Outcome::pass;
          f.observed = fmt::format("PVC {} is Bound ReadWriteMany (class {})",
                                   or_default(string_in(pvc, "metadata", "name"), "?"),
                                   or_default(string_in(pvc, "spec", "storageClassName"), "default"));
          return f;
        }
      }
  } else {
    problems.push_back(reply_problem("GET", claims_path, claims, "list persistentvolumeclaims"));
  }
  if (!classes || !ok(classes->status)) {
    problems.push_back(reply_problem("GET", "/apis/storage.k8s.io/v1/storageclasses", classes, "list storageclasses"));
    f.outcome = Outcome::unverified;
    f.reason = fmt::format("{}", fmt::join(problems, "; "));
    return f;
  }
  auto doc = nlohmann::json::parse(classes->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
    f.outcome = Outcome::unverified;
    f.reason = "the StorageClass list is not a Kubernetes list (no items)";
    return f;
  }
  std::vector<std::string> rwx, block;
  for (const auto& sc : doc["items"]) {
    if (!sc.is_object()) continue;
    std::string name = or_default(string_in(sc, "metadata", "name"), "?");
    std::string prov = string_in(sc, nullptr, "provisioner");
    (rwx_provisioner(prov) ? rwx : block).push_back(fmt::format("{} ({})", name, prov));
  }
  if (!rwx.empty()) {
    f.outcome = Outcome::pass;
    f.observed = fmt::format("shared-filesystem class: {}", fmt::join(rwx, ", "));
    f.reason = "the class's provisioner serves ReadWriteMany; no claim was created to prove it (read-only audit)";
    return f;
  }
  f.outcome = Outcome::warn;
  f.observed = block.empty() ? "no StorageClass" : fmt::format("block classes only: {}", fmt::join(block, ", "));
  f.reason = "no StorageClass provisions a shared filesystem and no ReadWriteMany claim is Bound: pods on different "
             "nodes cannot share a writable volume";
  return f;
}

std::vector<Finding> kube_not_applicable(std::string_view reason) {
  std::vector<Finding> out;
  for (const auto& p : dangerous_permissions()) {
    Finding f = permission_base(p, "");
    f.outcome = Outcome::not_applicable;
    f.reason = std::string(reason);
    out.push_back(std::move(f));
  }
  for (const auto& pod : risky_pods()) {
    Finding f = pod_base(pod, "NS");
    f.outcome = Outcome::not_applicable;
    f.reason = std::string(reason);
    out.push_back(std::move(f));
  }
  Finding rwx = judge_rwx_storage("", Unexpected<Error>{Error{""}}, Unexpected<Error>{Error{""}});
  rwx.outcome = Outcome::not_applicable;
  rwx.reason = std::string(reason);
  rwx.observed.clear();
  out.push_back(std::move(rwx));
  return out;
}

KubeRun run_kube_checks(const KubeCheckOptions& options, const sched::KubeClient& client) {
  KubeRun run;
  const std::string json = "application/json";
  // Once the API server cannot be reached, the rest is not sent: each would wait out its timeout.
  std::optional<Error> down;
  auto ask = [&](const std::string& path, const std::string& body) -> Result<sched::KubeReply> {
    if (down)
      return Unexpected<Error>{
          Error{down->message + " (not sent: an earlier request got no answer)"}};
    auto reply = client.send("POST", path, json, body);
    if (!reply) down = reply.error();
    return reply;
  };
  std::map<std::string, RulesAnswer> rules;  // by namespace
  for (const auto& p : dangerous_permissions()) {
    std::string ns = permission_namespace(p, options.ns);
    if (ns.empty() || rules.count(ns)) continue;
    auto reply = ask(std::string(kRulesReviewPath), rules_review_body(ns));
    rules.emplace(ns, read_rules_answer(ns, reply));
  }
  for (const auto& [ns, answer] : rules) {
    std::string state = !answer.read ? "not read"
                        : answer.review.incomplete
                            ? "incomplete: " + (answer.review.evaluation_error.empty()
                                                    ? std::string("no reason given")
                                                    : answer.review.evaluation_error)
                            : "complete";
    run.facts.emplace_back("isolation.kube.rules_review." + ns, state);
    if (!answer.read)
      run.notes.push_back(fmt::format(
          "rules review of namespace {}: {}; each permission is asked on its own instead", ns,
          answer.problem));
    else if (answer.review.incomplete)
      run.notes.push_back(fmt::format(
          "rules review of namespace {} is incomplete ({}): rules it omits are asked one by one",
          ns,
          answer.review.evaluation_error.empty() ? "no reason given"
                                                 : answer.review.evaluation_error));
  }
  int unanswered = 0;
  for (const auto& p : dangerous_permissions()) {
    std::string ns = permission_namespace(p, options.ns);
    auto reply = ask(std::string(kAccessReviewPath), access_review_body(p, options.ns));
    const RulesAnswer* r = nullptr;
    // nonResourceRules do not depend on the namespace: the tenant namespace's review has them.
    if (!ns.empty()) r = &rules[ns];
    else if (!p.path.empty() && rules.count(options.ns)) r = &rules[options.ns];
    auto f = judge_permission(p, options.ns, reply, r);
    if (f.outcome == Outcome::unverified) ++unanswered;
    run.findings.push_back(std::move(f));
  }
  for (const auto& pod : risky_pods()) {
    auto reply = ask(dry_run_pod_path(options.ns), risky_pod_body(pod, options.ns));
    auto f = judge_admission(pod, options.ns, reply);
    if (f.outcome == Outcome::unverified) ++unanswered;
    run.findings.push_back(std::move(f));
  }
  {
    auto get = [&](const std::string& path) -> Result<sched::KubeReply> {
      if (down) return Unexpected<Error>{Error{down->message + " (not sent: an earlier request got no answer)"}};
      auto reply = client.send("GET", path);
      if (!reply) down = reply.error();
      return reply;
    };
    auto classes = get("/apis/storage.k8s.io/v1/storageclasses");
    auto claims = get(fmt::format("/api/v1/namespaces/{}/persistentvolumeclaims", options.ns));
    run.findings.push_back(judge_rwx_storage(options.ns, classes, claims));
  }
  run.facts.emplace_back("isolation.kube.api", options.api.api_url);
  run.facts.emplace_back("isolation.kube.namespace", options.ns);
  if (unanswered > 0)
    run.notes.push_back(
        fmt::format("{} Kubernetes check{} could not be evaluated and {} unverified (see each "
                    "finding's reason; the identity needs create on selfsubjectrulesreviews and "
                    "selfsubjectaccessreviews, as in the system:basic-user ClusterRole)",
                    unanswered, unanswered == 1 ? "" : "s", unanswered == 1 ? "is" : "are"));
  return run;
}

}  // namespace cmax::isolation
