// The collect Pod and DaemonSet as rendered (kube_manifest.h): structure, not text.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cluster/kube_manifest.h"

using namespace cmax::cluster;
using nlohmann::json;

namespace {

CollectSpec spec() {
  CollectSpec s;
  s.run_id = "r20260502-1";
  s.ns = "gpu-ops";
  s.image = "registry.example/cmax:1.4";
  s.collect_args = {"--checks", "gpu,ib"};
  s.node_timeout = std::chrono::seconds(90);
  return s;
}

bool is_dns_label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return s.front() != '-' && s.back() != '-';
}

}  // namespace

TEST(KubeManifest, PodRunsCollectPrivilegedOnItsNode) {
  auto pod = json::parse(render_collect_pod(spec(), "gpu-node-07"));
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "cmax-collect-r20260502-1-gpu-node-07");
  EXPECT_EQ(pod["metadata"]["namespace"], "gpu-ops");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/name"], "cmax");
  EXPECT_EQ(pod["metadata"]["labels"]["cmax.io/run"], "r20260502-1");

  const auto& s = pod["spec"];
  EXPECT_EQ(s["nodeName"], "gpu-node-07");
  EXPECT_EQ(s["restartPolicy"], "Never");
  EXPECT_EQ(s["hostPID"], true);
  EXPECT_EQ(s["hostNetwork"], true);
  EXPECT_EQ(s["activeDeadlineSeconds"], 90);
  EXPECT_EQ(s["automountServiceAccountToken"], false);
  ASSERT_EQ(s["tolerations"].size(), 1u);
  EXPECT_EQ(s["tolerations"][0], (json{{"operator", "Exists"}}));
  ASSERT_EQ(s["volumes"].size(), 1u);
  EXPECT_EQ(s["volumes"][0]["hostPath"]["path"], "/");

  ASSERT_EQ(s["containers"].size(), 1u);
  const auto& c = s["containers"][0];
  EXPECT_EQ(c["name"], "collect");
  EXPECT_EQ(c["image"], "registry.example/cmax:1.4");
  EXPECT_EQ(c["command"],
            (json{"cmax", "collect", "--host-root", "/host", "--json", "--checks", "gpu,ib"}));
  EXPECT_EQ(c["securityContext"]["privileged"], true);
  ASSERT_EQ(c["volumeMounts"].size(), 1u);
  EXPECT_EQ(c["volumeMounts"][0]["name"], s["volumes"][0]["name"]);
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/host");
  EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  EXPECT_TRUE(c["resources"]["limits"].contains("memory"));
  // No GPU is requested: a node whose GPUs are all allocated still runs it.
  EXPECT_FALSE(c["resources"]["requests"].contains("nvidia.com/gpu"));
}

TEST(KubeManifest, PodDeadlineIsAtLeastOneSecond) {
  auto s = spec();
  s.node_timeout = std::chrono::seconds(0);
  auto pod = json::parse(render_collect_pod(s, "n1"));
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 1);
}

TEST(KubeManifest, PodNamesAreDnsLabelsAndDistinct) {
  EXPECT_EQ(collect_pod_name("r1", "n1"), "cmax-collect-r1-n1");
  EXPECT_EQ(collect_pod_name("R1", "gpu_1"), "cmax-collect-r1-gpu-1");
  EXPECT_EQ(collect_pod_name("r1", "gpu-1.dc2.example.com"),
            "cmax-collect-r1-gpu-1.dc2.example.com");

  std::string base(70, 'a');
  std::set<std::string> names;
  for (std::string node : {base + "-1", base + "-2", base + ".x", std::string(40, 'b') + "-z"}) {
    auto name = collect_pod_name("run-with-a-long-id", node);
    EXPECT_TRUE(is_dns_label(name)) << name;
    EXPECT_LE(name.size(), kMaxObjectName);
    EXPECT_EQ(name, collect_pod_name("run-with-a-long-id", node)) << "deterministic";
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 4u);
}

TEST(KubeManifest, RunIdAndNamespaceAreChecked) {
  EXPECT_TRUE(check_run_id("20260502-1200-ab12"));
  EXPECT_FALSE(check_run_id(""));
  EXPECT_FALSE(check_run_id("Run1"));
  EXPECT_FALSE(check_run_id("-r1"));
  EXPECT_FALSE(check_run_id("r1_x"));
  EXPECT_FALSE(check_run_id(std::string(41, 'a')));
  EXPECT_TRUE(check_namespace("gpu-ops"));
  EXPECT_FALSE(check_namespace("gpu.ops"));
  auto e = check_run_id("Run1");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("run id \"Run1\""), std::string::npos) << e.error().message;
}

TEST(KubeManifest, DaemonSetCollectsOnceOnGpuNodes) {
  auto text = render_collect_daemonset(spec(), kDefaultGpuSelector);
  ASSERT_TRUE(text) << text.error().message;
  auto ds = json::parse(*text);
  EXPECT_EQ(ds["apiVersion"], "apps/v1");
  EXPECT_EQ(ds["kind"], "DaemonSet");
  EXPECT_EQ(ds["metadata"]["name"], "cmax-collect-r20260502-1");
  EXPECT_EQ(ds["metadata"]["namespace"], "gpu-ops");

  const auto& match = ds["spec"]["selector"]["matchLabels"];
  const auto& labels = ds["spec"]["template"]["metadata"]["labels"];
  ASSERT_FALSE(match.empty());
  for (const auto& [k, v] : match.items()) EXPECT_EQ(labels[k], v) << k;

  const auto& s = ds["spec"]["template"]["spec"];
  EXPECT_EQ(s["nodeSelector"], (json{{"nvidia.com/gpu.present", "true"}}));
  EXPECT_FALSE(s.contains("nodeName"));
  EXPECT_FALSE(s.contains("restartPolicy")) << "a DaemonSet's pods restart Always";
  EXPECT_EQ(s["hostPID"], true);
  EXPECT_EQ(s["hostNetwork"], true);
  EXPECT_EQ(s["tolerations"][0], (json{{"operator", "Exists"}}));
  ASSERT_EQ(s["initContainers"].size(), 1u);
  EXPECT_EQ(s["initContainers"][0]["name"], "collect");
  EXPECT_EQ(s["initContainers"][0]["command"][1], "collect");
  EXPECT_EQ(s["initContainers"][0]["securityContext"]["privileged"], true);
  ASSERT_EQ(s["containers"].size(), 1u);
  EXPECT_EQ(s["containers"][0]["image"], "registry.k8s.io/pause:3.9");
}

TEST(KubeManifest, DaemonSetSelectorIsEqualityOnly) {
  auto two = render_collect_daemonset(spec(), "pool=h100, nvidia.com/gpu.present=true");
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(json::parse(*two)["spec"]["template"]["spec"]["nodeSelector"],
            (json{{"pool", "h100"}, {"nvidia.com/gpu.present", "true"}}));

  auto none = render_collect_daemonset(spec(), "");
  ASSERT_TRUE(none);
  EXPECT_FALSE(json::parse(*none)["spec"]["template"]["spec"].contains("nodeSelector"));

  for (const char* bad : {"gpu in (a,b)", "pool!=cpu", "pool"}) {
    auto r = render_collect_daemonset(spec(), bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("not key=value"), std::string::npos) << r.error().message;
  }
}
