// cmaxd --scheduler kubernetes end to end: a real Xid line in this machine's /dev/kmsg, the real
// cmaxd binary, and on the other side a thin API server on 127.0.0.1 (no Kubernetes API server
// can run here: this is a contract test) that applies the JSON Patches and status patches cmaxd
// sends to one Node object. Asserts the node ends cordoned, tainted and annotated with cmax's
// reason, that a recovery resumes it, and how long the write -> PATCH took.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/daemon.h"
#include "support/fake_kube_api.h"
#include "support/kmsg.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using FakeApi = cmax::test::FakeKubeApi;

bool has_taint(const json& node, const std::string& key) {
  if (!node["spec"].contains("taints")) return false;
  for (const auto& t : node["spec"]["taints"])
    if (t.value("key", "") == key) return true;
  return false;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(CmaxdKubernetes, AnXidCordonsTaintsAndAnnotatesTheNodeAndARecoveryResumesIt) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  cmax::test::TempHost dir;
  dir.write("/token", "test-token\n");
  FakeApi api;
  ASSERT_GT(api.port(), 0);
  const auto log = dir.dir() / "cmaxd.log";
  auto agent = cmax::test::Daemon::start(
      {CMAXD_BIN, "--node", "k1", "--scheduler", "kubernetes", "--kube-api", fmt::format("http://127.0.0.1:{}", api.port()),
       "--kube-token-file", (dir.dir() / "token").string(), "--db", (dir.dir() / "cmaxd.db").string(), "--from-now",
       "--metrics-listen", "", "--no-nvml", "--no-ib"},
      {}, log);
  ASSERT_TRUE(agent) << agent.error().message;
  auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  ASSERT_TRUE(eventually([&] { return log_text().find("\"cmaxd: node k1") != std::string::npos; }, 10s))
      << log_text();

  const std::string pci = cmax::test::unique_pci();
  const auto written = Clock::now();
  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<4>mlx5_core {}.0 ib3: Link is Down\n", pci)));
  ASSERT_TRUE(eventually([&] { return has_taint(api.node(), "cmax.io/unhealthy"); })) << log_text() << api.node().dump(2);
  auto patched = api.first_patch();
  ASSERT_TRUE(patched);
  std::printf("[ measure  ] kmsg write -> first PATCH at the API: %.1f ms\n",
              std::chrono::duration<double, std::milli>(*patched - written).count());
  ASSERT_TRUE(eventually([&] {
    const json n = api.node();  // a copy: iterating a temporary's member would dangle
    for (const auto& c : n["status"]["conditions"])
      if (c["type"] == "CmaxHealthy" && c["status"] == "False") return true;
    return false;
  })) << api.node().dump(2) << log_text();
  json node = api.node();
  EXPECT_EQ(node["spec"].value("unschedulable", false), true);
  EXPECT_EQ(node["metadata"]["annotations"].value("cmax.io/reason", "").rfind("cmax: net_carrier ib3", 0), 0u)
      << node["metadata"]["annotations"].dump();

  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<6>mlx5_core {}.0 ib3: Link is Up\n", pci)));
  ASSERT_TRUE(eventually([&] { return !has_taint(api.node(), "cmax.io/unhealthy"); })) << log_text();
  node = api.node();
  EXPECT_FALSE(node["spec"].value("unschedulable", false)) << node.dump(2);
  EXPECT_FALSE(node["metadata"]["annotations"].contains("cmax.io/reason"));
}

}  // namespace
