// Judging nvidia-smi readings (health/gpu_smi_judge.h). The real samples in
// tests/golden/gpu_tools are healthy GPUs; no public sample shows a fault (see its README.md), so
// the fault cases edit a real sample's text the way a faulty GPU's output reads (for example
// `<remapped_row_pending>No<` -> `Yes`) and say which edit in each test.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/smi_csv.h"
#include "gputools/smi_xml.h"
#include "health/gpu_smi_judge.h"

namespace cmax::health {
namespace {

using audit::Outcome;

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

constexpr const char* kP100 = "nvidia-smi-qx_netdata-tesla-p100.xml";
constexpr const char* kA100v11 = "nvidia-smi-qx_netdata-a100-sxm4-40gb-mig.xml";
constexpr const char* kA100v12 = "nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml";
constexpr const char* kRtx3090 = "nvidia-smi-qx_telegraf-rtx3090-v13-swpowercap.xml";
constexpr const char* kH100Csv = "nvidia-smi-query-gpu_utkuozdemir-h100-load.csv";
constexpr const char* kH200Csv = "nvidia-smi-query-gpu_utkuozdemir-h200-mig-idle.csv";

// Replaces every `from` in `text` (at least one must be there) with `to`.
std::string edit(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  for (; at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Sets one column of a one-GPU CSV sample's data line.
std::string csv_with(const std::string& text, const std::string& field, const std::string& value) {
  const std::size_t nl = text.find('\n');
  const auto fields = gputools::split_query_fields(std::string_view(text).substr(0, nl));
  std::string line = text.substr(nl + 1, text.find('\n', nl + 1) - nl - 1);
  std::vector<std::string> values;
  for (std::size_t at = 0;;) {
    const std::size_t comma = line.find(", ", at);
    values.push_back(line.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 2;
  }
  bool found = false;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i] == field) values.at(i) = value, found = true;
  EXPECT_TRUE(found) << field;
  std::string joined;
  for (const auto& v : values) joined += (joined.empty() ? "" : ", ") + v;
  return text.substr(0, nl + 1) + joined + "\n";
}

CheckResult judge_xml(const std::string& text, const SmiJudgeOptions& o = {}) {
  auto r = gputools::parse_smi_xml(text);
  EXPECT_TRUE(r) << r.error().message;
  auto results = judge_smi(*r, o);
  EXPECT_EQ(results.size(), 1u);
  return results.at(0);
}

CheckResult judge_csv(const std::string& text, const SmiJudgeOptions& o = {}) {
  auto r = gputools::parse_smi_csv(text);
  EXPECT_TRUE(r) << r.error().message;
  auto results = judge_smi(*r, o);
  EXPECT_EQ(results.size(), 1u);
  return results.at(0);
}

bool says(const CheckResult& r, std::string_view text) {
  return r.reason.find(text) != std::string::npos;
}

const Measurement* measurement(const CheckResult& r, std::string_view name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return &m;
  return nullptr;
}

TEST(GpuSmiJudge, EveryRealXmlSamplePasses) {
  for (const char* name : {kP100, kA100v11, kA100v12, kRtx3090}) {
    const CheckResult r = judge_xml(golden(name));
    EXPECT_EQ(r.outcome, Outcome::pass) << name << ": " << r.reason;
    EXPECT_EQ(r.id, "gpu.smi_health");
    EXPECT_EQ(r.category, audit::Category::reliability);
    EXPECT_EQ(r.target, "gpu0");
    EXPECT_TRUE(r.reason.empty()) << name << ": " << r.reason;
    ASSERT_NE(measurement(r, "temperature_c"), nullptr) << name;
  }
  // The P100 is idle (gpu_idle Active): no warning for that, and its counters are measured.
  const CheckResult p100 = judge_xml(golden(kP100));
  EXPECT_NE(p100.summary.find("0000:00:04.0"), std::string::npos) << p100.summary;
  EXPECT_NE(p100.summary.find("clocks: gpu_idle"), std::string::npos) << p100.summary;
  EXPECT_EQ(measurement(p100, "temperature_c")->value, 38.0);
  EXPECT_EQ(measurement(p100, "temperature_c")->max, 82.0);
  EXPECT_EQ(measurement(p100, "ecc_uncorrected_volatile")->max, 0.0);
  EXPECT_EQ(measurement(p100, "retired_pages")->value, 0.0);
  // The RTX 3090: sw_power_cap Active and PCIe Gen1 of Gen4 at P8 (idle) are not faults, and a
  // GeForce without ECC is not asked for it.
  const CheckResult rtx = judge_xml(golden(kRtx3090));
  EXPECT_NE(rtx.summary.find("sw_power_cap"), std::string::npos) << rtx.summary;
  EXPECT_NE(rtx.summary.find("PCIe Gen1/4 x16/16"), std::string::npos) << rtx.summary;
}

TEST(GpuSmiJudge, RealCsvSamples) {
  const CheckResult h100 = judge_csv(golden(kH100Csv));
  EXPECT_EQ(h100.outcome, Outcome::pass) << h100.reason;
  EXPECT_NE(h100.summary.find("gpu0 0000:00:09.0 NVIDIA H100 80GB HBM3"), std::string::npos)
      << h100.summary;
  EXPECT_EQ(measurement(h100, "power_w")->max, 700.0);
  const CheckResult h200 = judge_csv(golden(kH200Csv));  // MIG, idle: gpu_idle Active
  EXPECT_EQ(h200.outcome, Outcome::pass) << h200.reason;
  // netdata's P100 query has temperature, power and clocks but none of the fault readings (no
  // ECC, remap, retirement, clock reason or PCIe field): unverified, never a pass.
  const CheckResult p100 = judge_csv(golden("nvidia-smi-query-gpu_netdata-tesla-p100.csv"));
  EXPECT_EQ(p100.outcome, Outcome::unverified);
  EXPECT_TRUE(says(p100, "none of the fault readings")) << p100.reason;
}

TEST(GpuSmiJudge, RowRemapPendingAndFailure) {
  // Edit: the v12 A100's `<remapped_rows>N/A</remapped_rows>` -> a remapper with a pending row.
  const std::string remap =
      "<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>1</"
      "remapped_row_unc>"
      "<remapped_row_pending>{P}</remapped_row_pending><remapped_row_failure>{F}</"
      "remapped_row_failure>"
      "</remapped_rows>";
  auto with = [&](const char* pending, const char* failure) {
    return edit(
        edit(edit(golden(kA100v12), "<remapped_rows>N/A</remapped_rows>", remap), "{P}", pending),
        "{F}", failure);
  };
  EXPECT_EQ(judge_xml(with("No", "No")).outcome, Outcome::pass);
  const CheckResult pending = judge_xml(with("Yes", "No"));
  EXPECT_EQ(pending.outcome, Outcome::fail);
  EXPECT_TRUE(says(pending, "row remap is pending")) << pending.reason;
  EXPECT_TRUE(says(pending, "reset it (`nvidia-smi -r`)")) << pending.reason;
  const CheckResult failed = judge_xml(with("No", "Yes"));
  EXPECT_EQ(failed.outcome, Outcome::fail);
  EXPECT_TRUE(says(failed, "RMA")) << failed.reason;
  EXPECT_EQ(measurement(failed, "remapped_rows_uncorrectable")->value, 1.0);
  // The H100 CSV: remapped_rows.pending No -> Yes.
  const CheckResult csv = judge_csv(csv_with(golden(kH100Csv), "remapped_rows.pending", "Yes"));
  EXPECT_EQ(csv.outcome, Outcome::fail);
}

TEST(GpuSmiJudge, PageRetirementPendingAndLimit) {
  // Edit: the P100's `<pending_retirement>No<` -> Yes.
  const CheckResult pending =
      judge_xml(edit(golden(kP100), "<pending_retirement>No<", "<pending_retirement>Yes<"));
  EXPECT_EQ(pending.outcome, Outcome::fail);
  EXPECT_TRUE(says(pending, "page retirement is pending")) << pending.reason;
  // Edit: the retired counts (0 and 0) -> 40 single-bit and 22 or 23 double-bit pages.
  auto retired = [&](const char* dbe) {
    std::string t = edit(golden(kP100), "<retired_count>0</retired_count>",
                         "<retired_count>40</retired_count>");
    return edit(t,
                "</"
                "multiple_single_bit_retirement>\n\t\t\t<double_bit_retirement>\n\t\t\t\t<retired_"
                "count>40<",
                std::string("</"
                            "multiple_single_bit_retirement>\n\t\t\t<double_bit_retirement>"
                            "\n\t\t\t\t<retired_count>") +
                    dbe + "<");
  };
  const CheckResult below = judge_xml(retired("22"));
  EXPECT_EQ(below.outcome, Outcome::pass) << below.reason;
  EXPECT_EQ(measurement(below, "retired_pages")->value, 62.0);
  const CheckResult at = judge_xml(retired("23"));
  EXPECT_EQ(at.outcome, Outcome::fail);
  EXPECT_TRUE(says(at, "63 retired pages (40 single-bit, 23 double-bit) reach the limit of 63"))
      << at.reason;
}

TEST(GpuSmiJudge, VolatileUncorrectedFailsAggregateOnlyWarns) {
  // Edit: the v12 A100's first `<dram_uncorrectable>0<` (the volatile one) -> 2.
  std::string t = golden(kA100v12);
  const std::size_t at = t.find("<dram_uncorrectable>0<");
  t.replace(at, 22, "<dram_uncorrectable>2<");
  const CheckResult vol = judge_xml(t);
  EXPECT_EQ(vol.outcome, Outcome::fail);
  EXPECT_TRUE(says(vol, "2 uncorrected ECC errors since the driver loaded")) << vol.reason;
  EXPECT_EQ(measurement(vol, "ecc_uncorrected_volatile")->value, 2.0);
  // Edit: the P100's aggregate double_bit total 0 -> 5 (volatile stays 0): historic.
  std::string p = golden(kP100);
  const std::size_t agg = p.find("<aggregate>");
  const std::size_t dbt = p.find("<total>0</total>", p.find("<double_bit>", agg));
  p.replace(dbt, 16, "<total>5</total>");
  const CheckResult hist = judge_xml(p);
  EXPECT_EQ(hist.outcome, Outcome::warn);
  EXPECT_TRUE(says(hist, "historic")) << hist.reason;
}

TEST(GpuSmiJudge, HardwareClockSlowdownsFailSwThermalWarnsPowerCapDoesNot) {
  // Edit: `<clocks_event_reason_hw_slowdown>Not Active<` -> Active, and the power brake too.
  std::string t = edit(golden(kA100v12), "<clocks_event_reason_hw_slowdown>Not Active<",
                       "<clocks_event_reason_hw_slowdown>Active<");
  t = edit(t, "<clocks_event_reason_hw_power_brake_slowdown>Not Active<",
           "<clocks_event_reason_hw_power_brake_slowdown>Active<");
  const CheckResult hw = judge_xml(t);
  EXPECT_EQ(hw.outcome, Outcome::fail);
  EXPECT_TRUE(says(hw, "HW slowdown, HW power brake slowdown")) << hw.reason;
  // Edit: the P100's old-name `<clocks_throttle_reason_hw_thermal_slowdown>` -> Active.
  const CheckResult thermal =
      judge_xml(edit(golden(kP100), "<clocks_throttle_reason_hw_thermal_slowdown>Not Active<",
                     "<clocks_throttle_reason_hw_thermal_slowdown>Active<"));
  EXPECT_EQ(thermal.outcome, Outcome::fail);
  EXPECT_TRUE(says(thermal, "HW thermal slowdown")) << thermal.reason;
  // Edit: the RTX 3090's sw_thermal_slowdown -> Active (its sw_power_cap is already Active).
  const CheckResult sw =
      judge_xml(edit(golden(kRtx3090), "<clocks_event_reason_sw_thermal_slowdown>Not Active<",
                     "<clocks_event_reason_sw_thermal_slowdown>Active<"));
  EXPECT_EQ(sw.outcome, Outcome::warn);
  EXPECT_TRUE(says(sw, "SW thermal slowdown")) << sw.reason;
  EXPECT_FALSE(says(sw, "power cap")) << sw.reason;
  // The CSV bitmask alone: 0x8 is HW slowdown.
  const CheckResult mask =
      judge_csv(csv_with(golden(kH100Csv), "clocks_event_reasons.active", "0x0000000000000008"));
  EXPECT_EQ(mask.outcome,
            Outcome::pass);  // the per-reason columns (Not Active) were queried and win
  auto r = gputools::parse_smi_csv_noheader(
      "0x0000000000000008, 5, 5\n",
      {"clocks_event_reasons.active", "pcie.link.gen.current", "pcie.link.gen.max"});
  ASSERT_TRUE(r);
  EXPECT_EQ(judge_smi(*r).at(0).outcome, Outcome::fail);
}

TEST(GpuSmiJudge, PcieWidthFailsGenerationWarnsOnlyWhenBusy) {
  // Edit: the v12 A100's `<current_link_width>16x<` -> 8x.
  const CheckResult narrow =
      judge_xml(edit(golden(kA100v12), "<current_link_width>16x<", "<current_link_width>8x<"));
  EXPECT_EQ(narrow.outcome, Outcome::fail);
  EXPECT_TRUE(says(narrow, "x8 of x16")) << narrow.reason;
  // The H100 under load (100 %): Gen 5 -> 4 warns.
  const std::string slow = csv_with(golden(kH100Csv), "pcie.link.gen.current", "4");
  const CheckResult busy = judge_csv(slow);
  EXPECT_EQ(busy.outcome, Outcome::warn);
  EXPECT_TRUE(says(busy, "Gen4 of Gen5 while the GPU is busy")) << busy.reason;
  // The idle H200: the same lower generation is power saving unless asked to count it.
  const std::string idle = csv_with(golden(kH200Csv), "pcie.link.gen.current", "4");
  EXPECT_EQ(judge_csv(idle).outcome, Outcome::pass);
  SmiJudgeOptions strict;
  strict.pcie_gen_when_idle = true;
  EXPECT_EQ(judge_csv(idle, strict).outcome, Outcome::warn);
}

TEST(GpuSmiJudge, UnreadableReadingsFailAsAGpuFallingOffTheBus) {
  // Edit: the v12 A100's `<power_draw>67.03 W<` -> Unknown Error; the H100 CSV's temperature ->
  // ERR!.
  const CheckResult xml = judge_xml(edit(golden(kA100v12), "<power_draw>67.03 W</power_draw>",
                                         "<power_draw>Unknown Error</power_draw>"));
  EXPECT_EQ(xml.outcome, Outcome::fail);
  EXPECT_TRUE(says(
      xml,
      "nvidia-smi could not read power.draw (Unknown Error): the GPU may be falling off the bus"))
      << xml.reason;
  const CheckResult csv = judge_csv(csv_with(golden(kH100Csv), "temperature.gpu", "ERR!"));
  EXPECT_EQ(csv.outcome, Outcome::fail);
  EXPECT_TRUE(says(csv, "temperature.gpu (ERR!)")) << csv.reason;
}

TEST(GpuSmiJudge, EccModeOnDataCenterGpus) {
  // Edit: the v12 A100's ECC current/pending Enabled -> Disabled.
  const std::string off =
      edit(edit(golden(kA100v12), "<current_ecc>Enabled<", "<current_ecc>Disabled<"),
           "<pending_ecc>Enabled<", "<pending_ecc>Disabled<");
  const CheckResult r = judge_xml(off);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_TRUE(says(r, "`nvidia-smi -e 1`")) << r.reason;
  const CheckResult pending =
      judge_xml(edit(golden(kA100v12), "<current_ecc>Enabled<", "<current_ecc>Disabled<"));
  EXPECT_EQ(pending.outcome, Outcome::warn);
  EXPECT_TRUE(says(pending, "reset the GPU to turn it on")) << pending.reason;
  SmiJudgeOptions consumer;
  consumer.data_center = false;
  EXPECT_EQ(judge_xml(off, consumer).outcome, Outcome::pass);
  EXPECT_TRUE(is_data_center_gpu("NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(is_data_center_gpu("NVIDIA A100-SXM4-80GB"));
  EXPECT_TRUE(is_data_center_gpu("Tesla P100-PCIE-16GB"));
  EXPECT_TRUE(is_data_center_gpu("NVIDIA L40S"));
  EXPECT_TRUE(is_data_center_gpu("Anything", "Tesla"));
  EXPECT_FALSE(is_data_center_gpu("NVIDIA GeForce RTX 3090", "GeForce"));
  EXPECT_FALSE(is_data_center_gpu("NVIDIA RTX A1000"));
}

TEST(GpuSmiJudge, RecoveryActionAndFabricState) {
  const CheckResult reset = judge_csv(csv_with(golden(kH100Csv), "gpu_recovery_action", "Reset"));
  EXPECT_EQ(reset.outcome, Outcome::fail);
  EXPECT_TRUE(says(reset, "recovery action (Reset)")) << reset.reason;
  const CheckResult reboot = judge_csv(csv_with(golden(kH100Csv), "gpu_recovery_action", "Reboot"));
  EXPECT_TRUE(says(reboot, "reboot")) << reboot.reason;
  const CheckResult fabric = judge_csv(csv_with(golden(kH100Csv), "fabric.status", "Failure"));
  EXPECT_EQ(fabric.outcome, Outcome::fail);
  EXPECT_TRUE(says(fabric, "nvidia-fabricmanager")) << fabric.reason;
  EXPECT_EQ(judge_csv(csv_with(golden(kH100Csv), "fabric.state", "In Progress")).outcome,
            Outcome::warn);
}

TEST(GpuSmiJudge, NothingReadableIsUnverifiedAndGpusGoInBusOrder) {
  gputools::SmiReport report;
  EXPECT_EQ(judge_smi(report).at(0).outcome, Outcome::unverified);
  report.attached_gpus = 8;
  EXPECT_TRUE(says(judge_smi(report).at(0), "8 GPUs are attached but printed none"));

  gputools::SmiGpu late, early, blind;
  late.bus_id = "0000:8a:00.0";
  late.pcie_width = late.pcie_width_max = 16;
  early.bus_id = "0000:07:00.0";
  early.remap_pending = true;
  blind.temperature_c = 40;  // a temperature alone is no health reading
  report.gpus = {late, blind, early};
  const auto results = judge_smi(report);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].target, "gpu0");
  EXPECT_NE(results[0].summary.find("0000:07:00.0"), std::string::npos);
  EXPECT_EQ(results[0].outcome, Outcome::fail);
  EXPECT_EQ(results[1].target, "gpu1");
  EXPECT_EQ(results[1].outcome, Outcome::pass);
  EXPECT_EQ(results[2].outcome, Outcome::unverified);
  EXPECT_NE(results[2].summary.find("(no bus id)"), std::string::npos);
}

}  // namespace
}  // namespace cmax::health
