#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "report/run_dir.h"
#include "score/evidence.h"
#include "score_test_util.h"

namespace cmax::score {
namespace {

TEST(Evidence, ClusterDocGivesNodesAnsweredAndScanIncidents) {
  Evidence ev;
  auto r = add_cluster_doc(R"({"schema": "cmax.cluster/1", "nodes": [
      {"node": "n1", "status": "ok", "scan": {"ran": true, "actionable": 3}},
      {"node": "n2", "status": "ok", "scan": {"ran": true, "actionable": 0}},
      {"node": "n3", "status": "unreachable"}, {"node": "n4", "status": "ok", "scan": {"ran": false}}]})",
                           ev);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_DOUBLE_EQ(ev.metrics.at("cluster.nodes_answered").value, 0.75);
  EXPECT_DOUBLE_EQ(ev.metrics.at("scan.actionable_per_node").value, 1.5);
  // A later scan.json does not override the cluster run's own scans.
  ASSERT_TRUE(add_scan_doc(R"({"schema": "cmax.scan/1", "incidents": []})", ev));
  EXPECT_DOUBLE_EQ(ev.metrics.at("scan.actionable_per_node").value, 1.5);
}

// Issue 35: a node whose audit step Slurm queued (or did not schedule: busy, reserved) was not
// evaluated, so it is no evidence that the cluster is unavailable.
TEST(Evidence, QueuedAndUnscheduledNodesAreLeftOutOfNodesAnswered) {
  Evidence ev;
  ASSERT_TRUE(add_cluster_doc(R"({"schema": "cmax.cluster/1", "nodes": [
      {"node": "n1", "status": "ok"}, {"node": "n2", "status": "ok"}, {"node": "n3", "status": "timeout"},
      {"node": "spare1", "status": "ok"}, {"node": "spare2", "status": "queued"}, {"node": "n4", "status": "not_scheduled"}]})",
                              ev));
  EXPECT_DOUBLE_EQ(ev.metrics.at("cluster.nodes_answered").value, 0.75) << "3 of the 4 asked";
  EXPECT_NE(ev.metrics.at("cluster.nodes_answered").source.find("1 queued, 1 not scheduled"), std::string::npos)
      << ev.metrics.at("cluster.nodes_answered").source;

  Evidence none;
  ASSERT_TRUE(add_cluster_doc(R"({"schema": "cmax.cluster/1", "nodes": [{"node": "n1", "status": "queued"}]})", none));
  EXPECT_EQ(none.metrics.count("cluster.nodes_answered"), 0u) << "nothing evaluated is no evidence, not 0";
  EXPECT_NE(none.gaps.at("cluster.nodes_answered").find("no node was evaluated"), std::string::npos);
}

// Issue 35: requests cmax canceled itself when it stopped are not the endpoint's failures.
TEST(Evidence, RequestsCmaxCanceledAreNotEndpointFailures) {
  Evidence ev;
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1",
      "overall": {"requests": 40, "succeeded": 37, "failed": 3, "client_canceled": 3,
                  "errors": {"canceled": 3, "http_5xx": 0}}})",
                            ev));
  EXPECT_DOUBLE_EQ(ev.metrics.at("endpoint.success_rate").value, 1.0);
  EXPECT_NE(ev.metrics.at("endpoint.success_rate").source.find("canceled by cmax"), std::string::npos);
  // An older bench.json without client_canceled: errors.canceled is the same count.
  Evidence old;
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1",
      "overall": {"requests": 40, "succeeded": 36, "failed": 4, "errors": {"canceled": 2, "http_5xx": 2}}})",
                            old));
  EXPECT_DOUBLE_EQ(old.metrics.at("endpoint.success_rate").value, 36.0 / 38);
  Evidence all;
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1",
      "overall": {"requests": 5, "succeeded": 0, "client_canceled": 5}})",
                            all));
  EXPECT_EQ(all.metrics.count("endpoint.success_rate"), 0u);
  EXPECT_TRUE(all.gaps.contains("endpoint.success_rate"));
}

// Issue 35: 99.2% measured of an achievable 87.9%: the cache was warm before the run, so neither the
// hit rate nor the bill is scored, and the card says why.
TEST(Evidence, AHitRateAboveTheAchievableIsAWarmCacheNotAScore) {
  for (const char* flag : {R"("cache_hit_above_achievable": true, )", ""}) {
    Evidence ev;
    ASSERT_TRUE(add_bench_doc(fmt::format(R"({{"schema": "cmax.endpoint.bench/1", {}
        "workload": {{"theoretical_hit_rate": 0.879}}, "cost": {{"ratio_to_reference": 0.9}},
        "overall": {{"requests": 10, "succeeded": 10, "cache_hit_rate": 0.992}}}})",
                                          flag),
                              ev));
    EXPECT_EQ(ev.metrics.count("endpoint.cache_hit_of_achievable"), 0u) << flag;
    EXPECT_EQ(ev.metrics.count("endpoint.cost_ratio"), 0u) << flag;
    ASSERT_EQ(ev.warnings.size(), 1u);
    EXPECT_NE(ev.warnings[0].find("99.2% is above the 87.9%"), std::string::npos) << ev.warnings[0];
    EXPECT_NE(ev.gaps.at("endpoint.cache_hit_of_achievable").find("held these prompts before the run"), std::string::npos);
  }
  // Within the tolerance (block edges), judged as usual.
  Evidence near;
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1", "workload": {"theoretical_hit_rate": 0.879},
      "overall": {"cache_hit_rate": 0.89}})",
                            near));
  EXPECT_DOUBLE_EQ(near.metrics.at("endpoint.cache_hit_of_achievable").value, 1.0);
  EXPECT_TRUE(near.warnings.empty());
  EXPECT_NE(near.gaps.at("endpoint.cost_ratio").find("--prices FILE"), std::string::npos);
}

// Issue 35: a stage that ran and measured nothing says why.
TEST(Evidence, DocumentsThatGaveNothingSayWhy) {
  Evidence cpu;
  ASSERT_TRUE(add_nccl_doc(R"({"schema": "cmax.nccl/1", "runs": [{"backend": "mpi", "verdict": "pass"}]})", cpu));
  EXPECT_NE(cpu.gaps.at("nccl.pass_fraction").find("only cmax-collbench over MPI"), std::string::npos);
  Evidence drill;
  ASSERT_TRUE(add_drill_doc(R"({"schema": "cmax.drill/1", "nodes": [{"node": "n1", "detector": {"by": "cmaxd", "owner": "rater"},
      "stages": [{"stage": "detected", "reached": true, "at_ms": 900}, {"stage": "drained", "reached": true, "at_ms": 1900},
                 {"stage": "replaced", "reached": false, "verdict": "skipped"}]}]})",
                            drill));
  EXPECT_NE(drill.gaps.at("drill.detect_s").find("which the rater started"), std::string::npos);
  EXPECT_NE(drill.gaps.at("drill.replace_s").find("verdict skipped"), std::string::npos) << drill.gaps.at("drill.replace_s");
}

TEST(Evidence, ASchemaOfTheWrongTypeIsAnErrorThatSaysSo) {
  Evidence ev;
  auto r = add_scan_doc(R"({"schema": ["cmax.scan/1"], "incidents": []})", ev);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is not cmax.scan/"), std::string::npos) << r.error().message;
}

TEST(Evidence, DrillDocTakesTheWorstNodeAndNever) {
  Evidence ev;
  auto r = add_drill_doc(R"({"schema": "cmax.drill/1", "nodes": [
      {"node": "n1", "stages": [{"stage": "detected", "reached": true, "at_ms": 101.1, "verdict": "ok"},
                                {"stage": "drained", "reached": true, "at_ms": 4000, "verdict": "ok"},
                                {"stage": "replaced", "reached": false, "verdict": "skipped"}]},
      {"node": "n2", "stages": [{"stage": "detected", "reached": true, "at_ms": 2000, "verdict": "ok"},
                                {"stage": "drained", "reached": false, "verdict": "never"}]}]})",
                         ev);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_DOUBLE_EQ(ev.metrics.at("drill.detect_s").value, 2.0);
  EXPECT_TRUE(std::isinf(ev.metrics.at("drill.drain_s").value));
  EXPECT_EQ(ev.metrics.count("drill.replace_s"), 0u) << "skipped is missing evidence, not a zero";
}

TEST(Evidence, NcclBenchSlaDocs) {
  Evidence ev;
  ASSERT_TRUE(add_nccl_doc(R"({"schema": "cmax.nccl/1", "runs": [
      {"collective": "all_reduce", "nodes": 4, "verdict": "pass", "peak_busbw_gbps": 350,
       "reference": {"expected_busbw_gbps": 365.8}},
      {"collective": "all_reduce", "nodes": 8, "verdict": "warn", "peak_busbw_gbps": 300,
       "reference": {"expected_busbw_gbps": 320.7}},
      {"verdict": "no_data"}]})",
                           ev));
  EXPECT_DOUBLE_EQ(ev.metrics.at("nccl.pass_fraction").value, 0.75);
  EXPECT_NEAR(ev.metrics.at("nccl.reference_ratio").value, 300 / 320.7, 1e-12);

  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1",
      "overall": {"requests": 500, "succeeded": 498, "cache_hit_rate": 0.75, "cache_source": "openai"},
      "cost": {"ratio_to_reference": 1.73}})",
                            ev));
  EXPECT_DOUBLE_EQ(ev.metrics.at("endpoint.cache_hit_rate").value, 0.75);
  EXPECT_DOUBLE_EQ(ev.metrics.at("endpoint.cost_ratio").value, 1.73);
  EXPECT_DOUBLE_EQ(ev.metrics.at("endpoint.success_rate").value, 498.0 / 500);

  ASSERT_TRUE(add_sla_doc(R"({"schema": "cmax.sla/1", "months": [
      {"totals": {"gpu_hours": 1000, "excluded_gpu_hours": 0, "down_gpu_hours": 10}},
      {"totals": {"gpu_hours": 1000, "excluded_gpu_hours": 0, "down_gpu_hours": 0}}],
      "summary": {"cancellation_rights": 1}})",
                          ev));
  EXPECT_NEAR(ev.metrics.at("sla.availability_percent").value, 99.5, 1e-9);
  EXPECT_DOUBLE_EQ(ev.metrics.at("sla.cancellation_rights").value, 1);
}

TEST(Evidence, NullHitRateIsMissing) {
  Evidence ev;
  ASSERT_TRUE(add_bench_doc(R"({"schema": "cmax.endpoint.bench/1", "overall": {"requests": 0, "cache_hit_rate": null}, "cost": null})", ev));
  EXPECT_TRUE(ev.metrics.empty());
}

TEST(Evidence, WrongSchemaIsAnError) {
  Evidence ev;
  auto r = add_nccl_doc(R"({"schema": "cmax.drill/1"})", ev);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("nccl.json: schema \"cmax.drill/1\" is not cmax.nccl/"), std::string::npos);
}

TEST(Evidence, CheckActiveAndAttestationsBecomeFindings) {
  Evidence ev;
  ASSERT_TRUE(add_check_active_doc(R"({"schema": "cmax.check.active/1", "results": [
      {"id": "storage.fsync", "category": "storage", "outcome": "pass", "target": "/scratch"},
      {"id": "memory.bandwidth", "category": "reliability", "outcome": "fail", "target": ""}]})",
                                   ev));
  ASSERT_EQ(ev.findings.size(), 2u);
  EXPECT_EQ(ev.findings[0].check_id, "check.storage.fsync@/scratch");
  EXPECT_EQ(ev.findings[1].check_id, "check.memory.bandwidth");
  EXPECT_EQ(ev.findings[1].outcome, audit::Outcome::fail);
  ASSERT_TRUE(add_attestations_doc(R"({"schema": "cmax.attestations/1", "attestations": [
      {"id": "partnerships.ncp", "category": "partnerships", "outcome": "pass", "evidence": "https://example"}]})",
                                   ev));
  EXPECT_EQ(ev.findings.back().check_id, "attest.partnerships.ncp");
  EXPECT_EQ(ev.findings.back().category, audit::Category::partnerships);
  auto bad = add_attestations_doc(R"({"schema": "cmax.attestations/1", "attestations": [{"id": "x", "category": "nope"}]})", ev);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("attestations[0]"), std::string::npos);
}

TEST(Evidence, ReadsARunDirectory) {
  test::TempDir dir;
  audit::AuditReport report;
  report.host = "h1";
  report.findings = {test::finding("security.aslr", audit::Category::security, audit::Outcome::pass)};
  ASSERT_TRUE(report::write_run_dir(report, 0, dir.path().string()));
  std::ofstream(dir.path() / "bench.json") << R"({"schema": "cmax.endpoint.bench/1", "overall": {"cache_hit_rate": 0.9}})";
  std::ofstream(dir.path() / "nccl.json") << "not json";
  auto ev = read_evidence(dir.path().string());
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->host, "h1");
  EXPECT_EQ(ev->label, dir.path().filename().string());
  ASSERT_EQ(ev->findings.size(), 1u);
  EXPECT_EQ(ev->documents, (std::vector<std::string>{"results.json", "bench.json"}));
  ASSERT_EQ(ev->warnings.size(), 1u);
  EXPECT_NE(ev->warnings[0].find("nccl.json: not JSON"), std::string::npos);
  EXPECT_DOUBLE_EQ(ev->metrics.at("endpoint.cache_hit_rate").value, 0.9);
}

TEST(Evidence, ADirectoryWithoutResultsIsAnError) {
  test::TempDir dir;
  auto ev = read_evidence(dir.path().string());
  ASSERT_FALSE(ev);
  EXPECT_NE(ev.error().message.find("results.json"), std::string::npos);
}

}  // namespace
}  // namespace cmax::score
