#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "probes/gpu_probe.h"
#include "probes/nvml_api.h"
#include "support/temp_host.h"

using namespace cmax::probes;
using cmax::signals::Kind;
using std::chrono::seconds;

namespace {

const SteadyTime t0{};

GpuSnapshot healthy() {
  GpuSnapshot s;
  s.index = 0;
  s.bus_id = "0000:06:00.0";
  s.uuid = "GPU-8f6c2e1a";
  s.ecc_ue_volatile = 0;
  s.remap_pending = false;
  s.remap_failed = false;
  s.retired_dbe_pages = 0;
  s.retirement_pending = false;
  s.clock_event_reasons = 0;
  s.pcie = PcieLink{5, 5, 16, 16};
  s.util_gpu_percent = 0;
  s.power_mw = 70000;
  s.power_limit_mw = 700000;
  return s;
}

// Feeds snapshots through diff_gpu one after another, as the probe does, one second apart.
struct Sequence {
  GpuProbeOptions options;
  GpuState state;
  SteadyTime at = t0;

  std::vector<Finding> step(const GpuSnapshot& s, seconds later = seconds(1)) {
    at += later;
    GpuDiff d = diff_gpu(state, s, options, at);
    state = d.next;
    return d.findings;
  }
};

std::vector<Finding> of_kind(const std::vector<Finding>& findings, Kind kind) {
  std::vector<Finding> out;
  for (const Finding& f : findings) {
    if (f.kind == kind) out.push_back(f);
  }
  return out;
}

TEST(NormalizeBusId, NvmlFormToKernelForm) {
  EXPECT_EQ(normalize_bus_id("00000000:06:00.0"), "0000:06:00.0");
  EXPECT_EQ(normalize_bus_id("00000000:AB:00.0"), "0000:ab:00.0");
  EXPECT_EQ(normalize_bus_id("0000:ab:00.0"), "0000:ab:00.0");
  // VMD domains are above 0xffff; the kernel prints them in full.
  EXPECT_EQ(normalize_bus_id("00010000:01:00.0"), "10000:01:00.0");
  EXPECT_EQ(normalize_bus_id("06:00.0"), "0000:06:00.0");
  EXPECT_EQ(normalize_bus_id("NotABusId"), "notabusid");
  EXPECT_EQ(normalize_bus_id("zz:06:00.0"), "zz:06:00.0");
}

TEST(GpuDiff, HealthyGpuReportsNothing) {
  Sequence seq;
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_TRUE(seq.state.seen);
}

TEST(GpuDiff, EveryXidEventIsReported) {
  Sequence seq;
  GpuSnapshot s = healthy();
  s.xids = {79, 48};
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, Kind::xid);
  EXPECT_EQ(f[0].code, 79);
  EXPECT_EQ(f[0].device, "0000:06:00.0");
  EXPECT_EQ(f[0].subject, "GPU-8f6c2e1a");
  EXPECT_EQ(f[0].text, "nvml: GPU 0000:06:00.0 (GPU-8f6c2e1a): Xid 79");
  EXPECT_EQ(f[1].code, 48);
  // The same Xid again is a new event.
  s.xids = {79};
  EXPECT_EQ(of_kind(seq.step(s), Kind::xid).size(), 1u);
  EXPECT_TRUE(seq.step(healthy()).empty());
}

TEST(GpuDiff, LostGpuOncePerEpisode) {
  Sequence seq;
  seq.step(healthy());
  GpuSnapshot lost;
  lost.index = 0;
  lost.bus_id = "0000:06:00.0";
  lost.lost = true;
  auto f = seq.step(lost);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_lost);
  EXPECT_EQ(f[0].device, "0000:06:00.0");
  EXPECT_TRUE(seq.step(lost).empty());
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_EQ(of_kind(seq.step(lost), Kind::gpu_lost).size(), 1u);
}

TEST(GpuDiff, LostGpuWithoutBusIdNamesItsIndex) {
  Sequence seq;
  GpuSnapshot lost;
  lost.index = 3;
  lost.lost = true;
  auto f = seq.step(lost);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].device, "");
  EXPECT_NE(f[0].text.find("index 3"), std::string::npos) << f[0].text;
}

TEST(GpuDiff, EccUncorrectedRise) {
  Sequence seq;
  EXPECT_TRUE(seq.step(healthy()).empty());
  GpuSnapshot s = healthy();
  s.ecc_ue_volatile = 2;
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_ecc_ue);
  EXPECT_EQ(f[0].code, 2);
  EXPECT_EQ(f[0].text,
            "nvml: GPU 0000:06:00.0 (GPU-8f6c2e1a): volatile uncorrected ECC errors rose 0 -> 2");
  EXPECT_TRUE(seq.step(s).empty());
  s.ecc_ue_volatile = 3;
  f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].text.find("rose 2 -> 3"), std::string::npos) << f[0].text;
  // A driver reload resets volatile counts: the drop is silent, the next rise counts from 0.
  s.ecc_ue_volatile = 0;
  EXPECT_TRUE(seq.step(s).empty());
  s.ecc_ue_volatile = 1;
  EXPECT_EQ(of_kind(seq.step(s), Kind::gpu_ecc_ue).size(), 1u);
}

TEST(GpuDiff, EccPresentAtFirstPollIsReported) {
  Sequence seq;
  GpuSnapshot s = healthy();
  s.ecc_ue_volatile = 5;
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].text.find("rose 0 -> 5"), std::string::npos) << f[0].text;
  EXPECT_TRUE(seq.step(s).empty());
}

TEST(GpuDiff, RowRemapPendingAppearsOnceAndAgainAfterClearing) {
  Sequence seq;
  GpuSnapshot s = healthy();
  s.remap_pending = true;
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_row_remap);
  EXPECT_FALSE(f[0].fatal);
  EXPECT_TRUE(seq.step(s).empty());
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_EQ(of_kind(seq.step(s), Kind::gpu_row_remap).size(), 1u);
}

TEST(GpuDiff, RowRemapFailureIsFatal) {
  Sequence seq;
  seq.step(healthy());
  GpuSnapshot s = healthy();
  s.remap_failed = true;
  s.remap_pending = true;
  auto f = of_kind(seq.step(s), Kind::gpu_row_remap);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FALSE(f[0].fatal);
  EXPECT_TRUE(f[1].fatal);
  EXPECT_TRUE(seq.step(s).empty());
}

TEST(GpuDiff, UnreadableReadingKeepsItsJudgement) {
  Sequence seq;
  GpuSnapshot s = healthy();
  s.remap_pending = true;
  ASSERT_EQ(seq.step(s).size(), 1u);
  GpuSnapshot unreadable = healthy();
  unreadable.remap_pending.reset();
  unreadable.remap_failed.reset();
  EXPECT_TRUE(seq.step(unreadable).empty());
  EXPECT_TRUE(seq.state.remap_pending);
  // Still pending when readable again: not a new episode.
  EXPECT_TRUE(seq.step(s).empty());
}

TEST(GpuDiff, RetiredPagesRiseAndPendingRetirement) {
  Sequence seq;
  seq.step(healthy());
  GpuSnapshot s = healthy();
  s.retired_dbe_pages = 2;
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_retired_pages);
  EXPECT_EQ(f[0].code, 2);
  EXPECT_FALSE(f[0].fatal);
  EXPECT_TRUE(seq.step(s).empty());

  s.retirement_pending = true;
  f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_retired_pages);
  EXPECT_TRUE(f[0].fatal);
  EXPECT_TRUE(seq.step(s).empty());
  s.retirement_pending = false;
  EXPECT_TRUE(seq.step(s).empty());
  s.retirement_pending = true;
  EXPECT_EQ(seq.step(s).size(), 1u);
}

TEST(GpuDiff, ThrottleReasonsByName) {
  Sequence seq;
  GpuSnapshot s = healthy();
  // SW power cap and idle are how a healthy GPU runs.
  s.clock_event_reasons =
      nvml::nvmlClocksThrottleReasonSwPowerCap | nvml::nvmlClocksThrottleReasonGpuIdle;
  EXPECT_TRUE(seq.step(s).empty());

  s.clock_event_reasons =
      nvml::nvmlClocksThrottleReasonHwSlowdown | nvml::nvmlClocksThrottleReasonSwPowerCap;
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_throttle);
  EXPECT_EQ(f[0].subject, "hw_slowdown");
  EXPECT_NE(f[0].text.find("clocks throttled: HW slowdown"), std::string::npos) << f[0].text;
  EXPECT_TRUE(seq.step(s).empty());

  // A further reason is a new fault; the subject lists every active one.
  s.clock_event_reasons =
      nvml::nvmlClocksThrottleReasonHwSlowdown | nvml::nvmlClocksThrottleReasonHwThermalSlowdown;
  f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "hw_slowdown,hw_thermal_slowdown");

  s.clock_event_reasons = 0;
  EXPECT_TRUE(seq.step(s).empty());
  s.clock_event_reasons = nvml::nvmlClocksThrottleReasonHwPowerBrakeSlowdown |
                          nvml::nvmlClocksThrottleReasonSwThermalSlowdown;
  f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "sw_thermal_slowdown,hw_power_brake");
}

TEST(GpuDiff, PcieWidthBelowMaxCountsEvenWhenIdle) {
  Sequence seq;
  GpuSnapshot s = healthy();
  s.pcie = PcieLink{5, 5, 8, 16};
  auto f = seq.step(s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_pcie_link);
  EXPECT_EQ(f[0].code, 8);
  EXPECT_NE(f[0].text.find("Gen5 x8, below its maximum Gen5 x16"), std::string::npos) << f[0].text;
  EXPECT_TRUE(seq.step(s).empty());
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_EQ(seq.step(s).size(), 1u);
}

TEST(GpuDiff, PcieGenDownshiftOfIdleGpuIsNotReported) {
  Sequence seq;
  GpuSnapshot idle = healthy();
  idle.pcie = PcieLink{1, 5, 16, 16};
  idle.util_gpu_percent = 0;
  EXPECT_TRUE(seq.step(idle).empty());
  EXPECT_TRUE(seq.step(idle).empty());

  // Busy and still below its maximum generation: the link is degraded.
  GpuSnapshot busy = idle;
  busy.pcie = PcieLink{3, 5, 16, 16};
  busy.util_gpu_percent = 40;
  auto f = seq.step(busy);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_pcie_link);
  // Going idle says nothing either way, so busy again is the same episode.
  EXPECT_TRUE(seq.step(idle).empty());
  EXPECT_TRUE(seq.step(busy).empty());
  // Back to full speed ends the episode.
  EXPECT_TRUE(seq.step(healthy()).empty());
  EXPECT_EQ(seq.step(busy).size(), 1u);
}

TEST(GpuDiff, PcieGenOfIdleGpuCountsWhenAskedTo) {
  Sequence seq;
  seq.options.pcie_gen_when_idle = true;
  GpuSnapshot idle = healthy();
  idle.pcie = PcieLink{1, 5, 16, 16};
  EXPECT_EQ(of_kind(seq.step(idle), Kind::gpu_pcie_link).size(), 1u);
}

GpuSnapshot stalled() {
  GpuSnapshot s = healthy();
  s.util_gpu_percent = 95;
  s.power_mw = 120000;  // 17 % of 700 W
  return s;
}

TEST(GpuDiff, StallNeedsTheFullStallSeconds) {
  Sequence seq;
  EXPECT_TRUE(seq.step(stalled(), seconds(0)).empty());
  EXPECT_TRUE(seq.step(stalled(), seconds(30)).empty());
  EXPECT_TRUE(seq.step(stalled(), seconds(29)).empty());  // 59 s
  auto f = seq.step(stalled(), seconds(1));               // 60 s
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_stalled);
  EXPECT_EQ(f[0].code, 95);
  EXPECT_NE(
      f[0].text.find("utilisation 95 % while power stays at 120 W of its 700 W limit for 60 s"),
      std::string::npos)
      << f[0].text;
  // Once per episode.
  EXPECT_TRUE(seq.step(stalled(), seconds(60)).empty());
  // The condition clears; a new episode needs the full time again.
  GpuSnapshot working = stalled();
  working.power_mw = 650000;
  EXPECT_TRUE(seq.step(working).empty());
  EXPECT_TRUE(seq.step(stalled(), seconds(1)).empty());
  EXPECT_TRUE(seq.step(stalled(), seconds(59)).empty());
  EXPECT_EQ(seq.step(stalled(), seconds(1)).size(), 1u);
}

TEST(GpuDiff, StallThresholds) {
  Sequence seq;
  seq.options.stall_seconds = seconds(10);
  GpuSnapshot low_util = stalled();
  low_util.util_gpu_percent = 89;
  EXPECT_TRUE(seq.step(low_util, seconds(0)).empty());
  EXPECT_TRUE(seq.step(low_util, seconds(20)).empty());

  GpuSnapshot high_power = stalled();
  high_power.power_mw = 250000;  // 36 % of the limit, above 35 %
  EXPECT_TRUE(seq.step(high_power, seconds(0)).empty());
  EXPECT_TRUE(seq.step(high_power, seconds(20)).empty());

  GpuSnapshot no_limit = stalled();
  no_limit.power_limit_mw.reset();
  EXPECT_TRUE(seq.step(no_limit, seconds(0)).empty());
  EXPECT_TRUE(seq.step(no_limit, seconds(20)).empty());

  GpuSnapshot at_edge = stalled();
  at_edge.util_gpu_percent = 90;
  at_edge.power_mw = 245000;  // exactly 35 %
  EXPECT_TRUE(seq.step(at_edge, seconds(0)).empty());
  EXPECT_EQ(seq.step(at_edge, seconds(10)).size(), 1u);
}

TEST(GpuDiff, LostGpuEndsAStallEpisode) {
  Sequence seq;
  seq.step(stalled(), seconds(0));
  seq.step(stalled(), seconds(40));
  GpuSnapshot lost = healthy();
  lost.lost = true;
  lost.util_gpu_percent.reset();
  lost.power_mw.reset();
  seq.step(lost, seconds(10));
  EXPECT_FALSE(seq.state.stall_since.has_value());
  EXPECT_TRUE(seq.step(stalled(), seconds(10)).empty());
}

TEST(ThrottleReasonNames, OnlyFaultReasons) {
  EXPECT_EQ(throttle_reason_names(0x1ffULL),
            "hw_slowdown,sw_thermal_slowdown,hw_thermal_slowdown,hw_power_brake");
  EXPECT_EQ(throttle_reason_names(nvml::nvmlClocksThrottleReasonSwPowerCap), "");
}

// The probe through the real dlopen path, against tests/support/fake_nvml's libnvidia-ml.so.1.

const std::string kFake =
    std::string(CMAX_BINARY_DIR) + "/tests/support/fake_nvml/libnvidia-ml.so.1";

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CMAX_FAKE_NVML_STATE", path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CMAX_FAKE_NVML_STATE"); }

  std::string path() const { return (host_.dir() / "nvml-state").string(); }
  void write(const std::string& text) { host_.write("/nvml-state", text); }
  void append(const std::string& line) {
    std::ofstream out(path(), std::ios::app);
    out << line << '\n';
  }

  nvml::NvmlLibrary open() {
    auto lib = nvml::NvmlLibrary::open(kFake);
    EXPECT_TRUE(lib) << lib.error().message;
    return std::move(lib).value();
  }

  std::vector<Finding> poll(GpuProbe& probe,
                            std::chrono::milliseconds budget = std::chrono::milliseconds(500)) {
    auto r = probe.poll(budget);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : std::vector<Finding>{};
  }

  cmax::test::TempHost host_;
};

constexpr const char* kHealthyGpu =
    "gpu 0 bus 0000:06:00.0 uuid GPU-6c2b7d9e-0f13-4d3a-9a55-0b1c2d3e4f50 util 0 power_mw 70000 "
    "limit_mw 700000\n";

TEST_F(FakeNvml, EveryEntryResolves) {
  write(kHealthyGpu);
  nvml::NvmlLibrary lib = open();
  const nvml::NvmlApi& a = lib.api();
  const void* entries[] = {
      reinterpret_cast<const void*>(a.init),
      reinterpret_cast<const void*>(a.shutdown),
      reinterpret_cast<const void*>(a.device_get_count),
      reinterpret_cast<const void*>(a.device_get_handle_by_index),
      reinterpret_cast<const void*>(a.device_get_pci_info),
      reinterpret_cast<const void*>(a.device_get_uuid),
      reinterpret_cast<const void*>(a.error_string),
      reinterpret_cast<const void*>(a.device_get_total_ecc_errors),
      reinterpret_cast<const void*>(a.device_get_remapped_rows),
      reinterpret_cast<const void*>(a.device_get_retired_pages),
      reinterpret_cast<const void*>(a.device_get_retired_pages_pending_status),
      reinterpret_cast<const void*>(a.device_get_current_clocks_event_reasons),
      reinterpret_cast<const void*>(a.device_get_current_clocks_throttle_reasons),
      reinterpret_cast<const void*>(a.device_get_curr_pcie_link_generation),
      reinterpret_cast<const void*>(a.device_get_max_pcie_link_generation),
      reinterpret_cast<const void*>(a.device_get_curr_pcie_link_width),
      reinterpret_cast<const void*>(a.device_get_max_pcie_link_width),
      reinterpret_cast<const void*>(a.device_get_utilization_rates),
      reinterpret_cast<const void*>(a.device_get_power_usage),
      reinterpret_cast<const void*>(a.device_get_enforced_power_limit),
      reinterpret_cast<const void*>(a.event_set_create),
      reinterpret_cast<const void*>(a.device_register_events),
      reinterpret_cast<const void*>(a.event_set_wait),
      reinterpret_cast<const void*>(a.event_set_free),
  };
  static_assert(sizeof(entries) / sizeof(entries[0]) * sizeof(void*) == sizeof(nvml::NvmlApi),
                "list every NvmlApi entry here");
  for (std::size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i)
    EXPECT_NE(entries[i], nullptr) << "entry " << i;
  EXPECT_EQ(lib.error_string(nvml::NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST_F(FakeNvml, XidEventThroughDlopen) {
  write(kHealthyGpu);
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(20)});
  EXPECT_EQ(probe.name(), "nvml");
  EXPECT_TRUE(poll(probe).empty());

  append("xid 0 79");
  auto f = poll(probe);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::xid);
  EXPECT_EQ(f[0].code, 79);
  EXPECT_EQ(f[0].device, "0000:06:00.0");
  EXPECT_EQ(f[0].subject, "GPU-6c2b7d9e-0f13-4d3a-9a55-0b1c2d3e4f50");
  // Delivered once.
  EXPECT_TRUE(poll(probe).empty());
}

TEST_F(FakeNvml, XidOnTheSecondGpuNamesIt) {
  write(std::string(kHealthyGpu) + "gpu 1 bus 00000000:C6:00.0 uuid GPU-second\n");
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(20)});
  EXPECT_TRUE(poll(probe).empty());
  append("xid 1 48");
  append("xid 1 63");
  auto f = poll(probe);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].device, "0000:c6:00.0");
  EXPECT_EQ(f[0].code, 48);
  EXPECT_EQ(f[1].code, 63);
}

TEST_F(FakeNvml, ReadingsThroughDlopen) {
  write(
      "gpu 0 bus 00000000:06:00.0 uuid GPU-a util 50 ecc_ue 2 remap_pending 1 retired_dbe 3 "
      "retired_pending 1 "
      "throttle 0x48 pcie_gen 5 pcie_max_gen 5 pcie_width 8 pcie_max_width 16\n");
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(1)});
  auto f = poll(probe);
  ASSERT_EQ(of_kind(f, Kind::gpu_ecc_ue).size(), 1u);
  EXPECT_EQ(of_kind(f, Kind::gpu_ecc_ue)[0].code, 2);
  EXPECT_EQ(of_kind(f, Kind::gpu_row_remap).size(), 1u);
  ASSERT_EQ(of_kind(f, Kind::gpu_retired_pages).size(), 2u);  // 3 pages, and one pending
  EXPECT_EQ(of_kind(f, Kind::gpu_retired_pages)[0].code, 3);
  ASSERT_EQ(of_kind(f, Kind::gpu_throttle).size(), 1u);
  EXPECT_EQ(of_kind(f, Kind::gpu_throttle)[0].subject, "hw_slowdown,hw_thermal_slowdown");
  ASSERT_EQ(of_kind(f, Kind::gpu_pcie_link).size(), 1u);
  EXPECT_EQ(f.size(), 6u);
  for (const Finding& finding : f) EXPECT_EQ(finding.device, "0000:06:00.0");
  // Still present: nothing new.
  EXPECT_TRUE(poll(probe).empty());
}

TEST_F(FakeNvml, UnsupportedReadingIsSkipped) {
  write("gpu 0 bus 0000:06:00.0 uuid GPU-a remap_pending 1 ecc_ue 4 unsupported remap,ecc\n");
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(1)});
  EXPECT_TRUE(poll(probe).empty());
}

TEST_F(FakeNvml, LostGpuKeepsItsBusId) {
  write(kHealthyGpu);
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(1)});
  EXPECT_TRUE(poll(probe).empty());
  write("gpu 0 bus 0000:06:00.0 lost 1\n");
  auto f = poll(probe);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_lost);
  EXPECT_EQ(f[0].device, "0000:06:00.0");
  EXPECT_TRUE(poll(probe).empty());
}

TEST_F(FakeNvml, PollStaysWithinItsBudget) {
  write(kHealthyGpu);
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(5000)});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(poll(probe, std::chrono::milliseconds(100)).empty());
  const auto took = std::chrono::steady_clock::now() - start;
  // The fake honours the event wait's timeout, so the poll spends about its budget waiting.
  EXPECT_GE(took, std::chrono::milliseconds(50));
  EXPECT_LT(took, std::chrono::milliseconds(1000));
}

TEST_F(FakeNvml, GpuLeftUnreadByTheBudgetKeepsItsStateButItsXidsCount) {
  const std::string gpus = std::string(kHealthyGpu) + "gpu 1 bus 0000:c6:00.0 uuid GPU-second";
  write(gpus + "\n");
  GpuProbe probe(open(), GpuProbeOptions{.event_wait = std::chrono::milliseconds(1)});
  EXPECT_TRUE(poll(probe).empty());
  write(gpus + " lost 1\n");
  auto f = poll(probe);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::gpu_lost);
  EXPECT_EQ(f[0].device, "0000:c6:00.0");

  append("xid 1 79");
  // No budget: GPU 0 is read, GPU 1 is not; the Xid event still names GPU 1.
  f = poll(probe, std::chrono::milliseconds(0));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::xid);
  EXPECT_EQ(f[0].device, "0000:c6:00.0");
  // The unread GPU's episode went on: still lost, not lost anew.
  EXPECT_TRUE(poll(probe).empty());
}

TEST_F(FakeNvml, ShutdownOnDestructionAndMove) {
  write(kHealthyGpu);
  void* self = dlopen(kFake.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(self, nullptr) << dlerror();
  auto init_count = reinterpret_cast<int (*)()>(dlsym(self, "cmax_fake_nvml_init_count"));
  ASSERT_NE(init_count, nullptr);
  EXPECT_EQ(init_count(), 0);
  {
    nvml::NvmlLibrary a = open();
    EXPECT_EQ(init_count(), 1);
    nvml::NvmlLibrary b = std::move(a);
    EXPECT_EQ(init_count(), 1);
    EXPECT_EQ(b.path(), kFake);
  }
  EXPECT_EQ(init_count(), 0);
  dlclose(self);
}

TEST_F(FakeNvml, InitFailureNamesNvmlError) {
  write("init 9\n");  // NVML_ERROR_DRIVER_NOT_LOADED
  auto lib = nvml::NvmlLibrary::open(kFake);
  ASSERT_FALSE(lib);
  EXPECT_NE(lib.error().message.find("initialise NVML (" + kFake + "): Driver Not Loaded"),
            std::string::npos)
      << lib.error().message;
  EXPECT_NE(lib.error().message.find("nvidia kernel module"), std::string::npos)
      << lib.error().message;
}

TEST(NvmlLibrary, MissingLibraryIsAClearError) {
  auto lib = nvml::NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib);
  const std::string& m = lib.error().message;
  EXPECT_EQ(m.rfind("load /nonexistent/libnvidia-ml.so.1: ", 0), 0u) << m;
  EXPECT_NE(m.find("is the NVIDIA driver installed?"), std::string::npos) << m;
}

TEST(NvmlLibrary, LibraryWithoutNvmlSymbolsNamesTheMissingOne) {
  auto lib = nvml::NvmlLibrary::open("libm.so.6");
  ASSERT_FALSE(lib);
  const std::string& m = lib.error().message;
  EXPECT_EQ(m.rfind("load libm.so.6: symbol nvmlInit_v2 missing", 0), 0u) << m;
}

}  // namespace
