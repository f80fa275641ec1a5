// The SRE team's fleet view, for real (issue 39): three real cmaxd processes on real Slurm (Debian's
// slurmctld and slurmd on 127.0.0.1, started by the test) read this machine's /dev/kmsg; one Xid line
// is a fleet event (every agent reads the same ring buffer, so all three drain their node). The real
// Prometheus scrapes them and evaluates deploy/prometheus/cmax-rules.yaml (its `for:` durations
// shortened to a second: the rules are otherwise as shipped); a real Alertmanager (built from the Go
// module proxy, tests/fleetview/build_alertmanager.sh) routes with deploy/alertmanager/alertmanager.yaml
// (its timers shortened, its webhook pointed at the test) and must deliver one page for the event,
// listing the three nodes, and one "resolved" once the nodes are resumed. Every panel query of
// deploy/grafana/*.json is evaluated against that Prometheus during the event and must return data.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/kmsg.h"
#include "support/ports.h"
#include "support/slurm_cluster.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cmax::test::Daemon;
using cmax::test::SlurmCluster;
using nlohmann::json;

const fs::path kSource = CMAX_SOURCE_DIR;
const fs::path kAlertmanagerDir = fs::path(CMAX_BINARY_DIR) / "fleetview";

int free_port() { return cmax::test::free_loopback_port(); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The webhook receiver Alertmanager delivers to: every notification body, in order.
class Webhook {
 public:
  Webhook() {
    server_.Post("/cmax/page", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      pages_.push_back(json::parse(req.body, nullptr, false));
      res.status = 200;
    });
    server_.Post("/cmax/ticket", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++tickets_;
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Webhook() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<json> pages() {
    std::lock_guard lock(mu_);
    return pages_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::vector<json> pages_;
  int tickets_ = 0;
};

std::vector<json> with_status(const std::vector<json>& pages, const std::string& status) {
  std::vector<json> out;
  for (const auto& p : pages)
    if (p.is_object() && p.value("status", "") == status) out.push_back(p);
  return out;
}

// Nodes named by the alerts of one notification, for one alert name.
std::set<std::string> nodes_in(const json& page, const std::string& alertname) {
  std::set<std::string> out;
  for (const auto& a : page["alerts"])
    if (a["labels"].value("alertname", "") == alertname) out.insert(a["labels"].value("node", ""));
  return out;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return pred();
}

class FleetView : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << *why;
    if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
    prometheus_ = cmax::test::find_system_program("prometheus").value_or("");
    if (prometheus_.empty()) GTEST_SKIP() << "prometheus is not installed (scripts/setup-deps --test installs it)";
    if (fs::exists(kAlertmanagerDir / "alertmanager.unavailable"))
      GTEST_SKIP() << slurp(kAlertmanagerDir / "alertmanager.unavailable");
    if (!fs::exists(kAlertmanagerDir / "alertmanager"))
      GTEST_SKIP() << "Alertmanager not built: tests/fleetview/build_alertmanager.sh " << kAlertmanagerDir.string();
    auto c = SlurmCluster::start();
    ASSERT_TRUE(c) << c.error().message;
    cluster_ = std::move(*c);
    dir_ = cluster_->dir() / "fleetview";
    fs::create_directories(dir_);
  }

  // Starts cmaxd for `node` with its metrics on a free loopback port; returns the port.
  int start_agent(const std::string& node) {
    auto log = dir_ / fmt::format("cmaxd-{}.log", node);
    auto d = Daemon::start({CMAXD_BIN, "--node", node, "--db", (dir_ / (node + ".db")).string(), "--slurm-conf",
                            cluster_->conf_path(), "--from-now", "--no-fleet-breaker", "--resume-watch-ms", "200",
                            "--metrics-listen", "127.0.0.1:0", "--no-nvml", "--no-ib", "--boot-grace-s", "0"},
                           {}, log);
    EXPECT_TRUE(d) << d.error().message;
    int port = -1;
    eventually(
        [&] {
          std::ifstream in(log);
          for (std::string line; std::getline(in, line);)
            if (auto at = line.find("metrics on http://127.0.0.1:"); at != std::string::npos)
              port = std::atoi(line.c_str() + at + 28);
          return port > 0;
        },
        10s);
    agents_.push_back(std::move(*d));
    return port;
  }

  // The rules as shipped, every `for:` one second, so that the test waits seconds, not minutes.
  fs::path rules_for_test() {
    const std::string rules = std::regex_replace(slurp(kSource / "deploy/prometheus/cmax-rules.yaml"),
                                                 std::regex(R"((\n\s+for:\s*)\S+)"), "$011s");
    auto p = dir_ / "cmax-rules.yaml";
    std::ofstream(p) << rules;
    return p;
  }

  // The shipped routing with the test's webhook and timers of seconds.
  fs::path alertmanager_config(int webhook_port) {
    std::string cfg = slurp(kSource / "deploy/alertmanager/alertmanager.yaml");
    cfg = std::regex_replace(cfg, std::regex("http://127\\.0\\.0\\.1:9095"), fmt::format("http://127.0.0.1:{}", webhook_port));
    cfg = std::regex_replace(cfg, std::regex(R"(group_wait: \S+)"), "group_wait: 8s");
    cfg = std::regex_replace(cfg, std::regex(R"(group_interval: \S+)"), "group_interval: 4s");
    auto p = dir_ / "alertmanager.yaml";
    std::ofstream(p) << cfg;
    return p;
  }

  double query(int port, const std::string& q) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(5, 0);
    auto res = client.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
    if (!res || res->status != 200) return -1;
    auto j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].empty()) return -1;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }

  std::unique_ptr<SlurmCluster> cluster_;
  fs::path dir_;
  std::string prometheus_;
  std::vector<Daemon> agents_;
};

TEST_F(FleetView, OnePagePerFleetEventResolvedWhenTheNodesAreBackAndEveryPanelHasData) {
  cmax::test::DevkmsgUnlimited unlimited;
  const std::vector<std::string> nodes = {"n1", "n2", "n3"};
  std::vector<int> metrics_ports;
  for (const auto& n : nodes) {
    metrics_ports.push_back(start_agent(n));
    ASSERT_GT(metrics_ports.back(), 0) << "cmaxd " << n << " did not log its metrics port";
  }
  Webhook hook;
  const int am_port = free_port(), prom_port = free_port();
  auto am = Daemon::start({(kAlertmanagerDir / "alertmanager").string(),
                           "--config.file=" + alertmanager_config(hook.port()).string(),
                           "--storage.path=" + (dir_ / "am-data").string(),
                           fmt::format("--web.listen-address=127.0.0.1:{}", am_port), "--cluster.listen-address="},
                          {}, dir_ / "alertmanager.log");
  ASSERT_TRUE(am) << am.error().message;
  std::string targets;
  for (int p : metrics_ports) targets += fmt::format("{}'127.0.0.1:{}'", targets.empty() ? "" : ", ", p);
  std::ofstream(dir_ / "prometheus.yml") << fmt::format(
      "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n  external_labels:\n    cluster: fleetview-test\n"
      "rule_files:\n  - {}\n"
      "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{}']\n"
      "scrape_configs:\n  - job_name: cmaxd\n    static_configs:\n      - targets: [{}]\n",
      rules_for_test().string(), am_port, targets);
  auto prom = Daemon::start({prometheus_, "--config.file=" + (dir_ / "prometheus.yml").string(),
                             "--storage.tsdb.path=" + (dir_ / "prom-data").string(),
                             fmt::format("--web.listen-address=127.0.0.1:{}", prom_port)},
                            {}, dir_ / "prometheus.log");
  ASSERT_TRUE(prom) << prom.error().message;
  ASSERT_TRUE(eventually([&] { return query(prom_port, "count(up{job=\"cmaxd\"} == 1)") == 3; }, 30s))
      << cmax::test::tail_of_file((dir_ / "prometheus.log").string());

  // The fleet event: one Xid 79 line, which every agent reads and acts on for its own node.
  const std::string pci = cmax::test::unique_pci();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(cmax::test::write_kmsg(
      fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=fleetview, GPU has fallen off the bus.\n", pci)));
  for (const auto& n : nodes)
    ASSERT_TRUE(cluster_->wait_for(n, [](const cmax::sched::NodeState& s) { return s.drain_flag(); }, 10s))
        << n << " was not drained";
  ASSERT_TRUE(eventually([&] { return !with_status(hook.pages(), "firing").empty(); }, 60s))
      << "no page; Alertmanager log:\n" << cmax::test::tail_of_file((dir_ / "alertmanager.log").string());
  const double page_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Alerts that fire a moment later join the same group; give them the group's interval to show.
  std::this_thread::sleep_for(6s);
  auto firing = with_status(hook.pages(), "firing");
  std::set<std::string> held;
  for (const auto& p : firing) {
    auto n = nodes_in(p, "CmaxNodeHeld");
    held.insert(n.begin(), n.end());
  }
  EXPECT_EQ(held, std::set<std::string>(nodes.begin(), nodes.end())) << firing.front().dump(2);
  EXPECT_EQ(firing.size(), 1u) << "one page for the event, not one per node or per rule:\n" << json(firing).dump(1);
  std::set<std::string> names;
  for (const auto& a : firing.front()["alerts"]) names.insert(a["labels"].value("alertname", ""));
  EXPECT_TRUE(names.count("CmaxNodeHeld")) << firing.front().dump(1);
  EXPECT_TRUE(names.count("CmaxXidStorm")) << "three nodes, one Xid code: a storm";
  EXPECT_TRUE(names.count("CmaxFleetHeldCritical")) << "3 of 3 nodes held is above 25%";
  EXPECT_FALSE(names.count("CmaxFleetHeldWarning")) << "inhibited by the critical one";
  std::printf("[ measure  ] Xid line -> page delivered: %.1f s (scrape 1 s, eval 1 s, for 1 s, group_wait 8 s)\n", page_s);

  // Every panel of the dashboards answers with data during the event.
  cmax::core::ProcessSpec spec;
  spec.argv = {"python3", (kSource / "tests/fleetview/dashboard_queries.py").string(), "--prometheus",
               fmt::format("http://127.0.0.1:{}", prom_port), "--node", "n1", "--require-data",
               // The agents run without NVML, InfiniBand or mounts here: no probe series to show.
               "--allow-empty", "cmaxd_probe_",
               (kSource / "deploy/grafana/cmax-fleet.json").string(), (kSource / "deploy/grafana/cmax-node.json").string()};
  spec.timeout = 60s;
  auto panels = cmax::core::run_process(spec);
  ASSERT_TRUE(panels);
  EXPECT_EQ(panels->exit_code, 0) << panels->out << panels->err;
  std::printf("%s", panels->out.c_str());

  // Repaired: the nodes are resumed; the agents see it, their gauges fall, and the page says the
  // held nodes and the fleet alarm are resolved (the storm alert keeps its 10-minute window: the
  // group's page stays open for it, listing the others as resolved).
  for (const auto& n : nodes) ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=" + n, "State=RESUME"}));
  auto resolved_in = [](const json& page, const std::string& alertname) {
    std::set<std::string> out;
    for (const auto& a : page["alerts"])
      if (a["labels"].value("alertname", "") == alertname && a.value("status", "") == "resolved")
        out.insert(a["labels"].value("node", "fleet"));
    return out;
  };
  // The agents see their resumes at different reads, so the resolutions may come in more than one
  // of the group's notifications: together they must name every node and the fleet alarm.
  ASSERT_TRUE(eventually(
      [&] {
        std::set<std::string> nodes_back, fleet;
        for (const auto& p : hook.pages()) {
          if (!p.is_object()) continue;
          for (const auto& n : resolved_in(p, "CmaxNodeHeld")) nodes_back.insert(n);
          for (const auto& n : resolved_in(p, "CmaxFleetHeldCritical")) fleet.insert(n);
        }
        return nodes_back.size() == nodes.size() && !fleet.empty();
      },
      60s))
      << "the held nodes were never resolved; pages:\n" << json(hook.pages()).dump(1) << "\ncmaxd n2:\n"
      << cmax::test::tail_of_file((dir_ / "cmaxd-n2.log").string(), 3000);
  EXPECT_EQ(with_status(hook.pages(), "firing").size() + with_status(hook.pages(), "resolved").size(), hook.pages().size());
  EXPECT_EQ(query(prom_port, "sum(cmaxd_node_held)"), 0);
  EXPECT_EQ(query(prom_port, fmt::format("sum(cmaxd_incident_open{{device=\"{}\"}})", pci)), 0);
  EXPECT_EQ(query(prom_port, fmt::format("sum(cmaxd_device_incidents_total{{device=\"{}\"}})", pci)), 3);
}

}  // namespace
