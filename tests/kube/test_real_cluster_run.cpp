// `cmax run --stage audit --harness kubernetes` against a real kube-apiserver. No kubelet runs here,
// so no collect pod ever starts: what this covers is everything up to the kubelet: the nodes the
// selector picks on the real server, the pods the real server accepts (validation, RBAC, Pod
// Security admission) pinned to those nodes with the spec `--render-manifest` prints, nodes whose
// pods never start reported as not answering within --node-timeout-s, and every object of the run
// deleted afterwards. Reading the pods' logs is the contract test's part
// (tests/integration/test_cluster_run_kubernetes.cpp).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/kube_cluster.h"
#include "support/kube_test.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using cmax::test::KubeCluster;

class ClusterRunRealApiServer : public cmax::test::RealApiServerTest {
 protected:
  void SetUp() override {
    RealApiServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const char* n : {"g1", "g2", "g3"})
      ASSERT_TRUE(kube_->add_node({.name = n, .labels = {{"nvidia.com/gpu.present", "true"}}}));
    ASSERT_TRUE(kube_->add_node({.name = "cpu1", .gpus = 0}));
    // A node agent's namespace must allow privileged pods (hostPath /, hostPID).
    ASSERT_TRUE(kube_->add_namespace("cmax-collect", {{"pod-security.kubernetes.io/enforce", "privileged"}}));
  }

  cmax::core::ProcessResult run(const std::vector<std::string>& extra, std::chrono::seconds limit = 120s) {
    std::vector<std::string> argv = {CMAX_BIN, "run", "--stage", "audit", "--harness", "kubernetes", "--kube-api",
                                     kube_->url(), "--kube-token-file", kube_->admin().token_file, "--kube-ca-file",
                                     kube_->ca_file(), "--image", "cmax:test"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = cmax::core::run_process({argv, limit, 16u << 20, {}});
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : cmax::core::ProcessResult{};
  }

};

// The fields of a pod spec that decide what the collect can see on the node.
json essentials(const json& pod_spec) {
  json e;
  for (const char* k : {"hostNetwork", "hostPID", "tolerations", "volumes", "automountServiceAccountToken"})
    if (pod_spec.contains(k)) e[k] = pod_spec[k];
  // The DaemonSet runs the collect as an init container (a pause container holds the pod); a run's
  // pod runs it as its one container.
  for (const char* list : {"initContainers", "containers"})
    for (const auto& c : pod_spec.value(list, json::array())) {
      if (c.value("name", "") != "collect") continue;
      for (const char* k : {"image", "command", "securityContext", "volumeMounts", "resources"})
        if (c.contains(k)) e["collect"][k] = c[k];
    }
  return e;
}

TEST_F(ClusterRunRealApiServer, PinsTheRenderedCollectPodToEachSelectedNodeReportsThemSilentAndDeletesEverything) {
  auto dir = kube_->dir() / "run";
  // What --render-manifest prints is a DaemonSet the real server accepts as it is.
  auto rendered = run({"--render-manifest", "--namespace", "cmax-collect", "--run-id", "itest"});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  auto ds = json::parse(rendered.out, nullptr, false);
  ASSERT_FALSE(ds.is_discarded()) << rendered.out.substr(0, 300);
  auto accepted = kube_->request("POST", "/apis/apps/v1/namespaces/cmax-collect/daemonsets?dryRun=All", ds.dump());
  ASSERT_TRUE(accepted);
  EXPECT_EQ(accepted->status, 201) << accepted->text.substr(0, 800);

  // Watch what the run creates, as it happens (it deletes everything at the end).
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, json> seen;
  std::thread watcher([&] {
    while (!stop) {
      auto pods = kube_->get("/api/v1/namespaces/cmax-collect/pods?labelSelector=cmax.io%2Frun%3Ditest");
      if (pods) {
        std::lock_guard lock(mu);
        for (const auto& p : (*pods)["items"]) seen[p["metadata"]["name"]] = p;
      }
      std::this_thread::sleep_for(50ms);
    }
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = run({"--namespace", "cmax-collect", "--node-timeout-s", "3", "--run-id", "itest", "--out", dir.string(),
                "--json"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  watcher.join();
  // No node answered, so the run has no verdict (exit 3), and says which nodes were silent.
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no node was evaluated"), std::string::npos) << r.err;
  auto j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 500) << r.err;
  EXPECT_EQ(j["harness"], "kubernetes");
  std::set<std::string> reported;
  for (const auto& n : j["nodes"]) {
    reported.insert(n["node"].get<std::string>());
    EXPECT_EQ(n["status"], "timeout") << "no kubelet runs here: the pod never starts. " << n.dump();
  }
  EXPECT_EQ(reported, (std::set<std::string>{"g1", "g2", "g3"})) << "the default selector picks the GPU nodes only";

  std::set<std::string> pinned;
  for (const auto& [name, pod] : seen) {
    pinned.insert(pod["spec"].value("nodeName", ""));
    EXPECT_EQ(essentials(pod["spec"]), essentials(ds["spec"]["template"]["spec"]))
        << "the pod the run creates differs from the rendered manifest: " << pod["spec"].dump();
  }
  EXPECT_EQ(pinned, (std::set<std::string>{"g1", "g2", "g3"}));

  // Every object of the run is gone: not even Terminating (no kubelet will ever confirm a graceful
  // delete of a pod bound to these nodes).
  for (const char* path : {"/api/v1/namespaces/cmax-collect/pods", "/api/v1/namespaces/cmax-collect/configmaps",
                           "/api/v1/namespaces/cmax-collect/secrets", "/apis/apps/v1/namespaces/cmax-collect/daemonsets"}) {
    auto left = kube_->get(std::string(path) + "?labelSelector=cmax.io%2Frun%3Ditest");
    ASSERT_TRUE(left) << left.error().message;
    EXPECT_TRUE((*left)["items"].empty()) << path << ": " << (*left)["items"].dump();
  }
  EXPECT_LT(seconds, 60) << "three silent nodes at --node-timeout-s 3";
}

TEST_F(ClusterRunRealApiServer, InANamespaceWhosePodSecurityRefusesTheCollectPodSaysWhatToChange) {
  // tenant-a enforces baseline (the admission default here): a privileged hostPath pod is refused.
  auto r = run({"--namespace", "tenant-a", "--node-timeout-s", "3", "--run-id", "psa", "--out",
                (kube_->dir() / "psa").string(), "--json"});
  ASSERT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("PodSecurity"), std::string::npos) << all.substr(0, 2000);
  EXPECT_NE(all.find("pod-security.kubernetes.io/enforce"), std::string::npos)
      << "the fix (label the namespace privileged) must be named: " << all.substr(0, 2000);
  auto left = kube_->get("/api/v1/namespaces/tenant-a/pods?labelSelector=cmax.io%2Frun%3Dpsa");
  ASSERT_TRUE(left);
  EXPECT_TRUE((*left)["items"].empty());
}

}  // namespace

namespace {

// The cluster view of the same run, read from the real server: topology labels, the dcgm-exporter
// DaemonSet and its image, who holds nodes/proxy. The test plays the DaemonSet controller (it
// writes the status counts no controller-manager writes here).
const json* cluster_finding(const json& run, const std::string& id) {
  for (const auto& f : run["cluster_findings"])
    if (f["id"] == id) return &f;
  return nullptr;
}

TEST_F(ClusterRunRealApiServer, ClusterViewReadsTopologyDcgmExporterAndNodesProxyFromTheServer) {
  for (const char* n : {"g1", "g2"})
    ASSERT_TRUE(kube_->request("PATCH", std::string("/api/v1/nodes/") + n,
                               R"({"metadata":{"labels":{"cloud.google.com/gce-topology-block":"b7"}}})",
                               "application/merge-patch+json"));
  ASSERT_TRUE(kube_->add_namespace("gpu-operator"));
  json ds = {{"apiVersion", "apps/v1"},
             {"kind", "DaemonSet"},
             {"metadata", {{"name", "nvidia-dcgm-exporter"}, {"namespace", "gpu-operator"}}},
             {"spec",
              {{"selector", {{"matchLabels", {{"app", "nvidia-dcgm-exporter"}}}}},
               {"template",
                {{"metadata", {{"labels", {{"app", "nvidia-dcgm-exporter"}}}}},
                 {"spec",
                  {{"nodeSelector", {{"nvidia.com/gpu.present", "true"}}},
                   {"containers", json::array({{{"name", "nvidia-dcgm-exporter"},
                                                {"image", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04"}}})}}}}}}}};
  ASSERT_TRUE(kube_->apply(ds));
  auto set_status = [&](int desired, int ready) {
    auto r = kube_->request(
        "PATCH", "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-dcgm-exporter/status",
        fmt::format(R"({{"status":{{"desiredNumberScheduled":{},"currentNumberScheduled":{},"numberReady":{},"numberMisscheduled":0}}}})",
                    desired, desired, ready),
        "application/merge-patch+json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->text : r.error().message);
  };
  set_status(3, 2);
  // A monitoring stack that scrapes through the kubelet proxy.
  ASSERT_TRUE(kube_->add_namespace("monitoring"));
  for (const json& o : {
           json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "prometheus"}, {"namespace", "monitoring"}}}},
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRole"}, {"metadata", {{"name", "prometheus"}}},
                {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"nodes/proxy", "nodes/metrics"}}, {"verbs", {"get"}}}})}},
           json{{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"kind", "ClusterRoleBinding"}, {"metadata", {{"name", "prometheus"}}},
                {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "prometheus"}}},
                {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "monitoring"}}})}}})
    ASSERT_TRUE(kube_->apply(o));

  auto view = [&](const std::string& id) {
    auto r = run({"--namespace", "cmax-collect", "--node-timeout-s", "2", "--run-id", id, "--out",
                  (kube_->dir() / id).string(), "--json"});
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out.substr(0, 300) << r.err;
    return j;
  };
  auto before = view("before");
  const json* topo = cluster_finding(before, "orchestration.kube.topology");
  const json* running = cluster_finding(before, "monitoring.kube.dcgm_exporter");
  const json* floor = cluster_finding(before, "security.kube.dcgm_exporter.floor");
  const json* proxy = cluster_finding(before, "security.kube.nodes_proxy.holders");
  ASSERT_TRUE(topo && running && floor && proxy) << before["cluster_findings"].dump(2);
  EXPECT_EQ((*topo)["outcome"], "warn") << topo->dump();
  EXPECT_NE((*topo)["reason"].get<std::string>().find("g3"), std::string::npos) << topo->dump();
  EXPECT_EQ((*running)["outcome"], "warn") << running->dump();
  EXPECT_EQ((*floor)["outcome"], "fail") << floor->dump();
  EXPECT_EQ((*proxy)["outcome"], "fail") << proxy->dump();
  EXPECT_NE((*proxy)["reason"].get<std::string>().find("ServiceAccount monitoring/prometheus"), std::string::npos)
      << proxy->dump();

  // The provider fixes all four; the same run now passes them.
  ASSERT_TRUE(kube_->request("PATCH", "/api/v1/nodes/g3",
                             R"({"metadata":{"labels":{"cloud.google.com/gce-topology-block":"b8"}}})",
                             "application/merge-patch+json"));
  ASSERT_TRUE(kube_->request(
      "PATCH", "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-dcgm-exporter",
      R"({"spec":{"template":{"spec":{"containers":[{"name":"nvidia-dcgm-exporter","image":"nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"}]}}}})",
      "application/strategic-merge-patch+json"));
  set_status(3, 3);
  auto del = kube_->request("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/prometheus");
  ASSERT_TRUE(del && del->status == 200);
  auto after = view("after");
  for (const char* id : {"orchestration.kube.topology", "monitoring.kube.dcgm_exporter", "security.kube.dcgm_exporter.floor",
                         "security.kube.nodes_proxy.holders"}) {
    const json* f = cluster_finding(after, id);
    ASSERT_NE(f, nullptr) << id;
    EXPECT_EQ((*f)["outcome"], "pass") << f->dump();
  }
  // What the real server's own bootstrap roles give nodes/proxy to: system identities only.
  std::printf("[ measure  ] nodes/proxy on a fresh kube-apiserver v1.37: %s\n",
              (*cluster_finding(after, "security.kube.nodes_proxy.holders"))["observed"].get<std::string>().c_str());
}

}  // namespace
