#include "drill/kube_view.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/json_fields.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;


const json* object_at(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_object() ? &*it : nullptr;
}

const json* array_at(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_array() ? &*it : nullptr;
}

bool workload(const json& pod) {
  if (!pod.is_object()) return false;
  const json* meta = object_at(pod, "metadata");
  if (meta != nullptr) {
    if (const json* owners = array_at(*meta, "ownerReferences"))
      for (const auto& o : *owners)
        if (o.is_object() && core::string_field(o, "kind") == "DaemonSet") return false;
    if (const json* ann = object_at(*meta, "annotations"); ann != nullptr && ann->contains("kubernetes.io/config.mirror"))
      return false;
  }
  const json* status = object_at(pod, "status");
  const std::string phase = status != nullptr ? core::string_field(*status, "phase") : "";
  return phase != "Succeeded" && phase != "Failed";
}

}  // namespace

Result<KubeWorkload> kube_workload(std::string_view pods_json, std::string_view target, std::string_view selector) {
  auto pods = json::parse(pods_json, nullptr, false);
  if (pods.is_discarded() || !pods.is_object() || core::string_field(pods, "kind") != "PodList" || array_at(pods, "items") == nullptr)
    return fail("not a PodList object: \"{}\"", core::clip(pods_json, 80));
  KubeWorkload w;
  w.selector = std::string(selector);
  for (const auto& p : pods["items"]) {
    if (!p.is_object()) continue;
    const json* meta = object_at(p, "metadata");
    if (meta != nullptr && meta->contains("deletionTimestamp") && !(*meta)["deletionTimestamp"].is_null()) continue;
    const json* status = object_at(p, "status");
    if (status == nullptr || core::string_field(*status, "phase") != "Running") continue;
    const json* spec = object_at(p, "spec");
    const std::string node = spec != nullptr ? core::string_field(*spec, "nodeName") : "";
    if (node.empty()) continue;
    if (node == target) {
      ++w.on_target;
    } else {
      ++w.elsewhere;
      if (std::find(w.elsewhere_nodes.begin(), w.elsewhere_nodes.end(), node) == w.elsewhere_nodes.end())
        w.elsewhere_nodes.push_back(node);
    }
  }
  std::sort(w.elsewhere_nodes.begin(), w.elsewhere_nodes.end());
  return w;
}

Result<KubeView> kube_view(std::string_view node_json, std::string_view pods_json,
                           const std::vector<std::string>& taints_before) {
  auto node = json::parse(node_json, nullptr, false);
  if (node.is_discarded() || !node.is_object() || core::string_field(node, "kind") != "Node")
    return fail("not a Node object: \"{}\"", core::clip(node_json, 80));
  auto pods = json::parse(pods_json, nullptr, false);
  if (pods.is_discarded() || !pods.is_object() || core::string_field(pods, "kind") != "PodList" || array_at(pods, "items") == nullptr)
    return fail("not a PodList object: \"{}\"", core::clip(pods_json, 80));

  KubeView v;
  const json* meta = object_at(node, "metadata");
  v.state.name = meta != nullptr ? core::string_field(*meta, "name") : "";
  if (v.state.name.empty()) return fail("Node object without metadata.name");
  for (const auto& p : pods["items"])
    if (workload(p)) ++v.workload_pods;

  std::vector<std::string> reasons;
  bool drain = false;
  const json* spec = object_at(node, "spec");
  if (spec != nullptr && spec->contains("unschedulable") && (*spec)["unschedulable"].is_boolean() &&
      (*spec)["unschedulable"].get<bool>()) {
    drain = true;
    reasons.emplace_back("cordoned");
  }
  if (spec != nullptr)
    if (const json* taints = array_at(*spec, "taints"))
      for (const auto& t : *taints) {
        if (!t.is_object()) continue;
        const std::string key = core::string_field(t, "key"), effect = core::string_field(t, "effect");
        v.taint_keys.push_back(key);
        if (std::find(taints_before.begin(), taints_before.end(), key) != taints_before.end()) continue;
        if (effect == "NoSchedule" || effect == "NoExecute") drain = true;
        const std::string value = core::string_field(t, "value");
        reasons.push_back("taint " + key + (value.empty() ? "" : "=" + value) + ":" + effect);
      }

  std::string ready = "Unknown";  // no Ready condition: the kubelet never reported
  if (const json* status = object_at(node, "status"))
    if (const json* conds = array_at(*status, "conditions"))
      for (const auto& c : *conds) {
        if (!c.is_object()) continue;
        const std::string type = core::string_field(c, "type"), st = core::string_field(c, "status");
        if (type == "Ready") ready = st;
        const bool healthy_when_true = type == "Ready" || type == "CmaxHealthy";
        if ((healthy_when_true && st != "True") || (!healthy_when_true && st == "True")) {
          const std::string why = core::string_field(c, "reason");
          reasons.push_back("condition " + type + "=" + st + (why.empty() ? "" : " (" + why + ")"));
        }
      }

  v.state.base = ready != "True" ? "DOWN" : v.workload_pods > 0 ? "ALLOCATED" : "IDLE";
  if (drain) v.state.flags.emplace_back("DRAIN");
  if (ready == "Unknown") v.state.flags.emplace_back("NOT_RESPONDING");
  v.state.state = v.state.base;
  for (const auto& f : v.state.flags) v.state.state += "+" + f;
  for (const auto& r : reasons) v.state.reason += (v.state.reason.empty() ? "" : "; ") + r;
  return v;
}

}  // namespace cmax::drill
