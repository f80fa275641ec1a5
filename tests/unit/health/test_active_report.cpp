// One node's active-check report (health/active_report.h): the cmax.check.active/1 document and
// the text table `cmax check --active` prints.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "health/active_report.h"

namespace cmax::health {
namespace {

std::vector<CheckResult> sample() {
  CheckResult a;
  a.id = "cpu.throughput";
  a.outcome = audit::Outcome::pass;
  a.summary = "64 cores within 5%";
  CheckResult b;
  b.id = "storage.fsync";
  b.target = "/scratch";
  b.outcome = audit::Outcome::fail;
  b.summary = "p99 80 ms";
  b.reason = "p99 above 20 ms";
  return {a, b};
}

TEST(ActiveReport, CountsAndTheDocument) {
  const auto results = sample();
  const auto c = count_outcomes(results);
  EXPECT_EQ(c.failed(), 1u);
  EXPECT_FALSE(c.healthy());
  const std::string doc = active_document("n1", {"cpu", "storage"}, "built-in", 60, results);
  ASSERT_EQ(doc.back(), '\n');
  const auto j = nlohmann::json::parse(doc);
  EXPECT_EQ(j["schema"], "cmax.check.active/1");
  EXPECT_EQ(j["node"], "n1");
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["thresholds"], "built-in");
  EXPECT_EQ(j["counts"]["fail"], 1);
  EXPECT_EQ(j["counts"]["pass"], 1);
  EXPECT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(doc.find("{\n  \"schema\""), 0u) << "schema first (ordered)";
}

TEST(ActiveReport, TheTableAndTheReasonsOfWhatDidNotPass) {
  EXPECT_EQ(active_table("n1", "built-in", sample()),
            "n1: active checks (thresholds: built-in)\n"
            "ID              TARGET    OUTCOME         SUMMARY\n"
            "cpu.throughput  -         pass            64 cores within 5%\n"
            "storage.fsync   /scratch  fail            p99 80 ms\n"
            "\n"
            "storage.fsync (fail): p99 above 20 ms\n");
}

}  // namespace
}  // namespace cmax::health
