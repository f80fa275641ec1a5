// drill/stuck.h: why a stage did not complete, from what the drill reads, and the loop it names.

#include <gtest/gtest.h>

#include "drill/stuck.h"

namespace cmax::drill {
namespace {

// `scontrol show config` as Slurm 22.05 prints it (the lines the diagnosis reads, and others).
constexpr std::string_view kConfig = R"(Configuration data as of 2026-12-06T00:10:00
AccountingStorageBackupHost = (null)
HealthCheckInterval     = 300 sec
HealthCheckNodeState    = ANY
HealthCheckProgram      = /usr/sbin/nhc
RebootProgram           = (null)
ReturnToService         = 1
SlurmdLogFile           = /var/log/slurm/slurmd-%n.log

Cgroup Support Configuration:
AllowedDevicesFile      = /etc/slurm/cgroup_allowed_devices_file.conf
)";

sched::NodeState drained(std::string reason, std::string user = "root") {
  sched::NodeState n;
  n.name = "gpu017";
  n.state = "IDLE+DRAIN";
  n.base = "IDLE";
  n.flags = {"DRAIN"};
  n.reason = std::move(reason);
  n.reason_user = std::move(user);
  n.reason_time = "2026-12-06T00:09:41";
  return n;
}

StuckEvidence evidence(std::string_view config_text, sched::NodeState node) {
  StuckEvidence e;
  e.stage = "returned";
  e.node = std::move(node);
  e.setup = remediation_setup(parse_scontrol_config(config_text));
  return e;
}

std::string with(std::string text, std::string_view from, std::string_view to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(StuckConfig, ScontrolShowConfigIsRead) {
  auto c = parse_scontrol_config(kConfig);
  EXPECT_EQ(c.at("HealthCheckProgram"), "/usr/sbin/nhc");
  auto s = remediation_setup(c);
  EXPECT_TRUE(s.config_read);
  EXPECT_EQ(s.health_check_interval_s, 300);
  EXPECT_EQ(s.health_check_node_state, "ANY");
  EXPECT_EQ(s.return_to_service, "1");
  EXPECT_EQ(s.reboot_program, "");  // (null)
  EXPECT_FALSE(remediation_setup(parse_scontrol_config("")).config_read);
}

TEST(StuckConfig, OnlyHealthCheckLinesOfSlurmdsLogAreKept) {
  const auto lines = health_check_log_lines(
      "[2026-12-06T00:09:40.101] debug:  _rpc_health_check\n"
      "[2026-12-06T00:09:41.202] error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
      "check_nv_healthmon:  GPU 3 Xid 79\n"
      "[2026-12-06T00:10:00.000] launch task StepId=12.0 request from UID:0\n"
      "[2026-12-06T00:14:41.202] error: health_check failed: rc:1 output:ERROR: again\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("rc:1"), std::string::npos);
  EXPECT_EQ(health_check_log_lines("x\nhealth_check 1\nhealth_check 2\nhealth_check 3\nhealth_check 4\n", 2),
            (std::vector<std::string>{"health_check 3", "health_check 4"}));
}

TEST(StuckDiagnosis, NhcUnderNondrainedIdleCanNeverReturnItsOwnDrain) {
  auto e = evidence(with(std::string(kConfig), "= ANY", "= NONDRAINED_IDLE"),
                    drained("NHC: check_nv_healthmon: GPU 3 Xid 79"));
  auto d = diagnose_stuck(e);
  EXPECT_EQ(d.stage, "returned");
  EXPECT_NE(d.loop.find("NHC drained gpu017 and is the only thing that resumes it"), std::string::npos) << d.loop;
  EXPECT_NE(d.loop.find("NONDRAINED_IDLE"), std::string::npos) << d.loop;
  EXPECT_NE(d.next.find("slurmd restarts"), std::string::npos) << d.next;
  bool who = false;
  for (const auto& l : d.evidence) who = who || l.find("set by root at 2026-12-06T00:09:41") != std::string::npos;
  EXPECT_TRUE(who);
  // Under ANY the same drain is not a loop: NHC runs on it and resumes it once the GPU passes.
  EXPECT_EQ(diagnose_stuck(evidence(kConfig, drained("NHC: check_nv_healthmon: GPU 3 Xid 79"))).loop, "");
}

TEST(StuckDiagnosis, NhcNeverResumesADrainItDidNotSet) {
  auto d = diagnose_stuck(evidence(kConfig, drained("cmax: xid79 (GPU fallen off the bus)")));
  EXPECT_NE(d.loop.find("resumes only nodes whose reason starts with \"NHC:\""), std::string::npos) << d.loop;
  EXPECT_NE(d.next.find("State=RESUME"), std::string::npos);
}

TEST(StuckDiagnosis, AScriptThatExitsOnADrainedNodeBeforeItsResumeIsTheLoop) {
  auto e = evidence(with(std::string(kConfig), "/usr/sbin/nhc", "/etc/slurm/healthcheck.sh"), drained("hc: GPU fault"));
  audit::HealthScriptActions a;
  a.drains = a.resumes = a.skips_drained = true;
  a.drain_line = 5;
  a.resume_line = 7;
  a.skip_line = 3;
  e.setup.program = a;
  auto d = diagnose_stuck(e);
  EXPECT_NE(d.loop.find("exits first when its node is drained (line 3)"), std::string::npos) << d.loop;
  EXPECT_NE(d.loop.find("needs the node healthy before it can run"), std::string::npos) << d.loop;
  // The same script without the early exit, under ANY: no loop.
  e.setup.program->skips_drained = false;
  EXPECT_EQ(diagnose_stuck(e).loop, "");
  // A script that only drains: not a loop, but nothing returns the node on its own.
  e.setup.program->resumes = false;
  auto only = diagnose_stuck(e);
  EXPECT_EQ(only.loop, "");
  EXPECT_NE(only.next.find("never resumes one"), std::string::npos) << only.next;
}

TEST(StuckDiagnosis, ADownNodeAfterATimedOutRebootWaitsForReturnToService) {
  sched::NodeState n = drained("reboot timed out", "slurm");
  n.state = "DOWN+DRAIN";
  n.base = "DOWN";
  auto d = diagnose_stuck(evidence(kConfig, n));
  EXPECT_NE(d.next.find("ReturnToService=1 does not return it"), std::string::npos) << d.next;
}

TEST(StuckDiagnosis, AnUnreadableControllerIsSaidAndNoLoopIsClaimed) {
  auto d = diagnose_stuck(evidence("", drained("NHC: x")));
  EXPECT_EQ(d.loop, "");
  bool said = false;
  for (const auto& l : d.evidence) said = said || l.find("did not answer") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(StuckDiagnosis, ANodeStillRunningJobsIsNotDrainedYet) {
  sched::NodeState n = drained("cmax: xid79");
  n.state = "MIXED+DRAIN";
  n.base = "MIXED";
  StuckEvidence e = evidence(kConfig, n);
  e.stage = "drained";
  EXPECT_NE(diagnose_stuck(e).next.find("jobs still run"), std::string::npos);
}

}  // namespace
}  // namespace cmax::drill
