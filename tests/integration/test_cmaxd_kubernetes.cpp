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
#include "support/kmsg.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// One Node, patched the way the API server does: JSON Patch (RFC 6902, with its "test" op) on the
// node, strategic merge of status.conditions by type on /status.
class FakeApi {
 public:
  FakeApi() {
    node_ = json::parse(R"({"kind":"Node","apiVersion":"v1",
      "metadata":{"name":"k1","resourceVersion":"1","labels":{"pool":"gpu"},"annotations":{}},
      "spec":{},
      "status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    server_.Get("/api/v1/nodes/k1", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      res.set_content(node_.dump(), "application/json");
    });
    server_.Get("/api/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      res.set_content(json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                           {"items", json::array({node_})}}
                          .dump(),
                      "application/json");
    });
    server_.Patch("/api/v1/nodes/k1", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++patches_;
      if (!first_patch_) first_patch_ = Clock::now();
      try {
        node_ = node_.patch(json::parse(req.body));
      } catch (const json::exception& e) {
        res.status = 409;
        res.set_content(json{{"kind", "Status"}, {"code", 409}, {"message", e.what()}}.dump(), "application/json");
        return;
      }
      node_["metadata"]["resourceVersion"] = std::to_string(++version_);
      res.set_content(node_.dump(), "application/json");
    });
    server_.Patch("/api/v1/nodes/k1/status", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      auto patch = json::parse(req.body);
      auto& conds = node_["status"]["conditions"];
      for (const auto& c : patch["status"]["conditions"]) {
        bool merged = false;
        for (auto& have : conds)
          if (have["type"] == c["type"]) {
            have.merge_patch(c);
            merged = true;
          }
        if (!merged) conds.push_back(c);
      }
      res.set_content(node_.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) std::this_thread::sleep_for(1ms);
  }
  ~FakeApi() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  json node() {
    std::lock_guard lock(mu_);
    return node_;
  }
  std::optional<Clock::time_point> first_patch() {
    std::lock_guard lock(mu_);
    return first_patch_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  json node_;
  int version_ = 1, patches_ = 0;
  std::optional<Clock::time_point> first_patch_;
};

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
