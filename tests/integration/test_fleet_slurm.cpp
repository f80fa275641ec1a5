// Issue 36 on Slurm: many slurmd (Debian's, one per node, %n paths) under one slurmctld, and real
// cmaxd processes for some of them, each fed its own kernel-log FIFO (support/fleet_agents.h). The
// fleet breaker's exact limit is a slurm.conf license (Licenses=cmax_breaker:L): each drain first
// takes a unit through a license-only reservation, which slurmctld creates only while units are
// left. Measured from outside the agents: how many nodes are held at any moment (never over L),
// and slurmctld's RPCs per decision (sdiag). CMAX_FLEET_SLURMD sets the node count (32 here;
// bench/fleet_scale_slurm.sh runs 64, 128 and 256).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "sched/policy.h"
#include "sched/slurm_parse.h"
#include "support/fleet_agents.h"
#include "support/slurm_cluster.h"

namespace {

using namespace std::chrono_literals;
using cmax::test::FleetAgents;
using cmax::test::FleetAgentSpec;
using cmax::test::SlurmCluster;
using Clock = std::chrono::steady_clock;
using cmax::test::env_int;

// Nodes cmax holds now, from one `scontrol -o show node`.
int held_now(const SlurmCluster& c) {
  auto out = c.scontrol({"-o", "show", "node"}, 10s);
  if (!out || out->exit_code != 0) return -1;
  auto nodes = cmax::sched::parse_scontrol_nodes(out->out);
  if (!nodes) return -1;
  return static_cast<int>(std::count_if(nodes->begin(), nodes->end(), [](const auto& n) { return cmax::sched::held_by_cmax(n); }));
}

// sdiag's RPC counts by message type ("REQUEST_UPDATE_NODE ( 3002) count:7 ...").
std::map<std::string, long> rpc_counts(const SlurmCluster& c) {
  std::map<std::string, long> out;
  auto r = cmax::core::run_process({{"sdiag"}, 10s, 1u << 20, {"SLURM_CONF=" + c.conf_path()}});
  if (!r || r->exit_code != 0) return out;
  static const std::regex line(R"(^\s*([A-Z_]+)\s+\(\s*\d+\)\s+count:(\d+))");
  std::istringstream in(r->out);
  std::string l;
  bool by_type = false;
  while (std::getline(in, l)) {
    if (l.find("by message type") != std::string::npos) by_type = true;
    if (l.find("by user") != std::string::npos) by_type = false;
    std::smatch m;
    if (by_type && std::regex_search(l, m, line)) out[m[1]] += std::stol(m[2]);
  }
  return out;
}

class FleetSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm test cluster here: " << *why;
  }
};

// 10% of the nodes may be held, and a license of that many units says so to slurmctld. A quarter
// of the nodes fault in the same instant: exactly the limit is drained, never more at any moment,
// the others are refused saying why; one held node resumed by an operator gives its unit back, and
// a new fault on a refused node then drains it.
TEST_F(FleetSlurm, TheBreakerHoldsOnSlurmUnderABurstOfRealAgents) {
  const int nodes = env_int("CMAX_FLEET_SLURMD", 32);
  const int limit = std::max(1, nodes / 10);
  const int burst = std::max(limit + 2, nodes / 4);
  cmax::test::SlurmClusterOptions o;
  o.nodes = nodes;
  o.extra_conf = {fmt::format("Licenses=cmax_breaker:{}", limit)};
  o.ready_timeout = std::chrono::milliseconds(30000 + 500 * nodes);
  const auto t0 = Clock::now();
  auto c = SlurmCluster::start(o);
  ASSERT_TRUE(c) << c.error().message;
  const double up_s = std::chrono::duration<double>(Clock::now() - t0).count();
  auto& cluster = **c;

  FleetAgentSpec spec;
  spec.cmaxd = CMAXD_BIN;
  spec.dir = cluster.dir() / "agents";
  spec.fleet_max_percent = 10;
  spec.scheduler_args = {"--scheduler=slurm", "--slurm-conf=" + cluster.conf_path(), "--resume-watch-ms=200"};
  for (int i = 0; i < burst; ++i) spec.nodes.push_back(cluster.node_names()[static_cast<std::size_t>(i * nodes / burst)]);
  auto agents = FleetAgents::start(spec);
  ASSERT_TRUE(agents) << agents.error().message;

  (void)cmax::core::run_process({{"sdiag", "--reset"}, 10s, 1u << 16, {"SLURM_CONF=" + cluster.conf_path()}});
  const auto before = rpc_counts(cluster);
  std::atomic<bool> done{false};
  std::atomic<int> most{0};
  std::jthread watch([&] {  // held nodes, as slurmctld says, throughout the burst
    while (!done) {
      most = std::max(most.load(), held_now(cluster));
      std::this_thread::sleep_for(20ms);
    }
  });
  const auto burst_at = Clock::now();
  for (std::size_t i = 0; i < (*agents)->size(); ++i) ASSERT_TRUE((*agents)->fault(i));
  int drained = 0, refused = 0;
  std::vector<std::string> refusals;
  std::vector<std::size_t> refused_agents;
  const auto deadline = Clock::now() + 60s;
  for (;;) {
    drained = refused = 0;
    refusals.clear();
    refused_agents.clear();
    for (std::size_t i = 0; i < (*agents)->size(); ++i) {
      const auto log = (*agents)->log(i);
      if (log.find(fmt::format("drain {} done", (*agents)->node(i))) != std::string::npos) ++drained;
      if (auto at = log.find(fmt::format("drain {} refused", (*agents)->node(i))); at != std::string::npos) {
        ++refused;
        refused_agents.push_back(i);
        refusals.push_back(log.substr(at, log.find('\n', at) - at));
      }
    }
    if (drained + refused >= burst || Clock::now() > deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  const double decided_s = std::chrono::duration<double>(Clock::now() - burst_at).count();
  std::this_thread::sleep_for(300ms);
  done = true;
  watch.join();
  const auto after = rpc_counts(cluster);
  long rpcs = 0;
  std::string by_type;
  for (const auto& [type, n] : after) {
    const long d = n - (before.count(type) ? before.at(type) : 0);
    if (d <= 0) continue;
    rpcs += d;
    by_type += fmt::format(" {}={}", type, d);
  }
  std::printf("[ measure  ] Slurm, %d slurmd up in %.1f s; %d agents at once, limit %d (license cmax_breaker:%d): %d "
              "drained, %d refused in %.2f s, most held at any moment %d; slurmctld RPCs %ld (%.1f per decision, "
              "the test's own polling included):%s\n",
              nodes, up_s, burst, limit, limit, drained, refused, decided_s, most.load(), rpcs,
              static_cast<double>(rpcs) / burst, by_type.c_str());
  ASSERT_EQ(drained + refused, burst) << (*agents)->log(0);
  EXPECT_EQ(drained, limit);
  EXPECT_EQ(held_now(cluster), limit);
  EXPECT_LE(most.load(), limit) << "never over the limit, at any moment";
  for (const auto& r : refusals) EXPECT_NE(r.find("fleet circuit breaker"), std::string::npos) << r;
  ASSERT_FALSE(refused_agents.empty());

  // An operator resumes one held node: its agent sees it (resume watch) and gives the unit back.
  std::string resumed;
  for (std::size_t i = 0; i < (*agents)->size() && resumed.empty(); ++i)
    if ((*agents)->log(i).find(fmt::format("drain {} done", (*agents)->node(i))) != std::string::npos)
      resumed = (*agents)->node(i);
  ASSERT_TRUE(cluster.scontrol({"update", "NodeName=" + resumed, "State=RESUME"}));
  const auto gone = Clock::now() + 10s;
  bool released = false;
  while (Clock::now() < gone && !released) {
    auto r = cluster.scontrol({"-o", "show", "reservation", "cmax_hold_" + resumed});
    released = r && r->exit_code != 0;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(released) << "the resumed node's claim is deleted";
  // A refused node's other GPU fails (a new incident; the refused one stays flagged for an
  // operator): now the count allows it.
  const std::size_t again = refused_agents.front();
  ASSERT_TRUE((*agents)->fault(again, "0000:9a:00"));
  const auto by = Clock::now() + 15s;
  bool drained_now = false;
  while (Clock::now() < by && !drained_now) {
    drained_now = (*agents)->log(again).find(fmt::format("drain {} done", (*agents)->node(again))) != std::string::npos;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(drained_now) << (*agents)->log(again);
  EXPECT_EQ(held_now(cluster), limit);
}

// `cmax run --stage audit` and `cmax check --submit --wait` fan out to every node through Slurm
// (one srun step, one job step a node): every node answers, and the wall time per node is printed
// (bench/fleet_scale_slurm.sh plots it against the node count). The active checks run where
// CMAX_FLEET_CHECKS=1 (the bench): storage only, small.
TEST_F(FleetSlurm, TheAuditAndTheChecksReachEveryNode) {
  const int nodes = env_int("CMAX_FLEET_SLURMD", 32);
  cmax::test::SlurmClusterOptions o;
  o.nodes = nodes;
  o.ready_timeout = std::chrono::milliseconds(30000 + 500 * nodes);
  auto c = SlurmCluster::start(o);
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  const std::vector<std::string> env = {"SLURM_CONF=" + cluster.conf_path()};
  const auto out = cluster.dir() / "run";
  const auto t0 = Clock::now();
  auto audit = cmax::core::run_process(
      {{CMAX_BIN, "run", "--stage", "audit", "--harness", "slurm", "--slurm-conf", cluster.conf_path(), "--out",
        out.string(), "--node-timeout-s", std::to_string(60 + nodes), "--json"},
       std::chrono::seconds(300 + 2 * nodes), 64u << 20, env});
  const double audit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(audit) << audit.error().message;
  std::map<std::string, int> statuses;  // ok, timeout, error ... as cmax run reports each node
  std::string first_not_ok;
  if (auto j = nlohmann::json::parse(audit->out, nullptr, false); j.is_object() && j.contains("nodes"))
    for (const auto& n : j["nodes"]) {
      const std::string st = n.value("status", "?");
      ++statuses[st];
      if (st != "ok" && first_not_ok.empty()) first_not_ok = n.dump().substr(0, 600);
    }
  const int ok = statuses["ok"];
  std::string by_status;
  for (const auto& [st, count] : statuses) by_status += fmt::format(" {} {}", count, st);
  std::printf("[ measure  ] Slurm, %d slurmd: cmax run --stage audit %.1f s (%.0f ms a node), %d nodes ok (%s )\n", nodes,
              audit_s, audit_s * 1000 / nodes, ok, by_status.c_str());
  EXPECT_EQ(ok, nodes) << first_not_ok << "\n" << audit->err.substr(0, 2000);
  if (env_int("CMAX_FLEET_CHECKS", 0) == 0) return;
  const auto scratch = cluster.dir() / "scratch";
  std::filesystem::create_directories(scratch);
  const auto lenient = cluster.dir() / "lenient.json";
  std::ofstream(lenient) << R"({"schema": "cmax.health-thresholds/1", "thresholds": {
      "storage.metadata.p99_us": {"max": 1e12}, "storage.metadata.files_per_s": {"min": 0},
      "storage.seq_write.gbps": {"min": 0}, "storage.seq_read.gbps": {"min": 0}, "storage.fsync.p99_ms": {"max": 1e12}}})";
  const auto t1 = Clock::now();
  auto checks = cmax::core::run_process(
      {{CMAX_BIN, "check", "--submit", "--wait", "--slurm-conf", cluster.conf_path(), "--checks", "storage", "--path",
        scratch.string(), "--output-dir", (cluster.dir() / "checks").string(), "--thresholds", lenient.string(),
        "--seq-mib", "4", "--metadata-files", "100", "--fsync-count", "10", "--check-timeout-s", "60",
        "--wait-timeout-s", std::to_string(300 + 4 * nodes)},
       std::chrono::seconds(400 + 4 * nodes), 64u << 20, env});
  const double checks_s = std::chrono::duration<double>(Clock::now() - t1).count();
  ASSERT_TRUE(checks) << checks.error().message;
  std::printf("[ measure  ] Slurm, %d slurmd: cmax check --submit --wait %.1f s (%.0f ms a node), exit %d\n", nodes,
              checks_s, checks_s * 1000 / nodes, checks->exit_code);
  EXPECT_LE(checks->exit_code, 1) << checks->err.substr(0, 2000);
}

}  // namespace
