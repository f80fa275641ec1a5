// The NVIDIA tool outputs as GPU checks (health/gpu_tool_output.h): each real sample in
// tests/golden/gpu_tools is recognised as what printed it and judged; files that are not tool
// output, missing or unreadable are unverified, never a pass; on a live node nvidia-smi is run as a
// bounded child (here a stand-in script that prints a real sample, or hangs).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "health/gpu_tool_output.h"

namespace fs = std::filesystem;
using cmax::audit::Outcome;
using cmax::health::GpuToolKind;

namespace {

const fs::path kGolden = fs::path(CMAX_SOURCE_DIR) / "tests/golden/gpu_tools";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const cmax::health::GpuThresholds& thresholds() {
  static const auto t = *cmax::health::builtin_gpu_thresholds();
  return t;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("cmax-gputool-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// A stand-in nvidia-smi: prints `xml` for -q -x and `topo` for topo -m, or sleeps.
fs::path fake_smi(const fs::path& dir, const std::string& body) {
  const auto p = dir / "nvidia-smi";
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  ::chmod(p.c_str(), 0755);
  return p;
}

}  // namespace

TEST(GpuToolOutput, EveryRealSampleIsRecognisedAsItsTool) {
  const std::map<std::string, GpuToolKind> expected = {
      {"nvidia-smi-qx_", GpuToolKind::smi_xml},       {"nvidia-smi-query-gpu_", GpuToolKind::smi_csv},
      {"nvidia-smi-topo-m_", GpuToolKind::topo},      {"dcgmi-diag-", GpuToolKind::dcgm_diag},
      {"nvbandwidth", GpuToolKind::nvbandwidth}};
  int seen = 0;
  for (const auto& e : fs::directory_iterator(kGolden)) {
    const std::string name = e.path().filename().string();
    for (const auto& [prefix, kind] : expected) {
      if (name.rfind(prefix, 0) != 0) continue;
      ++seen;
      const auto got = cmax::health::detect_gpu_tool_output(slurp(e.path()));
      ASSERT_TRUE(got.has_value()) << name;
      EXPECT_EQ(*got, kind) << name;
    }
  }
  EXPECT_EQ(seen, 17);  // the README's 19 files less the two nccl-tests excerpts
  EXPECT_FALSE(cmax::health::detect_gpu_tool_output(slurp(kGolden / "nccl-tests_issue294-h100-busid-excerpt.txt")));
}

TEST(GpuToolOutput, RealSamplesAreJudgedAsTheirOutputsSay) {
  auto judge = [](const std::string& file) {
    return cmax::health::judge_gpu_tool_files({(kGolden / file).string()}, thresholds());
  };
  // Healthy H100 under load: one pass per GPU.
  auto h100 = judge("nvidia-smi-query-gpu_utkuozdemir-h100-load.csv");
  ASSERT_EQ(h100.size(), 1u);
  EXPECT_EQ(h100[0].id, "gpu.smi_health");
  EXPECT_EQ(h100[0].outcome, Outcome::pass) << h100[0].reason;
  // The H100 box whose fabric manager was down (nccl-tests #264): GPU Memory fails with the hint.
  auto dcgm = judge("dcgmi-diag-r3_nccl-tests-264-h100x8-fail.txt");
  bool memory_failed = false;
  for (const auto& r : dcgm)
    if (r.target == "GPU Memory") {
      memory_failed = r.outcome == Outcome::fail;
      EXPECT_NE(r.reason.find("fabricmanager"), std::string::npos) << r.reason;
    }
  EXPECT_TRUE(memory_failed);
  // nvbandwidth's pattern check failed on an A100 box: a fail.
  auto nvb = judge("nvbandwidth_issue34-a100x8-assert-fail.txt");
  ASSERT_FALSE(nvb.empty());
  EXPECT_EQ(nvb[0].outcome, Outcome::fail);
  // A B300 HGX board, all pairs NV18: pass.
  auto topo = judge("nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt");
  ASSERT_EQ(topo.size(), 1u);
  EXPECT_EQ(topo[0].id, "gpu.topology");
  EXPECT_NE(topo[0].outcome, Outcome::fail) << topo[0].reason;
}

// nvidia-smi's product name keys the topology's expectation: an 8x RTX 4090 PCIe box judged
// alone is unverified (model unknown); beside an XML that says the GPUs are H100 SXM... the same
// all-SYS matrix would fail. Here: the real PCIe matrix beside a real A100 SXM4 XML (an NVLink
// model in data/gpu-thresholds.json) fails, and the order of the files does not matter.
TEST(GpuToolOutput, NvidiaSmiNamesTheModelTheTopologyIsJudgedFor) {
  const auto topo = (kGolden / "nvidia-smi-topo-m_go-gpuallocator-17-rtx4090x8-pcie.txt").string();
  const auto xml = (kGolden / "nvidia-smi-qx_netdata-a100-sxm4-40gb-mig.xml").string();
  auto alone = cmax::health::judge_gpu_tool_files({topo}, thresholds());
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].outcome, Outcome::unverified) << alone[0].reason;
  auto both = cmax::health::judge_gpu_tool_files({topo, xml}, thresholds());
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].id, "gpu.smi_health");  // nvidia-smi first
  EXPECT_EQ(both[1].id, "gpu.topology");
  EXPECT_EQ(both[1].outcome, Outcome::fail) << both[1].reason;
}

TEST(GpuToolOutput, WhatCannotBeReadIsUnverifiedAndNamed) {
  TempDir tmp;
  const auto garbage = tmp.path / "garbage.txt";
  std::ofstream(garbage) << "hello\nworld\n";
  const auto truncated = tmp.path / "cut.xml";
  const std::string xml = slurp(kGolden / "nvidia-smi-qx_netdata-tesla-p100.xml");
  std::ofstream(truncated) << xml.substr(0, xml.size() / 3);
  auto r = cmax::health::judge_gpu_tool_files(
      {garbage.string(), truncated.string(), (tmp.path / "missing.xml").string()}, thresholds());
  ASSERT_EQ(r.size(), 3u);
  for (const auto& c : r) {
    EXPECT_EQ(c.outcome, Outcome::unverified) << c.summary;
    EXPECT_FALSE(c.reason.empty());
  }
  EXPECT_NE(r[0].reason.find("missing.xml"), std::string::npos) << r[0].reason;  // read errors first
  bool named_garbage = false, named_cut = false;
  for (const auto& c : r) {
    named_garbage |= c.reason.find("garbage.txt: not an output") != std::string::npos;
    named_cut |= c.reason.find("cut.xml (nvidia-smi -q -x) could not be read") != std::string::npos;
  }
  EXPECT_TRUE(named_garbage);
  EXPECT_TRUE(named_cut);
}

TEST(GpuToolOutput, LiveNvidiaSmiIsRunAndJudged) {
  TempDir tmp;
  const auto xml = kGolden / "nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml";
  const auto topo = kGolden / "nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt";
  const auto smi = fake_smi(tmp.path, "if [ \"$1\" = topo ]; then cat '" + topo.string() + "'; else cat '" +
                                          xml.string() + "'; fi");
  auto r = cmax::health::run_live_gpu_tools(thresholds(), std::chrono::seconds(10), smi.string());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].id, "gpu.smi_health");
  EXPECT_EQ(r[0].outcome, Outcome::pass) << r[0].reason;
  EXPECT_EQ(r[1].id, "gpu.topology");
}

TEST(GpuToolOutput, AHungNvidiaSmiIsAFailNotAHang) {
  TempDir tmp;
  const auto smi = fake_smi(tmp.path, "exec sleep 30");
  const auto start = std::chrono::steady_clock::now();
  auto r = cmax::health::run_live_gpu_tools(thresholds(), std::chrono::milliseconds(300), smi.string());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(r.size(), 2u);
  for (const auto& c : r) {
    EXPECT_EQ(c.outcome, Outcome::fail);
    EXPECT_TRUE(c.timed_out);
    EXPECT_NE(c.reason.find("driver is stuck"), std::string::npos) << c.reason;
  }
}

TEST(GpuToolOutput, NoNvidiaSmiAddsNothing) {
  EXPECT_TRUE(cmax::health::run_live_gpu_tools(thresholds(), std::chrono::seconds(1), "cmax-no-such-nvidia-smi").empty());
}
