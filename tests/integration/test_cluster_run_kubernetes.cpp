// `cmax run --harness kubernetes` end to end: the real cmax binary against the loopback contract-test
// API server (tests/support/fake_kube_api.h; no Kubernetes API server can run here). Each collect
// pod's log is what `cmax collect` really printed for that node; one node's document is edited to
// report an older driver, and the run must flag the disagreement; one pod never starts and must be
// reported while the others complete.

#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/fake_kube_api.h"

using cmax::test::FakeKubeApi;
using cmax::test::PodFate;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string collect_doc(const std::string& node, const std::string& driver) {
  auto r = cmax::core::run_process({{CMAX_BIN, "collect", "--node", node, "--no-scan"}, 30s, 16u << 20, {}});
  EXPECT_TRUE(r && r->exit_code == 0);
  auto doc = json::parse(r->out);
  // The GPU driver these CPU-only nodes lack, as a GPU node would report it.
  doc["audit"]["facts"].push_back({{"key", "gpu.driver.version"},
                                   {"status", "present"},
                                   {"value", driver},
                                   {"source", "/proc/driver/nvidia/version"},
                                   {"detail", ""}});
  return doc.dump();
}

}  // namespace

TEST(ClusterRunKubernetes, PodsCollectOnEveryNodeAndADifferentDriverIsAFinding) {
  FakeKubeApi api("k1");
  for (const char* n : {"k2", "k3", "k4"}) api.add_node(cmax::test::make_node(n, {{"pool", "gpu"}}));
  std::map<std::string, std::string> logs = {{"k1", collect_doc("k1", "550.90.07")},
                                             {"k2", collect_doc("k2", "550.90.07")},
                                             {"k3", collect_doc("k3", "550.54.14")}};
  api.set_pod_hook([&logs](const json& pod) {
    PodFate f;
    std::string node = pod["spec"]["nodeName"];
    if (node == "k4") {
      f.end = PodFate::End::stay_pending;  // the image never pulls there
      return f;
    }
    f.log = logs.at(node);
    return f;
  });
  auto dir = std::filesystem::temp_directory_path() / ("cmax-k8s-run-" + std::to_string(::getpid()));
  auto t0 = std::chrono::steady_clock::now();
  auto r = cmax::core::run_process({{CMAX_BIN, "run", "--stage", "audit", "--harness", "kubernetes", "--kube-api", api.url(),
                                     "--kube-token-file", "", "--kube-ca-file", "", "--image", "cmax:test",
                                     "--node-selector", "pool=gpu", "--node-timeout-s", "2", "--run-id", "itest",
                                     "--out", dir.string(), "--json"},
                                    60s, 16u << 20, {}});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r);
  ASSERT_NE(r->exit_code, 3) << r->err;
  EXPECT_GE(r->exit_code, 1);
  auto j = json::parse(r->out);
  EXPECT_EQ(j["harness"], "kubernetes");
  ASSERT_EQ(j["nodes"].size(), 4u) << r->out;
  for (const auto& n : j["nodes"]) {
    if (n["node"] == "k4") EXPECT_EQ(n["status"], "timeout") << n.dump();
    else EXPECT_EQ(n["status"], "ok") << n.dump();
  }
  bool flagged = false;
  for (const auto& f : j["cluster_findings"]) {
    if (f["id"] != "cluster.consistency.gpu_driver") continue;
    flagged = true;
    EXPECT_EQ(f["outcome"], "fail") << f.dump();
    EXPECT_NE(f["reason"].get<std::string>().find("550.54.14 on k3"), std::string::npos) << f.dump();
    EXPECT_NE(f["expected"].get<std::string>().find("550.90.07"), std::string::npos) << f.dump();
  }
  EXPECT_TRUE(flagged);
  // Every pod is gone afterwards, the one that never started included.
  EXPECT_TRUE(api.live_pods().empty());
  EXPECT_LT(seconds, 15);
  std::filesystem::remove_all(dir);
}
