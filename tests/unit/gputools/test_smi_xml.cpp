// `nvidia-smi -q -x` into SmiReport (gputools/smi_xml.h), on the four real samples in
// tests/golden/gpu_tools (DTD v11 P100 and A100, v12 A100, v13 RTX 3090; see its README.md), and
// on edited copies of them for the readings no public sample shows.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/smi_xml.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

// Replaces the first `from` in `text` (which must contain it) with `to`.
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

bool active(const SmiGpu& g, ClockEvent e) { return g.clock_event(e).value_or(false); }

TEST(SmiXml, TeslaP100V11IdleWithOldThrottleNames) {
  auto r = parse_smi_xml(golden("nvidia-smi-qx_netdata-tesla-p100.xml"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->driver_version, "510.47.03");
  EXPECT_EQ(r->cuda_version, "11.6");
  EXPECT_EQ(r->timestamp, "Sat Sep 17 17:06:50 2022");
  EXPECT_EQ(r->attached_gpus, 1u);
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.bus_id, "0000:00:04.0");
  EXPECT_EQ(g.product_name, "Tesla P100-PCIE-16GB");
  EXPECT_EQ(g.product_brand, "Tesla");
  EXPECT_EQ(g.uuid, "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e");
  EXPECT_EQ(g.serial, "0324217145110");
  EXPECT_EQ(g.index, 0);
  EXPECT_FALSE(g.mig_enabled);
  ASSERT_NE(g.issue("mig.mode.current"), nullptr);
  EXPECT_EQ(g.issue("mig.mode.current")->state, SmiFieldState::not_available);
  EXPECT_EQ(g.persistence_mode, false);
  EXPECT_EQ(g.pstate, "P0");
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.ecc_pending, true);
  // Pre-Ampere layout: single_bit/double_bit totals.
  EXPECT_EQ(g.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc_volatile_corrected, 0u);
  EXPECT_EQ(g.ecc_aggregate_uncorrected, 0u);
  EXPECT_EQ(g.ecc_aggregate_corrected, 3u);
  EXPECT_EQ(g.retired_sbe_pages, 0u);
  EXPECT_EQ(g.retired_dbe_pages, 0u);
  EXPECT_EQ(g.retired_pending, false);
  // <remapped_rows>N/A</remapped_rows>: every remap reading is "not available", not absent.
  EXPECT_FALSE(g.remap_pending);
  ASSERT_NE(g.issue("remapped_rows.pending"), nullptr);
  EXPECT_EQ(g.issue("remapped_rows.pending")->state, SmiFieldState::not_available);
  EXPECT_TRUE(active(g, ClockEvent::gpu_idle));
  for (const auto& e : kClockEvents) {
    ASSERT_TRUE(g.clock_event(e.event)) << e.name;
    EXPECT_EQ(active(g, e.event), e.event == ClockEvent::gpu_idle) << e.name;
  }
  EXPECT_EQ(g.pcie_gen, 3u);
  EXPECT_EQ(g.pcie_gen_max, 3u);
  EXPECT_EQ(g.pcie_width, 16u);
  EXPECT_EQ(g.pcie_width_max, 16u);
  EXPECT_EQ(g.pcie_replay_counter, 0u);
  EXPECT_EQ(g.temperature_c, 38.0);
  EXPECT_EQ(g.temperature_slowdown_c, 82.0);
  EXPECT_EQ(g.temperature_shutdown_c, 85.0);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 26.16);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 250.0);
  EXPECT_EQ(g.utilization_gpu_percent, 0u);
  EXPECT_TRUE(g.recovery_action.empty());  // not printed by the R510 driver
  for (const auto& i : g.issues) EXPECT_NE(i.state, SmiFieldState::unreadable) << i.field;
}

TEST(SmiXml, A100V11MigWithVolatileEccNotAvailable) {
  auto r = parse_smi_xml(golden("nvidia-smi-qx_netdata-a100-sxm4-40gb-mig.xml"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->timestamp, "Fri Jan 27 11:32:31 2023");
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(g.bus_id, "0000:00:04.0");
  EXPECT_EQ(g.mig_enabled, true);
  // Under MIG the whole-GPU volatile counters read N/A; the aggregate ones are 0.
  EXPECT_FALSE(g.ecc_volatile_uncorrected);
  ASSERT_NE(g.issue("ecc.errors.uncorrected.volatile.total"), nullptr);
  EXPECT_EQ(g.issue("ecc.errors.uncorrected.volatile.total")->state, SmiFieldState::not_available);
  EXPECT_EQ(g.ecc_aggregate_uncorrected, 0u);
  EXPECT_EQ(g.ecc_aggregate_corrected, 0u);
  // Old clocks_throttle_reason_* names, all Not Active (one value spans two lines).
  for (const auto& e : kClockEvents) {
    ASSERT_TRUE(g.clock_event(e.event)) << e.name;
    EXPECT_FALSE(active(g, e.event)) << e.name;
  }
  EXPECT_EQ(g.pcie_gen, 4u);
  EXPECT_EQ(g.pcie_width, 16u);
  EXPECT_FALSE(g.utilization_gpu_percent);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 400.0);
}

TEST(SmiXml, A100V12MigWithNewEventNamesAndGpuPowerReadings) {
  auto r = parse_smi_xml(golden("nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->driver_version, "535.54.03");
  EXPECT_EQ(r->cuda_version, "12.2");
  // The fixture keeps the first of the 4 GPUs.
  EXPECT_EQ(r->attached_gpus, 4u);
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.bus_id, "0000:01:00.0");
  EXPECT_EQ(g.uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  EXPECT_EQ(g.mig_enabled, true);
  EXPECT_EQ(g.mig_pending, true);
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc_aggregate_uncorrected, 0u);
  EXPECT_FALSE(g.retired_dbe_pages);  // N/A on Ampere, which remaps rows instead
  EXPECT_FALSE(g.retired_pending);
  EXPECT_FALSE(g.remap_pending);
  for (const auto& e : kClockEvents) EXPECT_EQ(g.clock_event(e.event), false) << e.name;
  EXPECT_EQ(g.pcie_gen_max, 4u);
  EXPECT_EQ(g.temperature_c, 27.0);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 67.03);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 500.0);
}

TEST(SmiXml, Rtx3090V13SwPowerCapActiveAtP8) {
  auto r = parse_smi_xml(golden("nvidia-smi-qx_telegraf-rtx3090-v13-swpowercap.xml"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->driver_version, "590.44.01");
  EXPECT_EQ(r->cuda_version, "13.1");
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "NVIDIA GeForce RTX 3090");
  EXPECT_EQ(g.product_brand, "GeForce");
  EXPECT_EQ(g.bus_id, "0000:09:00.0");
  EXPECT_TRUE(g.serial.empty());
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.pstate, "P8");
  EXPECT_EQ(g.recovery_action, "None");
  EXPECT_TRUE(active(g, ClockEvent::sw_power_cap));
  EXPECT_FALSE(active(g, ClockEvent::gpu_idle));
  EXPECT_FALSE(active(g, ClockEvent::hw_slowdown));
  EXPECT_FALSE(g.ecc_enabled);  // N/A on a GeForce
  EXPECT_FALSE(g.ecc_volatile_uncorrected);
  EXPECT_EQ(g.pcie_gen, 1u);  // an idle GPU lowers its link generation
  EXPECT_EQ(g.pcie_gen_max, 4u);
  EXPECT_EQ(g.pcie_width, 16u);
  EXPECT_EQ(g.temperature_c, 32.0);
  // v13 has no <power_draw>; instant_power_draw stands in.
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 35.15);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 350.0);
  EXPECT_TRUE(g.fabric_state.empty());  // <state>N/A</state>
  ASSERT_NE(g.issue("fabric.state"), nullptr);
}

// No public sample shows a fault (tests/golden/gpu_tools/README.md), so these edit a real
// sample's text the way a faulty GPU's output would read.
TEST(SmiXml, EditedV12SampleReadsFaults) {
  std::string text = golden("nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml");
  text = edit(text, "<remapped_rows>N/A</remapped_rows>",
              "<remapped_rows><remapped_row_corr>2</remapped_row_corr><remapped_row_unc>1</"
              "remapped_row_unc>"
              "<remapped_row_pending>Yes</remapped_row_pending><remapped_row_failure>No</"
              "remapped_row_failure>"
              "</remapped_rows>");
  text = edit(text, "<dram_uncorrectable>0</dram_uncorrectable>",
              "<dram_uncorrectable>4</dram_uncorrectable>");
  text = edit(text, "<clocks_event_reason_hw_slowdown>Not Active<",
              "<clocks_event_reason_hw_slowdown>Active<");
  text = edit(text, "<power_draw>67.03 W</power_draw>", "<power_draw>Unknown Error</power_draw>");
  text = edit(text, "<current_link_width>16x<", "<current_link_width>8x<");
  auto r = parse_smi_xml(text);
  ASSERT_TRUE(r) << r.error().message;
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.remapped_correctable, 2u);
  EXPECT_EQ(g.remapped_uncorrectable, 1u);
  EXPECT_EQ(g.remap_pending, true);
  EXPECT_EQ(g.remap_failure, false);
  EXPECT_EQ(g.ecc_volatile_uncorrected, 4u);  // sram 0 + dram 4
  EXPECT_TRUE(active(g, ClockEvent::hw_slowdown));
  EXPECT_EQ(g.pcie_width, 8u);
  EXPECT_FALSE(g.power_draw_w);
  ASSERT_NE(g.issue("power.draw"), nullptr);
  EXPECT_EQ(g.issue("power.draw")->state, SmiFieldState::unreadable);
  EXPECT_EQ(g.issue("power.draw")->raw, "Unknown Error");
}

TEST(SmiXml, EditedSamplesReadPendingRetirementAndV13SramSplit) {
  auto p100 = parse_smi_xml(edit(golden("nvidia-smi-qx_netdata-tesla-p100.xml"),
                                 "<pending_blacklist>No<", "<pending_blacklist>Yes<"));
  ASSERT_TRUE(p100) << p100.error().message;
  EXPECT_EQ(p100->gpus[0].retired_pending, true);

  std::string v13 = golden("nvidia-smi-qx_telegraf-rtx3090-v13-swpowercap.xml");
  v13 = edit(v13, "<sram_uncorrectable_parity>N/A<", "<sram_uncorrectable_parity>1<");
  v13 = edit(v13, "<sram_uncorrectable_secded>N/A<", "<sram_uncorrectable_secded>2<");
  v13 = edit(v13, "<dram_uncorrectable>N/A<", "<dram_uncorrectable>ERR!<");
  auto r = parse_smi_xml(v13);
  ASSERT_TRUE(r) << r.error().message;
  // One counter unreadable: no partial sum, an unreadable issue instead.
  EXPECT_FALSE(r->gpus[0].ecc_volatile_uncorrected);
  ASSERT_NE(r->gpus[0].issue("ecc.errors.uncorrected.volatile.total"), nullptr);
  EXPECT_EQ(r->gpus[0].issue("ecc.errors.uncorrected.volatile.total")->state,
            SmiFieldState::unreadable);
  auto sum = parse_smi_xml(edit(v13, "<dram_uncorrectable>ERR!<", "<dram_uncorrectable>0<"));
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->gpus[0].ecc_volatile_uncorrected, 3u);
}

TEST(SmiXml, GpusKeepDocumentOrderAndIndex) {
  const std::string one = "<gpu id=\"00000000:0A:00.0\"><product_name>X</product_name></gpu>";
  const std::string two = "<gpu id=\"00000000:07:00.0\"><product_name>Y</product_name></gpu>";
  auto r = parse_smi_xml("<nvidia_smi_log><attached_gpus>2</attached_gpus>" + one + two +
                         "</nvidia_smi_log>");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].bus_id, "0000:0a:00.0");  // from the id attribute, kernel form
  EXPECT_EQ(r->gpus[1].index, 1);
}

TEST(SmiXml, MalformedTruncatedOrForeignInputIsAnError) {
  const std::string text = golden("nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml");
  auto cut = parse_smi_xml(std::string_view(text).substr(0, text.size() / 2));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("parse nvidia-smi -q -x output: line "), std::string::npos)
      << cut.error().message;
  EXPECT_NE(cut.error().message.find("rerun `nvidia-smi -q -x`"), std::string::npos);
  auto other = parse_smi_xml("<html><body/></html>");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("not <nvidia_smi_log>"), std::string::npos);
  EXPECT_FALSE(parse_smi_xml(
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."));
  EXPECT_FALSE(parse_smi_xml(""));
}

// A fixed-seed mutation run over a real sample: whatever bytes are flipped, dropped or
// duplicated, parsing returns a report or an error (run it under ASan to catch memory errors).
TEST(SmiXml, MutatedSamplesNeverCrash) {
  const std::string text = golden("nvidia-smi-qx_telegraf-rtx3090-v13-swpowercap.xml");
  std::mt19937 rng(20261207);
  const char alphabet[] = "<>/&;\"'=!?[]- \nabcN/A0x";
  int errors = 0;
  for (int round = 0; round < 400; ++round) {
    std::string t = text;
    for (int k = 0; k < 1 + round % 5; ++k) {
      const std::size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0:
          t[at] = alphabet[rng() % (sizeof(alphabet) - 1)];
          break;
        case 1:
          t.erase(at, 1 + rng() % 40);
          break;
        default:
          t.insert(at, t.substr(rng() % t.size(), 1 + rng() % 40));
          break;
      }
    }
    auto r = parse_smi_xml(t);
    if (!r) {
      ++errors;
      EXPECT_FALSE(r.error().message.empty());
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace cmax::gputools
