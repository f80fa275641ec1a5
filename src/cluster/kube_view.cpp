#include "cluster/kube_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "audit/check.h"
#include "audit/facts.h"

namespace cmax::cluster {
namespace {

using audit::Category;
using audit::Finding;
using audit::Outcome;
using audit::Severity;
using nlohmann::json;

constexpr std::string_view kCriterionTopology = "Orchestration: topology-aware scheduling";
constexpr std::string_view kCriterionExporter = "Monitoring: GPU metrics exported (dcgm-exporter)";
constexpr std::string_view kCriterionProxy = "Security: tenants cannot reach the kubelet API (nodes/proxy)";

// The items of a list reply, or why there are none: "GET PATH: 403 Forbidden: ..." / transport.
struct Items {
  std::vector<json> items;
  std::string problem;  ///< empty when read
  bool absent = false;  ///< 404: the API (a CRD) is not installed
};

Items items_of(const Result<sched::KubeReply>& r, std::string_view what) {
  Items out;
  if (!r) {
    out.problem = fmt::format("cannot list {}: {}", what, r.error().message);
    return out;
  }
  if (r->status == 404) {
    out.absent = true;
    return out;
  }
  if (r->status < 200 || r->status > 299) {
    out.problem = fmt::format("cannot list {}: HTTP {} {}", what, r->status, r->reason);
    if (r->status == 403) out.problem += " (the credentials may not list them)";
    return out;
  }
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("items") || !j["items"].is_array()) {
    out.problem = fmt::format("cannot read the {} list: not a Kubernetes list", what);
    return out;
  }
  for (auto& i : j["items"])
    if (i.is_object()) out.items.push_back(std::move(i));
  return out;
}

// Safe reads of API answers of any shape: a missing key or a value of another type reads as null,
// an empty array or "" (nlohmann's value() and operator[] throw or assert on those).
const json& at(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}
const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  const json& v = at(j, key);
  return v.is_array() ? v : empty;
}
std::string sval(const json& j, const char* key) {
  const json& v = at(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// True (and `f` unverified, with why) when the list could not be read or its API is not served.
bool unreadable(const Items& items, std::string_view api, Finding& f) {
  if (items.problem.empty() && !items.absent) return false;
  f.outcome = Outcome::unverified;
  f.reason = items.absent ? fmt::format("the API server has no {}", api) : items.problem;
  return true;
}

std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) p = &at(*p, k);
  return p->is_string() ? p->get<std::string>() : "";
}

// An integer field of j[section] (status counts), 0 when absent: Kubernetes omits zero counts.
long num(const json& j, const char* section, const char* key) {
  const json& v = at(at(j, section), key);
  return v.is_number_integer() ? v.get<long>() : 0;
}

Finding base(std::string id, Category c, Severity s, bool security, std::string title, std::string criterion,
             std::string description, std::string remediation, std::string source) {
  Finding f;
  f.check_id = std::move(id);
  f.category = c;
  f.severity = s;
  f.security = security;
  f.title = std::move(title);
  f.criterion = std::move(criterion);
  f.description = std::move(description);
  f.remediation = std::move(remediation);
  f.evidence_source = std::move(source);
  return f;
}

// Node labels that name a network position finer than a zone: GKE's topology block/subblock/host,
// EKS's network-node-layer-N, and the rack/block/switch/spine labels sites use for Kueue TAS levels.
bool fine_topology_label(const std::string& key) {
  static const std::regex fine(R"(^(cloud\.google\.com/gce-topology-|topology\.k8s\.aws/|networking\.gke\.io/)|network.*topology|topology.*(block|rack|switch|spine|pod))",
                               std::regex::icase);
  return std::regex_search(key, fine);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> dcgm_exporter_tag_versions(std::string_view image) {
  std::string ref(image);
  if (auto at = ref.find('@'); at != std::string::npos) ref.erase(at);
  auto slash = ref.rfind('/');
  auto colon = ref.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return std::nullopt;
  const std::string tag = ref.substr(colon + 1);
  static const std::regex grammar(R"(^([0-9]+\.[0-9]+\.[0-9]+)-([0-9]+\.[0-9]+\.[0-9]+)-[A-Za-z])");
  std::smatch m;
  if (!std::regex_search(tag, m, grammar)) return std::nullopt;
  return std::make_pair(m[1].str(), m[2].str());
}

Finding judge_kube_topology(const KubeViewAnswers& a, const std::vector<std::string>& selected) {
  Finding f = base("orchestration.kube.topology", Category::orchestration, Severity::config, false,
                   "The scheduler knows the network topology (topology-aware placement)", std::string(kCriterionTopology),
                   "Looks for what lets Kubernetes place a job's pods on network-adjacent nodes: Kueue Topology "
                   "objects (TAS), Volcano HyperNodes, NVIDIA NVLink cliques (nvidia.com/gpu.clique, GB200/GB300 "
                   "NVL72) or rack/block network labels on every selected node. Zone and region labels alone do not "
                   "say which nodes share a leaf switch.",
                   "Label the GPU nodes with their block/rack/host position (the cloud's topology labels, or the "
                   "site's) and define a Kueue Topology over them, or install Volcano's HyperNodes.",
                   "GET /api/v1/nodes, kueue.x-k8s.io topologies, topology.volcano.sh hypernodes");
  Items nodes = items_of(a.nodes, "nodes");
  if (!nodes.problem.empty()) {
    f.outcome = Outcome::unverified;
    f.reason = nodes.problem;
    return f;
  }
  std::set<std::string> want(selected.begin(), selected.end());
  std::vector<std::string> mechanisms, problems;
  // Kueue TAS and Volcano: objects, not labels.
  for (auto [reply, what, mech] : {std::tuple{&a.kueue_topologies, "Kueue Topology objects", "kueue-tas"},
                                   std::tuple{&a.volcano_hypernodes, "Volcano HyperNodes", "volcano-hypernode"}}) {
    Items objs = items_of(*reply, what);
    if (!objs.problem.empty()) problems.push_back(objs.problem);
    else if (!objs.items.empty()) mechanisms.push_back(fmt::format("{} ({} object(s))", mech, objs.items.size()));
  }
  std::size_t considered = 0, clique = 0, fine = 0, zoned = 0;
  std::set<std::string> fine_keys;
  std::vector<std::string> without;
  for (const auto& n : nodes.items) {
    const std::string name = str(n, {"metadata", "name"});
    if (!want.empty() && !want.count(name)) continue;
    ++considered;
    bool has_fine = false, has_clique = false, has_zone = false;
    if (const json& labels = at(at(n, "metadata"), "labels"); labels.is_object())
      for (const auto& [k, v] : labels.items()) {
        if (!v.is_string() || v.get<std::string>().empty()) continue;
        if (k == "nvidia.com/gpu.clique") has_clique = true;
        if (fine_topology_label(k)) {
          has_fine = true;
          fine_keys.insert(k);
        }
        if (k == "topology.kubernetes.io/zone" || k == "topology.kubernetes.io/region") has_zone = true;
      }
    clique += has_clique;
    fine += has_fine;
    zoned += has_zone;
    if (!has_fine && !has_clique) without.push_back(name);
  }
  if (clique > 0) mechanisms.push_back(fmt::format("nvidia-gpu-clique ({} of {} nodes)", clique, considered));
  if (fine > 0)
    mechanisms.push_back(fmt::format("network topology labels {} ({} of {} nodes)", fmt::join(fine_keys, ", "), fine,
                                     considered));
  f.evidence_value = mechanisms.empty() ? "none" : fmt::format("{}", fmt::join(mechanisms, "; "));
  f.expected = "Kueue TAS, Volcano HyperNodes, or NVLink-clique / rack-block labels on every GPU node";
  const bool objects = std::any_of(mechanisms.begin(), mechanisms.end(), [](const std::string& m) {
    return m.starts_with("kueue") || m.starts_with("volcano");
  });
  if (considered == 0 && !objects) {
    f.outcome = Outcome::unverified;
    f.reason = "none of the selected nodes is in the API's node list";
    return f;
  }
  if (objects || (without.empty() && considered > 0)) {
    f.outcome = Outcome::pass;
    f.observed = f.evidence_value;
    f.reason = objects ? "the scheduler has topology objects to place by" : "every selected node carries its position";
    return f;
  }
  if (!mechanisms.empty()) {
    f.outcome = Outcome::warn;
    f.observed = f.evidence_value;
    std::vector<std::string> shown(without.begin(), without.begin() + std::min<std::size_t>(without.size(), 8));
    f.reason = fmt::format("{} of {} selected nodes carry no topology label ({}{}): jobs placed there ignore the fabric",
                           without.size(), considered, fmt::join(shown, ", "), without.size() > shown.size() ? ", ..." : "");
    return f;
  }
  if (!problems.empty()) {
    f.outcome = Outcome::unverified;
    f.reason = fmt::format("no topology label on the nodes, and {}", fmt::join(problems, "; "));
    return f;
  }
  f.outcome = Outcome::warn;
  f.observed = zoned > 0 ? fmt::format("zone/region labels only ({} of {} nodes)", zoned, considered) : "none";
  f.reason = "no Kueue Topology, no Volcano HyperNode, no NVLink clique and no rack/block label: the scheduler cannot "
             "keep a job's pods on adjacent nodes";
  return f;
}

namespace {

// The DaemonSets whose containers run dcgm-exporter's image.
struct ExporterSet {
  std::string ns, name, image;
  long desired = 0, ready = 0;
  bool status_read = false;
};

std::vector<ExporterSet> exporter_sets_in(const std::vector<json>& items) {
  std::vector<ExporterSet> out;
  for (const auto& ds : items) {
    const json& pod = at(at(at(ds, "spec"), "template"), "spec");
    std::string image;
    for (const char* list : {"containers", "initContainers"})
      for (const auto& c : arr(pod, list)) {
        std::string img = sval(c, "image");
        std::string repo = img.substr(0, img.find_first_of(":@", img.rfind('/') == std::string::npos ? 0 : img.rfind('/')));
        if (repo.ends_with("/dcgm-exporter") || repo == "dcgm-exporter") image = img;
      }
    if (image.empty()) continue;
    ExporterSet e{str(ds, {"metadata", "namespace"}), str(ds, {"metadata", "name"}), image};
    e.status_read = !at(at(ds, "status"), "desiredNumberScheduled").is_null();
    e.desired = num(ds, "status", "desiredNumberScheduled");
    e.ready = num(ds, "status", "numberReady");
    out.push_back(std::move(e));
  }
  return out;
}

// The dcgm-exporter DaemonSets among all the DaemonSets listed.
struct Exporters {
  std::vector<ExporterSet> sets;
  std::size_t daemonsets = 0;
  bool empty() const { return sets.empty(); }
};

// The answers' dcgm-exporter DaemonSets, or nullopt with `f` unverified when the list could not be
// read (both dcgm-exporter judges start here).
std::optional<Exporters> exporter_sets(const KubeViewAnswers& a, Finding& f) {
  Items ds = items_of(a.daemonsets, "daemonsets");
  if (unreadable(ds, "apps/v1 daemonsets", f)) return std::nullopt;
  return Exporters{exporter_sets_in(ds.items), ds.items.size()};
}

}  // namespace

Finding judge_dcgm_exporter_daemonset(const KubeViewAnswers& a, std::size_t gpu_nodes) {
  Finding f = base("monitoring.kube.dcgm_exporter", Category::monitoring, Severity::missing, false,
                   "dcgm-exporter runs on the GPU nodes (DaemonSet)", std::string(kCriterionExporter),
                   "Lists the DaemonSets of every namespace, finds the one running NVIDIA's dcgm-exporter image (the "
                   "GPU operator's nvidia-dcgm-exporter, or a Helm install) and reads how many of its pods are ready.",
                   "Install dcgm-exporter on every GPU node (the GPU operator's dcgmExporter.enabled, or the "
                   "dcgm-exporter Helm chart) and scrape :9400/metrics.",
                   "GET /apis/apps/v1/daemonsets");
  f.expected = fmt::format("ready on {} GPU node(s)", gpu_nodes);
  auto sets = exporter_sets(a, f);
  if (!sets) return f;
  if (sets->empty()) {
    f.outcome = Outcome::fail;
    f.observed = "no dcgm-exporter DaemonSet";
    f.reason = fmt::format("none of the {} DaemonSets runs dcgm-exporter: GPU health and utilisation never reach the "
                           "monitoring stack (unless it runs outside Kubernetes: the nodes' monitoring.dcgm_exporter "
                           "says)",
                           sets->daemonsets);
    return f;
  }
  const auto& e = *std::max_element(sets->sets.begin(), sets->sets.end(),
                                    [](const ExporterSet& x, const ExporterSet& y) { return x.ready < y.ready; });
  f.evidence_source = fmt::format("DaemonSet {}/{}", e.ns, e.name);
  f.evidence_value = fmt::format("image {}, {} of {} ready", e.image, e.ready, e.desired);
  f.observed = fmt::format("{}/{}: {} of {} pods ready", e.ns, e.name, e.ready, e.desired);
  if (!e.status_read) {
    f.outcome = Outcome::unverified;
    f.reason = "the DaemonSet has no status yet (its controller has not counted its pods)";
    return f;
  }
  if (e.ready <= 0) {
    f.outcome = Outcome::fail;
    f.reason = "the dcgm-exporter DaemonSet has no ready pod";
    return f;
  }
  if (e.ready < e.desired || static_cast<std::size_t>(e.ready) < gpu_nodes) {
    f.outcome = Outcome::warn;
    f.reason = fmt::format("dcgm-exporter is ready on {} node(s) of {} it should run on and {} GPU node(s) selected: "
                           "the others export nothing",
                           e.ready, e.desired, gpu_nodes);
    return f;
  }
  f.outcome = Outcome::pass;
  f.reason = "ready on every node it is scheduled to";
  return f;
}

Finding judge_dcgm_exporter_floor(const KubeViewAnswers& a, const audit::Floors& floors, const core::Clock& clock) {
  const audit::Check* check = nullptr;
  for (const auto& c : audit::all_checks())
    if (c.id == "security.dcgm_exporter.floor") check = &c;
  Finding f = base("security.kube.dcgm_exporter.floor", Category::security, Severity::version, true,
                   "dcgm-exporter's image at or above the security floor",
                   check ? std::string(check->criterion) : std::string(),
                   "Reads the dcgm-exporter DaemonSet's image tag (NVIDIA's \"<DCGM>-<exporter>-<os>\") and compares "
                   "the exporter release with the floor, as security.dcgm_exporter.floor does on a host.",
                   "Upgrade dcgm-exporter (image nvcr.io/nvidia/k8s/dcgm-exporter) to the floor or newer.",
                   "GET /apis/apps/v1/daemonsets");
  auto sets = exporter_sets(a, f);
  if (!sets) return f;
  if (sets->empty()) {
    f.outcome = Outcome::not_applicable;
    f.reason = "no dcgm-exporter DaemonSet (monitoring.kube.dcgm_exporter)";
    return f;
  }
  // The oldest release among them decides.
  std::optional<Finding> worst;
  for (const auto& e : sets->sets) {
    auto versions = dcgm_exporter_tag_versions(e.image);
    Finding one = f;
    one.evidence_source = fmt::format("DaemonSet {}/{} image", e.ns, e.name);
    one.evidence_value = e.image;
    if (!versions || !check) {
      one.outcome = Outcome::unverified;
      one.observed = e.image;
      one.reason = fmt::format("the image {} does not say its versions (NVIDIA tags it <DCGM>-<exporter>-<os>, e.g. "
                               "4.2.3-4.1.3-ubuntu22.04): pin a released tag",
                               e.image);
    } else {
      audit::Facts facts;
      facts.present("tool.dcgm_exporter.version", fmt::format("{}-{}", versions->first, versions->second),
                    fmt::format("DaemonSet {}/{} image {}", e.ns, e.name, e.image));
      audit::CheckContext ctx{facts, floors, audit::kKubernetes, clock};
      Finding judged = audit::run_check(*check, ctx);
      one.outcome = judged.outcome;
      one.observed = judged.observed;
      one.expected = judged.expected;
      one.reason = judged.reason;
      one.cves = judged.cves;
      one.links = judged.links;
    }
    auto rank = [](Outcome o) {
      switch (o) {
        case Outcome::fail: return 4;
        case Outcome::unverified: return 3;
        case Outcome::warn: return 2;
        case Outcome::pass: return 1;
        default: return 0;
      }
    };
    if (!worst || rank(one.outcome) > rank(worst->outcome)) worst = std::move(one);
  }
  return *worst;
}

Finding judge_nodes_proxy_holders(const KubeViewAnswers& a) {
  Finding f = base("security.kube.nodes_proxy.holders", Category::security, Severity::config, true,
                   "Nobody but the cluster itself may get nodes/proxy", std::string(kCriterionProxy),
                   "Lists every ClusterRole granting get on nodes/proxy (or on every resource) and every "
                   "ClusterRoleBinding to one, and names their subjects. nodes/proxy reaches the kubelet API of every "
                   "node: exec into any pod, any tenant's included, past admission and audit.",
                   "Remove nodes/proxy from the ClusterRoles bound to people, tenants and add-ons (monitoring reads "
                   "nodes/metrics instead), or bind those roles to nobody.",
                   "GET /apis/rbac.authorization.k8s.io/v1/clusterroles, clusterrolebindings");
  Items roles = items_of(a.clusterroles, "clusterroles");
  Items bindings = items_of(a.clusterrolebindings, "clusterrolebindings");
  for (const Items* it : {&roles, &bindings})
    if (unreadable(*it, "RBAC API", f)) return f;
  auto has = [](const json& rule, const char* key, std::initializer_list<const char*> any) {
    for (const auto& v : arr(rule, key))
      if (v.is_string() && std::find(any.begin(), any.end(), v.get<std::string>()) != any.end()) return true;
    return false;
  };
  std::set<std::string> granting;
  for (const auto& r : roles.items)
    for (const auto& rule : arr(r, "rules"))
      if (has(rule, "apiGroups", {"", "*"}) && has(rule, "resources", {"nodes/proxy", "*", "*/proxy"}) &&
          has(rule, "verbs", {"get", "*"}))
        granting.insert(str(r, {"metadata", "name"}));
  std::vector<std::string> outsiders, system;
  for (const auto& b : bindings.items) {
    const std::string role = str(b, {"roleRef", "name"});
    if (str(b, {"roleRef", "kind"}) != "ClusterRole" || !granting.count(role)) continue;
    for (const auto& s : arr(b, "subjects")) {
      const std::string kind = sval(s, "kind"), name = sval(s, "name"), ns = sval(s, "namespace");
      std::string who = kind == "ServiceAccount" ? fmt::format("ServiceAccount {}/{}", ns, name) : fmt::format("{} {}", kind, name);
      std::string line = fmt::format("{} (ClusterRole {} via ClusterRoleBinding {})", who, role, str(b, {"metadata", "name"}));
      const bool is_system = name.starts_with("system:") || (kind == "ServiceAccount" && ns == "kube-system");
      (is_system ? system : outsiders).push_back(std::move(line));
    }
  }
  f.expected = "only the cluster's own system: identities";
  f.evidence_value = fmt::format("{} ClusterRole(s) grant it: {}", granting.size(), fmt::join(granting, ", "));
  if (!outsiders.empty()) {
    f.outcome = Outcome::fail;
    f.observed = fmt::format("{}", fmt::join(outsiders, "; "));
    f.reason = fmt::format("{} subject(s) outside the control plane may get nodes/proxy: {}", outsiders.size(), f.observed);
    return f;
  }
  f.outcome = Outcome::pass;
  f.observed = system.empty() ? "no subject" : fmt::format("{}", fmt::join(system, "; "));
  f.reason = system.empty() ? "no ClusterRoleBinding gives get on nodes/proxy"
                            : "only the cluster's own system: identities hold it";
  return f;
}

namespace {

// GET /apis/GROUP for the preferred version, then its PLURAL list; a 404 reply when the group is
// not served (the CRD is not installed).
Result<sched::KubeReply> list_crd(const sched::KubeClient& client, std::string_view group, std::string_view plural) {
  auto g = client.send("GET", fmt::format("/apis/{}", group));
  if (!g || g->status != 200) return g;
  json j = json::parse(g->body, nullptr, false);
  std::string version = j.is_discarded() ? "" : str(j, {"preferredVersion", "version"});
  if (version.empty()) return sched::KubeReply{404, "Not Found", ""};
  return client.send("GET", fmt::format("/apis/{}/{}/{}", group, version, plural));
}

}  // namespace

std::vector<Finding> run_kube_view(const sched::KubeClient& client, const std::vector<std::string>& selected,
                                   const audit::Floors& floors, const core::Clock& clock) {
  KubeViewAnswers a{client.send("GET", "/api/v1/nodes"),
                    list_crd(client, "kueue.x-k8s.io", "topologies"),
                    list_crd(client, "topology.volcano.sh", "hypernodes"),
                    client.send("GET", "/apis/apps/v1/daemonsets"),
                    client.send("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
                    client.send("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")};
  return {judge_kube_topology(a, selected), judge_dcgm_exporter_daemonset(a, selected.size()),
          judge_dcgm_exporter_floor(a, floors, clock), judge_nodes_proxy_holders(a)};
}

}  // namespace cmax::cluster
