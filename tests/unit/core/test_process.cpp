#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "core/process.h"

using cmax::core::ProcessSpec;
using cmax::core::run_process;
using namespace std::chrono_literals;

TEST(Process, CapturesStdoutStderrAndExitCode) {
  auto r = run_process({{"sh", "-c", "echo out; echo err >&2; exit 7"}, 5000ms});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_FALSE(r->timed_out);
}

TEST(Process, ArgumentsAreNeverInterpretedByAShell) {
  auto r = run_process({{"printf", "%s", "$(id); rm -rf /nonexistent"}, 5000ms});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "$(id); rm -rf /nonexistent");
}

TEST(Process, TimeoutKillsTheWholeProcessGroup) {
  auto t0 = std::chrono::steady_clock::now();
  // The grandchild keeps the pipe open; only a group kill ends it.
  auto r = run_process({{"sh", "-c", "sleep 30 & sleep 30"}, 300ms});
  auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(wall, 5s);
}

TEST(Process, OutputIsBounded) {
  ProcessSpec spec{{"sh", "-c", "head -c 1000000 /dev/zero"}, 5000ms};
  spec.max_output_bytes = 1000;
  auto r = run_process(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(Process, MissingProgramIsAnErrorNamingIt) {
  auto r = run_process({{"cmax-no-such-program-xyz"}, 1000ms});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cmax-no-such-program-xyz"), std::string::npos);
  EXPECT_FALSE(run_process({{}, 1000ms}));
}

TEST(Process, FindProgramHonoursTheGivenPath) {
  EXPECT_TRUE(cmax::core::find_program("sh"));
  EXPECT_FALSE(cmax::core::find_program("sh", std::string_view("")));
  EXPECT_FALSE(cmax::core::find_program("sh", std::string_view("/nonexistent-dir")));
}

TEST(Process, ExtraEnvOverridesTheInheritedValue) {
  ::setenv("CMAX_TEST_OVERRIDE", "inherited", 1);
  ProcessSpec spec{{"printenv", "CMAX_TEST_OVERRIDE"}, 5000ms};  // getenv: first match wins
  spec.extra_env = {"CMAX_TEST_OVERRIDE=given"};
  auto r = run_process(spec);
  ::unsetenv("CMAX_TEST_OVERRIDE");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "given\n");
}
