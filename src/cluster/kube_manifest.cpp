#include "cluster/kube_manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace cmax::cluster {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxRunId = 40;
constexpr std::size_t kMaxNamespace = 63;
constexpr std::string_view kHostRoot = "/host";

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// Ok when `s` is 1..max of [a-z0-9-], alphanumeric at both ends.
Result<void> check_label(std::string_view what, std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max)
    return fail("{} \"{}\": must be 1 to {} characters", what, core::clip(s, 80), max);
  for (char c : s)
    if (!lower_alnum(c) && c != '-')
      return fail("{} \"{}\": only lower-case letters, digits and '-' are allowed", what,
                  core::clip(s, 80));
  if (!lower_alnum(s.front()) || !lower_alnum(s.back()))
    return fail("{} \"{}\": must start and end with a letter or digit", what, core::clip(s, 80));
  return ok();
}

/// FNV-1a, 32 bits: stable across builds and platforms, unlike std::hash.
std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string trim_dashes(std::string s) {
  while (!s.empty() && (s.back() == '-' || s.back() == '.')) s.pop_back();
  return s;
}

json run_labels(const CollectSpec& spec) {
  return {
      {kAppLabel, "cmax"}, {"app.kubernetes.io/component", "collect"}, {kRunLabel, spec.run_id}};
}

json collect_command(const CollectSpec& spec) {
  json cmd = {"cmax", "collect", "--host-root", kHostRoot, "--json"};
  for (const auto& a : spec.collect_args) cmd.push_back(a);
  return cmd;
}

/// The collect container; `name` "collect" in both the Pod and the DaemonSet.
json collect_container(const CollectSpec& spec) {
  return {
      {"name", "collect"},
      {"image", spec.image},
      {"imagePullPolicy", spec.image_pull_policy},
      {"command", collect_command(spec)},
      // The NVIDIA container runtime mounts the driver and every GPU's device for "all", without
      // a nvidia.com/gpu request: a node whose GPUs are all allocated to jobs still answers.
      // CMAX_NODE_NAME: the node's name as Kubernetes knows it, which `cmax collect` puts in its
      // document (a hostname may differ from the Node object's name).
      {"env", json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}},
                           {{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "utility"}},
                           {{"name", "CMAX_NODE_NAME"},
                            {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}})},
      {"securityContext", {{"privileged", true}}},
      // The host's / holds /dev (and /dev/kmsg), /proc and /sys as sub-mounts: the runtime binds
      // hostPath volumes recursively, and HostToContainer keeps later host mounts visible.
      {"volumeMounts", json::array({{{"name", "host-root"},
                                     {"mountPath", kHostRoot},
                                     {"readOnly", true},
                                     {"mountPropagation", "HostToContainer"}}})},
      {"resources",
       {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"memory", "1Gi"}}}}},
      // A failed collect's last log lines become the container's termination message.
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
  };
}

/// What the collect Pod and the DaemonSet's pod template share.
json host_pod_spec() {
  return {
      {"hostPID", true},
      {"hostNetwork", true},
      {"dnsPolicy", "ClusterFirstWithHostNet"},
      // The collect reads the host; it needs no access to the API server.
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds", 5},
      // Every taint, NoSchedule and NoExecute alike: a node cmax or an operator tainted is the one
      // worth looking at.
      {"tolerations", json::array({{{"operator", "Exists"}}})},
      {"volumes", json::array({{{"name", "host-root"},
                                {"hostPath", {{"path", "/"}, {"type", "Directory"}}}}})},
  };
}

}  // namespace

Result<void> check_run_id(std::string_view run_id) {
  return check_label("run id", run_id, kMaxRunId);
}

Result<void> check_namespace(std::string_view ns) {
  return check_label("namespace", ns, kMaxNamespace);
}

std::string collect_pod_name(std::string_view run_id, std::string_view node) {
  std::string name = fmt::format("cmax-collect-{}-{}", run_id, node);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (!lower_alnum(c) && c != '-' && c != '.') c = '-';
  }
  name = trim_dashes(std::move(name));
  if (name.size() <= kMaxObjectName) return name;
  // The NUL keeps ("a-b", "c") and ("a", "b-c") apart.
  std::string key = fmt::format("{}", run_id);
  key.push_back('\0');
  key.append(node);
  auto suffix = fmt::format("-{:08x}", fnv1a(key));
  return trim_dashes(name.substr(0, kMaxObjectName - suffix.size())) + suffix;
}

std::string render_collect_pod(const CollectSpec& spec, std::string_view node) {
  json pod_spec = host_pod_spec();
  pod_spec["nodeName"] = node;
  pod_spec["restartPolicy"] = "Never";
  pod_spec["activeDeadlineSeconds"] = std::max<std::int64_t>(1, spec.node_timeout.count());
  pod_spec["containers"] = json::array({collect_container(spec)});
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", collect_pod_name(spec.run_id, node)},
        {"namespace", spec.ns},
        {"labels", run_labels(spec)},
        {"annotations", {{"cmax.io/node", node}}}}},
      {"spec", std::move(pod_spec)},
  };
  return pod.dump();
}

Result<std::string> render_collect_daemonset(const CollectSpec& spec,
                                             std::string_view node_selector) {
  json selector = json::object();
  for (auto term : core::split_any(node_selector, ",")) {
    term = core::trim(term);
    auto eq = term.find('=');
    auto key = core::trim(term.substr(0, eq == std::string_view::npos ? 0 : eq));
    auto value =
        eq == std::string_view::npos ? std::string_view() : core::trim(term.substr(eq + 1));
    if (eq == std::string_view::npos || key.empty() || key.find_first_of("!=()") != key.npos ||
        value.find_first_of("!=()") != value.npos)
      return fail(
          "render DaemonSet nodeSelector from \"{}\": term \"{}\" is not key=value (a nodeSelector "
          "matches labels by equality only)",
          node_selector, term);
    selector[std::string(key)] = std::string(value);
  }
  json match = {{kAppLabel, "cmax"}, {kRunLabel, spec.run_id}};
  json pod_spec = host_pod_spec();
  if (!selector.empty()) pod_spec["nodeSelector"] = std::move(selector);
  // Init containers run to completion once per pod: that is the collect. The pause container then
  // holds the pod, so the DaemonSet's restartPolicy Always does not run the collect again.
  pod_spec["initContainers"] = json::array({collect_container(spec)});
  pod_spec["containers"] = json::array(
      {{{"name", "hold"},
        {"image", spec.pause_image},
        {"imagePullPolicy", spec.image_pull_policy},
        {"resources",
         {{"requests", {{"cpu", "1m"}, {"memory", "8Mi"}}}, {"limits", {{"memory", "32Mi"}}}}}}});
  json ds = {
      {"apiVersion", "apps/v1"},
      {"kind", "DaemonSet"},
      {"metadata",
       {{"name", fmt::format("cmax-collect-{}", spec.run_id)},
        {"namespace", spec.ns},
        {"labels", run_labels(spec)}}},
      {"spec",
       {{"selector", {{"matchLabels", match}}},
        {"template",
         {{"metadata", {{"labels", run_labels(spec)}}}, {"spec", std::move(pod_spec)}}}}},
  };
  return ds.dump();
}

}  // namespace cmax::cluster
