// The GPU checks' judgement (raw numbers + per-model thresholds -> CheckResults) and
// run_gpu_checks against small fake cmax-gpucheck programs written by the tests.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "health/gpu_checks.h"
#include "health/gpu_judge.h"
#include "health/gpu_raw.h"
#include "health/gpu_thresholds.h"

namespace cmax::health {
namespace {

using audit::Outcome;
using nlohmann::json;

constexpr const char* kKernel = "wmma_fp16_fp32acc_128x128x32";

// One healthy GPU as cmax-gpucheck reports it (HGX H200 numbers).
json device(int index, std::string name = "NVIDIA H200") {
  return {{"index", index},
          {"name", name},
          {"uuid", "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(index)},
          {"pci_bus_id", "00000000:1" + std::to_string(index) + ":00.0"},
          {"compute_capability", "9.0"},
          {"memory_bytes", 150754820096ull},
          {"sm_count", 132},
          {"matmul", {{"kernel", kKernel}, {"n", 8192}, {"reps", 180}, {"tflops", 400.0 + index}, {"best_tflops", 405.0}}},
          {"correctness",
           {{"kernel", kKernel}, {"n", 2048}, {"repeats", 3}, {"kat_mismatches", 0}, {"kat_elements", 4194304},
            {"kat_checksum", "0x5b0e3f41c2d1a977"}, {"checksum", "0x91d2c3b4a5968778"}, {"repeat_mismatches", 0}}},
          {"membw", {{"bytes", 1073741824}, {"reps", 1000}, {"gbps", 4105.2}, {"best_gbps", 4131.9}}},
          {"pcie_h2d", {{"bytes", 268435456}, {"reps", 97}, {"gbps", 53.4}, {"best_gbps", 53.9}}},
          {"pcie_d2h", {{"bytes", 268435456}, {"reps", 99}, {"gbps", 54.6}, {"best_gbps", 54.8}}}};
}

json document(int gpus, std::string name = "NVIDIA H200") {
  json doc = {{"schema", "cmax.gpucheck.raw/1"}, {"program", "cmax-gpucheck 0.1.0"}, {"status", "ok"},
              {"driver_gpus", gpus}, {"devices", json::array()}, {"peers", json::array()}};
  for (int i = 0; i < gpus; ++i) doc["devices"].push_back(device(i, name));
  for (int s = 0; s < gpus; ++s)
    for (int d = 0; d < gpus; ++d)
      if (s != d)
        doc["peers"].push_back({{"src", s}, {"dst", d}, {"can_access", true}, {"performance_rank", 0},
                                {"bytes", 268435456}, {"reps", 500}, {"gbps", 376.2}, {"best_gbps", 389.0}});
  return doc;
}

const GpuThresholds& thresholds() {
  static const GpuThresholds t = [] {
    auto r = builtin_gpu_thresholds();
    EXPECT_TRUE(r) << r.error().message;
    return *r;
  }();
  return t;
}

std::vector<CheckResult> judge(const json& doc) {
  auto raw = parse_gpu_raw(doc.dump());
  EXPECT_TRUE(raw) << raw.error().message;
  return raw ? judge_gpu(*raw, thresholds()) : std::vector<CheckResult>{};
}

const CheckResult& find(const std::vector<CheckResult>& v, std::string_view id, std::string_view target) {
  for (const auto& r : v)
    if (r.id == id && r.target == target) return r;
  static CheckResult none;
  ADD_FAILURE() << "no result " << id << "@" << target;
  return none;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(GpuThresholds, BuiltinIsTheDataFile) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/data/gpu-thresholds.json");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(builtin_gpu_thresholds_text(), ss.str())
      << "the embedded copy is stale: rebuild (src/health/CMakeLists.txt embeds data/gpu-thresholds.json)";
  EXPECT_EQ(thresholds().matmul_kernel, kKernel);
  EXPECT_GE(thresholds().models.size(), 10u);
}

TEST(GpuThresholds, LongestMatchWins) {
  auto model = [](std::string_view name) {
    const auto* m = match_gpu_model(thresholds(), name);
    return m ? m->match : std::string("none");
  };
  EXPECT_EQ(model("NVIDIA H200"), "H200");
  EXPECT_EQ(model("NVIDIA H200 NVL"), "H200 NVL");
  EXPECT_EQ(model("NVIDIA GH200 480GB"), "GH200");
  EXPECT_EQ(model("NVIDIA GB200"), "GB200");
  EXPECT_EQ(model("NVIDIA B200"), "B200");
  EXPECT_EQ(model("NVIDIA H100 80GB HBM3"), "H100 80GB HBM3");
  EXPECT_EQ(model("NVIDIA H100 PCIe"), "H100 PCIe");
  EXPECT_EQ(model("NVIDIA A100-SXM4-80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(model("NVIDIA A100-PCIE-40GB"), "A100-PCIE");
  EXPECT_EQ(model("NVIDIA L40S"), "L40S");
  EXPECT_EQ(model("NVIDIA GeForce RTX 4090"), "none");
  const auto* h200 = match_gpu_model(thresholds(), "NVIDIA H200");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->membw_gbps.fail_below, 3360);
  EXPECT_FALSE(h200->matmul_tflops.set());
}

TEST(GpuThresholds, BadDocumentsNameTheProblem) {
  EXPECT_FALSE(parse_gpu_thresholds("{", "t.json"));
  EXPECT_FALSE(parse_gpu_thresholds(R"({"schema":"other","models":[]})", "t.json"));
  EXPECT_FALSE(parse_gpu_thresholds(R"({"schema":"cmax.gpu-thresholds/1"})", "t.json"));
  auto e = parse_gpu_thresholds(R"({"schema":"cmax.gpu-thresholds/1","models":[{"match":"H200","membw_gbps":5}]})",
                                "t.json");
  ASSERT_FALSE(e);
  EXPECT_TRUE(has(e.error().message, "t.json")) << e.error().message;
  EXPECT_TRUE(has(e.error().message, "membw_gbps")) << e.error().message;
  EXPECT_FALSE(parse_gpu_thresholds(
      R"({"schema":"cmax.gpu-thresholds/1","models":[{"match":"H200","membw_gbps":{"fail_below":-1}}]})", "t.json"));
  EXPECT_FALSE(parse_gpu_thresholds(R"({"schema":"cmax.gpu-thresholds/1","models":[{"model":"x"}]})", "t.json"));
  EXPECT_FALSE(load_gpu_thresholds_file("/nonexistent/gpu-thresholds.json"));
}

TEST(GpuJudge, HealthyH200NodePasses) {
  auto results = judge(document(2));
  ASSERT_EQ(results.size(), 12u);  // 5 per GPU, 2 directed pairs
  for (const auto& r : results) {
    EXPECT_EQ(r.outcome, Outcome::pass) << r.id << "@" << r.target << ": " << r.reason;
    EXPECT_FALSE(r.summary.empty());
  }
  const auto& membw = find(results, "gpu.membw", "gpu0");
  ASSERT_EQ(membw.measurements.size(), 1u);
  EXPECT_EQ(membw.measurements[0].unit, "GB/s");
  EXPECT_EQ(membw.measurements[0].min, 3360);
  EXPECT_EQ(find(results, "gpu.nvlink", "gpu1->gpu0").measurements[0].min, 300);
  EXPECT_TRUE(has(find(results, "gpu.matmul", "gpu0").reason, "median"));
}

TEST(GpuJudge, SlowPcieFailsOrWarns) {
  json doc = document(2);
  doc["devices"][1]["pcie_h2d"]["gbps"] = 24.8;  // trained at Gen4 (or x8 Gen5)
  doc["devices"][1]["pcie_d2h"]["gbps"] = 45.0;
  auto results = judge(doc);
  const auto& h2d = find(results, "gpu.pcie_h2d", "gpu1");
  EXPECT_EQ(h2d.outcome, Outcome::fail);
  EXPECT_TRUE(has(h2d.reason, "nvidia-smi -q -d PCIE")) << h2d.reason;
  EXPECT_EQ(find(results, "gpu.pcie_d2h", "gpu1").outcome, Outcome::warn);
  EXPECT_EQ(find(results, "gpu.pcie_h2d", "gpu0").outcome, Outcome::pass);
}

TEST(GpuJudge, ChecksumThatDiffersFromItsPeersFails) {
  json doc = document(3);
  doc["devices"][2]["correctness"]["checksum"] = "0x91d2c3b4a5968779";
  auto results = judge(doc);
  const auto& bad = find(results, "gpu.correctness", "gpu2");
  EXPECT_EQ(bad.outcome, Outcome::fail);
  EXPECT_TRUE(has(bad.reason, "differs from 0x91d2c3b4a5968778")) << bad.reason;
  EXPECT_TRUE(has(bad.reason, "silent data corruption")) << bad.reason;
  EXPECT_EQ(find(results, "gpu.correctness", "gpu0").outcome, Outcome::pass);
  EXPECT_EQ(find(results, "gpu.correctness", "gpu1").outcome, Outcome::pass);
}

TEST(GpuJudge, TwoGpusThatDisagreeBothFail) {
  json doc = document(2);
  doc["devices"][1]["correctness"]["checksum"] = "0x0000000000000001";
  auto results = judge(doc);
  EXPECT_EQ(find(results, "gpu.correctness", "gpu0").outcome, Outcome::fail);
  EXPECT_EQ(find(results, "gpu.correctness", "gpu1").outcome, Outcome::fail);
}

TEST(GpuJudge, KnownAnswerOrRepeatMismatchFails) {
  json doc = document(2);
  doc["devices"][0]["correctness"]["kat_mismatches"] = 17;
  doc["devices"][1]["correctness"]["repeat_mismatches"] = 1;
  auto results = judge(doc);
  const auto& kat = find(results, "gpu.correctness", "gpu0");
  EXPECT_EQ(kat.outcome, Outcome::fail);
  EXPECT_TRUE(has(kat.reason, "17 of 4194304")) << kat.reason;
  const auto& rep = find(results, "gpu.correctness", "gpu1");
  EXPECT_EQ(rep.outcome, Outcome::fail);
  EXPECT_TRUE(has(rep.reason, "1 of 3 runs")) << rep.reason;
}

TEST(GpuJudge, FailedStepFailsBusyGpuIsUnverified) {
  json doc = document(2);
  doc["devices"][0]["matmul"] = {{"kernel", kKernel},
                                 {"error", "timed run: cudaErrorIllegalAddress: an illegal memory access was encountered"}};
  doc["devices"][1]["membw"] = {{"error", "cudaMalloc source: cudaErrorMemoryAllocation: out of memory"}};
  auto results = judge(doc);
  const auto& mm = find(results, "gpu.matmul", "gpu0");
  EXPECT_EQ(mm.outcome, Outcome::fail);
  EXPECT_TRUE(has(mm.reason, "cudaErrorIllegalAddress")) << mm.reason;
  EXPECT_TRUE(has(mm.reason, "Xid")) << mm.reason;
  const auto& bw = find(results, "gpu.membw", "gpu1");
  EXPECT_EQ(bw.outcome, Outcome::unverified);
  EXPECT_TRUE(has(bw.reason, "free the GPU's memory")) << bw.reason;
  // The other steps still ran and are judged.
  EXPECT_EQ(find(results, "gpu.membw", "gpu0").outcome, Outcome::pass);
  // gpu1's matmul has no other successful H200 to compare with: reported unjudged.
  EXPECT_EQ(find(results, "gpu.matmul", "gpu1").outcome, Outcome::unverified);
}

TEST(GpuJudge, SlowMatmulAgainstTheNodeMedianFails) {
  json doc = document(3);
  doc["devices"][2]["matmul"]["tflops"] = 250.0;
  auto results = judge(doc);
  const auto& slow = find(results, "gpu.matmul", "gpu2");
  EXPECT_EQ(slow.outcome, Outcome::fail);
  EXPECT_TRUE(has(slow.reason, "median 400.0")) << slow.reason;
  EXPECT_EQ(find(results, "gpu.matmul", "gpu0").outcome, Outcome::pass);
}

TEST(GpuJudge, UnknownModelIsMeasuredButUnverified) {
  auto results = judge(document(1, "NVIDIA RTX 6000 Ada Generation"));
  for (auto id : {"gpu.matmul", "gpu.membw", "gpu.pcie_h2d", "gpu.pcie_d2h"}) {
    const auto& r = find(results, id, "gpu0");
    EXPECT_EQ(r.outcome, Outcome::unverified) << id;
    EXPECT_EQ(r.reason, "no thresholds for NVIDIA RTX 6000 Ada Generation") << id;
    ASSERT_EQ(r.measurements.size(), 1u) << id;
    EXPECT_GT(r.measurements[0].value, 0) << id;
  }
  EXPECT_EQ(find(results, "gpu.correctness", "gpu0").outcome, Outcome::pass);
  EXPECT_EQ(find(results, "gpu.nvlink", "").outcome, Outcome::not_applicable);
}

TEST(GpuJudge, PeerAccessMissingOnNvlinkSystemFails) {
  json doc = document(2);
  doc["peers"][0] = {{"src", 0}, {"dst", 1}, {"can_access", false}};
  auto results = judge(doc);
  const auto& r = find(results, "gpu.nvlink", "gpu0->gpu1");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(has(r.reason, "fabricmanager")) << r.reason;

  json pcie = document(2, "NVIDIA L40S");
  pcie["peers"][0] = {{"src", 0}, {"dst", 1}, {"can_access", false}};
  auto l40s = judge(pcie);
  EXPECT_EQ(find(l40s, "gpu.nvlink", "gpu0->gpu1").outcome, Outcome::not_applicable);
  EXPECT_EQ(find(l40s, "gpu.nvlink", "gpu1->gpu0").outcome, Outcome::unverified);  // no NVLink floor
}

TEST(GpuJudge, SlowNvlinkFails) {
  json doc = document(2);
  doc["peers"][1]["gbps"] = 120.0;
  auto results = judge(doc);
  EXPECT_EQ(find(results, "gpu.nvlink", "gpu1->gpu0").outcome, Outcome::fail);
  EXPECT_EQ(find(results, "gpu.nvlink", "gpu0->gpu1").outcome, Outcome::pass);
}

TEST(GpuJudge, DeviceErrors) {
  json doc = document(1);
  doc["devices"].push_back({{"index", 7}, {"error", "no such device: 1 visible"}});
  doc["devices"].push_back({{"index", 1}, {"error", "cudaGetDeviceProperties: cudaErrorUnknown: unknown error"}});
  auto results = judge(doc);
  EXPECT_EQ(find(results, "gpu.membw", "gpu7").outcome, Outcome::unverified);
  EXPECT_EQ(find(results, "gpu.membw", "gpu1").outcome, Outcome::fail);
  EXPECT_EQ(find(results, "gpu.membw", "gpu0").outcome, Outcome::pass);
}

TEST(GpuJudge, NoDeviceAndBrokenCuda) {
  auto raw = parse_gpu_raw(R"({"schema":"cmax.gpucheck.raw/1","status":"no_device",
    "error":"cudaErrorNoDevice: no CUDA-capable device is detected","devices":[],"peers":[]})");
  ASSERT_TRUE(raw);
  auto none = judge_gpu(*raw, thresholds());
  ASSERT_EQ(none.size(), std::size(kGpuCheckIds));
  for (const auto& r : none) {
    EXPECT_EQ(r.outcome, Outcome::not_applicable);
    EXPECT_TRUE(has(r.reason, "no CUDA device")) << r.reason;
  }
  raw->status = "cuda_error";
  raw->error = "cudaErrorSystemNotReady: system not yet initialized";
  raw->driver_gpus = 8;
  for (const auto& r : judge_gpu(*raw, thresholds())) {
    EXPECT_EQ(r.outcome, Outcome::fail);
    EXPECT_TRUE(has(r.reason, "fabricmanager")) << r.reason;
  }
}

core::ProcessResult finished(int code, std::string out, std::string err = "") {
  core::ProcessResult p;
  p.exit_code = code;
  p.out = std::move(out);
  p.err = std::move(err);
  p.wall = std::chrono::seconds(3);
  return p;
}

TEST(GpuJudgeRun, ProcessOutcomes) {
  auto ok = judge_gpucheck_run(finished(0, document(2).dump()), thresholds());
  EXPECT_EQ(ok.size(), 12u);
  EXPECT_DOUBLE_EQ(ok[0].duration_s, 3.0);

  auto none = judge_gpucheck_run(finished(2, R"({"schema":"cmax.gpucheck.raw/1","status":"no_device","error":"cudaErrorNoDevice: no CUDA-capable device is detected"})"), thresholds());
  for (const auto& r : none) EXPECT_EQ(r.outcome, Outcome::not_applicable);
  auto none_text = judge_gpucheck_run(finished(2, ""), thresholds());
  for (const auto& r : none_text) EXPECT_EQ(r.reason, "no CUDA device");

  core::ProcessResult hung = finished(-1, "", "cmax-gpucheck: gpu0: NVIDIA H200\n");
  hung.timed_out = true;
  for (const auto& r : judge_gpucheck_run(hung, thresholds())) {
    EXPECT_EQ(r.outcome, Outcome::fail);
    EXPECT_TRUE(r.timed_out);
    EXPECT_TRUE(has(r.reason, "did not finish")) << r.reason;
  }

  core::ProcessResult crashed = finished(-1, "", "terminate called after throwing\n");
  crashed.signal = 6;
  for (const auto& r : judge_gpucheck_run(crashed, thresholds())) {
    EXPECT_EQ(r.outcome, Outcome::unverified);
    EXPECT_TRUE(has(r.reason, "signal 6")) << r.reason;
    EXPECT_TRUE(has(r.reason, "terminate called")) << r.reason;
  }

  for (const auto& r : judge_gpucheck_run(finished(0, "{\"schema\": \"cmax.gpucheck.raw/1\", trunc"), thresholds())) {
    EXPECT_EQ(r.outcome, Outcome::unverified);
    EXPECT_TRUE(has(r.reason, "not valid JSON")) << r.reason;
  }
}

// A directory of fake cmax-gpucheck scripts, removed afterwards.
class FakeProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cmax-gpucheck-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string script(const std::string& name, const std::string& body) {
    const auto path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  // A program that records its arguments and prints `doc` with exit code `code`.
  std::string printing(const std::string& doc, int code) {
    std::ofstream(dir_ / "out.json") << doc;
    return script("gpucheck", "echo \"$@\" > '" + (dir_ / "args").string() + "'\ncat '" + (dir_ / "out.json").string() +
                                  "'\nexit " + std::to_string(code) + "\n");
  }
  std::string args() {
    std::ifstream in(dir_ / "args");
    std::string line;
    std::getline(in, line);
    return line;
  }

  std::filesystem::path dir_;
};

TEST_F(FakeProgram, JudgesWhatTheProgramPrints) {
  GpuCheckOptions o;
  o.program = printing(document(2).dump(), 0);
  o.devices = {0, 1};
  auto results = run_gpu_checks(o);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ(results->size(), 12u);
  for (const auto& r : *results) EXPECT_EQ(r.outcome, Outcome::pass) << r.id << "@" << r.target << ": " << r.reason;
  EXPECT_EQ(args(), "--devices 0,1");
}

TEST_F(FakeProgram, NoDeviceIsNotApplicable) {
  GpuCheckOptions o;
  o.program = printing(R"({"schema":"cmax.gpucheck.raw/1","status":"no_device","error":"cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version","devices":[],"peers":[]})", 2);
  auto results = run_gpu_checks(o);
  ASSERT_TRUE(results);
  ASSERT_EQ(results->size(), std::size(kGpuCheckIds));
  for (const auto& r : *results) {
    EXPECT_EQ(r.outcome, Outcome::not_applicable);
    EXPECT_TRUE(has(r.reason, "no CUDA device")) << r.reason;
  }
  EXPECT_EQ(args(), "");
}

TEST_F(FakeProgram, HungProgramFailsTimedOut) {
  GpuCheckOptions o;
  o.program = script("gpucheck", "echo 'cmax-gpucheck: gpu0: NVIDIA H200' >&2\nexec sleep 30\n");
  o.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  auto results = run_gpu_checks(o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(results);
  for (const auto& r : *results) {
    EXPECT_EQ(r.outcome, Outcome::fail);
    EXPECT_TRUE(r.timed_out);
  }
}

TEST_F(FakeProgram, CrashIsUnverifiedWithStderr) {
  GpuCheckOptions o;
  o.program = script("gpucheck", "echo 'Segmentation fault in libcuda' >&2\nkill -SEGV $$\n");
  auto results = run_gpu_checks(o);
  ASSERT_TRUE(results);
  for (const auto& r : *results) {
    EXPECT_EQ(r.outcome, Outcome::unverified);
    EXPECT_TRUE(has(r.reason, "Segmentation fault in libcuda")) << r.reason;
  }
}

TEST_F(FakeProgram, MissingProgram) {
  GpuCheckOptions o;
  o.program = (dir_ / "not-there").string();
  auto explicit_missing = run_gpu_checks(o);
  ASSERT_TRUE(explicit_missing);
  for (const auto& r : *explicit_missing) EXPECT_EQ(r.outcome, Outcome::unverified);

  if (core::find_program("cmax-gpucheck")) GTEST_SKIP() << "a cmax-gpucheck is on PATH";
  o.program.clear();
  auto not_built = run_gpu_checks(o);
  ASSERT_TRUE(not_built);
  ASSERT_EQ(not_built->size(), std::size(kGpuCheckIds));
  for (const auto& r : *not_built) {
    EXPECT_EQ(r.outcome, Outcome::not_applicable);
    EXPECT_TRUE(has(r.reason, "cmax-gpucheck not built")) << r.reason;
  }
}

TEST_F(FakeProgram, BadThresholdsFileIsAnError) {
  GpuCheckOptions o;
  o.program = printing(document(1).dump(), 0);
  o.thresholds_file = (dir_ / "missing.json").string();
  auto results = run_gpu_checks(o);
  ASSERT_FALSE(results);
  EXPECT_TRUE(has(results.error().message, "read GPU thresholds")) << results.error().message;
}

}  // namespace
}  // namespace cmax::health
