// drill/run.h: the drill's sequencing (check, plan, before, inject, watch, stages, stuck report,
// end marker, record, fleet) against a fake site: a fake scheduler and poller whose target goes
// out of service once the fake injection ran.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "drill/record.h"
#include "drill/run.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;

sched::NodeState idle(const std::string& node) {
  sched::NodeState n;
  n.name = node;
  n.state = n.base = "IDLE";
  return n;
}

sched::NodeState drained(const std::string& node, const std::string& reason) {
  sched::NodeState n = idle(node);
  n.state = "IDLE+DRAIN";
  n.flags = {"DRAIN"};
  n.reason = reason;
  return n;
}

// What the fake site saw, in order, shared by its scheduler and pollers (any thread).
struct World {
  std::mutex mu;
  std::vector<std::string> events;
  std::set<std::string> injected;        // targets whose lines were written
  std::set<std::string> already_out;     // targets out of service before the drill
  std::set<std::string> reacts;          // targets the detector drains once injected
  std::set<std::string> failing_inject;  // targets whose injection fails
  void add(const std::string& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  }
  sched::NodeState state(const std::string& node) {
    std::lock_guard lock(mu);
    if (already_out.count(node)) return drained(node, "someone's maintenance");
    if (injected.count(node) && reacts.count(node)) return drained(node, "cmax: Xid 79");
    return idle(node);
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mu);
    return events;
  }
};

class FakeScheduler final : public sched::Scheduler {
 public:
  explicit FakeScheduler(World& w) : w_(w) {}
  Result<sched::NodeState> node_state(std::string_view node) override {
    w_.add("node_state " + std::string(node));
    return w_.state(std::string(node));
  }
  Result<sched::Action> drain(std::string_view, std::string_view) override { return fail("not in a drill"); }
  Result<sched::Action> resume(std::string_view, sched::Force) override { return fail("not in a drill"); }
  Result<sched::Action> reboot(std::string_view, std::string_view) override { return fail("not in a drill"); }
  Result<sched::PoolCount> held_by_cmax(std::string_view) override { return fail("not in a drill"); }

 private:
  World& w_;
};

class FakePoller final : public Poller {
 public:
  explicit FakePoller(World& w) : w_(w) {}
  Result<Observation> observe(const WatchOptions& options, std::chrono::steady_clock::time_point t0) override {
    Observation o;
    o.t_start = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    o.target = w_.state(options.node);
    o.t_end = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    if (o.target.drain_flag() && !seen_out_.exchange(true)) w_.add("seen drained " + options.node);
    return o;
  }
  std::unique_ptr<Poller> another() const override { return std::make_unique<FakePoller>(w_); }

 private:
  World& w_;
  std::atomic<bool> seen_out_{false};
};

class FakeSite final : public Site {
 public:
  explicit FakeSite(World& w) : w_(w), scheduler_(w), poller_(w) {}
  std::string here() override { return "here"; }
  Result<std::vector<std::string>> rack_nodes(const std::string& rack) override {
    w_.add("rack " + rack);
    return std::vector<std::string>{"r1", "r2"};
  }
  Result<void> connect() override {
    w_.add("connect");
    return ok();
  }
  sched::Scheduler& scheduler() override { return scheduler_; }
  const Poller& poller() override { return poller_; }
  Result<void> check_reservation(const std::string& name) override {
    w_.add("check_reservation " + name);
    return ok();
  }
  Result<std::vector<sched::Reservation>> reservations() override { return reservations_; }
  Result<Partition> partition(const std::string& name) override { return fail("no partition {}", name); }
  Result<Job> job(const std::string& id) override { return fail("no job {}", id); }
  std::optional<std::vector<std::string>> idle_outside_reservations() override {
    return std::vector<std::string>{"spare1", "n1"};
  }
  Result<std::vector<Injected>> inject(const InjectRequest& q, std::string& devkmsg_note) override {
    w_.add("inject " + q.node + (q.local ? " local" : " srun") + (q.reservation.empty() ? "" : " in " + q.reservation));
    if (w_.failing_inject.count(q.node)) return fail("inject on {}: /dev/kmsg: permission denied", q.node);
    devkmsg_note = "printk_devkmsg was on: left as is";
    std::vector<Injected> out;
    for (const auto& s : q.steps) out.push_back({1e9, 5, s.level, s.line});
    std::lock_guard lock(w_.mu);
    w_.injected.insert(q.node);
    return out;
  }
  std::string end_marker(const RunOptions&, const std::string& node, bool local, const std::string&) override {
    w_.add("end_marker " + node + (local ? " local" : " srun"));
    return "end marker written";
  }
  json request_reboot(const RunOptions&, const std::string& node, std::chrono::steady_clock::time_point,
                      std::chrono::milliseconds) override {
    w_.add("reboot " + node);
    return {{"requested", true}, {"t_unix", 1e9}, {"command", "scontrol reboot " + node}, {"result", "accepted"}};
  }
  json stuck_report(const StuckQuery& q) override {
    w_.add("stuck " + q.node.name + " " + q.stage);
    return {{"stage", q.stage}, {"evidence", json::array()}, {"loop", nullptr}, {"next", "resume it"}};
  }
  std::vector<sched::Reservation> reservations_;

 private:
  World& w_;
  FakeScheduler scheduler_;
  FakePoller poller_;
};

class Recorder final : public Progress {
 public:
  explicit Recorder(World& w) : w_(w) {}
  void plan(const Plan& p) override {
    w_.add("plan");
    plans.push_back(p);
  }
  void warn(const std::string& message) override { w_.add("warn " + message); }
  std::vector<Plan> plans;

 private:
  World& w_;
};

class DrillRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("drill_run_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    options.scenario = "xid79";
    options.drill_id = "beef";
    options.nodes = "n1";
    options.inject = "local";
    options.out = dir_.string();
    options.poll_ms = 1;
    options.detect_timeout_s = 1;
    options.drain_timeout_s = 1;
  }
  Result<DrillRecord> run() { return run_drill(options, site, clock, progress); }
  // The position of the first event that starts with `prefix`; fails the test when none does.
  std::size_t at(const std::string& prefix) {
    const auto log = world.log();
    for (std::size_t i = 0; i < log.size(); ++i)
      if (log[i].rfind(prefix, 0) == 0) return i;
    ADD_FAILURE() << "no event " << prefix;
    return log.size();
  }
  bool has(const std::string& prefix) {
    const auto log = world.log();
    return std::any_of(log.begin(), log.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  }
  json read_json(const std::string& name) {
    std::ifstream in(dir_ / name);
    return json::parse(in, nullptr, false);
  }

  std::filesystem::path dir_;
  RunOptions options;
  World world;
  FakeSite site{world};
  core::FixedClock clock{std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000))};
  Recorder progress{world};
};

TEST_F(DrillRun, WithoutYesOnlyThePlanIsShownAndNothingIsTouched) {
  options.scenario = "xid79";
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->injected);
  ASSERT_EQ(progress.plans.size(), 1u);
  const Plan& p = progress.plans[0];
  EXPECT_EQ(p.nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(p.local, std::vector<bool>{true});
  EXPECT_FALSE(p.steps.empty());
  // until: the clock's now plus every awaited stage's timeout plus a minute.
  EXPECT_DOUBLE_EQ(p.options.until_unix, 1'800'000'000.0 + 1 + 1 + 60);
  EXPECT_EQ(world.log(), (std::vector<std::string>{"connect", "plan"}));
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

TEST_F(DrillRun, ALocalTargetIsCheckedInjectedWatchedAndEndedInThatOrder) {
  options.yes = true;
  world.reacts = {"n1"};
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->injected);
  EXPECT_EQ(r->exit_code, kDrillOk);
  EXPECT_LT(at("connect"), at("plan"));
  EXPECT_LT(at("plan"), at("node_state n1"));
  EXPECT_LT(at("node_state n1"), at("inject n1 local"));
  EXPECT_LT(at("inject n1 local"), at("seen drained n1"));
  EXPECT_LT(at("seen drained n1"), at("end_marker n1 local"));
  EXPECT_FALSE(has("stuck"));
  const json& n = r->report["nodes"][0];
  EXPECT_EQ(n["node"], "n1");
  EXPECT_EQ(n["end_marker"], "end marker written");
  EXPECT_EQ(n["detector"]["by"], "cmaxd");
  EXPECT_EQ(n["detector"]["owner"], "rater");
  EXPECT_EQ(n["after"]["state"], "IDLE+DRAIN");
  EXPECT_EQ(n["devkmsg"], "printk_devkmsg was on: left as is");
  for (const auto& st : n["stages"]) {
    if (st["awaited"].get<bool>()) {
      EXPECT_EQ(st["verdict"], "ok") << st.dump();
    }
  }
  EXPECT_FALSE(r->report.contains("fleet"));  // one target: no fleet numbers
  // The record on disk is the complete one, and the audit record holds each line written.
  const json disk = read_json("drill.json");
  EXPECT_EQ(disk, r->report);
  EXPECT_EQ(disk["complete"], true);
  EXPECT_EQ(disk["exit_code"], kDrillOk);
  std::ifstream audit(dir_ / "injected.jsonl");
  std::size_t lines = 0;
  for (std::string line; std::getline(audit, line);) ++lines;
  EXPECT_EQ(lines, n["injected"].size() + 1);  // + what was done to printk_devkmsg
}

TEST_F(DrillRun, AStageNeverReachedGetsAStuckReportAndTheEndMarkerStillFollows) {
  options.yes = true;  // n1 does not react: detected and drained time out after 1 s
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, kDrillStageFailed);
  EXPECT_LT(at("inject n1"), at("stuck n1 drained"));
  EXPECT_LT(at("stuck n1 drained"), at("end_marker n1 local"));
  const json& n = r->report["nodes"][0];
  EXPECT_EQ(n["stuck"]["stage"], "drained");
  EXPECT_EQ(n["detector"]["by"], "none");
  for (const auto& st : n["stages"]) {
    if (st["awaited"].get<bool>()) {
      EXPECT_EQ(st["verdict"], "never") << st.dump();
    }
  }
  EXPECT_EQ(read_json("drill.json")["exit_code"], kDrillStageFailed);
}

TEST_F(DrillRun, ATargetThroughSrunIsEndedAtCleanupNotAtOnceAndRunsInItsReservation) {
  options.yes = true;
  options.inject = "srun";
  world.reacts = {"n1"};
  sched::Reservation res;
  res.name = "maint";
  res.state = "ACTIVE";
  res.nodes = {"n1"};
  site.reservations_ = {res};
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(has("inject n1 srun in maint"));
  EXPECT_FALSE(has("end_marker"));
  EXPECT_EQ(r->report["nodes"][0]["reservation"], "maint");
  EXPECT_EQ(r->report["reservations_before"].size(), 1u);
  EXPECT_EQ(read_json("drill.json")["nodes"][0]["inject"], "srun");
}

TEST_F(DrillRun, AFailedInjectionIsRecordedWhileTheOtherTargetsAreDrilledAndSummed) {
  options.yes = true;
  options.nodes = "n[1-2]";
  options.reservation = "spares";
  options.detect_timeout_s = options.drain_timeout_s = options.replace_timeout_s = 1;
  world.reacts = {"n1", "n2"};
  world.failing_inject = {"n2"};
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, kDrillEnvError);
  EXPECT_TRUE(has("check_reservation spares"));
  const json& nodes = r->report["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]["node"], "n2");
  EXPECT_EQ(nodes[1]["error"], "inject on n2: /dev/kmsg: permission denied");
  EXPECT_FALSE(nodes[1].contains("stages"));
  EXPECT_FALSE(has("end_marker n2"));
  EXPECT_TRUE(has("end_marker n1"));
  // The fleet counts the targets that were watched; the spares exclude the targets themselves.
  const json& fleet = r->report["fleet"];
  EXPECT_EQ(fleet["nodes"], 2);
  EXPECT_EQ(fleet["stages"]["drained"]["of"], 1);
  EXPECT_EQ(fleet["stages"]["drained"]["reached"], 1);
  EXPECT_EQ(fleet["spares_before"], json::array({"spare1"}));
  EXPECT_EQ(r->report["parallel"], 2);
}

TEST_F(DrillRun, ATargetAlreadyOutOfServiceStopsTheDrillBeforeAnythingIsInjected) {
  options.yes = true;
  options.nodes = "n[1-2]";
  world.already_out = {"n2"};
  auto r = run();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "node n2 is already out of service (IDLE+DRAIN, reason \"someone's maintenance\"): a drill there measures "
            "nothing; nothing was injected");
  EXPECT_FALSE(has("inject"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "drill.json"));
}

TEST_F(DrillRun, TheRebootIsRequestedAfterTheInjectionAndAudited) {
  options.yes = true;
  options.reboot = true;
  options.return_timeout_s = 1;  // the reboot flow awaits "returned" too
  world.reacts = {"n1"};
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(at("inject n1"), at("reboot n1"));
  EXPECT_EQ(r->report["nodes"][0]["reboot"]["result"], "accepted");
  std::ifstream audit(dir_ / "injected.jsonl");
  bool audited = false;
  for (std::string line; std::getline(audit, line);)
    audited = audited || json::parse(line).value("action", "") == "reboot";
  EXPECT_TRUE(audited);
}

TEST_F(DrillRun, TheRequestIsCheckedBeforeTheSchedulerIsOpened) {
  options.nodes.clear();
  auto r = run();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--nodes or --rack is required: name the nodes to drill (nothing is chosen for you)");
  options.nodes = "n[1-3]";
  r = run();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--nodes names 3 nodes; one drill may touch at most 2 (--max-nodes)");
  options.nodes = "n[1-2]";
  options.partition = "batch";
  r = run();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--partition with several --nodes"), std::string::npos);
  options.nodes = "n1";
  options.partition.clear();
  options.scheduler = "kubernetes";
  options.inject = "auto";
  r = run();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("on Kubernetes the injection is local: run cmax drill on node n1 itself"),
            std::string::npos);
  EXPECT_FALSE(has("connect"));
  options.scheduler = "slurm";
  options.scenario = "no-such";
  r = run();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no scenario \"no-such\""), std::string::npos);
}

TEST_F(DrillRun, ARackIsResolvedByTheSiteAndNamesTheNodes) {
  options.nodes.clear();
  options.rack = "sw1";
  options.inject = "auto";
  auto r = run();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(progress.plans.size(), 1u);
  EXPECT_EQ(progress.plans[0].nodes, (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(progress.plans[0].options.nodes, "r1,r2");
  EXPECT_EQ(progress.plans[0].local, (std::vector<bool>{false, false}));  // neither is "here"
  EXPECT_LT(at("rack sw1"), at("connect"));
}

TEST(DrillRecordParts, TheFleetSummaryCountsFromTheFirstInjection) {
  const json nodes = json::parse(R"([
    {"node": "a", "injected_at_ms": 100, "stages": [
      {"stage": "detected", "awaited": true, "reached": true, "at_ms": 50},
      {"stage": "replaced", "awaited": false, "reached": false, "at_ms": 0}]},
    {"node": "b", "injected_at_ms": 300, "stages": [
      {"stage": "detected", "awaited": true, "reached": true, "at_ms": 10},
      {"stage": "replaced", "awaited": false, "reached": false, "at_ms": 0}]},
    {"node": "c", "injected_at_ms": 200, "stages": [
      {"stage": "detected", "awaited": true, "reached": false, "at_ms": 0},
      {"stage": "replaced", "awaited": false, "reached": false, "at_ms": 0}]},
    {"node": "d", "error": "inject on d: failed"}
  ])");
  const json f = fleet_summary(nodes, {"s1"});
  EXPECT_EQ(f["nodes"], 4);
  EXPECT_EQ(f["spares_before_count"], 1);
  EXPECT_FALSE(f["stages"].contains("replaced"));  // no target awaited it
  const json& d = f["stages"]["detected"];
  EXPECT_EQ(d["reached"], 2);
  EXPECT_EQ(d["of"], 3);
  EXPECT_EQ(d["at_ms"], json::array({50.0, 210.0}));
  EXPECT_EQ(d["first_ms"], 50.0);
  EXPECT_TRUE(d["all_ms"].is_null());  // c never was
  EXPECT_EQ(d["not_reached"], json::array({"c"}));
}

TEST(DrillRecordParts, TheDetectorIsTheFirstPollThatSawTheNodeOutWithANewReason) {
  Observation same, provider, cmax;
  same.target = drained("n1", "maint");
  provider.target = drained("n1", "gpu health: Xid 79");
  cmax.target = drained("n1", "cmax: healthcheck: Xid 79");
  const auto before = drained("n1", "maint");
  EXPECT_EQ(detector_of({same, provider}, before, false)["by"], "the provider's stack");
  EXPECT_EQ(detector_of({same, provider}, before, false)["owner"], "provider");
  EXPECT_EQ(detector_of({cmax}, idle("n1"), false)["by"], "cmax check (HealthCheckProgram)");
  EXPECT_EQ(detector_of({cmax}, idle("n1"), false)["owner"], "rater");
  EXPECT_EQ(detector_of({cmax}, idle("n1"), true)["owner"], "provider");
  EXPECT_EQ(detector_of({same}, before, false)["by"], "none");
  sched::Reservation r;
  r.name = "maint";
  r.state = "ACTIVE";
  r.nodes = {"n1"};
  EXPECT_EQ(reservation_of({r}, "n1"), "maint");
  EXPECT_EQ(reservation_of({r}, "n2"), "");
  r.state = "INACTIVE";
  EXPECT_EQ(reservation_of({r}, "n1"), "");
}

}  // namespace
}  // namespace cmax::drill
