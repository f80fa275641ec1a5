// `cmax audit isolation` end to end inside network namespaces the test builds:
// a "tenant" namespace runs cmax, a "services" namespace answers for all
// of 10.200.X.0/24 and for 169.254.169.254, linked by one veth pair. Real
// listeners (tests/support/iso_http) answer like an open Grafana, a Grafana
// that wants a login, a Jupyter with a token, an open Ray dashboard, a Slurm
// daemon, a metadata endpoint that requires a token, over TLS an anonymous
// kubelet, an API server that denies system:anonymous and a BMC's Redfish
// login, over UDP a BMC that admits anonymous IPMI logins, and an egress
// canary; every other port is
// closed, and one address:port drops its packets (an `ip rule` into a blackhole
// table). Nothing leaves the namespaces: the tenant has no route but the veth,
// the services no route out at all.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "audit_json_util.h"
#include "core/process.h"
#include "support/daemon.h"

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Cmd {
  int code = -1;
  std::string out, err;
  double wall_s = 0;
};

Cmd run(std::vector<std::string> argv, std::chrono::milliseconds timeout = 20s) {
  auto r = cmax::core::run_process({std::move(argv), timeout, 16u << 20});
  if (!r) return {-1, "", r.error().message};
  return {r->exit_code, r->out, r->err, std::chrono::duration<double>(r->wall).count()};
}

// Two namespaces and the veth between them; deleted (with the veth) when the
// object goes.
class TestNetwork {
 public:
  TestNetwork() {
    int pid = static_cast<int>(::getpid());
    x_ = 100 + pid % 100;
    tenant_ = "cmaxiso-" + std::to_string(pid) + "-t";
    services_ = "cmaxiso-" + std::to_string(pid) + "-s";
    std::string veth = "cmiso" + std::to_string(pid % 100000);
    std::string net = "10.200." + std::to_string(x_);
    std::string link = "10.201." + std::to_string(x_);
    std::vector<std::vector<std::string>> steps = {
        {"ip", "netns", "add", tenant_},
        {"ip", "netns", "add", services_},
        {"ip", "link", "add", veth + "a", "netns", tenant_, "type", "veth", "peer", "name",
         veth + "b", "netns", services_},
        {"ip", "-n", tenant_, "link", "set", "lo", "up"},
        {"ip", "-n", services_, "link", "set", "lo", "up"},
        {"ip", "-n", tenant_, "addr", "add", link + ".1/30", "dev", veth + "a"},
        {"ip", "-n", services_, "addr", "add", link + ".2/30", "dev", veth + "b"},
        {"ip", "-n", tenant_, "link", "set", veth + "a", "up"},
        {"ip", "-n", services_, "link", "set", veth + "b", "up"},
        {"ip", "-n", tenant_, "route", "add", net + ".0/24", "via", link + ".2"},
        {"ip", "-n", tenant_, "route", "add", "169.254.169.254/32", "via", link + ".2"},
        // The services namespace owns every address of the /24 (AnyIP) and the
        // metadata address.
        {"ip", "-n", services_, "route", "add", "local", net + ".0/24", "dev", "lo"},
        {"ip", "-n", services_, "addr", "add", "169.254.169.254/32", "dev", "lo"},
    };
    for (const auto &step : steps) {
      auto r = run(step);
      if (r.code != 0) {
        error_ = cmax::core::describe_argv(step) + ": " + r.err;
        return;
      }
    }
    // 10.200.X.9:9090 drops its packets: a policy rule before the local table
    // into a blackhole.
    std::vector<std::vector<std::string>> drop = {
        {"ip", "-n", services_, "rule", "add", "pref", "10", "to", net + ".9/32", "ipproto", "tcp",
         "dport", "9090", "table", "100"},
        {"ip", "-n", services_, "route", "add", "blackhole", "default", "table", "100"},
        {"ip", "-n", services_, "rule", "add", "pref", "20", "table", "local"},
        {"ip", "-n", services_, "rule", "del", "pref", "0", "table", "local"},
    };
    drops_ = true;
    for (const auto &step : drop) drops_ = drops_ && run(step).code == 0;
  }
  ~TestNetwork() {
    run({"ip", "netns", "del", tenant_});
    run({"ip", "netns", "del", services_});
  }
  TestNetwork(const TestNetwork &) = delete;
  TestNetwork &operator=(const TestNetwork &) = delete;

  const std::string &error() const { return error_; }
  bool drops() const { return drops_; }
  std::string addr(int host) const {
    return "10.200." + std::to_string(x_) + "." + std::to_string(host);
  }
  std::string scope() const { return "10.200." + std::to_string(x_) + ".0/24"; }
  const std::string &tenant() const { return tenant_; }
  const std::string &services() const { return services_; }

 private:
  int x_ = 0;
  std::string tenant_, services_, error_;
  bool drops_ = false;
};

std::string read_all(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const json* finding(const json& report, std::string_view id) { return cmax::test::audit_finding(report, id); }
std::string result_of(const json& report, std::string_view id) { return cmax::test::audit_result(report, id); }

class AuditIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef ISO_HTTP_BIN
    GTEST_SKIP() << "tests/support/iso_http not built";
#else
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to build network namespaces";
    if (!cmax::test::find_system_program("ip")) GTEST_SKIP() << "needs iproute2's ip";
    net_ = std::make_unique<TestNetwork>();
    if (!net_->error().empty()) GTEST_SKIP() << "cannot build the test network: " << net_->error();
    dir_ = std::filesystem::temp_directory_path() / ("cmaxiso-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    log_ = dir_ / "requests.log";
    std::filesystem::remove(log_);
    auto d = cmax::test::Daemon::start(
        {"ip", "netns", "exec", net_->services(), ISO_HTTP_BIN, log_.string(),
         net_->addr(5) + ":3000:grafana-open", net_->addr(6) + ":3000:grafana-auth",
         net_->addr(7) + ":8888:jupyter-auth", net_->addr(8) + ":8265:ray-open",
         net_->addr(10) + ":6817:accept", "169.254.169.254:80:metadata-token",
         net_->addr(11) + ":10250:tls-kubelet-open", net_->addr(12) + ":6443:tls-apiserver-denied",
         net_->addr(13) + ":443:tls-redfish-auth", net_->addr(13) + ":623:udp-ipmi-anon",
         net_->addr(14) + ":8080:canary"},
        {}, dir_ / "server.log");
    ASSERT_TRUE(d) << d.error().message;
    server_ = std::make_unique<cmax::test::Daemon>(std::move(*d));
    for (int i = 0; i < 100 && read_all(log_).find("ready") == std::string::npos; ++i)
      std::this_thread::sleep_for(50ms);
    ASSERT_NE(read_all(log_).find("ready"), std::string::npos) << read_all(dir_ / "server.log");
#endif
  }
  void TearDown() override {
    server_.reset();
    net_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  Cmd cmax_in_tenant(std::vector<std::string> args) {
    std::vector<std::string> argv = {"ip",     "netns", "exec",     net_->tenant(),
                                     CMAX_BIN, "audit", "isolation"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 60s);
  }

  std::unique_ptr<TestNetwork> net_;
  std::unique_ptr<cmax::test::Daemon> server_;
  std::filesystem::path dir_, log_;
};

}  // namespace

TEST_F(AuditIsolation, EveryFindingOnASlash24) {
  // The twelve HTTP and Slurm service ports (Redfish is opt-in; kube-apiserver
  // left out here).
  auto r = cmax_in_tenant({"--scope", net_->scope(), "--json", "--ports",
                           "10250,10255,2379,3000,9090,9400,9100,8888,8265,6817,6818,6819"});
  ASSERT_EQ(r.code, 2) << r.err << r.out.substr(0, 2000);  // a security fail
  std::printf(
      "[ measure  ] /24 x 12 ports + metadata (3049 probes): %.2f s "
      "wall (cmax process)\n",
      r.wall_s);
  EXPECT_LT(r.wall_s, 3.0);
  auto j = json::parse(r.out);
  ASSERT_EQ(j["schema"], "cmax.audit/1");

  // Grafana: one open (fail), one behind a login (pass); the summary shows the
  // worst.
  EXPECT_EQ(result_of(j, "isolation.grafana.anonymous@" + net_->addr(5) + ":3000"), "fail");
  EXPECT_NE((*finding(j, "isolation.grafana.anonymous@" + net_->addr(5) + ":3000"))["observed"]
                .get<std::string>()
                .find("2 entries"),
            std::string::npos);
  EXPECT_EQ(result_of(j, "isolation.grafana.anonymous@" + net_->addr(6) + ":3000"), "pass")
      << finding(j, "isolation.grafana.anonymous")->dump(2) << read_all(log_);
  EXPECT_EQ(result_of(j, "isolation.grafana.anonymous"), "fail");
  EXPECT_EQ(result_of(j, "isolation.jupyter.anonymous@" + net_->addr(7) + ":8888"), "pass");
  EXPECT_EQ(result_of(j, "isolation.jupyter.anonymous"), "pass");
  EXPECT_EQ(result_of(j, "isolation.ray.dashboard@" + net_->addr(8) + ":8265"), "fail");
  EXPECT_EQ(result_of(j, "isolation.slurmctld.reachable@" + net_->addr(10) + ":6817"), "warn");
  EXPECT_EQ(result_of(j, "isolation.slurmctld.reachable"), "warn");
  // The metadata endpoint answers, but only with a token: pass.
  EXPECT_EQ(result_of(j, "isolation.metadata.imds@169.254.169.254:80"), "pass");
  EXPECT_EQ(result_of(j, "isolation.metadata.imds"), "pass");
  // Closed everywhere: pass, and nothing per address.
  EXPECT_EQ(result_of(j, "isolation.etcd.open"), "pass");
  EXPECT_NE((*finding(j, "isolation.etcd.open"))["observed"].get<std::string>().find("254 closed"),
            std::string::npos);
  // The port that drops packets is not reachable: pass, counted as "no answer".
  if (net_->drops()) {
    const json *prom = finding(j, "isolation.prometheus.open");
    ASSERT_NE(prom, nullptr);
    EXPECT_EQ((*prom)["result"], "pass");
    EXPECT_NE((*prom)["observed"].get<std::string>().find("1 no answer"), std::string::npos)
        << (*prom)["observed"];
  } else {
    std::printf(
        "[ skipped  ] drop sub-check: ip rule with ipproto/dport not "
        "available\n");
  }
  EXPECT_EQ(result_of(j, "isolation.kube_apiserver.anonymous"), "not_applicable");
  for (const auto &f : j["findings"]) {
    if (f["id"] == "storage.kube.rwx") continue;  // the one storage finding of the Kubernetes half
    EXPECT_EQ(f["category"], "security");
    EXPECT_TRUE(f["security"].get<bool>());
    // Per-address findings name only addresses of the scope or the metadata
    // address.
    std::string id = f["id"];
    std::string prefix = net_->addr(0).substr(0, net_->addr(0).size() - 1);
    bool in_scope = id.find("@" + prefix) != std::string::npos ||
                    id.find("@169.254.169.254:") != std::string::npos;
    EXPECT_TRUE(id.find('@') == std::string::npos || in_scope) << id;
  }

  // Only GETs, one per open HTTP service; the metadata only its listing, never
  // a credential path.
  auto log = read_all(log_);
  EXPECT_NE(log.find("169.254.169.254:80 GET /latest/meta-data/ HTTP/1.1"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("iam"), std::string::npos);
  EXPECT_EQ(log.find("PUT "), std::string::npos);
  EXPECT_EQ(log.find("POST "), std::string::npos);
  EXPECT_NE(log.find(net_->addr(5) + ":3000 GET /api/search HTTP/1.1"), std::string::npos) << log;
}

TEST_F(AuditIsolation, DryRunProbesNothing) {
  auto before = read_all(log_);
  auto r = cmax_in_tenant({"--scope", net_->scope(), "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("254 unique addresses"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GET /api/search"), std::string::npos);
  EXPECT_NE(r.out.find("GET /latest/meta-data/"), std::string::npos);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(read_all(log_), before);
}

TEST_F(AuditIsolation, UnroutableAndOversizedScopesAreHonest) {
  // No route to 10.202.0.0/28 in the tenant namespace: every probe is
  // unverified, never a pass.
  auto r = cmax_in_tenant(
      {"--scope", "10.202.0.0/28", "--ports", "grafana,ray", "--no-metadata", "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("could not run"), std::string::npos) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(result_of(j, "isolation.grafana.anonymous"), "unverified");
  EXPECT_EQ(result_of(j, "isolation.ray.dashboard"), "unverified");
  EXPECT_NE((*finding(j, "isolation.grafana.anonymous"))["reason"].get<std::string>().find("route"),
            std::string::npos);
  EXPECT_EQ(result_of(j, "isolation.metadata.imds"), "not_applicable");

  auto big = cmax_in_tenant({"--scope", "10.0.0.0/16"});
  EXPECT_EQ(big.code, 3);
  EXPECT_NE(big.err.find("--max-hosts"), std::string::npos) << big.err;
  auto multicast = cmax_in_tenant({"--scope", "224.0.0.0/24"});
  EXPECT_EQ(multicast.code, 3);
  EXPECT_NE(multicast.err.find("multicast"), std::string::npos) << multicast.err;
}

TEST_F(AuditIsolation, TlsServicesIpmiOverUdpAndTheEgressCanary) {
  const std::string scopes = net_->addr(11) + "," + net_->addr(12) + "," + net_->addr(13) + "," + net_->addr(15);
  const std::string canary = "http://" + net_->addr(14) + ":8080/cmax-canary";
  auto r = cmax_in_tenant({"--scope", scopes, "--ports", "kubelet,kube_apiserver,redfish,ipmi", "--no-metadata",
                           "--no-kube", "--egress-canary", canary, "--json"});
  ASSERT_EQ(r.code, 2) << r.err << r.out.substr(0, 2000);
  auto j = json::parse(r.out);
  // The anonymous kubelet lists pods over TLS: fail, with the certificate as evidence.
  const std::string kubelet = "isolation.kubelet.anonymous@" + net_->addr(11) + ":10250";
  EXPECT_EQ(result_of(j, kubelet), "fail") << finding(j, "isolation.kubelet.anonymous")->dump(2);
  EXPECT_NE((*finding(j, kubelet))["evidence"]["value"].get<std::string>().find("CN=kubelet-open"),
            std::string::npos)
      << finding(j, kubelet)->dump(2);
  EXPECT_EQ(result_of(j, "isolation.kubelet.anonymous"), "fail");
  // The API server denies system:anonymous: pass.
  EXPECT_EQ(result_of(j, "isolation.kube_apiserver.anonymous@" + net_->addr(12) + ":6443"), "pass");
  EXPECT_EQ(result_of(j, "isolation.kube_apiserver.anonymous"), "pass");
  // A BMC's Redfish asks for a login, but a tenant reaches it: fail.
  EXPECT_EQ(result_of(j, "isolation.redfish.reachable@" + net_->addr(13) + ":443"), "fail");
  // IPMI over UDP: the BMC admits anonymous logins; the other three addresses answered
  // ICMP port unreachable (closed).
  const std::string ipmi = "isolation.ipmi.reachable@" + net_->addr(13) + ":623";
  EXPECT_EQ(result_of(j, ipmi), "fail");
  EXPECT_NE((*finding(j, ipmi))["observed"].get<std::string>().find("anonymous login enabled"), std::string::npos)
      << finding(j, ipmi)->dump(2);
  const json *ipmi_summary = finding(j, "isolation.ipmi.reachable");
  ASSERT_NE(ipmi_summary, nullptr);
  EXPECT_NE((*ipmi_summary)["observed"].get<std::string>().find("1 open, 3 closed"), std::string::npos)
      << (*ipmi_summary)["observed"];
  // The canary answered: egress is open (warn).
  EXPECT_EQ(result_of(j, "isolation.egress.canary"), "warn") << finding(j, "isolation.egress.canary")->dump(2);

  auto log = read_all(log_);
  EXPECT_NE(log.find(net_->addr(11) + ":10250 tls GET /pods HTTP/1.1"), std::string::npos) << log;
  EXPECT_NE(log.find(net_->addr(12) + ":6443 tls GET /api/v1/namespaces?limit=1 HTTP/1.1"), std::string::npos) << log;
  EXPECT_NE(log.find(net_->addr(13) + ":623 udp 23 bytes"), std::string::npos) << log;
  EXPECT_NE(log.find(net_->addr(14) + ":8080 GET /cmax-canary HTTP/1.1"), std::string::npos) << log;

  // A canary nothing answers (a closed port): egress blocked, pass.
  auto blocked = cmax_in_tenant({"--no-metadata", "--no-kube", "--egress-canary",
                                 "http://" + net_->addr(15) + ":8080/", "--json"});
  ASSERT_EQ(blocked.code, 0) << blocked.err;
  EXPECT_EQ(result_of(json::parse(blocked.out), "isolation.egress.canary"), "pass");

  auto plan = cmax_in_tenant({"--scope", net_->addr(13), "--ports", "redfish,ipmi", "--dry-run",
                              "--egress-canary", canary});
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(plan.out.find("623/udp"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("TLS, then GET /redfish/v1/Systems"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("Egress canary: one GET " + canary), std::string::npos) << plan.out;
}
