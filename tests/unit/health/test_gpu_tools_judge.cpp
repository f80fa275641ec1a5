// Judging nvidia-smi topo -m, dcgmi diag and nvbandwidth on the real samples in
// tests/golden/gpu_tools. Fault variants are made by editing a real sample in the test (each
// says which edit), never by inventing a whole output.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/dcgm_diag.h"
#include "gputools/nvbandwidth.h"
#include "gputools/topo.h"
#include "health/gpu_thresholds.h"
#include "health/gpu_tools_judge.h"

namespace cmax::health {
namespace {

using audit::Outcome;

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

GpuThresholds thresholds() {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/data/gpu-thresholds.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = parse_gpu_thresholds(ss.str(), "data/gpu-thresholds.json");
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

CheckResult topo(const std::string& text, TopoJudgeOptions o) {
  auto m = gputools::parse_topo_matrix(text);
  EXPECT_TRUE(m);
  return judge_topology(*m, thresholds(), o);
}

const std::string kB300 = "nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt";

// Replaces the n-th occurrence (0-based) of `what` in `text`.
std::string replace_nth(std::string text, const std::string& what, const std::string& with, int n) {
  std::size_t at = 0;
  for (int i = 0; i <= n; ++i) at = text.find(what, i ? at + 1 : 0);
  return text.replace(at, what.size(), with);
}

TEST(TopoJudge, B300AllNv18PassesWithNicLocality) {
  // B300 has no gpu-thresholds entry: the expectation is given explicitly.
  auto r = topo(golden(kB300), {.gpu_model = "NVIDIA B300 SXM6 AC", .expect_nvlink = true, .expected_nvlinks = 18});
  EXPECT_EQ(r.id, "gpu.topology");
  EXPECT_EQ(r.target, "node");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.reason;
  EXPECT_NE(r.summary.find("28/28 pairs on NVLink (NV18 on 28)"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("8 of 8 GPUs have a NIC behind a shared PCIe switch"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("GPU0->NIC0(mlx5_10) PXB"), std::string::npos);
  // Without any expectation, a model unknown to the thresholds still passes when every pair is NV18.
  EXPECT_EQ(topo(golden(kB300), {.gpu_model = "NVIDIA B300 SXM6 AC"}).outcome, Outcome::pass);
}

TEST(TopoJudge, B300WithOnePairOnSysFailsNamingIt) {
  // Edit: GPU2's row, column GPU5 (its 5th NV18; GPU2's own cell is X) becomes SYS.
  std::string text = golden(kB300);
  const auto row = text.find("\nGPU2\t");
  const auto cell = [&] {
    std::size_t at = row;
    for (int i = 0; i < 5; ++i) at = text.find("NV18", at + 1);
    return at;
  }();
  text.replace(cell, 4, "SYS");
  auto r = topo(text, {.gpu_model = "B300", .expect_nvlink = true});
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.reason.find("GPU2<->GPU5 SYS: NVLinks down or fabric manager not running; check `nvidia-smi nvlink -s`"),
            std::string::npos)
      << r.reason;
}

TEST(TopoJudge, B300WithFewerLinksOnOnePairFails) {
  // Edit: GPU0<->GPU1 shows NV12 in both rows (the first NV18 of the file is GPU0's GPU1 cell,
  // the 8th is GPU1's GPU0 cell).
  std::string text = replace_nth(replace_nth(golden(kB300), "NV18", "NV12", 7), "NV18", "NV12", 0);
  auto r = topo(text, {.gpu_model = "B300", .expect_nvlink = true});
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.reason.find("GPU0<->GPU1 NV12 where NV18 is expected"), std::string::npos) << r.reason;
}

TEST(TopoJudge, H100ModelFromThresholdsExpectsNvlink) {
  // "H100 80GB HBM3" has an nvlink floor in data/gpu-thresholds.json: the B300 matrix with one
  // pair on SYS fails for it, with no explicit option.
  auto r = topo(replace_nth(golden(kB300), "NV18", "SYS", 0), {.gpu_model = "NVIDIA H100 80GB HBM3"});
  EXPECT_EQ(r.outcome, Outcome::fail) << r.reason;
  EXPECT_NE(r.reason.find("GPU0<->GPU1 SYS"), std::string::npos);
}

TEST(TopoJudge, Rtx4090PcieOnly) {
  const auto text = golden("nvidia-smi-topo-m_go-gpuallocator-17-rtx4090x8-pcie.txt");
  auto r = topo(text, {.gpu_model = "NVIDIA GeForce RTX 4090", .expect_nvlink = false});
  EXPECT_EQ(r.outcome, Outcome::pass) << r.reason;
  EXPECT_NE(r.summary.find("0/28 pairs on NVLink"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("0 of 8 GPUs have a NIC behind a shared PCIe switch"), std::string::npos) << r.summary;
  // A PCIe model in the thresholds (no nvlink floor) passes too; an unknown model is unverified.
  EXPECT_EQ(topo(text, {.gpu_model = "NVIDIA L40S"}).outcome, Outcome::pass);
  EXPECT_EQ(topo(text, {.gpu_model = "NVIDIA GeForce RTX 4090"}).outcome, Outcome::unverified);
  // The same PCIe matrix on an SXM model: every pair fails.
  auto sxm = topo(text, {.gpu_model = "NVIDIA H200"});
  EXPECT_EQ(sxm.outcome, Outcome::fail);
  EXPECT_NE(sxm.reason.find("GPU0<->GPU1 SYS"), std::string::npos);
}

TEST(TopoJudge, SingleGpuIsNotApplicable) {
  auto r = topo(golden("nvidia-smi-topo-m_utkuozdemir-h100-1gpu.txt"), {.gpu_model = "NVIDIA H100 80GB HBM3"});
  EXPECT_EQ(r.outcome, Outcome::not_applicable);
  EXPECT_FALSE(r.reason.empty());
}

std::vector<CheckResult> diag(const std::string& name) {
  auto d = gputools::parse_dcgm_diag(golden(name));
  EXPECT_TRUE(d);
  return judge_dcgm_diag(*d);
}

const CheckResult* find(const std::vector<CheckResult>& v, const std::string& target) {
  for (const auto& r : v)
    if (r.target == target) return &r;
  return nullptr;
}

TEST(DcgmJudge, H100FailedRunFabricManager) {
  auto v = diag("dcgmi-diag-r3_nccl-tests-264-h100x8-fail.txt");
  ASSERT_EQ(v.size(), 13u);
  const auto* mem = find(v, "GPU Memory");
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->id, "gpu.dcgm_diag");
  EXPECT_EQ(mem->outcome, Outcome::fail);
  EXPECT_NE(mem->reason.find("failed on all GPUs"), std::string::npos) << mem->reason;
  EXPECT_NE(mem->reason.find("Unable to initialize CUDA library: 'system not yet initialized'"), std::string::npos);
  EXPECT_NE(mem->reason.find("nvidia-fabricmanager is probably not running (nccl-tests #264)"), std::string::npos);
  for (const char* skipped : {"PCIe", "Memory Bandwidth", "EUD Test"}) {
    ASSERT_TRUE(find(v, skipped));
    EXPECT_EQ(find(v, skipped)->outcome, Outcome::unverified) << skipped;
  }
  EXPECT_EQ(find(v, "Persistence Mode")->outcome, Outcome::pass);
  EXPECT_NE(find(v, "Persistence Mode")->summary.find("info: Persistence mode for GPU 0 is disabled"), std::string::npos);
}

TEST(DcgmJudge, A10gDcgm4AndA100Dcgm3Pass) {
  for (const char* name : {"dcgmi-diag-r2_dcgm-124-a10g-dcgm4.txt", "dcgmi-diag-r2_awsome-distributed-training-a100x8-pass.txt"}) {
    auto v = diag(name);
    ASSERT_FALSE(v.empty());
    for (const auto& r : v) EXPECT_EQ(r.outcome, Outcome::pass) << name << " " << r.target << " " << r.reason;
  }
  EXPECT_NE(diag("dcgmi-diag-r2_dcgm-124-a10g-dcgm4.txt")[1].summary.find("Hardware / memory: pass (GPU0 pass)"),
            std::string::npos);
}

TEST(DcgmJudge, Dcgm4WarnAndSkipVariants) {
  // Edit of the A10G sample: memory's GPU0 row and overall become Warn, pcie's become Skip.
  std::string text = golden("dcgmi-diag-r2_dcgm-124-a10g-dcgm4.txt");
  text = replace_nth(replace_nth(text, "| Pass  ", "| Warn  ", 1), "GPU0: Pass", "GPU0: Warn", 1);
  // (after the first edit, pcie's rows are the second "Pass" of each kind left)
  text = replace_nth(replace_nth(text, "| Pass  ", "| Skip  ", 1), "GPU0: Pass", "GPU0: Skip", 1);
  auto d = gputools::parse_dcgm_diag(text);
  ASSERT_TRUE(d);
  auto v = judge_dcgm_diag(*d);
  EXPECT_EQ(find(v, "memory")->outcome, Outcome::warn);
  EXPECT_NE(find(v, "memory")->reason.find("warned on GPU0"), std::string::npos) << find(v, "memory")->reason;
  EXPECT_EQ(find(v, "pcie")->outcome, Outcome::unverified);
}

TEST(DcgmJudge, NothingRanIsUnverified) {
  gputools::DcgmDiag empty;
  auto v = judge_dcgm_diag(empty);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].outcome, Outcome::unverified);
  empty.runtime_error = "Unable to initialize CUDA library: 'system not yet initialized'";
  v = judge_dcgm_diag(empty);
  EXPECT_EQ(v[0].outcome, Outcome::unverified);
  EXPECT_NE(v[0].reason.find("nvidia-fabricmanager"), std::string::npos);
}

std::vector<CheckResult> nvb(const std::string& text, std::string_view model = {}) {
  auto r = gputools::parse_nvbandwidth(text);
  EXPECT_TRUE(r);
  const auto t = thresholds();
  return judge_nvbandwidth(*r, &t, model);
}

TEST(NvbandwidthJudge, ErrorsFailWithTheirText) {
  auto a = nvb(golden("nvbandwidth_issue34-a100x8-assert-fail.txt"));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, "gpu.nvbandwidth");
  EXPECT_EQ(a[0].target, "device_to_device_memcpy_read_ce");
  EXPECT_EQ(a[0].outcome, Outcome::fail);
  EXPECT_NE(a[0].reason.find("ASSERT in expression h_errorFlag == 0"), std::string::npos);
  EXPECT_NE(a[0].reason.find("came back wrong"), std::string::npos);
  auto p = nvb(golden("nvbandwidth_issue61-h100x8-ptx-error.txt"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].outcome, Outcome::fail);
  EXPECT_NE(p[0].reason.find("cudaErrorUnsupportedPtxVersion"), std::string::npos);
}

TEST(NvbandwidthJudge, Issue42OneLinkNoFloorIsUnverified) {
  // host_to_device_memcpy_sm: SM copies have no floor, and one link has no peer to compare with.
  auto v = nvb(golden("nvbandwidth_issue42-a100-sxm4-40gb.txt"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].outcome, Outcome::unverified) << v[0].reason;
  EXPECT_NE(v[0].summary.find("SUM 25.13"), std::string::npos) << v[0].summary;
  // Edit: the same run as the CE testcase: now judged against the A100 SXM4 40GB PCIe floor (fail 18, warn 22).
  std::string text = golden("nvbandwidth_issue42-a100-sxm4-40gb.txt");
  for (std::size_t at; (at = text.find("memcpy_sm")) != std::string::npos;) text.replace(at, 9, "memcpy_ce");
  EXPECT_EQ(nvb(text)[0].outcome, Outcome::pass);
  auto slow = nvb(replace_nth(replace_nth(text, "25.13", "20.13", 0), "25.13", "20.13", 0));
  EXPECT_EQ(slow[0].outcome, Outcome::warn) << slow[0].reason;
  auto slower = nvb(replace_nth(replace_nth(text, "25.13", "12.13", 0), "25.13", "12.13", 0));
  EXPECT_EQ(slower[0].outcome, Outcome::fail);
  EXPECT_NE(slower[0].reason.find("CPU0->GPU0 12.13 GB/s is below the A100 SXM4 40GB (HGX) floor 18"), std::string::npos)
      << slower[0].reason;
}

TEST(NvbandwidthJudge, JsonFixturePassedWaivedAndModelFloors) {
  const auto text = golden("nvbandwidth-j_dcgm-test-fixture-v0.5.json");
  auto v = nvb(text);
  ASSERT_EQ(v.size(), 32u);
  int na = 0;
  for (const auto& r : v) na += r.outcome == Outcome::not_applicable;
  EXPECT_EQ(na, 17);
  // v0.5 names no GPU: 1x1 bandwidth matrices without a model are unverified, latency is reported.
  EXPECT_EQ(v[0].outcome, Outcome::unverified);
  EXPECT_EQ(find(v, "host_device_latency_sm")->outcome, Outcome::pass);
  // Told the GPU is an H100 SXM, the 12.4 GB/s host-to-device copy fails its PCIe Gen5 floor (40).
  auto h100 = nvb(text, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100[0].outcome, Outcome::fail);
  EXPECT_NE(h100[0].reason.find("CPU0->GPU0 12.40 GB/s is below the H100 SXM5 80GB (HGX) floor 40"), std::string::npos)
      << h100[0].reason;
}

TEST(NvbandwidthJudge, SlowLinkBelowNinetyPercentOfMedianFails) {
  // The 3-GPU matrix layout of nvbandwidth's printer; GPU1<-GPU2 is at 31% of the median.
  const std::string text =
      "nvbandwidth Version: v0.8\n\nDevice 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)\n\n"
      "Running device_to_device_memcpy_write_ce.\nmemcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1         2\n 0       N/A    389.10    388.90\n 1    389.00       N/A    120.50\n"
      " 2    388.80    389.20       N/A\n\nSUM device_to_device_memcpy_write_ce 2065.50\n";
  auto v = nvb(text);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].outcome, Outcome::fail);
  EXPECT_NE(v[0].reason.find("GPU1<-GPU2 120.50 GB/s is 31% of the median 388.95"), std::string::npos) << v[0].reason;
  EXPECT_NE(v[0].reason.find("nvidia-smi nvlink -s"), std::string::npos);
}

TEST(NvbandwidthJudge, NoTestcaseIsUnverified) {
  gputools::Nvbandwidth empty;
  auto v = judge_nvbandwidth(empty, nullptr);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].outcome, Outcome::unverified);
  EXPECT_EQ(v[0].target, "node");
}

}  // namespace
}  // namespace cmax::health
