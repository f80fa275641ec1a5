// compute_stages on hand-made poll sequences: when each stage was first seen, the interval it
// happened in, and the verdict against its threshold and timeout.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "drill/timeline.h"
#include "sched/slurm_parse.h"

using cmax::drill::compute_stages;
using cmax::drill::Observation;
using cmax::sched::Reservation;
using cmax::drill::Stage;
using cmax::drill::StageResult;
using cmax::drill::StageThresholds;
using cmax::drill::StageTimeouts;
using cmax::drill::Verdict;
using std::chrono::milliseconds;

namespace {

cmax::sched::NodeState node(const std::string& state, const std::string& reason = "",
                            const std::string& name = "n1") {
  cmax::sched::NodeState n;
  n.name = name;
  auto s = cmax::sched::parse_slurm_state(state);
  EXPECT_TRUE(s) << state;
  n.state = state;
  if (s) {
    n.base = s->base;
    n.flags = s->flags;
  }
  n.reason = reason;
  return n;
}

std::optional<Reservation> resv(std::vector<std::string> nodes) {
  Reservation r;
  r.name = "drill";
  r.node_cnt = static_cast<int>(nodes.size());
  r.nodes = std::move(nodes);
  r.flags = {"REPLACE_DOWN"};
  r.state = "ACTIVE";
  return r;
}

// A poll from `start_ms` to `end_ms` after the injection.
Observation obs(long start_ms, long end_ms, const std::string& state,
                const std::string& reason = "", std::optional<Reservation> r = std::nullopt) {
  Observation o;
  o.t_start = milliseconds(start_ms);
  o.t_end = milliseconds(end_ms);
  o.target = node(state, reason);
  o.reservation = std::move(r);
  return o;
}

Observation baseline(const std::string& reason = "", std::optional<Reservation> r = std::nullopt) {
  auto o = obs(0, 0, "IDLE", reason, std::move(r));
  o.t_start = o.t_end = milliseconds(-50);
  return o;
}

std::vector<StageResult> stages(const Observation& base, const std::vector<Observation>& polls,
                                const StageThresholds& thresholds = {},
                                const StageTimeouts& timeouts = {}) {
  auto r = compute_stages(base, polls, thresholds, timeouts);
  EXPECT_TRUE(r) << r.error().message;
  if (!r) return {};
  EXPECT_EQ(r->size(), 4u);
  return *r;
}

// Short timeouts, so a few polls can outlast them.
StageTimeouts short_timeouts() {
  StageTimeouts t;
  t.detected = t.drained = t.replaced = t.returned = milliseconds(10000);
  return t;
}

}  // namespace

TEST(Timeline, DetectionVisibleAtTheVeryFirstPoll) {
  auto s = stages(baseline(), {obs(3, 20, "IDLE+DRAIN", "cmax: Xid 79")});
  ASSERT_EQ(s.size(), 4u);
  const auto& d = s[0];
  EXPECT_EQ(d.name, "detected");
  EXPECT_TRUE(d.reached);
  EXPECT_EQ(d.observation, 0u);
  EXPECT_DOUBLE_EQ(d.at_ms, 20);
  EXPECT_DOUBLE_EQ(d.lower_ms, 0);  // the injection, not the poll's start
  EXPECT_DOUBLE_EQ(d.uncertainty_ms, 20);
  EXPECT_EQ(d.verdict, Verdict::kOk);
  EXPECT_EQ(d.threshold_ms, 60000.0);
  EXPECT_TRUE(s[1].reached);  // IDLE+DRAIN is drained
  EXPECT_EQ(s[2].name, "replaced");
  EXPECT_EQ(s[2].verdict, Verdict::kSkipped);  // no reservation watched
  EXPECT_FALSE(s[2].reached);
  EXPECT_EQ(s[3].name, "returned");
  EXPECT_EQ(s[3].verdict, Verdict::kPending);  // polls stopped long before its timeout
}

TEST(Timeline, EachStageLiesBetweenThePollBeforeAndThePollThatSawIt) {
  auto s = stages(baseline(), {
                                  obs(0, 5, "ALLOCATED"),
                                  obs(1000, 1007, "ALLOCATED"),
                                  obs(2000, 2004, "MIXED+DRAIN", "cmax: Xid 48"),  // draining
                                  obs(3000, 3002, "MIXED+DRAIN", "cmax: Xid 48"),
                                  obs(4000, 4009, "IDLE+DRAIN", "cmax: Xid 48"),
                              });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].observation, 2u);
  EXPECT_DOUBLE_EQ(s[0].at_ms, 2004);
  EXPECT_DOUBLE_EQ(s[0].lower_ms, 1000);
  EXPECT_DOUBLE_EQ(s[0].uncertainty_ms, 1004);
  EXPECT_EQ(s[1].observation, 4u);
  EXPECT_DOUBLE_EQ(s[1].at_ms, 4009);
  EXPECT_DOUBLE_EQ(s[1].lower_ms, 3000);
  EXPECT_EQ(s[1].verdict, Verdict::kOk);
  EXPECT_FALSE(s[3].reached);
}

TEST(Timeline, SubMillisecondPollsKeepTheirPrecision) {
  Observation o = obs(0, 0, "DOWN+DRAIN", "cmax: Xid 79");
  o.t_start = std::chrono::microseconds(250);
  o.t_end = std::chrono::microseconds(1750);
  auto s = stages(baseline(), {o});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_DOUBLE_EQ(s[0].at_ms, 1.75);
  EXPECT_DOUBLE_EQ(s[0].uncertainty_ms, 1.75);
}

TEST(Timeline, FlappingStateCountsWhenFirstSeenAndReturnIsAfterDetection) {
  auto s = stages(baseline(), {
                                  obs(0, 10, "IDLE"),
                                  obs(100, 110, "IDLE+DRAIN", "cmax: Xid 79"),
                                  obs(200, 210, "IDLE"),  // resumed
                                  obs(300, 310, "IDLE+DRAIN", "cmax: Xid 79"),
                                  obs(400, 410, "IDLE+DRAIN", "cmax: Xid 79"),
                              });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].observation, 1u);
  EXPECT_DOUBLE_EQ(s[0].at_ms, 110);
  EXPECT_DOUBLE_EQ(s[0].lower_ms, 0);
  EXPECT_EQ(s[1].observation, 1u);
  EXPECT_TRUE(s[3].reached);
  EXPECT_EQ(s[3].observation, 2u);
  EXPECT_DOUBLE_EQ(s[3].at_ms, 210);
  EXPECT_DOUBLE_EQ(s[3].lower_ms, 100);
  EXPECT_EQ(s[3].verdict, Verdict::kOk);  // no threshold for returning by default
  EXPECT_FALSE(s[3].threshold_ms.has_value());
}

TEST(Timeline, ReturnedNeedsDetectionFirstAndRealService) {
  // In service all along: never detected, so never returned either.
  auto quiet =
      stages(baseline(), {obs(0, 5, "IDLE"), obs(20000, 20005, "IDLE")}, {}, short_timeouts());
  ASSERT_EQ(quiet.size(), 4u);
  EXPECT_FALSE(quiet[3].reached);
  EXPECT_EQ(quiet[3].verdict, Verdict::kNever);
  // Down, then rebooting, then not responding: none of these is back in service.
  auto s = stages(baseline(), {
                                  obs(0, 5, "DOWN", "Kill task failed"),
                                  obs(100, 105, "IDLE+DRAIN+REBOOT_ISSUED", "cmax: reboot"),
                                  obs(200, 205, "IDLE+NOT_RESPONDING"),
                                  obs(300, 305, "MIXED"),
                              });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].observation, 0u);
  EXPECT_EQ(s[3].observation, 3u);
  EXPECT_DOUBLE_EQ(s[3].lower_ms, 200);
}

TEST(Timeline, AReasonThatWasThereBeforeTheDrillIsNotDetection) {
  auto base = baseline("Not responding");
  auto s = stages(base,
                  {obs(0, 5, "IDLE", "Not responding"), obs(5000, 5005, "IDLE", "Not responding"),
                   obs(11000, 11005, "IDLE", "Not responding")},
                  {}, short_timeouts());
  ASSERT_EQ(s.size(), 4u);
  EXPECT_FALSE(s[0].reached);
  EXPECT_EQ(s[0].verdict, Verdict::kNever);
  // A new reason is, even without DRAIN.
  auto r =
      stages(base, {obs(0, 5, "IDLE", "Not responding"), obs(900, 905, "IDLE", "cmax: Xid 79")});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].reached);
  EXPECT_EQ(r[0].observation, 1u);
  EXPECT_FALSE(r[1].reached);
}

TEST(Timeline, DownIsDetectionButNotRespondingAloneIsNot) {
  auto nr =
      stages(baseline(), {obs(0, 5, "IDLE+NOT_RESPONDING"), obs(100, 105, "DOWN+NOT_RESPONDING")});
  ASSERT_EQ(nr.size(), 4u);
  EXPECT_EQ(nr[0].observation, 1u);
  EXPECT_FALSE(nr[1].reached);  // down without DRAIN is not drained
}

TEST(Timeline, ReservationReplacementAndPollsThatCouldNotTell) {
  auto base = baseline("", resv({"n1", "n2"}));
  auto s = stages(base, {
                            obs(0, 10, "IDLE+DRAIN", "cmax: Xid 79", resv({"n1", "n2"})),
                            obs(1000, 1010, "IDLE+DRAIN", "cmax: Xid 79", std::nullopt),
                            obs(2000, 2010, "IDLE+DRAIN", "cmax: Xid 79", resv({"n2", "spare1"})),
                        });
  ASSERT_EQ(s.size(), 4u);
  const auto& r = s[2];
  EXPECT_EQ(r.name, "replaced");
  EXPECT_TRUE(r.reached);
  EXPECT_EQ(r.observation, 2u);
  EXPECT_DOUBLE_EQ(r.at_ms, 2010);
  EXPECT_DOUBLE_EQ(r.lower_ms, 0);  // the poll at 1000 ms could not tell
  EXPECT_EQ(r.threshold_ms, 900000.0);
  EXPECT_EQ(r.verdict, Verdict::kOk);
}

TEST(Timeline, ReplacementIsASpareJoiningOrTheTargetLeaving) {
  auto base = baseline("", resv({"n1", "n2"}));
  auto joined = stages(base, {obs(0, 5, "IDLE+DRAIN", "x", resv({"n1", "n2", "spare2"}))});
  ASSERT_EQ(joined.size(), 4u);
  EXPECT_TRUE(joined[2].reached);
  EXPECT_EQ(joined[2].how, "spare2 joined reservation drill");
  auto left = stages(base, {obs(0, 5, "IDLE+DRAIN", "x", resv({"n2"}))});
  ASSERT_EQ(left.size(), 4u);
  EXPECT_TRUE(left[2].reached);
  EXPECT_EQ(left[2].how, "n1 left reservation drill");
  auto same = stages(base, {obs(0, 5, "IDLE+DRAIN", "x", resv({"n2", "n1"}))});
  ASSERT_EQ(same.size(), 4u);
  EXPECT_FALSE(same[2].reached);
  EXPECT_EQ(same[2].verdict, Verdict::kPending);
  // A target outside the reservation that joins it replaces nothing.
  auto outside = baseline("", resv({"n2", "n3"}));
  auto joins = stages(outside, {obs(0, 5, "IDLE+DRAIN", "x", resv({"n1", "n2", "n3"}))});
  ASSERT_EQ(joins.size(), 4u);
  EXPECT_FALSE(joins[2].reached);
}

TEST(Timeline, NeverDetectedIsAResultNotAnError) {
  std::vector<Observation> polls;
  for (long t = 0; t <= 12000; t += 1000) polls.push_back(obs(t, t + 3, "IDLE", "", resv({"n1"})));
  auto s = stages(baseline("", resv({"n1"})), polls, {}, short_timeouts());
  ASSERT_EQ(s.size(), 4u);
  for (const auto& st : s) {
    EXPECT_FALSE(st.reached) << st.name;
    EXPECT_EQ(st.verdict, Verdict::kNever) << st.name;
    EXPECT_DOUBLE_EQ(st.at_ms, 0) << st.name;
  }
  // The same polls cut short of the timeout prove nothing yet.
  polls.resize(5);
  auto p = stages(baseline("", resv({"n1"})), polls, {}, short_timeouts());
  ASSERT_EQ(p.size(), 4u);
  for (const auto& st : p) EXPECT_EQ(st.verdict, Verdict::kPending) << st.name;
  // No polls at all.
  auto none = stages(baseline(), {});
  ASSERT_EQ(none.size(), 4u);
  EXPECT_EQ(none[0].verdict, Verdict::kPending);
}

TEST(Timeline, SlowAgainstTheThresholdAndNeverPastTheTimeout) {
  auto s = stages(baseline(), {obs(0, 5, "IDLE"), obs(70000, 70004, "IDLE+DRAIN", "cmax: Xid 79")});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[0].reached);
  EXPECT_EQ(s[0].verdict, Verdict::kSlow);
  EXPECT_EQ(s[1].verdict, Verdict::kOk);  // drained within 300 s
  StageThresholds tight;
  tight.drained = milliseconds(70004);
  auto edge = stages(baseline(), {obs(0, 5, "IDLE"), obs(70000, 70004, "IDLE+DRAIN", "x")}, tight);
  ASSERT_EQ(edge.size(), 4u);
  EXPECT_EQ(edge[1].verdict, Verdict::kOk);  // exactly at the threshold is in time
  // First seen after the timeout: never, and not reached.
  auto late = stages(baseline(), {obs(0, 5, "IDLE"), obs(9999, 10001, "IDLE+DRAIN", "x")}, {},
                     short_timeouts());
  ASSERT_EQ(late.size(), 4u);
  EXPECT_FALSE(late[0].reached);
  EXPECT_EQ(late[0].verdict, Verdict::kNever);
}

TEST(Timeline, BadInputIsAnErrorThatSaysWhatToDo) {
  auto drained = baseline();
  drained.target = node("IDLE+DRAIN", "maintenance");
  auto r = compute_stages(drained, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("State=RESUME"), std::string::npos) << r.error().message;
  auto down = baseline();
  down.target = node("DOWN");
  EXPECT_FALSE(compute_stages(down, {}));

  EXPECT_FALSE(compute_stages(baseline(), {obs(-1, 5, "IDLE")}));
  EXPECT_FALSE(compute_stages(baseline(), {obs(10, 5, "IDLE")}));
  auto order = compute_stages(baseline(), {obs(100, 105, "IDLE"), obs(50, 200, "IDLE")});
  ASSERT_FALSE(order);
  EXPECT_NE(order.error().message.find("before observation 0"), std::string::npos);
  auto other = obs(0, 5, "IDLE");
  other.target.name = "n2";
  auto wrong = compute_stages(baseline(), {other});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("\"n2\""), std::string::npos) << wrong.error().message;
  // Polls may overlap (node and reservation asked side by side) as long as starts are ordered.
  EXPECT_TRUE(compute_stages(baseline(), {obs(0, 500, "IDLE"), obs(10, 20, "IDLE")}));
}

TEST(Timeline, NamesOfStagesAndVerdicts) {
  EXPECT_EQ(cmax::drill::stage_name(Stage::kDrained), "drained");
  EXPECT_EQ(cmax::drill::stage_name(Stage::kReturned), "returned");
  EXPECT_EQ(cmax::drill::verdict_name(Verdict::kOk), "ok");
  EXPECT_EQ(cmax::drill::verdict_name(Verdict::kSlow), "slow");
  EXPECT_EQ(cmax::drill::verdict_name(Verdict::kNever), "never");
  EXPECT_EQ(cmax::drill::verdict_name(Verdict::kPending), "pending");
  EXPECT_EQ(cmax::drill::verdict_name(Verdict::kSkipped), "skipped");
}

namespace {

cmax::drill::Job job(std::vector<std::string> nodes, int restarts, const std::string& state = "RUNNING") {
  cmax::drill::Job j;
  j.id = "12";
  j.state = state;
  j.nodes = std::move(nodes);
  j.restarts = restarts;
  return j;
}

Observation with_job(Observation o, std::optional<cmax::drill::Job> j) {
  o.job = std::move(j);
  return o;
}

Observation with_partition(Observation o, std::vector<std::string> nodes) {
  cmax::drill::Partition p;
  p.name = "batch";
  p.nodes = std::move(nodes);
  o.partition = std::move(p);
  return o;
}

}  // namespace

TEST(Timeline, AJobRequeuedOntoAnotherNodeIsTheReplacement) {
  auto base = with_job(baseline(), job({"n1"}, 0));
  auto s = stages(base, {
                            with_job(obs(0, 5, "IDLE+DRAIN", "x"), job({"n1"}, 0)),
                            with_job(obs(100, 105, "IDLE+DRAIN", "x"), job({}, 1, "PENDING")),  // requeued, held
                            with_job(obs(200, 205, "IDLE+DRAIN", "x"), std::nullopt),           // could not tell
                            with_job(obs(300, 305, "IDLE+DRAIN", "x"), job({"n2"}, 1)),
                        });
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[2].reached);
  EXPECT_EQ(s[2].observation, 3u);
  EXPECT_DOUBLE_EQ(s[2].lower_ms, 100);
  EXPECT_DOUBLE_EQ(s[2].at_ms, 305);
  EXPECT_EQ(s[2].how, "job 12 requeued (restart 1) onto n2");
  // Running again on the target itself, or still on it, replaces nothing.
  auto again = stages(base, {with_job(obs(0, 5, "IDLE+DRAIN", "x"), job({"n1"}, 1))});
  EXPECT_FALSE(again[2].reached);
  // A job that was not running on the target cannot show a requeue: an error, before any poll.
  auto elsewhere = with_job(baseline(), job({"n3"}, 0));
  auto r = compute_stages(elsewhere, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not running on n1"), std::string::npos) << r.error().message;
  auto pending = with_job(baseline(), job({}, 0, "PENDING"));
  EXPECT_FALSE(compute_stages(pending, {}));
}

TEST(Timeline, ANodeJoiningThePartitionIsTheReplacement) {
  auto base = with_partition(baseline(), {"n1", "n2", "n3"});
  auto s = stages(base, {
                            with_partition(obs(0, 5, "IDLE+DRAIN", "x"), {"n1", "n2", "n3"}),
                            with_partition(obs(50, 55, "IDLE+DRAIN", "x"), {"n2", "n3"}),  // target removed: not yet
                            with_partition(obs(90, 95, "IDLE+DRAIN", "x"), {"n2", "n3", "n4"}),
                        });
  EXPECT_TRUE(s[2].reached);
  EXPECT_DOUBLE_EQ(s[2].lower_ms, 50);
  EXPECT_DOUBLE_EQ(s[2].at_ms, 95);
  EXPECT_EQ(s[2].how, "n4 joined partition batch");
}

TEST(Timeline, WithSeveralSourcesTheFirstToShowItWinsAndSaysHow) {
  auto base = with_job(with_partition(baseline("", resv({"n1", "n2"})), {"n1", "n2"}), job({"n1"}, 0));
  auto p1 = with_job(with_partition(obs(0, 5, "IDLE+DRAIN", "x", resv({"n1", "n2"})), {"n1", "n2"}), job({"n1"}, 0));
  auto p2 = with_job(with_partition(obs(10, 15, "IDLE+DRAIN", "x", std::nullopt), {"n1", "n2"}), job({"n2"}, 1));
  auto s = stages(base, {p1, p2});
  EXPECT_TRUE(s[2].reached);
  EXPECT_EQ(s[2].how, "job 12 requeued (restart 1) onto n2");
  auto spare = stages(base, {with_job(with_partition(obs(0, 5, "IDLE+DRAIN", "x", resv({"n2", "spare1"})), {"n1", "n2"}),
                                      job({"n1"}, 0))});
  EXPECT_EQ(spare[2].how, "spare1 joined reservation drill");
}

namespace {

cmax::drill::KubeWorkload pods(int on_target, int elsewhere, std::vector<std::string> nodes = {}) {
  cmax::drill::KubeWorkload w;
  w.selector = "app=train";
  w.on_target = on_target;
  w.elsewhere = elsewhere;
  w.elsewhere_nodes = std::move(nodes);
  return w;
}

}  // namespace

// Kubernetes: replaced once the target's pods run elsewhere, all of them, and none is left on it.
TEST(Timeline, AWorkloadRescheduledOffTheTargetIsReplaced) {
  auto base = baseline();
  base.workload = pods(2, 1, {"k3"});
  std::vector<Observation> polls = {obs(0, 2, "IDLE+DRAIN", "cordoned"), obs(10, 12, "IDLE+DRAIN", "cordoned"),
                                    obs(20, 22, "IDLE+DRAIN", "cordoned"), obs(30, 32, "IDLE+DRAIN", "cordoned")};
  polls[0].workload = pods(2, 1, {"k3"});
  polls[1].workload = pods(0, 2, {"k2", "k3"});  // one of the two back: not yet
  polls[2].workload = pods(0, 3, {"k2", "k3"});
  polls[3].workload = std::nullopt;               // a failed read says nothing
  auto s = stages(base, polls);
  const auto& r = s[static_cast<std::size_t>(Stage::kReplaced)];
  ASSERT_TRUE(r.reached);
  EXPECT_DOUBLE_EQ(r.at_ms, 22);
  EXPECT_DOUBLE_EQ(r.lower_ms, 10);
  EXPECT_EQ(r.how, "3 pods of app=train running on k2,k3");
  // A workload that does not run on the target cannot show a rescheduling: refused.
  auto none = baseline();
  none.workload = pods(0, 3, {"k2"});
  auto refused = compute_stages(none, polls);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("no Running pod of app=train"), std::string::npos);
}

TEST(KubeWorkload, RunningPodsNotBeingDeletedAreCountedWhereTheyRun) {
  auto w = cmax::drill::kube_workload(R"({"kind":"PodList","items":[
      {"metadata":{"name":"a"},"spec":{"nodeName":"k1"},"status":{"phase":"Running"}},
      {"metadata":{"name":"b","deletionTimestamp":"2026-12-06T00:00:00Z"},"spec":{"nodeName":"k2"},"status":{"phase":"Running"}},
      {"metadata":{"name":"c"},"spec":{"nodeName":"k3"},"status":{"phase":"Running"}},
      {"metadata":{"name":"d"},"spec":{"nodeName":"k2"},"status":{"phase":"Pending"}},
      {"metadata":{"name":"e"},"spec":{},"status":{"phase":"Running"}},
      {"metadata":{"name":"f"},"spec":{"nodeName":"k3"},"status":{"phase":"Running"}}, 7, null]})",
                                      "k1", "app=train");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->on_target, 1);
  EXPECT_EQ(w->elsewhere, 2);
  EXPECT_EQ(w->elsewhere_nodes, (std::vector<std::string>{"k3"}));
  EXPECT_FALSE(cmax::drill::kube_workload(R"({"kind":"Node"})", "k1", "x"));
}
