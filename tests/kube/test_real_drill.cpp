// `cmax drill --scheduler kubernetes` against a real kube-apiserver: a real Xid line in this
// machine's /dev/kmsg, the real cmaxd cordoning, tainting and setting its condition on the real
// server as its least-privilege ServiceAccount, and the drill watching the same Node and its pods
// black-box, timing each stage. The test plays the parts no process plays here: the taint
// eviction of the workload pod (no controller-manager) and the operator who returns the node.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/kube_cluster.h"
#include "support/kube_test.h"
#include "support/ports.h"

namespace {

using cmax::test::has_taint;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using cmax::test::KubeCluster;

const json* stage(const json& report, const std::string& name) {
  if (!report.is_object() || report["nodes"].empty() || !report["nodes"][0].contains("stages")) return nullptr;
  for (const auto& s : report["nodes"][0]["stages"])
    if (s["stage"] == name) return &s;
  return nullptr;
}

json pod(const std::string& name, const std::string& ns, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"nodeName", node},
            {"containers", json::array({{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}};
}

class DrillRealApiServer : public cmax::test::RealApiServerTest {
 protected:
  void SetUp() override {
    if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
    RealApiServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(kube_->add_node({.name = "k1", .labels = {{"nvidia.com/gpu.present", "true"}}}));
    // The GPU pool's dedicated taint, there before the drill: not a drain.
    auto pre = kube_->request(
        "PATCH", "/api/v1/nodes/k1",
        R"({"spec":{"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]}})",
        "application/merge-patch+json");
    ASSERT_TRUE(pre && pre->status == 200);
    // A training pod on k1, and the agent's own DaemonSet pod.
    ASSERT_TRUE(kube_->create("/api/v1/namespaces/default/pods", pod("train-0", "default", "k1")));
    auto ds = kube_->get("/apis/apps/v1/namespaces/cmax-system/daemonsets/cmaxd");
    ASSERT_TRUE(ds);
    json agent_pod = pod("cmaxd-x1", "cmax-system", "k1");
    agent_pod["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "cmaxd"},
                      {"uid", (*ds)["metadata"]["uid"]}, {"controller", true}}});
    ASSERT_TRUE(kube_->create("/api/v1/namespaces/cmax-system/pods", agent_pod));
  }

  json drill(const std::vector<std::string>& extra, int* exit_code = nullptr) {
    std::vector<std::string> argv{CMAX_BIN, "drill", "run", "--scheduler", "kubernetes", "--kube-api", kube_->url(),
                                  "--kube-token-file", kube_->admin().token_file, "--kube-ca-file", kube_->ca_file(),
                                  "--inject", "local", "--json", "--out",
                                  (kube_->dir() / fmt::format("drill-{}", runs_++)).string(), "--nodes", "k1", "--yes"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = cmax::core::run_process({argv, 120s, 8u << 20, {}});
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return {};
    if (exit_code) *exit_code = r->exit_code;
    auto j = json::parse(r->out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r->out.substr(0, 500) << r->err;
    return j;
  }

  // Polls `pred` on the node every 10 ms until it holds or `limit` passes (generous: a busy machine
  // is slow, never wrong).
  template <class Pred>
  bool node_becomes(Pred pred, std::chrono::milliseconds limit, std::stop_token stop = {}) {
    auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline && !stop.stop_requested()) {
      auto n = kube_->node("k1");
      if (n && pred(*n)) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  int runs_ = 0;
};

TEST_F(DrillRealApiServer, CmaxdTaintsOnTheRealServerTheEvictionDrainsAndTheOperatorReturnsTheNode) {
  auto agent = cmax::test::Daemon::start(
      {CMAXD_BIN, "--node", "k1", "--scheduler", "kubernetes", "--kube-api", kube_->url(), "--kube-token-file",
       kube_->cmaxd().token_file, "--kube-ca-file", kube_->ca_file(), "--db", (kube_->dir() / "cmaxd.db").string(),
       "--from-now", "--metrics-listen", "", "--no-nvml", "--no-ib"},
      {}, kube_->dir() / "cmaxd.log");
  ASSERT_TRUE(agent) << agent.error().message;
  // The drill injects once; cmaxd must be following /dev/kmsg by then (--from-now).
  auto started = Clock::now() + 60s;
  while (Clock::now() < started &&
         cmax::test::tail_of_file((kube_->dir() / "cmaxd.log").string(), 1u << 20).find("\"cmaxd: node k1") ==
             std::string::npos)
    std::this_thread::sleep_for(10ms);
  // The rest of the cluster, reacting to what it sees on the real server: the taint manager evicts
  // the training pod (it does not tolerate cmax.io/unhealthy), later the operator returns the node.
  std::jthread cluster([&](std::stop_token stop) {
    if (!node_becomes([](const json& n) { return has_taint(n, "cmax.io/unhealthy"); }, 60s, stop)) return;
    std::this_thread::sleep_for(200ms);
    (void)kube_->request("DELETE", "/api/v1/namespaces/default/pods/train-0?gracePeriodSeconds=0");
    std::this_thread::sleep_for(300ms);
    (void)kube_->request(
        "PATCH", "/api/v1/nodes/k1",
        R"({"metadata":{"annotations":{"cmax.io/reason":null,"cmax.io/cordoned":null}},"spec":{"unschedulable":null,"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]}})",
        "application/merge-patch+json");
    (void)kube_->request("PATCH", "/api/v1/nodes/k1/status",
                         R"({"status":{"conditions":[{"type":"CmaxHealthy","status":"True","reason":"OperatorReturned"}]}})",
                         "application/strategic-merge-patch+json");
  });
  auto report = drill({"--scenario", "xid79", "--wait-return", "--detect-timeout-s", "60", "--drain-timeout-s", "60",
                       "--return-timeout-s", "60"});
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["scheduler"], "kubernetes");
  const json* detected = stage(report, "detected");
  const json* drained = stage(report, "drained");
  const json* replaced = stage(report, "replaced");
  const json* returned = stage(report, "returned");
  ASSERT_TRUE(detected && drained && replaced && returned) << report.dump(2);
  ASSERT_TRUE((*detected)["reached"].get<bool>()) << report.dump(2);
  ASSERT_TRUE((*drained)["reached"].get<bool>()) << report.dump(2);
  // The pod leaves 200 ms after the taint; the drill's own polls (slower on a busy machine) bound how
  // precisely it sees either, so only the order is asserted.
  EXPECT_GT((*drained)["at_ms"].get<double>(), (*detected)["at_ms"].get<double>()) << "the pod left later";
  EXPECT_EQ((*replaced)["verdict"], "skipped");
  ASSERT_TRUE((*returned)["reached"].get<bool>()) << report.dump(2);
  EXPECT_GT((*returned)["at_ms"].get<double>(), (*drained)["at_ms"].get<double>());
  // What the drill saw before: the GPU pool's own taint is not a drain.
  EXPECT_EQ(report["nodes"][0]["before"]["reason"].get<std::string>(), "");
  std::printf("[ measure  ] drill on a real kube-apiserver with cmaxd: detected %.1f ms (+/- %.1f), drained %.1f ms, "
              "returned %.1f ms\n",
              (*detected)["at_ms"].get<double>(), (*detected)["uncertainty_ms"].get<double>() / 2,
              (*drained)["at_ms"].get<double>(), (*returned)["at_ms"].get<double>());
}

TEST_F(DrillRealApiServer, AProblemConditionAloneIsDetectedButNeverDrained) {
  // node-problem-detector's way, through the real status subresource: a condition, no taint, no
  // cordon. Written 300 ms after the drill injected: its audit record of the injected lines is the
  // signal (the file exists before the baseline is read, so its existence alone is too early).
  std::jthread npd([&](std::stop_token stop) {
    auto deadline = Clock::now() + 60s;
    const auto injected = kube_->dir() / "drill-0" / "injected.jsonl";
    std::error_code ec;
    while (!stop.stop_requested() && Clock::now() < deadline &&
           !(std::filesystem::exists(injected, ec) && std::filesystem::file_size(injected, ec) > 0))
      std::this_thread::sleep_for(10ms);
    if (stop.stop_requested() || Clock::now() >= deadline) return;
    std::this_thread::sleep_for(300ms);
    (void)kube_->request("PATCH", "/api/v1/nodes/k1/status",
                         R"({"status":{"conditions":[{"type":"GPUProblem","status":"True","reason":"XidError"}]}})",
                         "application/strategic-merge-patch+json");
  });
  int code = -1;
  auto report = drill({"--scenario", "xid79", "--detect-timeout-s", "60", "--drain-timeout-s", "3"}, &code);
  ASSERT_TRUE(report.is_object());
  const json* detected = stage(report, "detected");
  const json* drained = stage(report, "drained");
  ASSERT_TRUE(detected && drained) << report.dump(2);
  ASSERT_TRUE((*detected)["reached"].get<bool>()) << report.dump(2);
  EXPECT_EQ((*drained)["verdict"], "never");
  EXPECT_EQ(report["nodes"][0]["after"]["reason"], "condition GPUProblem=True (XidError)");
  EXPECT_EQ(code, 1);
}

// The replacement on the real server: the training pods' successor is bound to k2 and reported
// Running (the scheduler's and the kubelet's part: no kubelet runs here, so the test writes the
// binding and the status through the API as they would), and the drill times the rescheduling.
TEST_F(DrillRealApiServer, TheTrainingPodRunningOnAnotherNodeIsTheReplacement) {
  ASSERT_TRUE(kube_->add_node({.name = "k2", .labels = {{"nvidia.com/gpu.present", "true"}}}));
  auto running = [&](const std::string& name, const std::string& node) {
    json p = pod(name, "default", node);
    p["metadata"]["labels"] = {{"app", "train"}};
    EXPECT_TRUE(kube_->create("/api/v1/namespaces/default/pods", p));
    auto r = kube_->request("PATCH", "/api/v1/namespaces/default/pods/" + name + "/status",
                            R"({"status":{"phase":"Running"}})", "application/merge-patch+json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body.dump() : r.error().message);
  };
  running("train-a", "k1");
  std::jthread cluster([&](std::stop_token stop) {
    const auto injected = kube_->dir() / "drill-0" / "injected.jsonl";
    const auto deadline = Clock::now() + 60s;
    std::error_code ec;
    while (!stop.stop_requested() && Clock::now() < deadline &&
           !(std::filesystem::exists(injected, ec) && std::filesystem::file_size(injected, ec) > 0))
      std::this_thread::sleep_for(10ms);
    if (stop.stop_requested() || Clock::now() >= deadline) return;
    // The detector cordons k1; the workload leaves it and comes back on k2.
    (void)kube_->request("PATCH", "/api/v1/nodes/k1", R"({"spec":{"unschedulable":true}})",
                         "application/merge-patch+json");
    (void)kube_->request("DELETE", "/api/v1/namespaces/default/pods/train-a?gracePeriodSeconds=0");
    (void)kube_->request("DELETE", "/api/v1/namespaces/default/pods/train-0?gracePeriodSeconds=0");
    std::this_thread::sleep_for(300ms);
    running("train-a-r1", "k2");
  });
  auto report = drill({"--scenario", "xid79", "--workload", "app=train", "--detect-timeout-s", "60",
                       "--drain-timeout-s", "60", "--replace-timeout-s", "60"});
  cluster.request_stop();
  cluster.join();
  ASSERT_TRUE(report.is_object());
  const json* drained = stage(report, "drained");
  const json* replaced = stage(report, "replaced");
  ASSERT_TRUE(drained && replaced) << report.dump(2);
  ASSERT_TRUE((*drained)["reached"].get<bool>()) << report.dump(2);
  ASSERT_TRUE((*replaced)["reached"].get<bool>()) << report.dump(2);
  EXPECT_EQ((*replaced)["how"], "1 pods of app=train running on k2");
  EXPECT_GE((*replaced)["at_ms"].get<double>(), (*drained)["at_ms"].get<double>());
  std::printf("[ measure  ] drill on the real API server: drained %.1f ms, rescheduled pod running %.1f ms (+/- %.1f)\n",
              (*drained)["at_ms"].get<double>(), (*replaced)["at_ms"].get<double>(),
              (*replaced)["uncertainty_ms"].get<double>() / 2);
}

}  // namespace
