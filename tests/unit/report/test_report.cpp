#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/audit_json.h"
#include "report/run_dir.h"
#include "report/sarif.h"
#include "report/scorecard.h"
#include "report/terminal.h"
#include "store/run_store.h"
#include "support/temp_host.h"

#include <filesystem>
#include <fstream>

using namespace cmax;
using audit::Outcome;

namespace {

audit::AuditReport sample() {
  audit::AuditReport r;
  r.host = "gpu-07";
  r.host_root = "/";
  r.started_at = "2026-12-02T12:00:00Z";
  r.finished_at = "2026-12-02T12:00:00Z";
  r.floors_origin = "built-in";
  audit::Finding a;
  a.check_id = "security.runc.floor";
  a.category = audit::Category::security;
  a.severity = audit::Severity::version;
  a.security = true;
  a.title = "runc at or above the security floor";
  a.outcome = Outcome::fail;
  a.observed = "1.1.12";
  a.expected = ">= 1.3.6";
  a.evidence_source = "runc --version";
  a.evidence_value = "1.1.12";
  a.cves = {"CVE-2025-31133"};
  a.links = {"https://osv.dev/x"};
  a.reason = "below";
  a.description = "reads runc";
  a.remediation = "upgrade runc";
  audit::Finding b = a;
  b.check_id = "storage.shared_fs";
  b.category = audit::Category::storage;
  b.security = false;
  b.outcome = Outcome::warn;
  b.cves.clear();
  audit::Finding c = b;
  c.check_id = "storage.nfs_hard";
  c.outcome = Outcome::not_applicable;
  r.findings = {a, b, c};
  r.facts.present("kernel.release", "6.1.0", "/proc/sys/kernel/osrelease");
  r.facts.present("bad.utf8", "\xff\xfe", "x");
  return r;
}

}  // namespace

TEST(Scorecard, TransparentFormula) {
  auto cats = report::score_categories(sample().findings);
  ASSERT_EQ(cats.size(), 10u);
  EXPECT_DOUBLE_EQ(*cats[0].score, 0.0);  // security: one fail
  EXPECT_DOUBLE_EQ(*cats[3].score, 0.5);  // storage: one warn, one n/a (n/a not counted)
  EXPECT_FALSE(cats[7].score);            // pricing: nothing evaluated
}

TEST(AuditJson, VersionedDeterministicAndRoundTrips) {
  auto r = sample();
  std::string a = report::audit_to_json(r, 2), b = report::audit_to_json(r, 2);
  EXPECT_EQ(a, b);
  auto j = nlohmann::json::parse(a);
  EXPECT_EQ(j["schema"], "cmax.audit/1");
  EXPECT_EQ(j["summary"]["fail"], 1);
  EXPECT_EQ(j["summary"]["security_fail"], 1);
  EXPECT_EQ(j["summary"]["exit_code"], 2);
  EXPECT_EQ(j["findings"][0]["evidence"]["source"], "runc --version");
  EXPECT_EQ(j["scorecard"].size(), 10u);
  auto back = report::audit_from_json(a, "mem");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->findings.size(), 3u);
  EXPECT_EQ(back->findings[0].cves, r.findings[0].cves);
  EXPECT_EQ(back->findings[1].outcome, Outcome::warn);
  EXPECT_EQ(report::audit_to_json(*back, 2), a);  // review renders what run wrote
}

TEST(AuditJson, DamagedFilesAreClearErrors) {
  auto t = report::audit_from_json("{\"schema\": \"cmax.audit/1\", \"findings\": [", "results.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("results.json"), std::string::npos);
  EXPECT_FALSE(report::audit_from_json("{\"schema\": \"cmax.audit/9\"}", "x"));
  EXPECT_FALSE(report::audit_from_json(R"({"schema": "cmax.audit/1", "findings": [{"id": "x", "result": "maybe"}]})", "x"));
}

TEST(Sarif, SecurityFindingsOnly) {
  auto j = nlohmann::json::parse(report::render_sarif(sample()));
  EXPECT_EQ(j["version"], "2.1.0");
  auto& run = j["runs"][0];
  ASSERT_EQ(run["results"].size(), 1u);
  EXPECT_EQ(run["results"][0]["ruleId"], "security.runc.floor");
  EXPECT_EQ(run["results"][0]["level"], "error");
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), 1u);
}

TEST(Terminal, VerbosityLevelsAddDetail) {
  auto r = sample();
  report::TerminalOptions o;
  std::string v0 = report::render_audit_terminal(r, 2, o);
  EXPECT_NE(v0.find("FAIL security.runc.floor"), std::string::npos);
  EXPECT_EQ(v0.find(">= 1.3.6"), std::string::npos);
  o.verbosity = 1;
  EXPECT_NE(report::render_audit_terminal(r, 2, o).find(">= 1.3.6"), std::string::npos);
  o.verbosity = 2;
  std::string v2 = report::render_audit_terminal(r, 2, o);
  EXPECT_NE(v2.find("CVE-2025-31133"), std::string::npos);
  EXPECT_EQ(v2.find("upgrade runc"), std::string::npos);
  o.verbosity = 3;
  EXPECT_NE(report::render_audit_terminal(r, 2, o).find("upgrade runc"), std::string::npos);
  o.show_not_applicable = false;
  EXPECT_EQ(report::render_audit_terminal(r, 2, o).find("storage.nfs_hard"), std::string::npos);
  EXPECT_NE(report::render_scorecard_terminal(r, o).find("not evaluated"), std::string::npos);
}

TEST(RunDir, WritesAllThreeFilesAndReadsBack) {
  test::TempHost t;
  auto dir = (t.dir() / "runs" / "20261202T120000Z").string();
  auto w = report::write_run_dir(sample(), 2, dir);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_TRUE(std::filesystem::exists(dir + "/results.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/security.sarif"));
  auto st = store::RunStore::open(dir + "/cmax.db");
  ASSERT_TRUE(st);
  auto rows = st->findings(1);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->size(), 3u);
  auto back = report::read_run_dir(dir);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host, "gpu-07");
  auto missing = report::read_run_dir((t.dir() / "nope").string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cmax run"), std::string::npos);
}

TEST(RunDir, ADirectoryThatHoldsARunIsRefusedOrReplacedWhole) {
  cmax::test::TempHost t;
  const std::string dir = (t.dir() / "run").string();
  ASSERT_TRUE(cmax::report::prepare_run_dir(dir, false)) << "a new directory is fine";
  ASSERT_TRUE(cmax::report::write_run_dir(sample(), 2, dir));
  std::ofstream(std::filesystem::path(dir) / "drill.json") << "{}";
  auto refused = cmax::report::prepare_run_dir(dir, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("already holds a run"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("--overwrite"), std::string::npos);
  ASSERT_TRUE(cmax::report::prepare_run_dir(dir, true));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir) / "results.json"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir) / "cmax.db")) << "results.json and cmax.db go together";
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "drill.json")) << "other stages' documents stay";
}
