// nvbandwidth parsing on the real samples in tests/golden/gpu_tools (issues #34, #42, #61 and the
// -j fixture from NVIDIA/DCGM); other forms are written to NVIDIA/nvbandwidth@66746a3's printers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/nvbandwidth.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

TEST(Nvbandwidth, Issue42OneByOneMatrixAndSum) {
  auto r = parse_nvbandwidth(golden("nvbandwidth_issue42-a100-sxm4-40gb.txt"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->errors.empty()) << r->errors.front();
  EXPECT_EQ(r->version, "v0.8");
  EXPECT_EQ(r->cuda_runtime, "12060");
  EXPECT_EQ(r->cuda_driver, "12060");
  EXPECT_EQ(r->driver, "560.35.05");
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(r->devices[0].bus_id, "00000000:99:00");
  ASSERT_EQ(r->testcases.size(), 1u);
  const auto& tc = r->testcases[0];
  EXPECT_EQ(tc.name, "host_to_device_memcpy_sm");
  EXPECT_EQ(tc.status, NvbStatus::passed);
  EXPECT_EQ(tc.kind, NvbMatrixKind::host_device);
  ASSERT_EQ(tc.matrix.size(), 1u);
  ASSERT_EQ(tc.matrix[0].size(), 1u);
  EXPECT_DOUBLE_EQ(*tc.matrix[0][0], 25.13);
  EXPECT_DOUBLE_EQ(*tc.sum_gbps, 25.13);
}

TEST(Nvbandwidth, Issue34AssertIsTheTestcaseError) {
  auto r = parse_nvbandwidth(golden("nvbandwidth_issue34-a100x8-assert-fail.txt"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "v0.7");
  EXPECT_EQ(r->driver, "550.127.08");
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->devices[7].bus_id, "00000000:9e:00");
  ASSERT_EQ(r->testcases.size(), 1u);
  const auto& tc = r->testcases[0];
  EXPECT_EQ(tc.name, "device_to_device_memcpy_read_ce");
  EXPECT_EQ(tc.status, NvbStatus::error);
  EXPECT_NE(tc.error.find("Invalid value when checking the pattern at 0x70a640000000"), std::string::npos);
  EXPECT_NE(tc.error.find("ASSERT in expression h_errorFlag == 0"), std::string::npos);
  EXPECT_TRUE(tc.matrix.empty());
  EXPECT_TRUE(r->errors.empty());
}

TEST(Nvbandwidth, Issue61PtxErrorAndHostname) {
  auto r = parse_nvbandwidth(golden("nvbandwidth_issue61-h100x8-ptx-error.txt"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->hostname, "quiet-lemur");
  EXPECT_EQ(r->cuda_runtime, "13000");
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->devices[4].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->devices[4].bus_id, "00000001:1b:00");
  ASSERT_EQ(r->testcases.size(), 1u);
  EXPECT_EQ(r->testcases[0].name, "host_to_device_memcpy_ce");
  EXPECT_EQ(r->testcases[0].status, NvbStatus::error);
  EXPECT_EQ(r->testcases[0].error.rfind("[cudaErrorUnsupportedPtxVersion] the provided PTX", 0), 0u);
}

TEST(Nvbandwidth, JsonFixture15Passed17Waived) {
  auto r = parse_nvbandwidth(golden("nvbandwidth-j_dcgm-test-fixture-v0.5.json"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(r->version, "v0.5");
  EXPECT_EQ(r->cuda_runtime, "12070");
  EXPECT_EQ(r->driver, "565.02");
  EXPECT_TRUE(r->devices.empty());  // v0.5 JSON lists no device
  ASSERT_EQ(r->testcases.size(), 32u);
  int passed = 0, waived = 0;
  for (const auto& tc : r->testcases) {
    passed += tc.status == NvbStatus::passed;
    waived += tc.status == NvbStatus::waived;
  }
  EXPECT_EQ(passed, 15);
  EXPECT_EQ(waived, 17);
  const auto& h2d = r->testcases[0];
  EXPECT_EQ(h2d.name, "host_to_device_memcpy_ce");
  EXPECT_EQ(h2d.description, "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)");
  EXPECT_EQ(h2d.kind, NvbMatrixKind::host_device);
  EXPECT_DOUBLE_EQ(*h2d.matrix.at(0).at(0), 12.3964);
  EXPECT_DOUBLE_EQ(*h2d.sum_gbps, 12.396361291250001);
  EXPECT_DOUBLE_EQ(*h2d.average, 12.396361291250001);
  EXPECT_EQ(r->testcases.back().name, "device_to_device_latency_sm");
  EXPECT_EQ(r->testcases.back().status, NvbStatus::waived);
  EXPECT_EQ(r->testcases[30].kind, NvbMatrixKind::latency);
  EXPECT_DOUBLE_EQ(*r->testcases[30].matrix[0][0], 649.879);
}

TEST(Nvbandwidth, TextMatrixWithNaDiagonalWaivedAndErrorLines) {
  // Printed as inline_common.h does for an 3-GPU device_to_device testcase.
  auto r = parse_nvbandwidth_text(
      "nvbandwidth Version: v0.8\n\nRunning device_to_device_memcpy_write_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1         2\n"
      " 0       N/A    389.10    388.90\n"
      " 1    389.00       N/A    120.50\n"
      " 2    388.80    389.20       N/A\n\n"
      "SUM device_to_device_memcpy_write_ce 2065.50\n\n"
      "Waived: \n"
      "Running all_to_one_read_ce.\nError: Testcase failed\n");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->testcases.size(), 3u);
  const auto& tc = r->testcases[0];
  EXPECT_EQ(tc.kind, NvbMatrixKind::device_device);
  ASSERT_EQ(tc.matrix.size(), 3u);
  EXPECT_FALSE(tc.matrix[1][1]);
  EXPECT_DOUBLE_EQ(*tc.matrix[1][2], 120.5);
  EXPECT_DOUBLE_EQ(*tc.sum_gbps, 2065.5);
  EXPECT_EQ(r->testcases[1].status, NvbStatus::waived);
  EXPECT_EQ(r->testcases[1].name, "");
  EXPECT_EQ(r->testcases[2].status, NvbStatus::error);
  EXPECT_EQ(r->testcases[2].error, "Testcase failed");
}

TEST(Nvbandwidth, MalformedAndTruncatedInputNeverCrash) {
  EXPECT_FALSE(parse_nvbandwidth(""));
  EXPECT_FALSE(parse_nvbandwidth("bash: nvbandwidth: command not found\n"));
  EXPECT_FALSE(parse_nvbandwidth("{\"nvbandwidth\": {\"testcases\": ["));
  EXPECT_FALSE(parse_nvbandwidth_json("{\"other\": 1}"));
  auto bad_cell = parse_nvbandwidth_json(R"({"nvbandwidth": {"testcases": [{"name": "x", "status": "Passed", "bandwidth_matrix": [["abc", "N/A", 3]]}]}})");
  ASSERT_TRUE(bad_cell);
  EXPECT_EQ(bad_cell->errors.size(), 1u);
  EXPECT_DOUBLE_EQ(*bad_cell->testcases[0].matrix[0][2], 3.0);
  for (const auto* name : {"nvbandwidth-j_dcgm-test-fixture-v0.5.json", "nvbandwidth_issue42-a100-sxm4-40gb.txt",
                           "nvbandwidth_issue34-a100x8-assert-fail.txt"}) {
    const auto text = golden(name);
    for (std::size_t n = 0; n < text.size(); n += 29) (void)parse_nvbandwidth(std::string_view(text).substr(0, n));
  }
}

}  // namespace
}  // namespace cmax::gputools
