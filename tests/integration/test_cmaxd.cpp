// cmaxd end to end on real Slurm (munged, slurmctld and four slurmd from Debian's packages on
// 127.0.0.1, started by the test) and this machine's real /dev/kmsg: real Xid lines written to the
// ring buffer drain the node with a cmax reason, a flood drains once, a kill -9 mid-flood and a
// restart neither lose the incident nor drain twice, a recovered link resumes the node, a node
// someone else drained is never resumed, and the circuit breaker stops at its limit.
// One cmaxd runs at a time: every cmaxd on this host reads the same ring buffer.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "agent/event_log.h"
#include "core/process.h"
#include "support/daemon.h"
#include "support/kmsg.h"
#include "support/ports.h"
#include "support/slurm_cluster.h"

namespace {

using namespace std::chrono_literals;
using cmax::sched::NodeState;
using cmax::test::SlurmCluster;

// Level 4 (warning): this VM prints levels 0-3 on its serial console synchronously, 2 ms a line,
// which would time the console rather than cmaxd. The agent does not look at the level.
std::string xid79(const std::string& pci) {
  return fmt::format("<4>NVRM: Xid (PCI:{}): 79, pid=1, name=drill, GPU has fallen off the bus.\n", pci);
}

class Cmaxd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (auto why = SlurmCluster::unavailable()) return;
    auto c = SlurmCluster::start();
    ASSERT_TRUE(c) << c.error().message;
    cluster_ = std::move(*c);
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << *why;
    if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  }

  std::string db() const { return (cluster_->dir() / "cmaxd.db").string(); }

  // The last lines cmaxd logged, for failure messages.
  std::string log_tail(std::size_t lines = 15) const {
    std::ifstream in(cluster_->dir() / "cmaxd.log");
    std::deque<std::string> tail;
    for (std::string line; std::getline(in, line);) {
      tail.push_back(line);
      if (tail.size() > lines) tail.pop_front();
    }
    std::string out = "cmaxd.log:\n";
    for (const auto& l : tail) out += l + "\n";
    return out;
  }

  // How many times cmaxd has said it is reading the kernel log (its start-up line).
  std::size_t starts_logged() const {
    std::ifstream in(cluster_->dir() / "cmaxd.log");
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) n += line.find("\"cmaxd: node ") != std::string::npos;
    return n;
  }

  // Starts cmaxd for `node` and waits until it reads the kernel log (with --from-now, from the end
  // of the ring buffer on a first start).
  cmax::test::Daemon start(const std::string& node, int breaker_max = 50, std::vector<std::string> extra = {},
                           std::vector<std::string> env = {}) {
    std::vector<std::string> argv{CMAXD_BIN, "--node", node, "--db", db(), "--slurm-conf", cluster_->conf_path(),
                                  "--from-now", "--breaker-max", std::to_string(breaker_max)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::size_t before = starts_logged();
    auto d = cmax::test::Daemon::start(argv, env, cluster_->dir() / "cmaxd.log");
    EXPECT_TRUE(d) << d.error().message;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (starts_logged() == before && d->running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    EXPECT_GT(starts_logged(), before) << "cmaxd did not start: " << d->exit_status();
    return std::move(*d);
  }

  // Writes `n` copies of `line` to /dev/kmsg through one descriptor.
  static void flood(const std::string& line, int n) {
    int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < n; ++i) ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(fd);
  }

  cmax::agent::EventLog log() const {
    auto l = cmax::agent::EventLog::open(db());
    EXPECT_TRUE(l) << l.error().message;
    return std::move(*l);
  }

  cmax::Result<NodeState> wait_drain(const std::string& node, bool drained, std::chrono::milliseconds limit = 5s) {
    return cluster_->wait_for(node, [&](const NodeState& s) { return s.drain_flag() == drained; }, limit);
  }

  static inline std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(Cmaxd, AnXidDrainsTheNodeAndAFloodDrainsOnceAcrossAKill) {
  cmax::test::DevkmsgUnlimited unlimited;
  const std::string pci = cmax::test::unique_pci();
  const std::string key = "n1|xid|79|" + pci;
  {
    auto agent = start("n1");
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));
    auto s = wait_drain("n1", true);
    ASSERT_TRUE(s) << s.error().message;
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ measure  ] kmsg write -> DRAIN visible in scontrol: %.1f ms\n", ms);
    EXPECT_EQ(s->reason.rfind("cmax: Xid 79 " + pci, 0), 0u) << s->reason;
    auto f0 = std::chrono::steady_clock::now();
    flood(xid79(pci), 5000);
    std::printf("[ measure  ] 5,000 lines written in %.1f ms\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0).count());
    agent.stop();  // SIGKILL mid-flood
  }
  flood(xid79(pci), 5000);
  {
    auto agent = start("n1");  // resumes after the last persisted record: --from-now does not apply
    std::this_thread::sleep_for(1500ms);
    ASSERT_TRUE(agent.running()) << agent.exit_status();
  }
  auto l = log();
  auto last = l.last_action(key);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "done");
  auto actions = l.actions_for(key);  // only ours: other tests may write other Xids meanwhile
  ASSERT_TRUE(actions);
  EXPECT_EQ(actions->size(), 1u) << "10,000 lines of one Xid across a kill -9 must drain once";
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n1", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n1", false));
}

TEST_F(Cmaxd, ARecoveredLinkResumesTheNode) {
  const std::string pci = cmax::test::unique_pci();
  auto agent = start("n2");
  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<3>mlx5_core {}.0 ib7: Link is Down\n", pci)));
  auto drained = wait_drain("n2", true);
  ASSERT_TRUE(drained) << drained.error().message << "\n" << log_tail();
  EXPECT_TRUE(drained->reason.starts_with("cmax: ")) << drained->reason;
  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<6>mlx5_core {}.0 ib7: Link is Up\n", pci)));
  auto resumed = wait_drain("n2", false);
  EXPECT_TRUE(resumed) << "cmaxd did not resume n2 after the link came back\n" << log_tail();
}

TEST_F(Cmaxd, ANodeDrainedBySomeoneElseIsNeverResumed) {
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n3", "State=DRAIN", "Reason=maintenance"}));
  ASSERT_TRUE(wait_drain("n3", true));
  const std::string pci = cmax::test::unique_pci();
  auto agent = start("n3");
  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<3>mlx5_core {}.0 ib7: Link is Down\n", pci)));
  ASSERT_TRUE(cmax::test::write_kmsg(fmt::format("<6>mlx5_core {}.0 ib7: Link is Up\n", pci)));
  std::this_thread::sleep_for(1500ms);
  auto s = cluster_->state("n3");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->drain_flag());
  EXPECT_EQ(s->reason, "maintenance");
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n3", "State=RESUME"}));
}

TEST_F(Cmaxd, TheBreakerStopsAtItsLimit) {
  const std::string a = cmax::test::unique_pci(), b = cmax::test::unique_pci();
  std::remove(db().c_str());
  for (const char* ext : {"-wal", "-shm"}) std::remove((db() + ext).c_str());
  auto agent = start("n4", 1);
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(a)));
  ASSERT_TRUE(wait_drain("n4", true));
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n4", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n4", false));
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(b)));
  std::this_thread::sleep_for(1500ms);
  auto s = cluster_->state("n4");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->drain_flag()) << "the breaker let a second drain through: " << s->state << " " << s->reason;
  auto last = log().last_action("n4|xid|79|" + b);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "refused");
}

// Two agents on one partition of four nodes, each allowed 25% (one node): the second drain is
// refused because the first agent's drain is visible in Slurm.
TEST_F(Cmaxd, TheFleetBreakerStopsASecondNodeInThePartition) {
  const std::string a = cmax::test::unique_pci(), b = cmax::test::unique_pci();
  auto first = start("n1", 50, {"--fleet-max-percent", "25", "--metrics-listen", ""});
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(a)));
  ASSERT_TRUE(wait_drain("n1", true)) << log_tail();
  first.stop();
  // The n1 agent also sees the second line (one ring buffer for all "nodes" here): it is stopped.
  auto second = start("n2", 50, {"--fleet-max-percent", "25", "--metrics-listen", ""});
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(b)));
  std::this_thread::sleep_for(1500ms);
  auto s = cluster_->state("n2");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->drain_flag()) << "the fleet breaker let a second node go: " << s->reason;
  auto last = log().last_action("n2|xid|79|" + b);
  ASSERT_TRUE(last && *last) << log_tail();
  EXPECT_EQ((*last)->status, "refused");
  EXPECT_NE((*last)->detail.find("fleet circuit breaker: cmax already holds 1 of 4 nodes in partition batch"),
            std::string::npos)
      << (*last)->detail;
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n1", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n1", false));
}

// An Xid that only NVML reports (no kernel line): the GPU probe, through the real dlopen path of
// a fake libnvidia-ml.so.1 (tests/support/fake_nvml), drains the node in real Slurm.
TEST_F(Cmaxd, AnNvmlXidEventDrainsTheNode) {
  const std::string fake = std::string(CMAX_BINARY_DIR) + "/tests/support/fake_nvml/libnvidia-ml.so.1";
  ASSERT_EQ(::access(fake.c_str(), R_OK), 0) << fake;
  const std::string pci = cmax::test::unique_pci();
  const auto state = cluster_->dir() / "nvml-state.txt";
  {
    std::ofstream out(state);
    out << "gpu 0 bus " << pci << ".0 uuid GPU-integration\n";
  }
  auto agent = start("n2", 50, {"--nvml-lib", fake, "--probe-interval-ms", "50", "--metrics-listen", ""},
                     {"CMAX_FAKE_NVML_STATE=" + state.string()});
  std::this_thread::sleep_for(300ms);  // a few polls of a healthy GPU: nothing to do
  auto s = cluster_->state("n2");
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->drain_flag()) << s->reason;
  {
    std::ofstream out(state, std::ios::app);
    out << "xid 0 79\n";
  }
  auto drained = wait_drain("n2", true);
  ASSERT_TRUE(drained) << drained.error().message << "\n" << log_tail();
  EXPECT_TRUE(drained->reason.starts_with("cmax: Xid 79 " + pci)) << drained->reason;
  auto last = log().last_action("n2|xid|79|" + pci);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "done");
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n2", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n2", false));
}

// `cmax check --slurm-healthcheck` as slurmd would run it, against the real cluster.
TEST_F(Cmaxd, TheSlurmHealthCheckDrainsOnlyARegisteredNodeAndResumesOnlyItsOwnDrain) {
  const std::string pci = cmax::test::unique_pci();
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));
  auto check = [&](const std::string& node, std::vector<std::string> env, bool with_kmsg) {
    std::vector<std::string> argv{CMAX_BIN, "check", "--slurm-healthcheck", "--node", node, "--slurm-conf",
                                  cluster_->conf_path(), "--act-on", "any", "--no-nvml", "--no-ib", "--json"};
    if (!with_kmsg) argv.insert(argv.end(), {"--kmsg", ""});
    auto r = cmax::core::run_process({argv, 30s, 8u << 20, env});
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : cmax::core::ProcessResult{};
  };
  // Before registration (or an older slurmd): unhealthy, said and returned, nothing asked of Slurm.
  auto unset = check("n4", {}, true);
  EXPECT_EQ(unset.exit_code, 1) << unset.err;
  EXPECT_NE(unset.out.find(pci), std::string::npos) << "the check did not see the Xid";
  EXPECT_NE(unset.out.find("scontrol is not called"), std::string::npos) << unset.out;
  auto s = cluster_->state("n4");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->drain_flag()) << s->reason;
  // Registered and in service: drained, with the health check's reason.
  auto yes = check("n4", {"SLURM_NODE_IS_HEALTHY=yes"}, true);
  EXPECT_EQ(yes.exit_code, 1) << yes.err;
  auto drained = wait_drain("n4", true);
  ASSERT_TRUE(drained) << drained.error().message << "\n" << yes.out;
  EXPECT_TRUE(drained->reason.starts_with("cmax: healthcheck: Xid 79 ")) << drained->reason;
  // Healthy again (the kernel log is left out here) while Slurm holds it: resumed, as its own drain.
  auto no = check("n4", {"SLURM_NODE_IS_HEALTHY=no"}, false);
  EXPECT_EQ(no.exit_code, 0) << no.err;
  EXPECT_TRUE(wait_drain("n4", false)) << no.out;
  // Someone else's drain is never resumed by the health check.
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n4", "State=DRAIN", "Reason=maintenance"}));
  ASSERT_TRUE(wait_drain("n4", true));
  auto foreign = check("n4", {"SLURM_NODE_IS_HEALTHY=no"}, false);
  EXPECT_EQ(foreign.exit_code, 0);
  EXPECT_NE(foreign.out.find("not the health check's"), std::string::npos) << foreign.out;
  std::this_thread::sleep_for(300ms);
  auto still = cluster_->state("n4");
  ASSERT_TRUE(still);
  EXPECT_TRUE(still->drain_flag());
  EXPECT_EQ(still->reason, "maintenance");
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n4", "State=RESUME"}));
}

int free_port() { return cmax::test::free_loopback_port(); }

// The number Prometheus answers for an instant query, or -1.
double prometheus_value(int port, const std::string& query) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(2, 0);
  auto res = client.Get("/api/v1/query", httplib::Params{{"query", query}}, httplib::Headers{});
  if (!res || res->status != 200) return -1;
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].empty()) return -1;
  return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
}

TEST_F(Cmaxd, PrometheusScrapesItsMetrics) {
  auto prom_bin = cmax::test::find_system_program("prometheus");
  if (!prom_bin) GTEST_SKIP() << "prometheus is not installed (scripts/setup-deps --test installs it)";
  auto agent = start("n1", 50, {"--metrics-listen", "127.0.0.1:0", "--dry-run"});
  int metrics_port = -1;
  {
    std::ifstream in(cluster_->dir() / "cmaxd.log");
    std::string line;
    while (std::getline(in, line))
      if (auto at = line.find("metrics on http://127.0.0.1:"); at != std::string::npos)
        metrics_port = std::atoi(line.c_str() + at + 28);
  }
  ASSERT_GT(metrics_port, 0) << "cmaxd did not log its metrics port";
  const int prom_port = free_port();
  const auto prom_dir = cluster_->dir() / "prometheus";
  std::filesystem::create_directories(prom_dir);
  std::ofstream(prom_dir / "prometheus.yml") << fmt::format(
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: cmaxd\n    static_configs:\n"
      "      - targets: ['127.0.0.1:{}']\n",
      metrics_port);
  auto prom = cmax::test::Daemon::start(
      {*prom_bin, "--config.file=" + (prom_dir / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (prom_dir / "data").string(), fmt::format("--web.listen-address=127.0.0.1:{}", prom_port)},
      {}, prom_dir / "prometheus.log");
  ASSERT_TRUE(prom) << prom.error().message;

  const std::string pci = cmax::test::unique_pci();
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));
  // Prometheus starts, scrapes every second, and answers through its HTTP API.
  double requested = -1, xids = -1;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline && (requested < 1 || xids < 1)) {
    requested = prometheus_value(prom_port, "cmaxd_actions_total{status=\"requested\",node=\"n1\"}");
    xids = prometheus_value(prom_port, "sum(cmaxd_signals_total{kind=\"xid\",action=\"reboot_node\"})");
    std::this_thread::sleep_for(250ms);
  }
  if (requested < 1) {
    std::ifstream plog(prom_dir / "prometheus.log");
    std::string all((std::istreambuf_iterator<char>(plog)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "Prometheus never saw cmaxd's drain (dry run); its log ends:\n"
                  << all.substr(all.size() > 3000 ? all.size() - 3000 : 0);
  }
  EXPECT_GE(xids, 1);
  EXPECT_GE(prometheus_value(prom_port, "cmaxd_action_latency_seconds_count"), 0);
  auto s = cluster_->state("n1");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->drain_flag()) << "--dry-run drained the node";
}


// Issue 39 (GPUd #1164: an agent that floods the kernel log): cmaxd opens /dev/kmsg read-only, so
// it cannot write to it; and across a drain, every userspace record in the ring buffer is one this
// test wrote.
TEST_F(Cmaxd, ItOpensTheKernelLogReadOnlyAndWritesNothingToIt) {
  auto agent = start("n3");
  const std::string pci = cmax::test::unique_pci();
  const std::string marker = fmt::format("cmaxd-quiet-{}", pci);
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::lseek(fd, 0, SEEK_END);  // from now on
  ASSERT_TRUE(cmax::test::write_kmsg("<4>" + marker + " start\n"));
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(wait_drain("n3", true)) << log_tail();
  ASSERT_TRUE(cmax::test::write_kmsg("<4>" + marker + " end\n"));
  // Every descriptor cmaxd holds on /dev/kmsg is O_RDONLY (/proc/PID/fdinfo "flags:" in octal).
  int kmsg_fds = 0;
  for (const auto& e : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", agent.pid()))) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec) != "/dev/kmsg") continue;
    ++kmsg_fds;
    std::ifstream info(fmt::format("/proc/{}/fdinfo/{}", agent.pid(), e.path().filename().string()));
    std::string key, flags;
    while (info >> key >> flags && key != "flags:") {}
    EXPECT_EQ(std::stoul(flags, nullptr, 8) & O_ACCMODE, static_cast<unsigned long>(O_RDONLY)) << "flags " << flags;
  }
  EXPECT_EQ(kmsg_fds, 1);
  // The records between the two markers that came from userspace (facility 1) are ours only.
  char buf[8192];
  bool inside = false;
  int ours = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    const std::string rec(buf, static_cast<std::size_t>(n));
    if (rec.find(marker + " start") != std::string::npos) inside = true;
    if (!inside) continue;
    const int prio = std::atoi(rec.c_str());
    if ((prio >> 3) == 1) {
      const bool mine = rec.find(marker) != std::string::npos || rec.find(pci) != std::string::npos;
      // Other tests may write meanwhile (they hold the kmsg lock, so rarely): nothing may be cmaxd's.
      EXPECT_TRUE(mine || rec.find("cmaxd") == std::string::npos) << rec;
      ours += mine;
    }
    if (rec.find(marker + " end") != std::string::npos) break;
  }
  ::close(fd);
  EXPECT_EQ(ours, 3);
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n3", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n3", false));
}

// `cmaxd clear` from the command line, beside the running agent: the row is in the event log with
// its reason, the agent takes it within a second, and the same fault then drains again at once.
TEST_F(Cmaxd, ClearFromTheCommandLineIsAuditedAndTheNextFaultActs) {
  auto agent = start("n4");
  const std::string pci = cmax::test::unique_pci();
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));
  ASSERT_TRUE(wait_drain("n4", true)) << log_tail();
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n4", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n4", false));
  cmax::core::ProcessSpec spec;
  spec.argv = {CMAXD_BIN, "clear", "--db", db(), "--node", "n4", "--reason", "GPU replaced (test)"};
  auto r = cmax::core::run_process(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->out.find("GPU replaced (test)"), std::string::npos) << r->out;
  ASSERT_TRUE(cmax::test::wait_for_log(cluster_->dir() / "cmaxd.log", "cmaxd clear on n4", 5s)) << log_tail();
  auto last = log().last_clear();
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->reason, "GPU replaced (test)");
  ASSERT_TRUE(cmax::test::write_kmsg(xid79(pci)));  // within the dedup window: acts only because of the clear
  ASSERT_TRUE(wait_drain("n4", true)) << log_tail();
  ASSERT_TRUE(cluster_->scontrol({"update", "NodeName=n4", "State=RESUME"}));
  ASSERT_TRUE(wait_drain("n4", false));
  spec.argv = {CMAXD_BIN, "clear", "--db", db(), "--node", "n4"};
  auto no_reason = cmax::core::run_process(spec);
  ASSERT_TRUE(no_reason);
  EXPECT_EQ(no_reason->exit_code, 2) << "a clear without a reason is refused";
}

}  // namespace
