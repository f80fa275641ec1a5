#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <cmath>
#include <random>

#include "golden_table.h"
#include "nccl/analyze.h"
#include "nccl/chart.h"
#include "nccl/reference.h"

namespace cmax::nccl {
namespace {

using testing::read_golden;

// A run whose busbw follows the logistic exactly, both placements, sizes 2^lo .. 2^hi bytes.
Run logistic_run(double peak, double mid, double slope, int lo = 3, int hi = 34) {
  nccl::Run run;
  run.test = "all_reduce_perf";
  run.collective = Collective::kAllReduce;
  run.ranks = 16;
  run.nodes = 2;
  run.complete = true;
  for (int e = lo; e <= hi; ++e) {
    Row r;
    r.size_bytes = std::uint64_t{1} << e;
    r.count = r.size_bytes / 4;
    r.type = "float";
    r.redop = "sum";
    r.root = -1;
    double busbw = peak / (1 + std::exp(-slope * (e - mid)));
    r.out_of_place.busbw_gbps = busbw;
    r.out_of_place.algbw_gbps = busbw / busbw_factor(run.collective, run.ranks);
    r.out_of_place.wrong = 0;
    r.in_place = r.out_of_place;
    run.rows.push_back(r);
  }
  return run;
}

Row& row_at(Run& run, std::uint64_t size) {
  for (auto& r : run.rows)
    if (r.size_bytes == size) return r;
  ADD_FAILURE() << "no row of size " << size;
  return run.rows.front();
}

std::string describe(const RunAnalysis& a) {
  std::string s;
  for (const auto& an : a.anomalies)
    s += fmt::format("[{} {} {} {:.4g}/{:.4g}: {}]\n", an.size_bytes, an.kind, an.placement,
                     an.measured_gbps, an.expected_gbps, an.detail);
  for (const auto& n : a.notes) s += "note: " + n + "\n";
  return s;
}

const std::vector<Reference>& refs() {
  static const std::vector<Reference> r = [] {
    auto b = builtin_references();
    EXPECT_TRUE(b.has_value()) << (b ? "" : b.error().message);
    return b ? *b : std::vector<Reference>{};
  }();
  return r;
}

// --- reference table ---

TEST(NcclReference, BuiltinTableParses) {
  auto r = builtin_references();
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_GE(r->size(), 9u);
  for (const auto& e : *r) {
    EXPECT_FALSE(e.source.empty());
    EXPECT_TRUE(e.expected_busbw_gbps || e.pass_bar_gbps);
  }
}

TEST(NcclReference, FindsByGpuCollectiveAndNodes) {
  nccl::Run run;
  run.collective = Collective::kAllReduce;
  run.gpu_model = "NVIDIA H100 80GB HBM3";
  run.nodes = 2;
  // A multi-node run whose fabric is unknown is judged against no reference; over TCPX, against none
  // of the InfiniBand numbers.
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.fabric = "TCPX";
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.fabric = "IB";
  const Reference* r = find_reference(refs(), run);
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(*r->expected_busbw_gbps, 466);
  EXPECT_EQ(r->source, "nccl-tests issue 309");
  run.nodes = 4;
  ASSERT_NE(find_reference(refs(), run), nullptr);
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 365.8);
  run.nodes = 8;
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 320.7);
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run, "tuned")->expected_busbw_gbps, 391);
  run.nodes = 1;
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 480);
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run, "ring")->expected_busbw_gbps, 367);
  // Azure's bars only when asked for, and by GPU.
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run, "azure")->pass_bar_gbps, 460);
  run.gpu_model = "NVIDIA H200";
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 480);  // NVLink 4, as H100
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run, "azure")->pass_bar_gbps, 432);
  run.nodes = 2;
  run.fabric = "IB";
  EXPECT_EQ(find_reference(refs(), run), nullptr);  // no multi-node H200 number with a source
  // EFA: AWS's published p5 and p4de outputs, by GPU.
  run.gpu_model = "NVIDIA H100 80GB HBM3";
  run.fabric = "EFA";
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 480);
  run.gpu_model = "NVIDIA A100-SXM4-80GB";
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 78);
  // The NIC count the log shows must be the reference's: 4 NICs are not 8x400G.
  run.gpu_model = "NVIDIA H100 80GB HBM3";
  run.fabric = "IB";
  run.nics = 8;
  EXPECT_DOUBLE_EQ(*find_reference(refs(), run)->expected_busbw_gbps, 466);
  run.nics = 4;
  EXPECT_EQ(find_reference(refs(), run), nullptr);
}

TEST(NcclReference, TheNicCountIsReadFromTheReferencesFabric) {
  Reference r;
  r.fabric = "8x400G IB";
  EXPECT_EQ(reference_nics(r), 8);
  r.fabric = "32x100G EFA (p5.48xlarge)";
  EXPECT_EQ(reference_nics(r), 32);
  r.fabric = "Azure ND H100 v5";
  EXPECT_EQ(reference_nics(r), 0);
  r.fabric = "8 NICs";
  EXPECT_EQ(reference_nics(r), 0);
}

TEST(NcclReference, NothingForUnknownGpuNodesOrCollective) {
  nccl::Run run;
  run.collective = Collective::kAllReduce;
  run.gpu_model = "NVIDIA A100-SXM4-80GB";
  run.nodes = 2;
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.gpu_model = "";
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.gpu_model = "NVIDIA H100 80GB HBM3";
  run.nodes = 0;
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.nodes = 3;
  EXPECT_EQ(find_reference(refs(), run), nullptr);
  run.nodes = 2;
  run.collective = Collective::kAllGather;
  EXPECT_EQ(find_reference(refs(), run), nullptr);
}

TEST(NcclReference, GpuMatchesWholeWordsOnly) {
  auto r = parse_references(R"({"schema": "cmax.nccl-reference/1", "references": [
      {"gpu": "h20", "fabric": "8x400G IB", "collective": "all_reduce", "min_nodes": 2, "expected_busbw_gbps": 300,
       "source": "test"}]})",
                            "test.json");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)[0].max_nodes, kAnyNodes);
  nccl::Run run;
  run.collective = Collective::kAllReduce;
  run.nodes = 16;
  run.fabric = "IB";
  run.gpu_model = "NVIDIA H200";
  EXPECT_EQ(find_reference(*r, run), nullptr);
  run.gpu_model = "NVIDIA H20";
  EXPECT_NE(find_reference(*r, run), nullptr);
  run.nodes = 1;
  EXPECT_EQ(find_reference(*r, run), nullptr);
}

TEST(NcclReference, ErrorsNameTheFileTheEntryAndTheFix) {
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {"{", "not valid JSON"},
      {R"({"schema": "x", "references": []})", "'schema' must be \"cmax.nccl-reference/1\""},
      {R"({"schema": "cmax.nccl-reference/1"})", "'references' must be an array"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 2, "expected_busbw_gbps": 466}]})",
       "references[0]: 'source' is missing"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 2, "expected_gbps": 466, "source": "x"}]})",
       "unknown field 'expected_gbps'"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "allreduce_typo", "nodes": 2, "expected_busbw_gbps": 466, "source": "x"}]})",
       "is not an nccl-tests collective"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 2, "min_nodes": 1, "expected_busbw_gbps": 466, "source": "x"}]})",
       "not both"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 0, "expected_busbw_gbps": 466, "source": "x"}]})",
       "'nodes' must be a whole number of nodes >= 1"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 2, "expected_busbw_gbps": -1, "source": "x"}]})",
       "'expected_busbw_gbps' must be a number of GB/s"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "nodes": 2, "source": "x"}]})",
       "has no number"},
      {R"({"schema": "cmax.nccl-reference/1", "references": [{"gpu": "H100", "collective":
          "all_reduce", "expected_busbw_gbps": 1, "source": "x"}]})",
       "no node count"},
  };
  for (const auto& c : cases) {
    auto r = parse_references(c.json, "my.json");
    ASSERT_FALSE(r.has_value()) << c.json;
    EXPECT_NE(r.error().message.find("my.json: "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
}

// --- the fit on synthetic curves ---

TEST(NcclAnalyze, PerfectLogisticRecoversItsParametersWithoutFindings) {
  for (double slope : {0.45, 0.55, 0.69, 0.9}) {
    for (double mid : {22.0, 25.0, 27.5}) {
      nccl::Run run = logistic_run(400, mid, slope);
      auto a = analyze_run(run, {});
      ASSERT_TRUE(a.fit.ok);
      EXPECT_FALSE(a.fit.plateau_only);
      EXPECT_NEAR(a.fit.peak_gbps, 400, 400 * 0.02) << slope << " " << mid;
      EXPECT_NEAR(a.fit.mid_log2, mid, mid * 0.02) << slope << " " << mid;
      EXPECT_NEAR(a.fit.slope, slope, slope * 0.02) << slope << " " << mid;
      EXPECT_DOUBLE_EQ(a.fit.noise, 0.03);  // the floor
      EXPECT_LE(a.fit.iterations, 50);
      EXPECT_TRUE(a.anomalies.empty()) << describe(a);
      EXPECT_EQ(a.verdict, "pass");
    }
  }
}

TEST(NcclAnalyze, LeavesLatencyBoundSizesOut) {
  nccl::Run run = logistic_run(400, 25, 0.55);
  auto a = analyze_run(run, {});
  std::size_t informative = 0;
  for (const auto& r : run.rows) informative += r.out_of_place.busbw_gbps >= 0.01 * 400 ? 2 : 0;
  EXPECT_EQ(a.fit.points, informative);
  EXPECT_LT(a.fit.points, 2 * run.rows.size());
}

TEST(NcclAnalyze, PartialRunFromThePlateauSideStillFits) {
  // nccl-tests -b 8M: the foot of the curve is not measured.
  nccl::Run run = logistic_run(300, 24, 0.69, 23, 33);
  auto a = analyze_run(run, {});
  ASSERT_TRUE(a.fit.ok);
  EXPECT_FALSE(a.fit.plateau_only);
  EXPECT_NEAR(a.fit.peak_gbps, 300, 300 * 0.02);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes.front().find("rising edge is not measured"), std::string::npos);
}

TEST(NcclAnalyze, FlatOrShortRunsGetAPlateau) {
  nccl::Run run = logistic_run(100, 10, 0.69, 28, 30);  // 3 sizes, all on the plateau
  auto a = analyze_run(run, {});
  ASSERT_TRUE(a.fit.ok);
  EXPECT_TRUE(a.fit.plateau_only);
  EXPECT_NEAR(a.fit.peak_gbps, 100, 0.01);
  EXPECT_NEAR(fit_busbw_gbps(a.fit, 1 << 20), 100, 0.01);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  EXPECT_NE(a.notes.front().find("plateau only"), std::string::npos);
}

TEST(NcclAnalyze, FindsASingleDipOf40PercentAtEachSize) {
  // From 4 MiB (the end of the protocol-switch zone, where a 40% dip also falls below the smaller
  // size) up to the second-largest size; at the largest size a fall is a cliff (no recovery).
  for (int e = 22; e <= 33; ++e) {
    nccl::Run run = logistic_run(400, 25, 0.55);
    Row& r = row_at(run, std::uint64_t{1} << e);
    r.out_of_place.busbw_gbps *= 0.6;
    r.in_place->busbw_gbps *= 0.6;
    auto a = analyze_run(run, {});
    ASSERT_EQ(a.anomalies.size(), 1u) << "at 2^" << e << "\n" << describe(a);
    EXPECT_EQ(a.anomalies[0].kind, "dip") << describe(a);
    EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t{1} << e);
    EXPECT_EQ(a.anomalies[0].placement, "both");
    EXPECT_NEAR(a.anomalies[0].expected_gbps, 400 / (1 + std::exp(-0.55 * (e - 25))), 0.03 * 400);
    EXPECT_EQ(a.verdict, "warn");
    // The robust fit is not pulled down by the dip.
    EXPECT_NEAR(a.fit.peak_gbps, 400, 400 * 0.02) << e;
  }
}

TEST(NcclAnalyze, ThreePercentNoiseRaisesNoFalsePositives) {
  std::mt19937 rng(20250522);
  std::normal_distribution<double> noise(0, 0.03);
  int trials = 300, flagged = 0;
  for (int t = 0; t < trials; ++t) {
    std::uniform_real_distribution<double> pick(0, 1);
    double peak = 100 + 400 * pick(rng), mid = 22 + 6 * pick(rng), slope = 0.45 + 0.4 * pick(rng);
    nccl::Run run = logistic_run(peak, mid, slope);
    for (auto& r : run.rows) {
      r.out_of_place.busbw_gbps *= 1 + noise(rng);
      r.in_place->busbw_gbps *= 1 + noise(rng);
    }
    auto a = analyze_run(run, {});
    if (!a.anomalies.empty()) {
      ++flagged;
      ADD_FAILURE() << "trial " << t << "\n" << describe(a);
    }
    EXPECT_NEAR(a.fit.peak_gbps, peak, peak * 0.05) << t;
  }
  EXPECT_EQ(flagged, 0);
}

TEST(NcclAnalyze, NoisyDipIsStillFound) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.03);
  for (int t = 0; t < 50; ++t) {
    nccl::Run run = logistic_run(350, 25, 0.55);
    for (auto& r : run.rows) {
      r.out_of_place.busbw_gbps *= 1 + noise(rng);
      r.in_place->busbw_gbps *= 1 + noise(rng);
    }
    Row& r = row_at(run, std::uint64_t{1} << 28);
    r.out_of_place.busbw_gbps *= 0.6;
    r.in_place->busbw_gbps *= 0.6;
    auto a = analyze_run(run, {});
    ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
    EXPECT_EQ(a.anomalies[0].kind, "dip");
    EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t{1} << 28);
  }
}

TEST(NcclAnalyze, ACliffIsACliff) {
  // From 512 MiB to the end busbw halves: falls and stays lower.
  nccl::Run run = logistic_run(400, 25, 0.55);
  for (auto& r : run.rows)
    if (r.size_bytes >= (std::uint64_t{1} << 29)) {
      r.out_of_place.busbw_gbps *= 0.5;
      r.in_place->busbw_gbps *= 0.5;
    }
  auto a = analyze_run(run, {});
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "cliff");
  EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t{1} << 29);
  EXPECT_NE(a.anomalies[0].detail.find("the last size measured"), std::string::npos);
  EXPECT_NEAR(a.fit.peak_gbps, 400, 400 * 0.02);

  // Four sizes low, then back: still a cliff, not a dip.
  nccl::Run run2 = logistic_run(400, 25, 0.55);
  for (int e = 27; e <= 30; ++e) {
    Row& r = row_at(run2, std::uint64_t{1} << e);
    r.out_of_place.busbw_gbps *= 0.55;
    r.in_place->busbw_gbps *= 0.55;
  }
  auto b = analyze_run(run2, {});
  ASSERT_EQ(b.anomalies.size(), 1u) << describe(b);
  EXPECT_EQ(b.anomalies[0].kind, "cliff");
  EXPECT_EQ(b.anomalies[0].size_bytes, std::uint64_t{1} << 27);
}

TEST(NcclAnalyze, OnePlacementOffIsADisagreement) {
  nccl::Run run = logistic_run(400, 25, 0.55);
  row_at(run, std::uint64_t{1} << 23).out_of_place.busbw_gbps *=
      0.5;  // 8 MiB out-of-place collapse
  auto a = analyze_run(run, {});
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "placement_disagreement");
  EXPECT_EQ(a.anomalies[0].placement, "out_of_place");
  EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t{1} << 23);
}

TEST(NcclAnalyze, OutOfPlaceOnlyRunsAreJudgedOnOnePlacement) {
  nccl::Run run = logistic_run(400, 25, 0.55);
  for (auto& r : run.rows) r.in_place.reset();
  row_at(run, std::uint64_t{1} << 30).out_of_place.busbw_gbps *= 0.6;
  auto a = analyze_run(run, {});
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "dip");
  EXPECT_EQ(a.anomalies[0].placement, "out_of_place");
}

TEST(NcclAnalyze, ProtocolSwitchLagIsANoteNotAFinding) {
  // A late switch: 512 KiB runs 30% under the curve but above 256 KiB.
  nccl::Run run = logistic_run(400, 25, 0.55);
  Row& r = row_at(run, std::uint64_t{1} << 19);
  r.out_of_place.busbw_gbps *= 0.7;
  r.in_place->busbw_gbps *= 0.75;
  auto a = analyze_run(run, {});
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes.front().find("protocol switch"), std::string::npos) << describe(a);
}

TEST(NcclAnalyze, WrongResultsFail) {
  nccl::Run run = logistic_run(400, 25, 0.55);
  row_at(run, std::uint64_t{1} << 20).in_place->wrong = 3;
  auto a = analyze_run(run, {});
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "wrong_results");
  EXPECT_EQ(a.anomalies[0].placement, "in_place");
  EXPECT_EQ(a.anomalies[0].size_bytes, 1u << 20);
  EXPECT_EQ(a.verdict, "fail");

  // Old format: the error column is a magnitude; the footer's count is nccl-tests' verdict.
  nccl::Run old = logistic_run(400, 25, 0.55);
  old.old_format = true;
  for (auto& r : old.rows) r.out_of_place.wrong = r.in_place->wrong = 5e-7;
  old.out_of_bounds = 0;
  EXPECT_EQ(analyze_run(old, {}).verdict, "pass");
  old.out_of_bounds = 12;
  auto b = analyze_run(old, {});
  ASSERT_EQ(b.anomalies.size(), 1u) << describe(b);
  EXPECT_EQ(b.anomalies[0].kind, "wrong_results");
  EXPECT_EQ(b.anomalies[0].size_bytes, 0u);
}

TEST(NcclAnalyze, BelowReferenceNeedsThePlateau) {
  nccl::Run run = logistic_run(380, 26, 0.55);
  run.gpu_model = "NVIDIA H100 80GB HBM3";
  run.fabric = "IB";
  auto a = analyze_run(run, refs());
  ASSERT_TRUE(a.reference.has_value());
  EXPECT_DOUBLE_EQ(*a.reference->expected_busbw_gbps, 466);
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "below_reference");
  EXPECT_DOUBLE_EQ(a.anomalies[0].expected_gbps, 466);
  EXPECT_EQ(a.verdict, "fail");

  nccl::Run good = logistic_run(470, 26, 0.55);
  good.gpu_model = run.gpu_model;
  good.fabric = "IB";
  EXPECT_TRUE(analyze_run(good, refs()).anomalies.empty());

  // A run that stops at 256 MiB never reaches the plateau: not judged, said in a note.
  nccl::Run short_run = logistic_run(380, 26, 0.55, 10, 28);
  short_run.gpu_model = run.gpu_model;
  short_run.fabric = "IB";
  auto c = analyze_run(short_run, refs());
  EXPECT_TRUE(c.anomalies.empty()) << describe(c);
  EXPECT_NE(describe(c).find("plateau is not measured"), std::string::npos) << describe(c);
}

TEST(NcclAnalyze, EmptyRunHasNoData) {
  nccl::Run run;
  auto a = analyze_run(run, refs());
  EXPECT_EQ(a.verdict, "no_data");
  EXPECT_FALSE(a.fit.ok);
  EXPECT_EQ(fit_busbw_gbps(a.fit, 1 << 20), 0);
}

// --- scaling ---

Run plateau_run(int nodes, double peak) {
  nccl::Run run = logistic_run(peak, 25, 0.55, 20, 34);
  run.nodes = nodes;
  run.ranks = 8 * nodes;
  return run;
}

TEST(NcclAnalyze, ScalingOfIssue309IsFine) {
  nccl::Run one = plateau_run(1, 480), two = plateau_run(2, 466), four = plateau_run(4, 365.8),
            eight = plateau_run(8, 320.7);
  EXPECT_TRUE(analyze_scaling({&one, &two, &four, &eight}).empty());
}

TEST(NcclAnalyze, ScalingFlagsASteepDropAndANonMonotoneCount) {
  nccl::Run two = plateau_run(2, 466), four = plateau_run(4, 300), eight = plateau_run(8, 320.7);
  auto s = analyze_scaling({&eight, &two, &four});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, "poor_scaling");
  EXPECT_EQ(s[0].nodes, 4);
  EXPECT_NEAR(s[0].expected_gbps, 0.75 * analyze_run(two, {}).peak_busbw_gbps, 1e-9);
  EXPECT_NEAR(s[0].measured_gbps, analyze_run(four, {}).peak_busbw_gbps, 1e-9);

  nccl::Run small = plateau_run(2, 300), large = plateau_run(4, 360);
  auto m = analyze_scaling({&small, &large});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].nodes, 2);
  EXPECT_NE(m[0].detail.find("should not be slower"), std::string::npos);
}

// --- the golden files ---

void expect_footer(const RunAnalysis& a, const Run& run, double peak, double avg) {
  EXPECT_NEAR(a.peak_busbw_gbps, peak, 1e-9);
  EXPECT_NEAR(a.avg_busbw_gbps, avg, 0.01 * avg);
  if (run.avg_busbw_reported) {
    EXPECT_NEAR(a.avg_busbw_gbps, *run.avg_busbw_reported, 0.01 * avg);
  }
}

TEST(NcclAnalyze, Golden01CleanTwoNodes) {
  auto runs = read_golden("01_", false);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  expect_footer(a, runs[0], 469.21, 139.56);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  EXPECT_EQ(a.verdict, "pass");
  ASSERT_TRUE(a.reference.has_value());
  EXPECT_DOUBLE_EQ(*a.reference->expected_busbw_gbps, 466);
  EXPECT_NEAR(a.fit.peak_gbps, 469, 0.03 * 469);
}

TEST(NcclAnalyze, Golden02DipAt2MiB) {
  auto runs = read_golden("02_", false);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].nodes, 4);
  auto a = analyze_run(runs[0], refs());
  expect_footer(a, runs[0], 365.84, 107.51);
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  const Anomaly& d = a.anomalies[0];
  EXPECT_EQ(d.size_bytes, 2097152u);
  // Out-of-place 21.24 is far below; in-place 30.74 is low too: one dip led by out-of-place.
  EXPECT_EQ(d.kind, "dip");
  EXPECT_EQ(d.placement, "out_of_place");
  EXPECT_DOUBLE_EQ(d.measured_gbps, 21.24);
  EXPECT_GT(d.expected_gbps, 30);
  EXPECT_LT(d.expected_gbps, 45);
  EXPECT_NE(d.detail.find("in_place 30.74"), std::string::npos) << d.detail;
  EXPECT_EQ(a.verdict, "warn");
  ASSERT_TRUE(a.reference.has_value());
  EXPECT_DOUBLE_EQ(*a.reference->expected_busbw_gbps, 365.8);
}

TEST(NcclAnalyze, Golden04CleanPartialFrom1MiB) {
  auto runs = read_golden("04_", false);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  expect_footer(a, runs[0], 466.73, 276.999);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  EXPECT_FALSE(a.fit.plateau_only);
}

TEST(NcclAnalyze, Golden08CliffOrDipAt64MB) {
  auto runs = read_golden("08_", true);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  expect_footer(a, runs[0], 42.61, 25.6327);
  ASSERT_TRUE(a.fit.ok);
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].size_bytes, 67108864u);
  EXPECT_TRUE(a.anomalies[0].kind == "dip" || a.anomalies[0].kind == "cliff") << describe(a);
  EXPECT_EQ(a.anomalies[0].placement, "both");
  EXPECT_DOUBLE_EQ(a.anomalies[0].measured_gbps, 19.10);
  EXPECT_NE(a.anomalies[0].detail.find("32.57 GB/s measured at 32 MiB"), std::string::npos)
      << describe(a);
}

TEST(NcclAnalyze, Golden11DipAt128MB) {
  auto runs = read_golden("11_", false);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  EXPECT_NEAR(a.peak_busbw_gbps, 314.10, 1e-9);
  ASSERT_TRUE(a.fit.ok);
  EXPECT_FALSE(a.fit.plateau_only);
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].size_bytes, 134217728u);
  EXPECT_EQ(a.anomalies[0].kind, "dip");
  EXPECT_EQ(a.anomalies[0].placement, "both");
}

TEST(NcclAnalyze, Golden15TwoOldFormatRuns) {
  auto runs = read_golden("15_", true);
  ASSERT_EQ(runs.size(), 2u);
  auto a = analyze_run(runs[0], refs());
  expect_footer(a, runs[0], 4.33, 4.32178);
  EXPECT_TRUE(a.fit.plateau_only);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  runs[1].collective = Collective::kAllToAll;
  auto b = analyze_run(runs[1], refs());
  expect_footer(b, runs[1], 0.51, 0.507636);
  // The in-place error column says 1 but nccl-tests' own check passed it: a note, not a failure.
  EXPECT_TRUE(b.anomalies.empty()) << describe(b);
}

TEST(NcclAnalyze, Golden14SingleAlltoallRow) {
  auto runs = read_golden("14_", false, Collective::kAllToAll);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  EXPECT_NEAR(a.peak_busbw_gbps, 121.17, 1e-9);
  EXPECT_TRUE(a.fit.plateau_only);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
}

TEST(NcclAnalyze, Golden18CleanSrunPrefixed) {
  auto runs = read_golden("18_", false);
  ASSERT_EQ(runs.size(), 1u);
  auto a = analyze_run(runs[0], refs());
  EXPECT_NEAR(a.peak_busbw_gbps, 487.26, 1e-9);
  EXPECT_TRUE(a.anomalies.empty()) << describe(a);
  EXPECT_EQ(a.verdict, "pass");
}

TEST(NcclAnalyze, NothingToJudgeIsIncompleteNeverPass) {
  // One rank of all_reduce: busbw is 0 by definition.
  nccl::Run one = logistic_run(400, 20, 1.0);
  one.ranks = 1;
  for (auto& r : one.rows) r.out_of_place.busbw_gbps = r.in_place->busbw_gbps = 0;
  EXPECT_EQ(analyze_run(one, refs()).verdict, "incomplete");
  // A log cut off at 512 bytes, no footer.
  nccl::Run cut = logistic_run(400, 24, 1.0, 3, 9);
  cut.complete = false;
  auto a = analyze_run(cut, refs());
  EXPECT_EQ(a.verdict, "incomplete") << describe(a);
  // The same curve with its footer, or cut off only after the bandwidth-bound sizes, is judged.
  nccl::Run whole = logistic_run(400, 20, 1.0);
  EXPECT_EQ(analyze_run(whole, refs()).verdict, "pass");
  whole.complete = false;
  EXPECT_EQ(analyze_run(whole, refs()).verdict, "pass");
}

TEST(NcclAnalyze, APlateauIsNeverExtrapolatedPastTheData) {
  // A curve still rising at its largest size (half-way at 2^28, measured to 2^26): no plateau.
  nccl::Run rising = logistic_run(113.5, 28, 1.0, 3, 26);
  auto a = analyze_run(rising, refs());
  EXPECT_FALSE(a.plateau_gbps.has_value()) << *a.plateau_gbps;
  EXPECT_EQ(a.plateau_not_reached_by, std::uint64_t{1} << 26);
  EXPECT_TRUE(std::any_of(a.notes.begin(), a.notes.end(),
                          [](const std::string& n) { return n.find("not reached by 64 MiB") != std::string::npos; }))
      << describe(a);
  // Measured well past its half-way point: the plateau is the fit's.
  auto whole = analyze_run(logistic_run(400, 20, 1.0), refs());
  ASSERT_TRUE(whole.plateau_gbps.has_value());
  EXPECT_NEAR(*whole.plateau_gbps, 400, 8);
}

// Issue 25: collapses below 1% of the peak were excluded from the fit and never judged.
void set_time(Row& r, double time_us, int ranks) {
  r.out_of_place.time_us = time_us;
  r.out_of_place.algbw_gbps = static_cast<double>(r.size_bytes) / (time_us * 1e3);
  r.out_of_place.busbw_gbps = r.out_of_place.algbw_gbps * busbw_factor(Collective::kAllReduce, ranks);
  r.in_place = r.out_of_place;
}

nccl::Run timed_run() {
  nccl::Run run = logistic_run(400, 22, 0.69);
  for (auto& r : run.rows) {
    // time = latency + size / bandwidth, consistent with the busbw the logistic gave.
    double algbw = r.out_of_place.algbw_gbps;
    r.out_of_place.time_us = static_cast<double>(r.size_bytes) / (algbw * 1e3);
    r.in_place = r.out_of_place;
  }
  return run;
}

TEST(NcclAnalyze, ACollapseFarBelowOnePercentIsTheLoudestFinding) {
  nccl::Run run = timed_run();
  auto clean = analyze_run(run, refs());
  ASSERT_TRUE(clean.anomalies.empty()) << describe(clean);
  // 256 KiB takes 12 ms against ~0.3 ms around it.
  for (auto& r : run.rows)
    if (r.size_bytes == 256 * 1024) set_time(r, 12000, run.ranks);
  auto a = analyze_run(run, refs());
  ASSERT_FALSE(a.anomalies.empty()) << describe(a);
  EXPECT_EQ(a.anomalies.front().kind, "collapse") << describe(a);
  EXPECT_EQ(a.anomalies.front().size_bytes, 256u * 1024);
  EXPECT_NE(a.anomalies.front().detail.find("us per operation"), std::string::npos) << a.anomalies.front().detail;
  EXPECT_EQ(a.verdict, "fail");
}

TEST(NcclAnalyze, AnAllGatherAtSeventyMillisecondsFromTwoToEightMibIsOneCollapse) {
  nccl::Run run = timed_run();
  for (auto& r : run.rows)
    if (r.size_bytes >= 2u << 20 && r.size_bytes <= 8u << 20) set_time(r, 70000, run.ranks);
  auto a = analyze_run(run, refs());
  auto it = std::find_if(a.anomalies.begin(), a.anomalies.end(), [](const Anomaly& an) { return an.kind == "collapse"; });
  ASSERT_NE(it, a.anomalies.end()) << describe(a);
  EXPECT_EQ(it->size_bytes, 2u << 20);
  EXPECT_NE(it->detail.find("2 MiB to 8 MiB"), std::string::npos) << it->detail;
}

TEST(NcclAnalyze, AFallToATenthOfThePeakForEverySizeAfterIsACollapseNotADipThatRecovers) {
  // cmax-collbench on one host: 3.54 GB/s at 128 KiB, then 0.13-0.24 GB/s to the last size.
  nccl::Run run = logistic_run(3.6, 12, 0.69, 3, 24);
  for (auto& r : run.rows) {
    if (r.size_bytes > 128 * 1024) {
      double bus = 0.13 + 0.11 * static_cast<double>(r.size_bytes % 7) / 7.0;
      r.out_of_place.busbw_gbps = bus;
      r.out_of_place.algbw_gbps = bus / busbw_factor(run.collective, run.ranks);
      r.in_place = r.out_of_place;
    }
    r.out_of_place.time_us = static_cast<double>(r.size_bytes) / (r.out_of_place.algbw_gbps * 1e3);
    r.in_place = r.out_of_place;
  }
  auto a = analyze_run(run, refs());
  auto it = std::find_if(a.anomalies.begin(), a.anomalies.end(),
                         [](const Anomaly& an) { return an.kind == "collapse" || an.kind == "cliff"; });
  ASSERT_NE(it, a.anomalies.end()) << describe(a);
  EXPECT_EQ(it->size_bytes, 256u * 1024) << describe(a);
  for (const auto& an : a.anomalies) EXPECT_NE(an.kind, "dip") << describe(a);
  EXPECT_NE(a.verdict, "pass");
}

TEST(NcclAnalyze, TheFirstSizeIsADipOnlyWhenSlowerThanTheSizeAfterIt) {
  // A curve measured from 16 MiB: its first size is still rising, 25% under the fit but faster per
  // operation than 32 MiB: not a finding.
  nccl::Run run = logistic_run(400, 24, 0.69, 24, 34);
  run.rows.front().out_of_place.busbw_gbps *= 0.75;
  run.rows.front().in_place = run.rows.front().out_of_place;
  auto a = analyze_run(run, refs());
  for (const auto& an : a.anomalies) EXPECT_NE(an.size_bytes, std::uint64_t{1} << 24) << describe(a);
  // At 30% it takes longer than 32 MiB does: a dip.
  run.rows.front().out_of_place.busbw_gbps *= 0.4;
  run.rows.front().in_place = run.rows.front().out_of_place;
  auto b = analyze_run(run, refs());
  ASSERT_FALSE(b.anomalies.empty()) << describe(b);
  EXPECT_EQ(b.anomalies.front().size_bytes, std::uint64_t{1} << 24);
}

// Speed is measured in bench/bench_nccl.cpp and bench/nccl_analyze.sh, not here.


}  // namespace
}  // namespace cmax::nccl

namespace cmax::nccl {
namespace {
TEST(NcclAnalyzeTail, ACliffInTheLastSizesIsFoundEvenWhenItIsLong) {
  // 85 sizes in linear steps of 64 MiB after the rise; the last 38 fall to 55% (a gather that
  // collapses at 6 GiB loses about half).
  nccl::Run run = logistic_run(200, 20, 0.69, 10, 26);
  for (int k = 1; k <= 85 - 17; ++k) {
    Row r = run.rows.back();
    r.size_bytes = (std::uint64_t{64} << 20) * static_cast<std::uint64_t>(k + 1);
    r.count = r.size_bytes / 4;
    run.rows.push_back(r);
  }
  const std::size_t n = run.rows.size();
  for (std::size_t i = n - 38; i < n; ++i) {
    run.rows[i].out_of_place.busbw_gbps *= 0.55;
    run.rows[i].in_place = run.rows[i].out_of_place;
  }
  auto a = analyze_run(run, {});
  bool cliff = false;
  for (const auto& an : a.anomalies) cliff |= an.kind == "cliff" && an.size_bytes == run.rows[n - 38].size_bytes;
  EXPECT_TRUE(cliff) << describe(a);
}

}  // namespace
}  // namespace cmax::nccl

namespace cmax::nccl {
namespace {
TEST(NcclAnalyzeTwins, TwoSizesWithOneValueGetOneVerdict) {
  // 32 MiB and 64 MiB both at 117.6 GB/s: 12% under the fit at 32 MiB (under the 15% threshold
  // alone), 41% under it at 64 MiB. One dip of two sizes, not a dip at 64 MiB alone.
  nccl::Run run = logistic_run(400, 26, 0.69);
  const double v = 0.88 * 400 / (1 + std::exp(0.69));
  for (auto& r : run.rows)
    if (r.size_bytes == (32u << 20) || r.size_bytes == (64u << 20)) {
      r.out_of_place.busbw_gbps = v;
      r.in_place = r.out_of_place;
    }
  auto a = analyze_run(run, {});
  ASSERT_EQ(a.anomalies.size(), 1u) << describe(a);
  EXPECT_EQ(a.anomalies[0].kind, "dip");
  EXPECT_EQ(a.anomalies[0].size_bytes, 32u << 20) << describe(a);
  EXPECT_NE(a.anomalies[0].detail.find("32 MiB to 64 MiB"), std::string::npos) << a.anomalies[0].detail;
}

// --- the local view: moderate dips the fit's noise hides ---

// A curve that a logistic fits only to ~4% (the way real ones bend: the fit's noise says 4%) with
// placements that agree to 0.5%, as on nccl-tests issue 309's 4-node run.
nccl::Run bent_run(std::mt19937& rng, double common_sd = 0.0) {
  nccl::Run run = logistic_run(365, 25, 0.55);
  std::normal_distribution<double> placement(0, 0.005), common(0, common_sd);
  for (auto& r : run.rows) {
    const double e = std::log2(static_cast<double>(r.size_bytes));
    const double bend = 1 + 0.08 * std::sin(0.6 * e) + (common_sd > 0 ? common(rng) : 0.0);
    r.out_of_place.busbw_gbps *= bend * (1 + placement(rng));
    r.in_place->busbw_gbps *= bend * (1 + placement(rng));
  }
  return run;
}

TEST(NcclAnalyzeLocal, AThirteenPercentDipIsFoundAtEachSizeWhereBusbwFallsBelowTheSmallerSize) {
  std::mt19937 rng(309);
  int judged = 0;
  for (int e = 23; e <= 33; ++e) {  // past the protocol-switch zone, up to the second-largest size
    nccl::Run run = bent_run(rng);
    Row& r = row_at(run, std::uint64_t{1} << e);
    const Row& before = row_at(run, std::uint64_t{1} << (e - 1));
    r.out_of_place.busbw_gbps *= 0.87;
    r.in_place->busbw_gbps *= 0.87;
    auto a = analyze_run(run, {});
    EXPECT_GE(a.fit.noise, 0.035) << "the bend must show as fit noise for this test to mean anything";
    const bool falls = std::max(r.out_of_place.busbw_gbps, r.in_place->busbw_gbps) <=
                       std::max(before.out_of_place.busbw_gbps, before.in_place->busbw_gbps);
    if (!falls) {
      // Still rising over the smaller size: indistinguishable from a switch that comes late.
      EXPECT_TRUE(a.anomalies.empty()) << "2^" << e << "\n" << describe(a);
      continue;
    }
    ++judged;
    ASSERT_EQ(a.anomalies.size(), 1u) << "2^" << e << "\n" << describe(a);
    EXPECT_EQ(a.anomalies[0].kind, "dip");
    EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t{1} << e);
    EXPECT_EQ(a.anomalies[0].placement, "both");
  }
  EXPECT_GE(judged, 6);  // 256 MiB and up fall below the smaller size on this curve
}

TEST(NcclAnalyzeLocal, SizeToSizeNoiseSharedByBothPlacementsRaisesNoFalsePositives) {
  // The noise that matters here moves both placements together (the same transfer measured
  // twice in a row), so the placements cannot tell it from a dip. Healthy runs vary about 1%
  // size to size on the plateau (issue 309, 4 nodes: 361.6, 363.5, 364.9, 365.8 GB/s); 2% of it
  // on every size, 300 runs. (Noise independent in each placement: ThreePercentNoise... above.)
  std::mt19937 rng(20261205);
  int flagged = 0;
  const int trials = std::getenv("CMAX_TRIALS") ? std::atoi(std::getenv("CMAX_TRIALS")) : 300;
  const double common = std::getenv("CMAX_COMMON") ? std::atof(std::getenv("CMAX_COMMON")) : 0.02;
  for (int t = 0; t < trials; ++t) {
    nccl::Run run = bent_run(rng, common);
    auto a = analyze_run(run, {});
    if (!a.anomalies.empty()) {
      ++flagged;
      ADD_FAILURE() << "trial " << t << "\n" << describe(a);
    }
  }
  EXPECT_EQ(flagged, 0);
}

// Issue 37: a dip both placements show, agreeing to a percent, is not noise. On a curve that bends
// more than any logistic (the bends inflate the local view's noise to a 13-22% bar), a 12% dip at
// each plateau size where busbw falls below the smaller size is found: the bar comes from the
// placements' disagreement (0.5% here), not from the model's misfit.
TEST(NcclAnalyzeLocal, ATwelvePercentDipBothPlacementsAgreeOnIsFoundWhateverTheFitsMisfit) {
  std::mt19937 rng(37);
  int judged = 0, found = 0;
  for (int e = 23; e <= 33; ++e) {
    for (double bend : {0.04, 0.06, 0.08}) {
      nccl::Run run = logistic_run(365, 25, 0.55);
      std::normal_distribution<double> placement(0, 0.005);
      for (auto& r : run.rows) {
        const double b = 1 + bend * std::sin(0.6 * std::log2(static_cast<double>(r.size_bytes)));
        r.out_of_place.busbw_gbps *= b * (1 + placement(rng));
        r.in_place->busbw_gbps *= b * (1 + placement(rng));
      }
      Row& r = row_at(run, std::uint64_t{1} << e);
      const Row& before = row_at(run, std::uint64_t{1} << (e - 1));
      r.out_of_place.busbw_gbps *= 0.88;
      r.in_place->busbw_gbps *= 0.88;
      const bool falls = std::max(r.out_of_place.busbw_gbps, r.in_place->busbw_gbps) <=
                         std::max(before.out_of_place.busbw_gbps, before.in_place->busbw_gbps);
      if (!falls) continue;  // still rising: a late switch looks the same (test above)
      auto a = analyze_run(run, {});
      ++judged;
      // Both placements fell; the fit's rule may name the one further down ("..., low too").
      if (a.anomalies.size() == 1 && a.anomalies[0].kind == "dip" && a.anomalies[0].size_bytes == std::uint64_t{1} << e)
        ++found;
      else
        std::printf("[ missed   ] 2^%d bend %.2f: %s\n", e, bend, describe(a).c_str());
    }
  }
  std::printf("[ measure  ] 12%% dips found: %d of %d\n", found, judged);
  EXPECT_GE(judged, 10);
  EXPECT_EQ(found, judged);
}

// The same on issue 309's real 2-node run (golden 01): a 12% dip at a plateau size, both
// placements, was under the 2% local-noise floor's 11% bar; it is a dip.
TEST(NcclAnalyzeLocal, ATwelvePercentDipOnTheRealTwoNodeRunIsFound) {
  auto runs = testing::read_golden("01_", false);
  ASSERT_EQ(runs.size(), 1u);
  for (std::uint64_t size : {std::uint64_t{512} << 20, std::uint64_t{1} << 30, std::uint64_t{2} << 30}) {
    nccl::Run run = runs[0];
    Row& r = row_at(run, size);
    r.out_of_place.busbw_gbps *= 0.88;
    r.in_place->busbw_gbps *= 0.88;
    auto a = analyze_run(run, {});
    ASSERT_EQ(a.anomalies.size(), 1u) << size << "\n" << describe(a);
    EXPECT_EQ(a.anomalies[0].kind, "dip");
    EXPECT_EQ(a.anomalies[0].size_bytes, size);
  }
  EXPECT_TRUE(analyze_run(runs[0], {}).anomalies.empty()) << "the run itself is clean";
}

// Issue 37: a linear sweep (nccl-tests -i) around a protocol switch: busbw holds one protocol's
// level, then steps up to a higher one that stays. The last sizes of the old level are under the
// fit and under the line to the next size, but nothing fell and nothing recovers to a trend: a
// note, not a dip. A real dip in the same sweep (a fall, then back) is still found.
nccl::Run linear_step_run(double jump, int step_at_mib, double dip_at_mib = 0) {
  nccl::Run run;
  run.collective = Collective::kAllReduce;
  for (int i = 1; i <= 48; ++i) {
    const std::uint64_t size = std::uint64_t(i) << 20;
    double bw = 200.0 * i / (i + 4.0);
    if (i >= step_at_mib) bw *= jump;
    if (i == dip_at_mib) bw *= 0.8;
    Row r;
    r.size_bytes = size;
    r.out_of_place.busbw_gbps = bw;
    r.out_of_place.algbw_gbps = bw * 16 / 30;
    r.out_of_place.time_us = static_cast<double>(size) / (r.out_of_place.algbw_gbps * 1e3);
    r.in_place = r.out_of_place;
    r.in_place->busbw_gbps *= 1.002;
    run.rows.push_back(r);
  }
  return run;
}

TEST(NcclAnalyzeLinear, TheOldLevelBeforeAStepUpIsNotADip) {
  for (double jump : {1.2, 1.3, 1.5})
    for (int at : {6, 8, 12, 16, 24, 32, 40}) {
      auto a = analyze_run(linear_step_run(jump, at), {});
      if (!a.anomalies.empty()) ADD_FAILURE() << "jump " << jump << " at " << at << " MiB\n" << describe(a);
    }
  auto a = analyze_run(linear_step_run(1.3, 8), {});
  bool noted = false;
  for (const auto& n : a.notes) noted = noted || n.find("steps up") != std::string::npos;
  EXPECT_TRUE(noted) << describe(a);
}

TEST(NcclAnalyzeLinear, ADipInALinearSweepIsStillADip) {
  for (int dip : {20, 30, 36}) {
    auto a = analyze_run(linear_step_run(1.3, 8, dip), {});
    ASSERT_EQ(a.anomalies.size(), 1u) << dip << " MiB\n" << describe(a);
    EXPECT_EQ(a.anomalies[0].kind, "dip");
    EXPECT_EQ(a.anomalies[0].size_bytes, std::uint64_t(dip) << 20);
  }
}

// A late switch that still rises (A3 Mega's 27.5 -> 32.2 -> 59.4 GB/s at 8-32 MiB) is not a dip:
// NcclFieldLogs asserts 302_ clean.
}  // namespace
}  // namespace cmax::nccl
