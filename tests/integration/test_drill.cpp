// cmax drill on a real Slurm cluster on this machine (four nodes and two spares, a REPLACE_DOWN
// reservation), against three detectors: cmaxd, the common provider setup (a HealthCheckProgram
// shell script that greps dmesg, run by slurmd every few seconds), and none. All "nodes" here share
// one kernel ring buffer, so the health check script acts only for the node the test targets, as a
// per-node dmesg would; cmaxd runs for the target node only.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stop_token>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/strings.h"
#include "support/daemon.h"
#include "support/kmsg.h"
#include "support/slurm_cluster.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using cmax::test::SlurmCluster;

struct DrillRun {
  int exit_code = -1;
  json report;
  std::string out, err;
  double wall_ms = 0;
  std::string dir;  ///< the drill's run directory
};

std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether some drill under `dir` (drill-*/injected.jsonl) has injected its lines, waiting up to
// `timeout`: the event a test's stand-in for the cluster reacts to.
bool injected_under(const std::filesystem::path& dir, std::chrono::milliseconds timeout, std::stop_token stop = {}) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const auto f = e.path() / "injected.jsonl";
      std::error_code ec2;
      if (e.path().filename().string().starts_with("drill-") && std::filesystem::file_size(f, ec2) > 0 && !ec2) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

DrillRun drill(SlurmCluster& c, const std::vector<std::string>& extra, std::string conf = "") {
  const std::string dir = (c.dir() / fmt::format("drill-{}", std::rand())).string();
  std::vector<std::string> argv{CMAX_BIN, "drill", "run", "--slurm-conf", conf.empty() ? c.conf_path() : conf, "--inject", "local",
                                "--json", "--out", dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto t0 = std::chrono::steady_clock::now();
  auto r = cmax::core::run_process({argv, 120s, 8u << 20, {}});
  DrillRun d;
  d.dir = dir;
  d.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r) << r.error().message;
  if (!r) return d;
  d.exit_code = r->exit_code;
  d.out = r->out;
  d.err = r->err;
  d.report = json::parse(r->out, nullptr, false);
  return d;
}

const json* stage(const json& report, const std::string& name) {
  if (!report.is_object() || report["nodes"].empty()) return nullptr;
  for (const auto& s : report["nodes"][0]["stages"])
    if (s["stage"] == name) return &s;
  return nullptr;
}

// A REPLACE_DOWN reservation of NodeCnt=2: Slurm picks the first idle nodes (n1, n2 here; 22.05
// refuses an explicit Nodes= list with REPLACE_DOWN) and refills it from idle nodes when one fails.
std::string make_reservation(SlurmCluster& c) {
  auto r = c.scontrol({"create", "reservation", "ReservationName=drill", "StartTime=now", "Duration=60",
                       "Users=root", "NodeCnt=2", "Flags=REPLACE_DOWN"});
  if (!r) return r.error().message;
  return r->exit_code == 0 ? "" : r->out + r->err;
}

class Drill : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << *why;
    if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  }
};

TEST_F(Drill, CmaxdDetectsDrainsAndTheReservationReplacesTheNode) {
  auto c = SlurmCluster::start({.nodes = 4, .spares = 2});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  const std::string why = make_reservation(cluster);
  ASSERT_EQ(why, "");
  auto res = cluster.scontrol({"-o", "show", "reservation", "drill"});
  ASSERT_TRUE(res && res->out.find("Nodes=n[1-2]") != std::string::npos) << (res ? res->out : "");
  auto agent = cmax::test::Daemon::start({CMAXD_BIN, "--node", "n1", "--db", (cluster.dir() / "cmaxd.db").string(),
                                          "--slurm-conf", cluster.conf_path(), "--from-now", "--metrics-listen", "",
                                          "--no-nvml", "--no-ib", "--fleet-max-percent", "50"},
                                         {}, cluster.dir() / "cmaxd.log");
  ASSERT_TRUE(agent) << agent.error().message;
  // cmaxd reads the ring buffer from the moment it says so; the drill injects after that.
  ASSERT_TRUE(cmax::test::wait_for_log(cluster.dir() / "cmaxd.log", "from now on", 60s, &*agent))
      << "cmaxd did not start reading /dev/kmsg";
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n1", "--yes", "--reservation", "drill",
                           "--detect-timeout-s", "10", "--drain-timeout-s", "10", "--replace-timeout-s", "15"});
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* detected = stage(d.report, "detected");
  const json* drained = stage(d.report, "drained");
  const json* replaced = stage(d.report, "replaced");
  ASSERT_TRUE(detected && drained && replaced) << d.report.dump(2);
  EXPECT_TRUE((*detected)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_TRUE((*drained)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_TRUE((*replaced)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_EQ(d.exit_code, 0) << d.report.dump(2);
  EXPECT_LT((*detected)["at_ms"].get<double>(), 2000);
  EXPECT_EQ(d.report["nodes"][0]["after"]["reason"].get<std::string>().rfind("cmax: ", 0), 0u);
  EXPECT_FALSE(d.report["nodes"][0]["injected"].empty());
  std::printf("[ measure  ] drill with cmaxd: detected %.1f ms (+/- %.1f), drained %.1f ms, replaced %.1f ms; "
              "largest uncertainty %.1f ms; whole drill %.0f ms\n",
              (*detected)["at_ms"].get<double>(), (*detected)["uncertainty_ms"].get<double>() / 2,
              (*drained)["at_ms"].get<double>(), (*replaced)["at_ms"].get<double>(),
              d.report["nodes"][0]["max_uncertainty_ms"].get<double>(), d.wall_ms);
  // The audit record holds every injected line, with the drill's id, and what the drill did to
  // printk_devkmsg around its writes (the guard puts it back; other tests share the sysctl, so its
  // value is not compared here: tests/unit/drill covers the put-back).
  std::ifstream audit(std::filesystem::path(d.dir) / "injected.jsonl");
  std::size_t lines = 0, devkmsg = 0;
  for (std::string line; std::getline(audit, line);) {
    auto j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(j["drill_id"], d.report["drill_id"]);
    if (j.contains("sysctl")) {
      EXPECT_EQ(j["sysctl"], "kernel.printk_devkmsg");
      EXPECT_NE(j["did"].get<std::string>().find("printk_devkmsg"), std::string::npos) << line;
      ++devkmsg;
    } else {
      ++lines;
    }
  }
  EXPECT_EQ(lines, d.report["nodes"][0]["injected"].size());
  EXPECT_EQ(devkmsg, 1u);
  EXPECT_EQ(d.report["nodes"][0]["devkmsg"].get<std::string>().find("printk_devkmsg"), 0u);
  // Cleanup puts the node back (the plan first: without --yes nothing changes).
  agent->stop();
  auto plan = cmax::core::run_process(
      {{CMAX_BIN, "drill", "cleanup", "--run", d.dir, "--slurm-conf", cluster.conf_path()}, 30s, 1u << 20, {}});
  ASSERT_TRUE(plan);
  EXPECT_NE(plan->out.find("plan only"), std::string::npos) << plan->out << plan->err;
  ASSERT_TRUE(cluster.state("n1")->drain_flag());
  auto clean = cmax::core::run_process(
      {{CMAX_BIN, "drill", "cleanup", "--run", d.dir, "--slurm-conf", cluster.conf_path(), "--yes"}, 30s, 1u << 20, {}});
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->exit_code, 0) << clean->out << clean->err;
  auto back = cluster.wait_for("n1", [](const cmax::sched::NodeState& n) { return !n.drain_flag(); }, 5s);
  EXPECT_TRUE(back) << clean->out;
}

TEST_F(Drill, AHealthCheckScriptThatGrepsDmesgIsTimedToo) {
  // The common provider setup: slurmd runs a script every few seconds that greps dmesg for Xids and
  // drains its own node. It acts only for the node named in `target` (one shared ring buffer here).
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cmax-hc-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto script = dir / "healthcheck.sh";
  const auto target = dir / "target";
  {
    std::ofstream out(script);
    // slurmd runs it with a bare environment: absolute paths, and slurm.conf from a file the test
    // writes once the cluster (and so its slurm.conf) exists.
    out << "#!/bin/sh\n"
           "[ \"$(cat " << target.string() << " 2>/dev/null)\" = \"$SLURMD_NODENAME\" ] || exit 0\n"
           "SLURM_CONF=$(cat " << (dir / "conf").string() << ") && export SLURM_CONF || exit 0\n"
           "if /usr/bin/dmesg | /usr/bin/grep -q \"NVRM: Xid.*name=cmaxdrill-hc01\"; then\n"
           "  /usr/bin/scontrol update NodeName=\"$SLURMD_NODENAME\" State=DRAIN Reason=\"NHC: GPU Xid in dmesg\"\n"
           "fi\n";
  }
  ::chmod(script.c_str(), 0755);
  std::ofstream(target) << "n3";
  auto c = SlurmCluster::start({.nodes = 4, .spares = 2,
                                .extra_conf = {"HealthCheckProgram=" + script.string(), "HealthCheckInterval=2",
                                               "HealthCheckNodeState=ANY"}});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  std::ofstream(dir / "conf") << cluster.conf_path();
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n3", "--yes", "--drill-id", "hc01",
                           "--detect-timeout-s", "20", "--drain-timeout-s", "20"});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* detected = stage(d.report, "detected");
  ASSERT_TRUE(detected);
  EXPECT_TRUE((*detected)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_EQ(d.report["nodes"][0]["after"]["reason"], "NHC: GPU Xid in dmesg");
  std::printf("[ measure  ] drill with a HealthCheckProgram script every 2 s: detected %.1f ms (+/- %.1f)\n",
              (*detected)["at_ms"].get<double>(), (*detected)["uncertainty_ms"].get<double>() / 2);
}

// The stuck-remediation loop raters meet, reproduced: the site's health check drains its node on
// a GPU fault and is the only thing that resumes it, but it refuses to run on a drained node (like
// the provider whose remediation check "needed the node to be healthy before it could run"). The
// fault is real (the drill's Xid line in this machine's /dev/kmsg, read by dmesg); the repair is
// the test's file. The drill stops at its bound and names the loop; the audit's static check
// fails on that slurm.conf and passes once the script no longer exits on a drained node.
TEST_F(Drill, DrillStuckWhenTheOnlyResumeNeedsTheNodeUndrained) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cmax-stuck-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto script = dir / "healthcheck.sh";
  auto write_script = [&](const std::filesystem::path& path, bool skips_drained) {
    std::ofstream out(path);
    // slurmd runs it with a bare environment: absolute paths, slurm.conf from a file the test writes.
    out << "#!/bin/sh\n"
           "[ \"$SLURMD_NODENAME\" = n2 ] || exit 0\n"
           "SLURM_CONF=$(cat " << (dir / "conf").string() << ") && export SLURM_CONF || exit 0\n"
           "state=$(/usr/bin/scontrol -o show node \"$SLURMD_NODENAME\")\n";
    if (skips_drained) out << "case \"$state\" in *DRAIN*) exit 0 ;; esac\n";
    out << "if [ ! -e " << (dir / "repaired").string() << " ] && /usr/bin/dmesg | /usr/bin/grep -q "
           "\"NVRM: Xid.*name=cmaxdrill-stk01\"; then\n"
           "  /usr/bin/scontrol update NodeName=\"$SLURMD_NODENAME\" State=DRAIN Reason=\"hc: GPU Xid 79\"\n"
           "  exit 1\n"
           "fi\n"
           "case \"$state\" in *Reason=hc:*) /usr/bin/scontrol update NodeName=\"$SLURMD_NODENAME\" State=RESUME ;; esac\n";
  };
  write_script(script, true);
  ::chmod(script.c_str(), 0755);
  auto c = SlurmCluster::start({.nodes = 2, .extra_conf = {"HealthCheckProgram=" + script.string(),
                                                           "HealthCheckInterval=2", "HealthCheckNodeState=ANY"}});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  std::ofstream(dir / "conf") << cluster.conf_path();
  // The repair: once the health check has drained n2, the GPU is swapped. Only the check that
  // refuses to run on a drained node could see it and resume the node.
  std::jthread repair([&](std::stop_token stop) {
    if (!injected_under(cluster.dir(), 60s, stop)) return;
    auto drained = cluster.wait_for("n2", [](const cmax::sched::NodeState& n) { return n.drain_flag(); }, 30s);
    if (drained && !stop.stop_requested()) std::ofstream(dir / "repaired") << "GPU swapped\n";
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n2", "--yes", "--drill-id", "stk01", "--wait-return",
                           "--detect-timeout-s", "30", "--drain-timeout-s", "30", "--return-timeout-s", "20"});
  repair.request_stop();
  repair.join();
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* drained = stage(d.report, "drained");
  const json* returned = stage(d.report, "returned");
  ASSERT_TRUE(drained && returned);
  ASSERT_TRUE((*drained)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_FALSE((*returned)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_EQ(d.exit_code, 1);
  const json& stuck = d.report["nodes"][0]["stuck"];
  ASSERT_TRUE(stuck.is_object()) << d.report.dump(2);
  EXPECT_EQ(stuck["stage"], "returned");
  ASSERT_TRUE(stuck["loop"].is_string()) << stuck.dump(2);
  const std::string loop = stuck["loop"].get<std::string>();
  EXPECT_NE(loop.find(script.string() + " is the only thing that resumes n2"), std::string::npos) << loop;
  EXPECT_NE(loop.find("exits first when its node is drained (line 5)"), std::string::npos) << loop;
  const std::string evidence = stuck["evidence"].dump();
  EXPECT_NE(evidence.find("reason \\\"hc: GPU Xid 79\\\" set by root"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("HealthCheckNodeState=ANY"), std::string::npos) << evidence;
  EXPECT_NE(slurp_file(std::filesystem::path(d.dir) / "timeline.svg").find("class=\"never\""), std::string::npos)
      << "the chart marks the stage never seen";
  std::printf("[ measure  ] stuck drill: drained at %.1f ms, not returned by the %d s bound; loop named\n",
              (*drained)["at_ms"].get<double>(), 20);

  // The static check on the same slurm.conf: fails; with the script that runs on drained nodes:
  // passes.
  auto audit = [&](const std::string& conf) {
    auto r = cmax::core::run_process({{CMAX_BIN, "audit", "--json", "--harness", "slurm"}, 120s, 16u << 20,
                                      {"SLURM_CONF=" + conf}});
    EXPECT_TRUE(r) << r.error().message;
    json j = r ? json::parse(r->out, nullptr, false) : json();
    for (const auto& f : j.value("findings", json::array()))
      if (f["id"] == "orchestration.slurm.healthcheck_returns_nodes") return f;
    ADD_FAILURE() << "no finding in " << (r ? r->out.substr(0, 2000) : std::string());
    return json();
  };
  const json stuck_finding = audit(cluster.conf_path());
  EXPECT_EQ(stuck_finding.value("result", ""), "fail") << stuck_finding.dump(2);
  const auto fixed_script = dir / "healthcheck-fixed.sh";
  write_script(fixed_script, false);
  ::chmod(fixed_script.c_str(), 0755);
  std::ifstream in(cluster.conf_path());
  std::string conf{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  conf.replace(conf.find(script.string()), script.string().size(), fixed_script.string());
  std::ofstream(dir / "slurm-fixed.conf") << conf;
  const json fixed_finding = audit((dir / "slurm-fixed.conf").string());
  EXPECT_EQ(fixed_finding.value("result", ""), "pass") << fixed_finding.dump(2);
  std::filesystem::remove_all(dir);
}

// A rack-style drill: three nodes of a four-node REPLACE_DOWN reservation at once, on the six-node
// trial cluster (n1-n4 reserved as "train", spare1 and spare2 idle). The site (the test) drains
// each target once its lines are in; Slurm swaps the two spares in for two of them, and the third
// is reported as not replaced, with why (no idle node left), and the fleet numbers a rater quotes.
TEST_F(Drill, DrillParallelThreeNodesTwoSparesTheThirdIsNotReplaced) {
  auto c = SlurmCluster::start_trial();
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  const std::vector<std::string> targets = {"n1", "n2", "n3"};
  std::jthread site([&](std::stop_token stop) {
    if (!injected_under(cluster.dir(), 60s, stop)) return;
    // Every target's lines are in once injected.jsonl names it; drain each as its detector would.
    std::set<std::string> drained;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (drained.size() < targets.size() && !stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
      for (const auto& e : std::filesystem::directory_iterator(cluster.dir())) {
        if (!e.path().filename().string().starts_with("drill-")) continue;
        std::ifstream in(e.path() / "injected.jsonl");
        for (std::string line; std::getline(in, line);)
          for (const auto& t : targets)
            if (line.find("\"node\":\"" + t + "\"") != std::string::npos && drained.insert(t).second)
              (void)cluster.scontrol({"update", "NodeName=" + t, "State=DRAIN", "Reason=site: GPU Xid 79"});
      }
      std::this_thread::sleep_for(5ms);
    }
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n[1-3]", "--max-nodes", "3", "--yes", "--reservation", "train",
                           "--detect-timeout-s", "20", "--drain-timeout-s", "20", "--replace-timeout-s", "10"});
  site.request_stop();
  site.join();
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  EXPECT_EQ(d.report["parallel"], 3);
  ASSERT_EQ(d.report["nodes"].size(), 3u);
  int replaced = 0;
  std::string not_replaced;
  for (const auto& n : d.report["nodes"]) {
    ASSERT_FALSE(n.contains("error")) << n.dump(2);
    for (const auto& st : n["stages"]) {
      if (st["stage"] == "drained") {
        EXPECT_TRUE(st["reached"].get<bool>()) << n.dump(2);
      }
      if (st["stage"] != "replaced") continue;
      if (st["reached"].get<bool>()) {
        ++replaced;
        // Several targets share the reservation: only the target leaving it counts as its own.
        EXPECT_NE(st["how"].get<std::string>().find(" left reservation train"), std::string::npos) << st.dump();
      } else {
        not_replaced = n["node"].get<std::string>();
        EXPECT_EQ(st["verdict"], "never") << "watched to its bound, not cut short by another target's spare";
        ASSERT_TRUE(n["stuck"].is_object()) << n.dump(2);
        EXPECT_EQ(n["stuck"]["stage"], "replaced");
        EXPECT_NE(n["stuck"]["next"].get<std::string>().find("no idle node was left outside the reservations"),
                  std::string::npos)
            << n["stuck"].dump(2);
      }
    }
  }
  EXPECT_EQ(replaced, 2) << d.report.dump(2);
  EXPECT_FALSE(not_replaced.empty());
  const json& fleet = d.report["fleet"];
  ASSERT_TRUE(fleet.is_object()) << d.report.dump(2);
  EXPECT_EQ(fleet["spares_before"], json({"spare1", "spare2"}));
  EXPECT_EQ(fleet["stages"]["replaced"]["reached"], 2);
  EXPECT_EQ(fleet["stages"]["replaced"]["not_reached"], json({not_replaced}));
  EXPECT_TRUE(fleet["stages"]["replaced"]["all_ms"].is_null());
  EXPECT_EQ(fleet["stages"]["drained"]["reached"], 3);
  EXPECT_EQ(d.exit_code, 1);
  std::printf("[ measure  ] parallel drill of 3 with 2 spares: drained all by %.1f ms, 2 replaced by %.1f ms, %s not\n",
              fleet["stages"]["drained"]["all_ms"].get<double>(),
              fleet["stages"]["replaced"]["at_ms"].back().get<double>(), not_replaced.c_str());
}

// The reboot/repair flow raters time on NVL72 racks, on the local six-node cluster: the site
// drains the node on the drill's lines (the detector stand-in), the drill requests the reboot the
// scenario calls for (scontrol reboot nextstate=RESUME), RebootProgram has the harness restart the
// node's slurmd with a new boot (a time namespace: Slurm sees a later BootTime, as after a real
// reboot), and the node returns. Every stage is timed with its uncertainty.
TEST_F(Drill, DrillRebootTimesEveryStageOfTheRebootRepair) {
  auto c = SlurmCluster::start({.nodes = 6, .reboot = true});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  std::jthread site([&](std::stop_token stop) {
    if (!injected_under(cluster.dir(), 60s, stop)) return;
    (void)cluster.scontrol({"update", "NodeName=n2", "State=DRAIN", "Reason=site: Xid 79, node reboot required"});
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n2", "--yes", "--reboot", "--detect-timeout-s", "20",
                           "--drain-timeout-s", "20", "--return-timeout-s", "60"});
  site.request_stop();
  site.join();
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const auto& node = d.report["nodes"][0];
  ASSERT_FALSE(node.contains("error")) << node.dump(2);
  EXPECT_EQ(node["reboot"]["requested"], true) << node.dump(2);
  EXPECT_NE(node["reboot"]["command"].get<std::string>().find("reboot nextstate=RESUME"), std::string::npos);
  EXPECT_EQ(cluster.reboots(), 1);
  std::map<std::string, double> at;
  for (const auto& st : node["stages"]) {
    const std::string name = st["stage"].get<std::string>();
    if (name == "replaced") continue;
    EXPECT_TRUE(st["reached"].get<bool>()) << name << ": " << node.dump(2);
    EXPECT_TRUE(st["awaited"].get<bool>()) << name;
    at[name] = st["at_ms"].get<double>();
  }
  ASSERT_EQ(at.size(), 6u) << node.dump(2);
  EXPECT_LE(at["drained"], at["reboot_requested"]);
  EXPECT_LE(at["reboot_requested"], at["rebooted"]);
  EXPECT_LE(at["down"], at["rebooted"]);
  EXPECT_LE(at["rebooted"], at["returned"]);
  EXPECT_EQ(d.exit_code, 0) << d.out;
  // The request is in the audit record, beside the injected lines.
  std::ifstream audit(std::filesystem::path(d.dir) / "injected.jsonl");
  int reboots = 0;
  for (std::string line; std::getline(audit, line);)
    if (json::parse(line).value("action", "") == "reboot") ++reboots;
  EXPECT_EQ(reboots, 1);
  // The timeline chart beside drill.json: a dot for each reboot stage, with the legend naming them.
  const std::string svg = slurp_file(std::filesystem::path(d.dir) / "timeline.svg");
  for (std::string_view stage : {"reboot_requested", "down", "rebooted", "returned"})
    EXPECT_NE(svg.find("class=\"stage " + std::string(stage) + "\""), std::string::npos) << stage << "\n" << svg.substr(0, 400);
  std::printf("[ measure  ] reboot drill: drained %.1f ms, reboot requested %.1f ms, down %.1f ms, rebooted %.1f ms, "
              "returned %.1f ms\n",
              at["drained"], at["reboot_requested"], at["down"], at["rebooted"], at["returned"]);
}

// A drill killed mid-way (SIGKILL, its whole process group) is still reverted: the record cleanup
// needs is written before anything is injected. Here the site drained the node and Slurm swapped a
// spare into the reservation before the kill; cleanup resumes the node and puts the reservation
// back as it was.
TEST_F(Drill, AnInterruptedDrillIsRevertedByCleanup) {
  auto c = SlurmCluster::start_trial();
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  auto before = cluster.scontrol({"-o", "show", "reservation", "train"});
  ASSERT_TRUE(before && before->out.find("Nodes=n[1-4]") != std::string::npos) << (before ? before->out : "");
  const auto dir = cluster.dir() / "drill-interrupted";
  auto drill_proc = cmax::test::Daemon::start(
      {CMAX_BIN, "drill", "run", "--slurm-conf", cluster.conf_path(), "--inject", "local", "--json", "--out", dir.string(),
       "--scenario", "xid79", "--nodes", "n1", "--yes", "--reservation", "train", "--detect-timeout-s", "120",
       "--drain-timeout-s", "120", "--replace-timeout-s", "120", "--wait-return", "--return-timeout-s", "300"},
      {}, cluster.dir() / "drill.log");
  ASSERT_TRUE(drill_proc) << drill_proc.error().message;
  ASSERT_TRUE(injected_under(cluster.dir(), 60s)) << slurp_file(cluster.dir() / "drill.log");
  (void)cluster.scontrol({"update", "NodeName=n1", "State=DRAIN", "Reason=site: GPU Xid 79"});
  // Slurm swaps a spare in for the drained member (REPLACE_DOWN); then the drill dies.
  bool swapped = false;
  for (int i = 0; i < 500 && !swapped; ++i) {
    auto r = cluster.scontrol({"-o", "show", "reservation", "train"});
    swapped = r && r->out.find("spare") != std::string::npos;
    if (!swapped) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(swapped) << "REPLACE_DOWN did not swap a spare in";
  drill_proc->stop();
  const auto record = json::parse(slurp_file(dir / "drill.json"), nullptr, false);
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(record["complete"], false);
  auto clean = cmax::core::run_process(
      {{CMAX_BIN, "drill", "cleanup", "--run", dir.string(), "--slurm-conf", cluster.conf_path(), "--yes"}, 60s, 1u << 20, {}});
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->exit_code, 0) << clean->out << clean->err;
  auto back = cluster.wait_for("n1", [](const cmax::sched::NodeState& n) { return !n.drain_flag(); }, 10s);
  EXPECT_TRUE(back) << clean->out;
  auto after = cluster.scontrol({"-o", "show", "reservation", "train"});
  ASSERT_TRUE(after);
  EXPECT_NE(after->out.find("Nodes=n[1-4]"), std::string::npos) << after->out << "\ncleanup said:\n" << clean->out;
}

// --rack: every node under a leaf switch of Slurm's topology (topology/tree), drilled at once.
TEST_F(Drill, DrillParallelOnARackFromSlurmsTopology) {
  auto c = SlurmCluster::start({.nodes = 4,
                                .extra_conf = {"TopologyPlugin=topology/tree"},
                                .files = {{"topology.conf", "SwitchName=rack1 Nodes=n[1-2]\nSwitchName=rack2 Nodes=n[3-4]\n"
                                                            "SwitchName=spine Switches=rack[1-2]\n"}}});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  std::jthread site([&](std::stop_token stop) {
    if (!injected_under(cluster.dir(), 60s, stop)) return;
    for (const char* n : {"n3", "n4"})
      (void)cluster.scontrol({"update", std::string("NodeName=") + n, "State=DRAIN", "Reason=site: rack power"});
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--rack", "rack2", "--yes", "--detect-timeout-s", "20",
                           "--drain-timeout-s", "20"});
  site.request_stop();
  site.join();
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  ASSERT_EQ(d.report["nodes"].size(), 2u);
  EXPECT_EQ(d.report["nodes"][0]["node"], "n3");
  EXPECT_EQ(d.report["nodes"][1]["node"], "n4");
  EXPECT_EQ(d.report["fleet"]["stages"]["drained"]["reached"], 2) << d.report["fleet"].dump(2);
  EXPECT_EQ(d.exit_code, 0);
  // The spine holds every node below it (Slurm 22.05 lists them all): more than --max-nodes allows,
  // refused before anything is injected; an unknown name is named.
  auto spine = drill(cluster, {"--scenario", "xid79", "--rack", "spine", "--yes"});
  EXPECT_EQ(spine.exit_code, 3);
  EXPECT_NE(spine.err.find("--rack spine holds 4 nodes"), std::string::npos) << spine.err;
  auto unknown = drill(cluster, {"--scenario", "xid79", "--rack", "rack9", "--yes"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("--rack rack9"), std::string::npos) << unknown.err;
}

TEST_F(Drill, NoDetectorIsNeverDetectedAfterTheTimeout) {
  auto c = SlurmCluster::start({.nodes = 4, .spares = 2});
  ASSERT_TRUE(c) << c.error().message;
  auto d = drill(**c, {"--scenario", "xid79", "--nodes", "n2", "--yes", "--detect-timeout-s", "2"});
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* detected = stage(d.report, "detected");
  ASSERT_TRUE(detected);
  EXPECT_FALSE((*detected)["reached"].get<bool>());
  EXPECT_EQ((*detected)["verdict"], "never");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_LT(d.wall_ms, 6000);
}

TEST_F(Drill, RefusesADrainedNodeAnUnknownNodeAndAnUnreachableControllerAndChangesNothing) {
  auto c = SlurmCluster::start({.nodes = 4});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  ASSERT_TRUE(cluster.scontrol({"update", "NodeName=n4", "State=DRAIN", "Reason=maintenance"}));
  const std::string pci = cmax::test::unique_pci();  // a GPU no other test names
  auto refused = [&](const std::vector<std::string>& extra, const std::string& says) {
    std::vector<std::string> args{"--scenario", "xid79", "--yes", "--gpu", pci + ".0"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto d = drill(cluster, args);
    EXPECT_EQ(d.exit_code, 3) << d.out << d.err;
    EXPECT_NE(d.err.find(says), std::string::npos) << d.err;
    EXPECT_NE(d.err.find("nothing was injected"), std::string::npos) << d.err;
  };
  refused({"--nodes", "n4"}, "already out of service");
  refused({"--nodes", "nosuchnode"}, "nosuchnode");
  // The cluster's slurm.conf pointed at a port where nothing listens.
  std::ifstream in(cluster.conf_path());
  std::string conf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  conf = std::regex_replace(conf, std::regex("SlurmctldPort=[0-9]+"),
                            "SlurmctldPort=" + std::to_string(cluster.controller_port() + 97));
  const auto dead = cluster.dir() / "unreachable.conf";
  std::ofstream(dead) << conf;
  {
    auto d = drill(cluster, {"--scenario", "xid79", "--yes", "--nodes", "n1", "--scontrol-timeout-ms", "1500", "--gpu",
                             pci + ".0"},
                   dead.string());
    EXPECT_EQ(d.exit_code, 3) << d.out << d.err;
    EXPECT_NE(d.err.find("timed out"), std::string::npos) << d.err;
  }
  // Nothing reached the kernel log for that GPU.
  auto scan = cmax::core::run_process({{CMAX_BIN, "check", "--act-on", "any", "--no-nvml", "--no-ib", "--json"}, 30s,
                                       16u << 20, {}});
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->out.find(pci), std::string::npos) << "a refused drill wrote to the kernel log";
  auto n4 = cluster.state("n4");
  ASSERT_TRUE(n4);
  EXPECT_EQ(n4->reason, "maintenance");
}

}  // namespace

namespace {

// Injection through srun on the target node (how a drill reaches a remote node), here with the
// one-host cluster's slurmd running the step.
TEST_F(Drill, InjectsThroughSrunOnTheTargetNode) {
  if (!cmax::test::find_system_program("srun")) GTEST_SKIP() << "srun is not installed";
  auto c = SlurmCluster::start({.nodes = 2});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  const std::string dir = (cluster.dir() / "drill-srun").string();
  auto r = cmax::core::run_process({{CMAX_BIN, "drill", "run", "--slurm-conf", cluster.conf_path(), "--inject", "srun",
                                     "--json", "--out", dir, "--scenario", "nfs-timeout", "--nodes", "n2", "--yes",
                                     "--detect-timeout-s", "1"},
                                    60s, 8u << 20, {"SLURM_CONF=" + cluster.conf_path()}});
  ASSERT_TRUE(r);
  auto report = json::parse(r->out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r->out << r->err;
  ASSERT_FALSE(report["nodes"][0].contains("error")) << report.dump(2);
  EXPECT_EQ(report["nodes"][0]["inject"], "srun");
  ASSERT_FALSE(report["nodes"][0]["injected"].empty()) << report.dump(2);
  EXPECT_NE(report["nodes"][0]["injected"][0]["text"].get<std::string>().find("not responding"), std::string::npos);
}

}  // namespace

namespace {

// The last stage: the node back in service once an operator resumes it (here the test plays both
// the detector, with a drain, and the operator).
TEST_F(Drill, WaitReturnTimesTheOperatorsResume) {
  auto c = SlurmCluster::start({.nodes = 2});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  std::jthread operator_thread([&](std::stop_token stop) {
    // From the injection on (the drill's audit record of it), not from the test's start: on a
    // busy machine the drill's own start could take longer than the operator's delay.
    if (!injected_under(cluster.dir(), 60s, stop)) return;
    std::this_thread::sleep_for(600ms);
    (void)cluster.scontrol({"update", "NodeName=n2", "State=DRAIN", "Reason=operator: drill seen"});
    std::this_thread::sleep_for(600ms);
    (void)cluster.scontrol({"update", "NodeName=n2", "State=RESUME"});
  });
  auto d = drill(cluster, {"--scenario", "nfs-timeout", "--nodes", "n2", "--yes", "--wait-return",
                           "--detect-timeout-s", "10", "--drain-timeout-s", "10", "--return-timeout-s", "10"});
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* detected = stage(d.report, "detected");
  const json* returned = stage(d.report, "returned");
  ASSERT_TRUE(detected && returned);
  EXPECT_TRUE((*detected)["reached"].get<bool>()) << d.report.dump(2);
  ASSERT_TRUE((*returned)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_GT((*returned)["at_ms"].get<double>(), (*detected)["at_ms"].get<double>() + 400);
  EXPECT_EQ(d.exit_code, 0) << d.report.dump(2);
}

// The two other ways a site replaces a failed node, with the test as the site's automation: once
// the detector (cmaxd) has drained the node, requeue its job and start it at once (Slurm would hold
// a requeued job for 121 s), or add a spare to the partition.
class DrillReplacement : public Drill {
 protected:
  // sbatch a requeueable job and wait until it runs: its id and node.
  static std::pair<std::string, std::string> start_job(SlurmCluster& c) {
    auto r = cmax::core::run_process({{"sbatch", "--parsable", "--requeue", "-N1", "-o", "/dev/null", "--wrap", "sleep 300"},
                                      10s, 1u << 16, {"SLURM_CONF=" + c.conf_path()}});
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->out + r->err : r.error().message);
    if (!r) return {};
    const std::string id(cmax::core::trim(r->out));
    for (int i = 0; i < 500; ++i) {
      auto show = c.scontrol({"-o", "show", "job", id});
      std::smatch m;
      static const std::regex kRunning(R"(JobState=RUNNING .* NodeList=(\S+))");
      if (show && std::regex_search(show->out, m, kRunning)) return {id, m[1].str()};
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "job " << id << " never ran";
    return {id, ""};
  }

  static cmax::Result<cmax::test::Daemon> cmaxd_for(SlurmCluster& c, const std::string& node) {
    return cmax::test::Daemon::start({CMAXD_BIN, "--node", node, "--db", (c.dir() / "cmaxd.db").string(),
                                      "--slurm-conf", c.conf_path(), "--from-now", "--metrics-listen", "", "--no-nvml",
                                      "--no-ib", "--fleet-max-percent", "50"},
                                     {}, c.dir() / "cmaxd.log");
  }
};

TEST_F(DrillReplacement, AJobRequeuedOntoAnotherNodeIsTheReplacement) {
  if (!cmax::test::find_system_program("sbatch")) GTEST_SKIP() << "sbatch is not installed";
  auto c = SlurmCluster::start({.nodes = 4});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  auto [job, node] = start_job(cluster);
  ASSERT_FALSE(node.empty());
  auto agent = cmaxd_for(cluster, node);
  ASSERT_TRUE(agent) << agent.error().message;
  ASSERT_TRUE(cmax::test::wait_for_log(cluster.dir() / "cmaxd.log", "from now on", 60s, &*agent));
  std::jthread site([&, job = job, node = node](std::stop_token stop) {
    auto drained = cluster.wait_for(node, [](const cmax::sched::NodeState& n) { return n.drain_flag(); }, 10s);
    if (!drained || stop.stop_requested()) return;
    (void)cluster.scontrol({"requeue", job});
    // The requeue completes asynchronously and then sets the 121 s hold: lift it once it is there.
    for (int i = 0; i < 500 && !stop.stop_requested(); ++i) {
      auto show = cluster.scontrol({"-o", "show", "job", job});
      if (show && show->out.find("JobState=PENDING Reason=BeginTime") != std::string::npos) break;
      std::this_thread::sleep_for(10ms);
    }
    (void)cluster.scontrol({"update", "JobId=" + job, "StartTime=now"});
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", node, "--yes", "--job", job, "--detect-timeout-s", "10",
                           "--drain-timeout-s", "10", "--replace-timeout-s", "15"});
  auto final_job = cluster.scontrol({"-o", "show", "job", job});
  std::string ctld_log;
  {
    std::ifstream in(cluster.dir() / "log" / "slurmctld.log");
    ctld_log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  SCOPED_TRACE("job at the end: " + (final_job ? final_job->out : std::string()) + "\nslurmctld.log:\n" + ctld_log);
  const json* detected = stage(d.report, "detected");
  const json* drained = stage(d.report, "drained");
  const json* replaced = stage(d.report, "replaced");
  ASSERT_TRUE(detected && drained && replaced);
  EXPECT_TRUE((*detected)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_TRUE((*drained)["reached"].get<bool>()) << d.report.dump(2);  // the job left: nothing runs
  ASSERT_TRUE((*replaced)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_NE((*replaced)["how"].get<std::string>().find("job " + job + " requeued (restart 1) onto "), std::string::npos)
      << (*replaced)["how"];
  EXPECT_EQ((*replaced)["how"].get<std::string>().find(node), std::string::npos) << (*replaced)["how"];
  EXPECT_GT((*replaced)["at_ms"].get<double>(), (*detected)["at_ms"].get<double>());
  EXPECT_EQ(d.report["job"], job);
  EXPECT_EQ(d.exit_code, 0) << d.report.dump(2);
  std::printf("[ measure  ] drill with cmaxd and a requeue: detected %.1f ms, drained %.1f ms, replaced %.1f ms (%s)\n",
              (*detected)["at_ms"].get<double>(), (*drained)["at_ms"].get<double>(), (*replaced)["at_ms"].get<double>(),
              (*replaced)["how"].get<std::string>().c_str());
}

TEST_F(DrillReplacement, ASpareAddedToThePartitionIsTheReplacement) {
  auto c = SlurmCluster::start({.nodes = 4, .spares = 1, .extra_conf = {"PartitionName=gpu Nodes=n[1-4] State=UP"}});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  auto agent = cmaxd_for(cluster, "n3");
  ASSERT_TRUE(agent) << agent.error().message;
  ASSERT_TRUE(cmax::test::wait_for_log(cluster.dir() / "cmaxd.log", "from now on", 60s, &*agent));
  std::jthread site([&](std::stop_token stop) {
    auto drained = cluster.wait_for("n3", [](const cmax::sched::NodeState& n) { return n.drain_flag(); }, 10s);
    if (!drained || stop.stop_requested()) return;
    (void)cluster.scontrol({"update", "PartitionName=gpu", "Nodes=n[1-4],spare1"});
  });
  auto d = drill(cluster, {"--scenario", "xid79", "--nodes", "n3", "--yes", "--partition", "gpu", "--detect-timeout-s",
                           "10", "--drain-timeout-s", "10", "--replace-timeout-s", "15"});
  ASSERT_TRUE(d.report.is_object()) << d.out << d.err;
  const json* replaced = stage(d.report, "replaced");
  ASSERT_TRUE(replaced);
  ASSERT_TRUE((*replaced)["reached"].get<bool>()) << d.report.dump(2);
  EXPECT_EQ((*replaced)["how"], "spare1 joined partition gpu");
  EXPECT_EQ(d.exit_code, 0) << d.report.dump(2);
  // A job that is not running on the target is refused before anything is injected.
  auto refused = drill(cluster, {"--scenario", "xid79", "--nodes", "n2", "--yes", "--job", "999999"});
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("nothing was injected"), std::string::npos) << refused.err;
}

}  // namespace
