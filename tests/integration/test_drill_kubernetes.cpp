// cmax drill --scheduler kubernetes: a real Xid line in this machine's /dev/kmsg, the real cmaxd
// as the detector (--scheduler kubernetes), and the drill watching, black-box, the same Node and
// its pods on a thin API server on 127.0.0.1 (tests/support/fake_kube_api.h: no Kubernetes API
// server can run here, so this is a contract test). The test plays the rest of the cluster: the
// eviction of the workload pod after the taint, and the operator who returns the node. A second
// drill has node-problem-detector's condition as the only reaction: detected, never drained.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/fake_kube_api.h"
#include "support/kmsg.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool has_taint(const json& node, const std::string& key) {
  if (!node["spec"].contains("taints")) return false;
  for (const auto& t : node["spec"]["taints"])
    if (t.value("key", "") == key) return true;
  return false;
}

const json* stage(const json& report, const std::string& name) {
  if (!report.is_object() || report["nodes"].empty() || !report["nodes"][0].contains("stages")) return nullptr;
  for (const auto& s : report["nodes"][0]["stages"])
    if (s["stage"] == name) return &s;
  return nullptr;
}

class DrillKubernetes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
    dir_.write("/token", "test-token\n");
    ASSERT_GT(api_.port(), 0);
    // A GPU pool's dedicated taint, there before the drill: not a drain.
    api_.update_node([](json& n) {
      n["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}});
    });
    api_.set_pods(json::array({cmax::test::make_pod("train-0", "k1"), cmax::test::make_pod("cmaxd-x1", "k1", true)}));
  }

  json drill(const std::vector<std::string>& extra, int* exit_code = nullptr, std::string* err = nullptr) {
    std::vector<std::string> argv{CMAX_BIN, "drill", "run", "--scheduler", "kubernetes", "--kube-api", api_.url(),
                                  "--kube-token-file", (dir_.dir() / "token").string(), "--inject", "local", "--json",
                                  "--out", (dir_.dir() / fmt::format("drill-{}", runs_++)).string(), "--nodes", "k1",
                                  "--yes"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = cmax::core::run_process({argv, 60s, 8u << 20, {}});
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return {};
    if (exit_code) *exit_code = r->exit_code;
    if (err) *err = r->err;
    auto j = json::parse(r->out, nullptr, false);
    if (r->exit_code == 0 || r->exit_code == 1) {  // else refused
      EXPECT_FALSE(j.is_discarded()) << r->out << r->err;
    }
    return j;
  }

  cmax::test::TempHost dir_;
  cmax::test::FakeKubeApi api_;
  int runs_ = 0;
};

TEST_F(DrillKubernetes, CmaxdTaintsTheEvictionDrainsAndTheOperatorReturnsTheNode) {
  auto agent = cmax::test::Daemon::start(
      {CMAXD_BIN, "--node", "k1", "--scheduler", "kubernetes", "--kube-api", api_.url(), "--kube-token-file",
       (dir_.dir() / "token").string(), "--db", (dir_.dir() / "cmaxd.db").string(), "--from-now", "--metrics-listen", "",
       "--no-nvml", "--no-ib"},
      {}, dir_.dir() / "cmaxd.log");
  ASSERT_TRUE(agent) << agent.error().message;
  ASSERT_TRUE(cmax::test::wait_for_log(dir_.dir() / "cmaxd.log", "from now on", 60s, &*agent));
  // The rest of the cluster: the taint-based eviction of the workload pod, then the operator.
  std::jthread cluster([&](std::stop_token stop) {
    auto deadline = Clock::now() + 10s;
    while (!stop.stop_requested() && Clock::now() < deadline && !has_taint(api_.node(), "cmax.io/unhealthy"))
      std::this_thread::sleep_for(5ms);
    if (stop.stop_requested() || Clock::now() >= deadline) return;
    std::this_thread::sleep_for(200ms);
    api_.set_pods(json::array({cmax::test::make_pod("cmaxd-x1", "k1", true)}));
    std::this_thread::sleep_for(300ms);
    api_.update_node([](json& n) {
      n["spec"].erase("unschedulable");
      n["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}});
      for (auto& c : n["status"]["conditions"])
        if (c["type"] == "CmaxHealthy") c["status"] = "True";
    });
  });
  auto report = drill({"--scenario", "xid79", "--wait-return", "--detect-timeout-s", "10", "--drain-timeout-s", "10",
                       "--return-timeout-s", "10"});
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["scheduler"], "kubernetes");
  const json* detected = stage(report, "detected");
  const json* drained = stage(report, "drained");
  const json* replaced = stage(report, "replaced");
  const json* returned = stage(report, "returned");
  ASSERT_TRUE(detected && drained && replaced && returned) << report.dump(2);
  ASSERT_TRUE((*detected)["reached"].get<bool>()) << report.dump(2);
  EXPECT_LT((*detected)["at_ms"].get<double>(), 2000);
  ASSERT_TRUE((*drained)["reached"].get<bool>()) << report.dump(2);
  // The pod left 200 ms after the taint appeared, which was no earlier than the detection's lower
  // bound (detected is read at a poll, so at_ms can lag the taint by its uncertainty).
  EXPECT_GT((*drained)["at_ms"].get<double>(), (*detected)["lower_ms"].get<double>() + 150) << report.dump(2);
  EXPECT_EQ((*replaced)["verdict"], "skipped");
  ASSERT_TRUE((*returned)["reached"].get<bool>()) << report.dump(2);
  EXPECT_GT((*returned)["at_ms"].get<double>(), (*drained)["at_ms"].get<double>());
  // What the drill saw: cmax's cordon and taint and its condition, not the GPU pool's own taint.
  const std::string reason = report["nodes"][0]["before"]["reason"].get<std::string>();
  EXPECT_EQ(reason, "");
  std::printf("[ measure  ] drill on Kubernetes with cmaxd: detected %.1f ms (+/- %.1f), drained %.1f ms, returned %.1f ms\n",
              (*detected)["at_ms"].get<double>(), (*detected)["uncertainty_ms"].get<double>() / 2,
              (*drained)["at_ms"].get<double>(), (*returned)["at_ms"].get<double>());
}

TEST_F(DrillKubernetes, AProblemConditionAloneIsDetectedButNeverDrained) {
  // node-problem-detector's way: a condition, no taint, no cordon, set 300 ms after the drill's
  // injection. Event-driven: the drill's audit record of the injected lines is the signal (a fixed
  // sleep from the test's start raced the drill's own start on a busy machine, and the condition
  // then landed in the baseline).
  const auto injected = dir_.dir() / fmt::format("drill-{}", runs_) / "injected.jsonl";
  std::jthread npd([&](std::stop_token stop) {
    const auto deadline = Clock::now() + 60s;
    std::error_code ec;
    while (!stop.stop_requested() && Clock::now() < deadline &&
           !(std::filesystem::exists(injected, ec) && std::filesystem::file_size(injected, ec) > 0))
      std::this_thread::sleep_for(5ms);
    if (stop.stop_requested() || Clock::now() >= deadline) return;
    std::this_thread::sleep_for(300ms);
    api_.update_node([](json& n) {
      n["status"]["conditions"].push_back({{"type", "GPUProblem"}, {"status", "True"}, {"reason", "XidError"}});
    });
  });
  int code = -1;
  auto report = drill({"--scenario", "xid79", "--detect-timeout-s", "20", "--drain-timeout-s", "2"}, &code);
  ASSERT_TRUE(report.is_object());
  const json* detected = stage(report, "detected");
  const json* drained = stage(report, "drained");
  ASSERT_TRUE(detected && drained) << report.dump(2);
  ASSERT_TRUE((*detected)["reached"].get<bool>()) << report.dump(2);
  EXPECT_GT((*detected)["at_ms"].get<double>(), 250);
  EXPECT_EQ((*drained)["verdict"], "never");
  EXPECT_EQ(report["nodes"][0]["after"]["reason"], "condition GPUProblem=True (XidError)");
  EXPECT_EQ(code, 1);
}

// The replacement on Kubernetes: the workload's pod that ran on the target runs again, Running, on
// another node (the scheduler's and the Job controller's part, played by the test once cmaxd has
// tainted the node), and the drill times it as on Slurm.
TEST_F(DrillKubernetes, TheWorkloadsPodRescheduledElsewhereIsTheReplacement) {
  auto train = cmax::test::make_pod("train-0", "k1");
  train["metadata"]["labels"] = {{"app", "train"}};
  api_.set_pods(json::array({train, cmax::test::make_pod("cmaxd-x1", "k1", true)}));
  {  // A workload that does not run on the target: refused before anything is injected.
    int code = -1;
    std::string err;
    (void)drill({"--scenario", "xid79", "--workload", "app=inference"}, &code, &err);
    EXPECT_EQ(code, 3);
    EXPECT_NE(err.find("no Running pod of app=inference"), std::string::npos) << err;
  }
  auto agent = cmax::test::Daemon::start(
      {CMAXD_BIN, "--node", "k1", "--scheduler", "kubernetes", "--kube-api", api_.url(), "--kube-token-file",
       (dir_.dir() / "token").string(), "--db", (dir_.dir() / "cmaxd.db").string(), "--from-now", "--metrics-listen", "",
       "--no-nvml", "--no-ib"},
      {}, dir_.dir() / "cmaxd.log");
  ASSERT_TRUE(agent) << agent.error().message;
  ASSERT_TRUE(cmax::test::wait_for_log(dir_.dir() / "cmaxd.log", "from now on", 60s, &*agent));
  std::jthread cluster([&](std::stop_token stop) {
    const auto deadline = Clock::now() + 30s;
    while (!stop.stop_requested() && Clock::now() < deadline && !has_taint(api_.node(), "cmax.io/unhealthy"))
      std::this_thread::sleep_for(5ms);
    if (stop.stop_requested() || Clock::now() >= deadline) return;
    // Evicted from k1, then (the scheduler, the kubelet) running on k2.
    api_.set_pods(json::array({cmax::test::make_pod("cmaxd-x1", "k1", true)}));
    std::this_thread::sleep_for(300ms);
    auto moved = cmax::test::make_pod("train-0-r1", "k2");
    moved["metadata"]["labels"] = {{"app", "train"}};
    api_.set_pods(json::array({cmax::test::make_pod("cmaxd-x1", "k1", true), moved}));
  });
  auto report = drill({"--scenario", "xid79", "--workload", "app=train", "--detect-timeout-s", "20",
                       "--drain-timeout-s", "20", "--replace-timeout-s", "20"});
  cluster.request_stop();
  ASSERT_TRUE(report.is_object());
  const json* drained = stage(report, "drained");
  const json* replaced = stage(report, "replaced");
  ASSERT_TRUE(drained && replaced) << report.dump(2);
  ASSERT_TRUE((*replaced)["reached"].get<bool>()) << report.dump(2);
  EXPECT_EQ((*replaced)["how"], "1 pods of app=train running on k2");
  EXPECT_GT((*replaced)["at_ms"].get<double>(), (*drained)["at_ms"].get<double>() + 150);
  std::printf("[ measure  ] drill on Kubernetes: drained %.1f ms, the workload's pod running elsewhere %.1f ms (+/- %.1f)\n",
              (*drained)["at_ms"].get<double>(), (*replaced)["at_ms"].get<double>(),
              (*replaced)["uncertainty_ms"].get<double>() / 2);

}

TEST_F(DrillKubernetes, ACordonedNodeAnUnknownNodeOrSlurmOnlyFlagsAreRefusedAndNothingIsInjected) {
  api_.update_node([](json& n) { n["spec"]["unschedulable"] = true; });
  int code = -1;
  std::string err;
  (void)drill({"--scenario", "xid79"}, &code, &err);
  EXPECT_EQ(code, 3);
  EXPECT_NE(err.find("already out of service"), std::string::npos) << err;
  EXPECT_NE(err.find("nothing was injected"), std::string::npos) << err;
  code = -1;
  std::vector<std::string> argv{CMAX_BIN, "drill", "run", "--scheduler", "kubernetes", "--kube-api", api_.url(),
                                "--kube-token-file", (dir_.dir() / "token").string(), "--inject", "local",
                                "--nodes", "k9", "--yes", "--scenario", "xid79"};
  auto r = cmax::core::run_process({argv, 30s, 1u << 20, {}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 3) << r->out << r->err;
  EXPECT_NE(r->err.find("404"), std::string::npos) << r->err;
  argv[12] = "k1";
  argv.insert(argv.end(), {"--reservation", "drill"});
  r = cmax::core::run_process({argv, 30s, 1u << 20, {}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_NE(r->err.find("Slurm's"), std::string::npos) << r->err;
}

}  // namespace
