// audit/parse/health_check.h: HealthCheckNodeState as slurmctld reads it (read_config.c
// _health_node_state, ping_nodes.c run_health_check, Slurm 25.11), and what a health-check script
// does to the node.

#include <gtest/gtest.h>

#include "audit/parse/health_check.h"

namespace cmax::audit {
namespace {

TEST(HealthCheckStates, WhichValuesCheckADrainedIdleNode) {
  // Checked: the default (unset = ANY), ANY, IDLE, CYCLE alone (ANY, spread over the interval).
  for (std::string_view v : {"", "ANY", "any", "IDLE", "Idle,Cycle", "CYCLE", "ANY,NONDRAINED_IDLE", "IDLE,NONDRAINED_IDLE",
                             "ALLOC,IDLE"})
    EXPECT_TRUE(parse_health_check_states(v).checks_drained_idle()) << v;
  // Not checked: NONDRAINED_IDLE skips DRAIN by design; ALLOC and MIXED never see an idle node;
  // START_ONLY and REBOOT_ONLY have no periodic run.
  for (std::string_view v : {"NONDRAINED_IDLE", "ALLOC", "MIXED", "ALLOC,MIXED", "MIXED,CYCLE", "START_ONLY", "REBOOT_ONLY"})
    EXPECT_FALSE(parse_health_check_states(v).checks_drained_idle()) << v;
}

TEST(HealthCheckStates, UnknownWordsAreIgnoredAsSlurmctldIgnoresThem) {
  auto s = parse_health_check_states("NONDRAINED_IDLE, DRAINED");
  EXPECT_FALSE(s.checks_drained_idle());
  ASSERT_EQ(s.ignored.size(), 1u);
  EXPECT_EQ(s.ignored[0], "DRAINED");
  auto only_bad = parse_health_check_states("BOGUS");  // no state word left: ANY
  EXPECT_TRUE(only_bad.checks_drained_idle());
  EXPECT_EQ(only_bad.describe(), "ANY");
  EXPECT_EQ(parse_health_check_states("nondrained_idle,cycle").describe(), "NONDRAINED_IDLE,CYCLE");
  EXPECT_EQ(parse_health_check_states("ALLOC,MIXED").describe(), "ALLOC,MIXED");
}

TEST(HealthScript, DrainAndResumeLinesAreFound) {
  auto a = classify_health_script(
      "#!/bin/bash\n"
      "# scontrol update nodename=$n state=resume   (a comment: not counted)\n"
      "if ! check; then\n"
      "  scontrol update NodeName=$NODE State=DRAIN Reason=\"Healthcheck:: gpu\"\n"
      "elif grep -q '^Healthcheck::' <<<\"$REASON\"; then\n"
      "  /usr/bin/scontrol update nodename=\"$NODE\" state=resume\n"
      "fi\n");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->drains);
  EXPECT_EQ(a->drain_line, 4);
  EXPECT_TRUE(a->resumes);
  EXPECT_EQ(a->resume_line, 6);

  // NHC's own helpers and its variables.
  auto nhc = classify_health_script("#!/bin/bash\neval $OFFLINE_NODE \"'$HOSTNAME'\" \"'$*'\"\neval ${ONLINE_NODE} x\n");
  ASSERT_TRUE(nhc);
  EXPECT_TRUE(nhc->drains && nhc->resumes);
  auto helpers = classify_health_script("#!/bin/sh\n/usr/libexec/nhc/node-mark-offline $(hostname) bad\n");
  ASSERT_TRUE(helpers);
  EXPECT_TRUE(helpers->drains);
  EXPECT_FALSE(helpers->resumes);

  // DOWN and FAIL take the node out too; a state=idle resumes.
  EXPECT_TRUE(classify_health_script("#!/bin/sh\nscontrol update node=x state=DOWN reason=r\n")->drains);
  EXPECT_TRUE(classify_health_script("#!/bin/sh\nscontrol update node=x STATE=idle\n")->resumes);
  // A word that only contains "state=" is not scontrol's.
  EXPECT_FALSE(classify_health_script("#!/bin/sh\necho prevstate=drain | scontrol show node\n")->drains);
}

TEST(HealthScript, AnEarlyExitOnADrainedNodeBeforeTheResumeIsFound) {
  // The rater's case: the remediation check needs the node healthy (undrained) before it runs.
  auto one_line = classify_health_script(
      "#!/bin/sh\n"
      "state=$(scontrol -o show node $SLURMD_NODENAME)\n"
      "case \"$state\" in *DRAIN*) exit 0 ;; esac\n"
      "if gpu_bad; then scontrol update nodename=$SLURMD_NODENAME state=drain reason=\"hc: gpu\"; exit 1; fi\n"
      "scontrol update nodename=$SLURMD_NODENAME state=resume\n");
  ASSERT_TRUE(one_line);
  EXPECT_TRUE(one_line->skips_drained);
  EXPECT_EQ(one_line->skip_line, 3);
  EXPECT_EQ(one_line->drain_line, 4);
  EXPECT_EQ(one_line->resume_line, 5);
  auto block = classify_health_script(
      "#!/bin/bash\n"
      "if sinfo -h -n \"$n\" -o %t | grep -q drain; then\n"
      "  exit 0\n"
      "fi\n"
      "scontrol update nodename=$n state=resume\n");
  ASSERT_TRUE(block);
  EXPECT_TRUE(block->skips_drained);
  EXPECT_EQ(block->skip_line, 2);
  // Testing for a drain in order to resume is the opposite: not a skip (Azure's health.sh shape).
  auto resume_when_drained = classify_health_script(
      "#!/bin/bash\n"
      "if [[ \"$state\" =~ (down|drain|drained|draining) ]] && [[ $errors -eq 0 ]]; then\n"
      "  scontrol update NodeName=\"$node\" State=resume\n"
      "  exit 0\n"
      "fi\n");
  ASSERT_TRUE(resume_when_drained);
  EXPECT_FALSE(resume_when_drained->skips_drained);
  EXPECT_TRUE(resume_when_drained->resumes);
  // An exit on a drained node in a script that never resumes skips nothing that matters.
  EXPECT_FALSE(classify_health_script("#!/bin/sh\nscontrol show node | grep -q DRAIN && exit 0\n")->skips_drained);
}

TEST(HealthScript, BinariesAndTextsWithoutAShebangAreNotRead) {
  EXPECT_FALSE(classify_health_script(std::string("\x7f" "ELF\0\0", 6)));
  EXPECT_FALSE(classify_health_script("scontrol update node=x state=drain\n"));
  EXPECT_FALSE(classify_health_script(""));
}

}  // namespace
}  // namespace cmax::audit
