#include <gtest/gtest.h>

#include <string>

#include "signals/catalog.h"

using namespace cmax::signals;

namespace {

Catalog builtin() {
  auto c = Catalog::builtin();
  EXPECT_TRUE(c) << c.error().message;
  return std::move(c).value();
}

Signal xid(int code) {
  Signal s;
  s.kind = Kind::xid;
  s.code = code;
  s.device = "0000:06:00";
  return s;
}

Signal xid154(int recovery) {
  Signal s = xid(154);
  s.recovery_action = recovery;
  return s;
}

Signal sxid(int code, bool fatal) {
  Signal s;
  s.kind = Kind::sxid;
  s.code = code;
  s.fatal = fatal;
  return s;
}

Signal of(Kind k) {
  Signal s;
  s.kind = k;
  return s;
}

bool has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// A config error leaves the catalog as it was: same actions, ignores, thresholds and window.
void expect_unchanged(const Catalog& c) {
  EXPECT_EQ(c.action_for(xid(79)), Action::reboot_node);
  EXPECT_EQ(c.action_for(xid(13)), Action::restart_app);
  EXPECT_EQ(c.action_for(of(Kind::hung_task)), Action::monitor);
  EXPECT_FALSE(c.ignored(xid(13)));
  EXPECT_FALSE(c.ignored(of(Kind::conntrack)));
  EXPECT_EQ(c.threshold_for(xid(13))->count, 10);
  EXPECT_EQ(c.cancellations().size(), 4u);
  EXPECT_EQ(c.window_s(), 300);
}

void expect_error(std::string_view json, std::string_view path_part) {
  Catalog c = builtin();
  auto r = c.apply_config(json, "site.json");
  ASSERT_FALSE(r) << json;
  EXPECT_TRUE(has(r.error().message, "site.json")) << r.error().message;
  EXPECT_TRUE(has(r.error().message, path_part)) << r.error().message;
  expect_unchanged(c);
}

}  // namespace

TEST(Catalog, BuiltinLoadsEveryRow) {
  Catalog c = builtin();
  EXPECT_EQ(c.size(), 172u);  // NVIDIA's catalog of 2025-09-30: Xids 1-172, "Unused" ones included
  const XidInfo* x79 = c.xid(79);
  ASSERT_NE(x79, nullptr);
  EXPECT_EQ(x79->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(x79->description, "GPU has fallen off the bus");
  EXPECT_EQ(x79->immediate_action, "RESTART_BM");
  EXPECT_EQ(x79->investigatory_action, "CONTACT_SUPPORT");
  ASSERT_NE(c.xid(1), nullptr);  // an "Unused" row: still NVIDIA's, CONTACT_SUPPORT
  EXPECT_EQ(c.xid(1)->immediate_action, "CONTACT_SUPPORT");
  EXPECT_EQ(c.xid(14)->immediate_action, "IGNORE");  // fake or injected from userspace
  EXPECT_EQ(c.xid(173), nullptr);  // in drivers from 580.105.08, in no catalog yet
  // Quoted fields with commas come through whole.
  EXPECT_TRUE(has(c.xid(45)->description, "Preemptive cleanup, due to previous errors"));
  EXPECT_EQ(c.xid(45)->investigatory_action,
            "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)");
}

TEST(Catalog, Xid79RebootsTheNode) {
  Catalog c = builtin();
  EXPECT_EQ(c.xid(79)->action, Action::reboot_node);
  EXPECT_EQ(c.action_for(xid(79)), Action::reboot_node);
  EXPECT_FALSE(c.xid(79)->application);
}

TEST(Catalog, ResetGpuXids) {
  Catalog c = builtin();
  for (int code : {46, 62, 64, 95, 109, 119, 120, 140, 143}) {
    ASSERT_NE(c.xid(code), nullptr) << code;
    EXPECT_EQ(c.xid(code)->immediate_action, "RESET_GPU") << code;
    EXPECT_EQ(c.action_for(xid(code)), Action::reset_gpu) << code;
    EXPECT_FALSE(c.xid(code)->application) << code;
  }
}

TEST(Catalog, WorkflowXids) {
  Catalog c = builtin();
  EXPECT_EQ(c.xid(48)->immediate_action, "WORKFLOW_XID_48");
  EXPECT_EQ(c.action_for(xid(48)), Action::reset_gpu);
  EXPECT_EQ(c.xid(74)->immediate_action, "WORKFLOW_NVLINK_ERR");
  EXPECT_EQ(c.action_for(xid(74)), Action::drain);
  for (int code = 144; code <= 150; ++code) {
    EXPECT_EQ(c.xid(code)->immediate_action, "WORKFLOW_NVLINK5_ERR") << code;
    EXPECT_EQ(c.action_for(xid(code)), Action::drain) << code;
  }
  EXPECT_EQ(c.xid(45)->immediate_action, "WORKFLOW_XID_45");
  EXPECT_EQ(c.action_for(xid(45)), Action::ignore);
  EXPECT_FALSE(c.xid(45)->application);
}

TEST(Catalog, ApplicationXids) {
  Catalog c = builtin();
  for (int code : {13, 31, 94}) {
    EXPECT_EQ(c.xid(code)->immediate_action, "RESTART_APP") << code;
    EXPECT_EQ(c.action_for(xid(code)), Action::restart_app) << code;
    EXPECT_TRUE(c.xid(code)->application) << code;
  }
  // Xid 32 is RESTART_APP in the catalog although its text blames PCIe quality: the catalog wins.
  EXPECT_TRUE(c.xid(32)->application);
}

TEST(Catalog, IgnoredXids) {
  Catalog c = builtin();
  for (int code : {43, 63, 92}) {
    EXPECT_EQ(c.xid(code)->immediate_action, "IGNORE") << code;
    EXPECT_EQ(c.action_for(xid(code)), Action::ignore) << code;
    EXPECT_FALSE(c.xid(code)->application) << code;
    EXPECT_FALSE(c.ignored(xid(code))) << "only the config's ignore lists drop signals";
  }
}

TEST(Catalog, OtherImmediateActions) {
  Catalog c = builtin();
  EXPECT_EQ(c.action_for(xid(151)), Action::reboot_node);  // RESTART_VM
  EXPECT_EQ(c.action_for(xid(142)), Action::replace);      // CONTACT_SUPPORT
  EXPECT_EQ(c.action_for(xid(54)), Action::drain);         // CHECK_MECHANICALS
  EXPECT_EQ(c.action_for(xid(78)), Action::drain);         // UPDATE_SWFW
  EXPECT_EQ(c.action_for(xid(159)), Action::restart_app);  // CHECK_UVM
  EXPECT_FALSE(c.xid(159)->application);
  EXPECT_EQ(c.xid(167)->immediate_action, "");  // rows 162-172 have no action yet
  EXPECT_EQ(c.action_for(xid(167)), Action::monitor);
  EXPECT_EQ(c.action_for(xid(9999)), Action::drain);  // newer than the catalog: never silently ignored
  EXPECT_NE(c.reason_for(xid(9999)).find("not in NVIDIA's catalog"), std::string::npos);
}

TEST(Catalog, Xid154FollowsItsRecoveryAction) {
  Catalog c = builtin();
  EXPECT_EQ(c.xid(154)->immediate_action, "XID_154");
  EXPECT_EQ(c.action_for(xid154(-1)), Action::monitor);  // no recovery action parsed
  EXPECT_EQ(c.action_for(xid154(0)), Action::monitor);
  EXPECT_EQ(c.action_for(xid154(1)), Action::reset_gpu);
  EXPECT_EQ(c.action_for(xid154(2)), Action::reboot_node);
  EXPECT_EQ(c.action_for(xid154(3)), Action::drain);
  EXPECT_EQ(c.action_for(xid154(4)), Action::drain);
  EXPECT_EQ(c.action_for(xid154(5)), Action::drain);
  EXPECT_EQ(recovery_action_to_action(6), Action::drain);
  // The recovery code only means something on Xid 154.
  Signal other = xid(79);
  other.recovery_action = 1;
  EXPECT_EQ(c.action_for(other), Action::reboot_node);
}

TEST(Catalog, SxidByFatality) {
  Catalog c = builtin();
  EXPECT_EQ(c.action_for(sxid(24007, true)), Action::drain);
  EXPECT_EQ(c.action_for(sxid(20034, false)), Action::monitor);
}

TEST(Catalog, KindDefaults) {
  Catalog c = builtin();
  const std::pair<Kind, Action> expected[] = {
      {Kind::soft_lockup, Action::drain},     {Kind::hard_lockup, Action::reboot_node},
      {Kind::hung_task, Action::monitor},     {Kind::mce, Action::drain},
      {Kind::edac_ce, Action::monitor},       {Kind::edac_ue, Action::drain},
      {Kind::aer_corrected, Action::monitor}, {Kind::aer_nonfatal, Action::drain},
      {Kind::aer_fatal, Action::reboot_node}, {Kind::nvme, Action::drain},
      {Kind::block_io, Action::drain},        {Kind::fs_error, Action::drain},
      {Kind::nfs_timeout, Action::monitor},   {Kind::nfs_ok, Action::ignore},
      {Kind::lustre, Action::monitor},        {Kind::lustre_conn, Action::monitor},
      {Kind::ib_port, Action::monitor},       {Kind::ib_health, Action::drain},
      {Kind::net_carrier, Action::drain},     {Kind::net_link_up, Action::ignore},
      {Kind::oom, Action::restart_app},       {Kind::conntrack, Action::monitor},
      {Kind::gpu_off_bus, Action::reboot_node}, {Kind::mlx5_cmd_timeout, Action::drain},
      {Kind::mlx5_fatal, Action::reboot_node},  {Kind::efa_admin, Action::drain},
  };
  for (auto [kind, action] : expected) EXPECT_EQ(c.action_for(of(kind)), action) << to_string(kind);
}

TEST(Catalog, DefaultThresholdsCancellationsWindow) {
  Catalog c = builtin();
  auto t = c.threshold_for(xid(13));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->count, 10);
  EXPECT_EQ(t->window_s, 3600);
  EXPECT_EQ(t->escalate, Action::reset_gpu);
  EXPECT_FALSE(c.threshold_for(xid(79)));
  EXPECT_FALSE(c.threshold_for(xid(43)));
  EXPECT_FALSE(c.threshold_for(of(Kind::oom)));
  ASSERT_EQ(c.cancellations().size(), 4u);
  EXPECT_EQ(c.cancellations()[0].open, Kind::nfs_timeout);
  EXPECT_EQ(c.cancellations()[0].close, Kind::nfs_ok);
  EXPECT_EQ(c.cancellations()[1].open, Kind::net_carrier);
  EXPECT_EQ(c.cancellations()[1].close, Kind::net_link_up);
  EXPECT_EQ(c.cancellations()[2].open, Kind::ib_port_down);  // probe kinds (cmaxd)
  EXPECT_EQ(c.cancellations()[2].close, Kind::ib_port_up);
  EXPECT_EQ(c.cancellations()[3].open, Kind::fs_hung);
  EXPECT_EQ(c.cancellations()[3].close, Kind::fs_ok);
  EXPECT_EQ(c.window_s(), 300);
}

TEST(CatalogConfig, FullExample) {
  // The example in docs/signals-config.md.
  Catalog c = builtin();
  auto r = c.apply_config(R"({
    "schema": "cmax.signals-config/1",
    "window_s": 600,
    "actions": {
      "xid": {"79": "replace", "154": "reboot_node"},
      "sxid": {"20034": "drain"},
      "kinds": {"hung_task": "drain"}
    },
    "ignore": {"xid": [43, "63"], "sxid": [11004], "kinds": ["conntrack"]},
    "thresholds": {
      "xid": {"13": {"count": 5, "window_s": 600, "escalate": "drain"}, "31": {"count": 3}},
      "application": {"count": 20, "window_s": 7200, "escalate": "reset_gpu"}
    },
    "cancellations": [{"open": "nfs_timeout", "close": "nfs_ok"}]
  })",
                          "site.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.window_s(), 600);
  EXPECT_EQ(c.action_for(xid(79)), Action::replace);
  EXPECT_EQ(c.action_for(xid154(1)), Action::reboot_node);  // the override beats the message
  EXPECT_EQ(c.action_for(sxid(20034, false)), Action::drain);
  EXPECT_EQ(c.action_for(sxid(24007, false)), Action::monitor);
  EXPECT_EQ(c.action_for(of(Kind::hung_task)), Action::drain);
  EXPECT_TRUE(c.ignored(xid(43)));
  EXPECT_TRUE(c.ignored(xid(63)));
  EXPECT_FALSE(c.ignored(xid(92)));
  EXPECT_TRUE(c.ignored(sxid(11004, true)));
  EXPECT_FALSE(c.ignored(xid(11004)));
  EXPECT_TRUE(c.ignored(of(Kind::conntrack)));
  EXPECT_FALSE(c.ignored(of(Kind::oom)));

  auto t13 = c.threshold_for(xid(13));
  ASSERT_TRUE(t13);
  EXPECT_EQ(t13->count, 5);
  EXPECT_EQ(t13->window_s, 600);
  EXPECT_EQ(t13->escalate, Action::drain);
  auto t31 = c.threshold_for(xid(31));  // omitted keys come from the application threshold
  ASSERT_TRUE(t31);
  EXPECT_EQ(t31->count, 3);
  EXPECT_EQ(t31->window_s, 7200);
  EXPECT_EQ(t31->escalate, Action::reset_gpu);
  auto t94 = c.threshold_for(xid(94));
  ASSERT_TRUE(t94);
  EXPECT_EQ(t94->count, 20);
  EXPECT_EQ(t94->window_s, 7200);
  ASSERT_EQ(c.cancellations().size(), 1u);
  EXPECT_EQ(c.cancellations()[0].open, Kind::nfs_timeout);
}

TEST(CatalogConfig, KindOverridesApplyToXidAndSxid) {
  Catalog c = builtin();
  ASSERT_TRUE(c.apply_config(R"({"schema": "cmax.signals-config/1",
      "actions": {"kinds": {"sxid": "reboot_node"}, "xid": {"13": "drain"}}})",
                             "k.json"));
  EXPECT_EQ(c.action_for(sxid(1, false)), Action::reboot_node);
  EXPECT_EQ(c.action_for(xid(13)), Action::drain);
  EXPECT_EQ(c.action_for(xid(79)), Action::reboot_node);
}

TEST(CatalogConfig, ThresholdOnNonApplicationXidAndTurnedOff) {
  Catalog c = builtin();
  ASSERT_TRUE(c.apply_config(R"({"schema": "cmax.signals-config/1", "thresholds": {
      "xid": {"92": {"count": 100, "window_s": 86400, "escalate": "drain"}},
      "application": {"count": 0}}})",
                             "t.json"));
  EXPECT_EQ(c.threshold_for(xid(92))->escalate, Action::drain);
  EXPECT_FALSE(c.threshold_for(xid(13)));
}

TEST(CatalogConfig, EmptyCancellationsRemoveTheDefaults) {
  Catalog c = builtin();
  ASSERT_TRUE(
      c.apply_config(R"({"schema": "cmax.signals-config/1", "cancellations": []})", "c.json"));
  EXPECT_TRUE(c.cancellations().empty());
}

TEST(CatalogConfig, ConfigsLayer) {
  Catalog c = builtin();
  ASSERT_TRUE(
      c.apply_config(R"({"schema": "cmax.signals-config/1", "ignore": {"xid": [43]}})", "a.json"));
  ASSERT_TRUE(
      c.apply_config(R"({"schema": "cmax.signals-config/1", "ignore": {"xid": [63]}})", "b.json"));
  EXPECT_TRUE(c.ignored(xid(43)));
  EXPECT_TRUE(c.ignored(xid(63)));
  ASSERT_TRUE(c.apply_config(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"count": 4, "window_s": 60}}}})",
      "c.json"));
  ASSERT_TRUE(c.apply_config(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"escalate": "drain"}}}})",
      "d.json"));
  auto t = c.threshold_for(xid(13));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->count, 4);
  EXPECT_EQ(t->window_s, 60);
  EXPECT_EQ(t->escalate, Action::drain);
}

TEST(CatalogConfig, ErrorsNameOriginAndKeyAndChangeNothing) {
  expect_error("{not json", "not valid JSON");
  expect_error("[]", "must be an object");
  expect_error(R"({"window_s": 10})", "schema");
  expect_error(R"({"schema": "cmax.signals-config/2"})", "schema");
  expect_error(R"({"schema": "cmax.signals-config/1", "windows": 10})", "'windows'");
  // Every error below comes after valid keys, so a half-applied config would show.
  const std::string head = R"({"schema": "cmax.signals-config/1", "window_s": 900,
      "actions": {"xid": {"13": "drain"}, "kinds": {"hung_task": "drain"}},
      "ignore": {"xid": [13], "kinds": ["conntrack"]},
      "thresholds": {"application": {"count": 2}}, )";
  expect_error(head + R"("cancellations": [{"open": "nfs_timeout", "close": "nfs_okay"}]})",
               "'cancellations[0].close'");
  expect_error(head + R"("cancellations": [{"open": "nfs_timeout"}]})", "'cancellations[0]'");
  expect_error(head + R"("cancellations": [{"open": "oom", "close": "oom"}]})",
               "cannot close itself");
  expect_error(head + R"("cancellations": [{"open": "oom", "close": "nfs_ok", "x": 1}]})",
               "'cancellations[0].x'");
  expect_error(head + R"("cancellations": {"open": "oom"}})", "must be an array");
  expect_error(R"({"schema": "cmax.signals-config/1", "window_s": 0})", "'window_s'");
  expect_error(R"({"schema": "cmax.signals-config/1", "window_s": "300"})", "'window_s'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"xid": {"79": "nuke"}}})",
               "'actions.xid.79'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"xid": {"x79": "drain"}}})",
               "'actions.xid.x79'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"xid": {"-1": "drain"}}})",
               "'actions.xid.-1'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"sxid": {"2003a": "drain"}}})",
               "'actions.sxid.2003a'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"kinds": {"hung": "drain"}}})",
               "'actions.kinds.hung'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"xids": {}}})", "'actions.xids'");
  expect_error(R"({"schema": "cmax.signals-config/1", "actions": {"xid": ["79"]}})",
               "'actions.xid'");
  expect_error(R"({"schema": "cmax.signals-config/1", "ignore": {"xid": [43, "sixty"]}})",
               "'ignore.xid[1]'");
  expect_error(R"({"schema": "cmax.signals-config/1", "ignore": {"xid": [4.5]}})",
               "'ignore.xid[0]'");
  expect_error(R"({"schema": "cmax.signals-config/1", "ignore": {"sxid": [true]}})",
               "'ignore.sxid[0]'");
  expect_error(R"({"schema": "cmax.signals-config/1", "ignore": {"kinds": ["conntrak"]}})",
               "'ignore.kinds[0]'");
  expect_error(R"({"schema": "cmax.signals-config/1", "ignore": {"gpu": []}})", "'ignore.gpu'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"count": -1}}}})",
      "'thresholds.xid.13.count'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"window_s": -5}}}})",
      "'thresholds.xid.13.window_s'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"escalate": "up"}}}})",
      "'thresholds.xid.13.escalate'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"13": {"limit": 3}}}})",
      "'thresholds.xid.13.limit'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"xid": {"abc": {"count": 3}}}})",
      "'thresholds.xid.abc'");
  expect_error(R"({"schema": "cmax.signals-config/1", "thresholds": {"sxid": {}}})",
               "'thresholds.sxid'");
  expect_error(
      R"({"schema": "cmax.signals-config/1", "thresholds": {"application": {"count": 1.5}}})",
      "'thresholds.application.count'");
}

TEST(CatalogCsv, FindsColumnsByName) {
  auto c = Catalog::from_csv(
      "immediate_action,trigger_conditions,xid,mnemonic\r\n"
      "RESET_GPU,\"a, b\",900,NEW_ONE\r\n"
      "SOMETHING_NEW,,901,NEWER\r\n",
      "mine.csv");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->size(), 2u);
  EXPECT_EQ(c->action_for(xid(900)), Action::reset_gpu);
  EXPECT_EQ(c->xid(900)->mnemonic, "NEW_ONE");
  EXPECT_EQ(c->xid(900)->description, "");
  EXPECT_EQ(c->xid(901)->immediate_action, "SOMETHING_NEW");  // raw text kept
  EXPECT_EQ(c->action_for(xid(901)), Action::monitor);
  EXPECT_EQ(c->window_s(), 300);
  EXPECT_EQ(c->cancellations().size(), 4u);
}

TEST(CatalogCsv, ErrorsNameOriginAndLine) {
  auto no_column = Catalog::from_csv("xid,mnemonic\n1,A\n", "mine.csv");
  ASSERT_FALSE(no_column);
  EXPECT_TRUE(has(no_column.error().message, "mine.csv")) << no_column.error().message;
  EXPECT_TRUE(has(no_column.error().message, "immediate_action")) << no_column.error().message;

  auto bad_xid = Catalog::from_csv("xid,immediate_action\n1,IGNORE\nx2,IGNORE\n", "mine.csv");
  ASSERT_FALSE(bad_xid);
  EXPECT_TRUE(has(bad_xid.error().message, "line 3")) << bad_xid.error().message;

  auto twice = Catalog::from_csv("xid,immediate_action\n1,IGNORE\n1,RESET_GPU\n", "mine.csv");
  ASSERT_FALSE(twice);
  EXPECT_TRUE(has(twice.error().message, "twice")) << twice.error().message;

  auto short_row =
      Catalog::from_csv("xid,immediate_action,description\n1,IGNORE,a, b\n", "mine.csv");
  ASSERT_FALSE(short_row);
  EXPECT_TRUE(has(short_row.error().message, "line 2")) << short_row.error().message;

  auto open_quote = Catalog::from_csv("xid,immediate_action\n1,\"IGNORE\n", "mine.csv");
  ASSERT_FALSE(open_quote);
  EXPECT_TRUE(has(open_quote.error().message, "mine.csv: line 2")) << open_quote.error().message;

  EXPECT_FALSE(Catalog::from_csv("", "mine.csv"));
}
