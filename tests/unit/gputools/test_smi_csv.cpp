// `nvidia-smi --query-gpu=... --format=csv` into SmiReport (gputools/smi_csv.h), on the three real
// samples in tests/golden/gpu_tools (H100 under load and H200 MIG idle with all 212 fields and
// units; the netdata P100 `nounits` file without a final newline), noheader output with an
// explicit field list, and malformed input.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/smi_csv.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

bool active(const SmiGpu& g, ClockEvent e) { return g.clock_event(e).value_or(false); }

// The header's column names, units dropped.
std::vector<std::string> header_fields(const std::string& text) {
  return split_query_fields(std::string_view(text).substr(0, text.find('\n')));
}

TEST(SmiCsv, H100UnderLoadWithUnitsAnd212Fields) {
  const std::string text = golden("nvidia-smi-query-gpu_utkuozdemir-h100-load.csv");
  const auto fields = header_fields(text);
  ASSERT_EQ(fields.size(), 212u);
  EXPECT_EQ(fields[0], "timestamp");
  EXPECT_EQ(fields.back(), "hostname");
  auto r = parse_smi_csv(text);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->timestamp, "2026/07/14 08:12:53.353");
  EXPECT_EQ(r->driver_version, "590.48.01");
  EXPECT_EQ(r->attached_gpus, 1u);
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.bus_id, "0000:00:09.0");
  EXPECT_EQ(g.serial, "0000000000000");  // masked by the capture tool
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.pstate, "P0");
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc_aggregate_uncorrected, 0u);
  EXPECT_EQ(g.remapped_correctable, 0u);
  EXPECT_EQ(g.remapped_uncorrectable, 0u);
  EXPECT_EQ(g.remap_pending, false);
  EXPECT_EQ(g.remap_failure, false);
  EXPECT_FALSE(g.retired_pending);  // [N/A] on Hopper
  ASSERT_NE(g.issue("retired_pages.pending"), nullptr);
  EXPECT_EQ(g.issue("retired_pages.pending")->state, SmiFieldState::not_available);
  EXPECT_EQ(g.clock_events_active, 0u);
  for (const auto& e : kClockEvents) {
    ASSERT_TRUE(g.clock_event(e.event)) << e.name;  // display_clocks_setting from the mask
    EXPECT_FALSE(active(g, e.event)) << e.name;
  }
  EXPECT_EQ(g.pcie_gen, 5u);
  EXPECT_EQ(g.pcie_gen_max, 5u);
  EXPECT_EQ(g.pcie_width, 16u);
  EXPECT_EQ(g.pcie_width_max, 16u);
  EXPECT_EQ(g.utilization_gpu_percent, 100u);
  EXPECT_EQ(g.temperature_c, 59.0);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 631.95);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(0), 700.0);
  EXPECT_EQ(g.recovery_action, "None");
  EXPECT_EQ(g.fabric_state, "Completed");
  EXPECT_EQ(g.fabric_status, "Success");
  // Unmapped fields stay by name, values with units as printed.
  EXPECT_EQ(g.other.at("memory.total"), "81559 MiB");
  EXPECT_EQ(g.other.at("clocks_event_reasons.supported"), "0x00000000000001FF");
  EXPECT_EQ(g.other.at("platform.chassis_serial_number"), "");
  for (const auto& i : g.issues) EXPECT_NE(i.state, SmiFieldState::unreadable) << i.field;
}

TEST(SmiCsv, H200MigIdleHasGpuIdleFromTheMaskAndTheColumn) {
  auto r = parse_smi_csv(golden("nvidia-smi-query-gpu_utkuozdemir-h200-mig-idle.csv"));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "NVIDIA H200");
  EXPECT_EQ(g.bus_id, "0000:83:00.0");
  EXPECT_EQ(g.mig_enabled, true);
  EXPECT_EQ(g.mig_pending, true);
  EXPECT_EQ(g.clock_events_active, 1u);
  EXPECT_TRUE(active(g, ClockEvent::gpu_idle));
  EXPECT_FALSE(active(g, ClockEvent::hw_slowdown));
  EXPECT_FALSE(g.utilization_gpu_percent);  // [N/A] under MIG
  EXPECT_EQ(g.issue("utilization.gpu")->state, SmiFieldState::not_available);
  EXPECT_FALSE(g.remap_pending);  // [N/A] under MIG
  EXPECT_EQ(g.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(g.temperature_c, 28.0);
}

TEST(SmiCsv, NetdataP100NoUnitsWithoutFinalNewline) {
  const std::string text = golden("nvidia-smi-query-gpu_netdata-tesla-p100.csv");
  ASSERT_NE(text.back(), '\n');
  auto r = parse_smi_csv(text);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.product_name, "Tesla P100-PCIE-16GB");
  EXPECT_EQ(g.uuid, "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6");
  EXPECT_EQ(g.pstate, "P0");
  EXPECT_EQ(g.temperature_c, 37.0);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 28.16);
  EXPECT_EQ(g.utilization_gpu_percent, 0u);
  EXPECT_EQ(g.other.at("memory.used"), "0");
  EXPECT_EQ(g.other.at("fan.speed"), "[N/A]");
  EXPECT_TRUE(g.bus_id.empty());
}

TEST(SmiCsv, NoheaderNeedsTheFieldList) {
  const std::string query =
      "index,pci.bus_id,clocks_throttle_reasons.active,clocks_throttle_reasons.hw_slowdown,"
      "ecc.errors.uncorrected.volatile.total,remapped_rows.pending,power.draw";
  const std::string out =
      "0, 00000000:07:00.0, 0x0000000000000008, Active, 0, No, 250.10 W\n"
      "1, 00000000:0F:00.0, 0x0000000000000000, Not Active, [Unknown Error], Yes, ERR!\n";
  auto r = parse_smi_csv_noheader(out, split_query_fields(query));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].bus_id, "0000:07:00.0");
  EXPECT_TRUE(active(r->gpus[0], ClockEvent::hw_slowdown));  // pre-535 "throttle" names
  EXPECT_FALSE(active(r->gpus[0], ClockEvent::hw_thermal_slowdown));
  const SmiGpu& b = r->gpus[1];
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(b.bus_id, "0000:0f:00.0");
  EXPECT_EQ(b.remap_pending, true);
  EXPECT_FALSE(b.ecc_volatile_uncorrected);
  EXPECT_EQ(b.issue("ecc.errors.uncorrected.volatile.total")->state, SmiFieldState::unreadable);
  EXPECT_EQ(b.issue("power.draw")->state, SmiFieldState::unreadable);
  // The header form of the output is not a field list.
  auto bad = parse_smi_csv(out);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("is not a field name"), std::string::npos)
      << bad.error().message;
}

TEST(SmiCsv, UnitsAreOptionalAndMalformedValuesAreIssues) {
  auto r = parse_smi_csv(
      "temperature.gpu, power.draw [W], pcie.link.width.current, utilization.gpu [%], "
      "persistence_mode, "
      "clocks_event_reasons.sw_thermal_slowdown, memory.used [MiB]\n"
      "45, 300.5, 8, 12 %, Enabled, maybe, Unknown Error\r\n");
  ASSERT_TRUE(r) << r.error().message;
  const SmiGpu& g = r->gpus[0];
  EXPECT_EQ(g.temperature_c, 45.0);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(0), 300.5);
  EXPECT_EQ(g.pcie_width, 8u);
  EXPECT_EQ(g.utilization_gpu_percent, 12u);
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_FALSE(g.clock_event(ClockEvent::sw_thermal_slowdown));
  EXPECT_EQ(g.issue("clocks_event_reasons.sw_thermal_slowdown")->state, SmiFieldState::malformed);
  // An unmapped field that could not be read is still recorded: it is a fault sign.
  EXPECT_EQ(g.issue("memory.used")->state, SmiFieldState::unreadable);
  EXPECT_EQ(g.other.at("memory.used"), "Unknown Error");
}

TEST(SmiCsv, MalformedInputIsAnErrorNamingTheLine) {
  auto empty = parse_smi_csv("");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty output"), std::string::npos);
  auto ragged = parse_smi_csv("index, name\n0, A100\n1\n");
  ASSERT_FALSE(ragged);
  EXPECT_NE(ragged.error().message.find("line 3 has 1 values for 2 fields"), std::string::npos)
      << ragged.error().message;
  auto invalid = parse_smi_csv("Field \"bogus\" is not a valid field to query.\n");
  ASSERT_FALSE(invalid);
  EXPECT_FALSE(parse_smi_csv_noheader("0, 1\n", {}));
  EXPECT_FALSE(parse_smi_csv_noheader("\n", {"index"}));
  auto header_only = parse_smi_csv("index, name\n");
  ASSERT_TRUE(header_only);
  EXPECT_TRUE(header_only->gpus.empty());
}

TEST(SmiCsv, KernelBusIdAndValueClasses) {
  EXPECT_EQ(kernel_bus_id("00000000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(kernel_bus_id("00000001:8A:00.0"), "0001:8a:00.0");
  EXPECT_EQ(kernel_bus_id("07:00.0"), "0000:07:00.0");
  EXPECT_EQ(kernel_bus_id("garbage"), "garbage");
  EXPECT_EQ(classify_smi_value("[N/A]"), SmiFieldState::not_available);
  EXPECT_EQ(classify_smi_value("N/A"), SmiFieldState::not_available);
  EXPECT_EQ(classify_smi_value("[Not Supported]"), SmiFieldState::not_supported);
  EXPECT_EQ(classify_smi_value("[Insufficient Permissions]"), SmiFieldState::no_permission);
  EXPECT_EQ(classify_smi_value("ERR!"), SmiFieldState::unreadable);
  EXPECT_EQ(classify_smi_value("[GPU is lost]"), SmiFieldState::unreadable);
  EXPECT_FALSE(classify_smi_value("0"));
}

}  // namespace
}  // namespace cmax::gputools
