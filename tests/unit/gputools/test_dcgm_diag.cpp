// dcgmi diag parsing: the real text samples in tests/golden/gpu_tools (DCGM 3.3.3, 3.3.8, 4.4.2)
// and -j JSON written to the schema of NVIDIA/DCGM dcgmi/Diag.cpp (3.3.8 at 903d745, 4.6.0 at
// 72fa3fe), since no real -j output with a known source was found (see the golden README).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/dcgm_diag.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

const DcgmTest* test(const DcgmDiag& d, const std::string& name) {
  for (const auto& t : d.tests)
    if (t.name == name) return &t;
  return nullptr;
}

TEST(DcgmDiag, H100FailedRunDcgm338) {
  auto d = parse_dcgm_diag(golden("dcgmi-diag-r3_nccl-tests-264-h100x8-fail.txt"));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->errors.empty()) << d->errors.front();
  EXPECT_EQ(d->dcgm_version, "3.3.8");
  EXPECT_EQ(d->driver_version, "560.35.03");
  ASSERT_EQ(d->device_ids.size(), 8u);
  EXPECT_EQ(d->device_ids[0], "2330");
  ASSERT_EQ(d->tests.size(), 13u);
  const auto* mem = test(*d, "GPU Memory");
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->category, "Hardware");
  EXPECT_EQ(mem->overall, DiagStatus::fail);
  EXPECT_TRUE(mem->all_gpus);
  ASSERT_EQ(mem->warnings.size(), 8u);
  // The 45-character pieces joined back without losing or adding a space.
  EXPECT_EQ(mem->warnings[0],
            "GPU 0 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
            "Rerun diagnostics. Unable to initialize CUDA library: 'system not yet initialized'. . Please check "
            "if a CUDA sample program can be run successfully on this host. Refer to "
            "https://github.com/nvidia/cuda-samples");
  EXPECT_EQ(mem->warnings[7].substr(0, 5), "GPU 7");
  const auto* pm = test(*d, "Persistence Mode");
  ASSERT_TRUE(pm);
  EXPECT_EQ(pm->overall, DiagStatus::pass);
  ASSERT_EQ(pm->info.size(), 1u);
  EXPECT_EQ(pm->info[0].substr(0, 95),
            "Persistence mode for GPU 0 is disabled. Enable persistence mode by running \"nvidia-smi -i <gpuI");
  EXPECT_TRUE(pm->info[0].ends_with("GPU 4 is disabled. Enable pers"));  // cut short by dcgmi itself
  EXPECT_EQ(test(*d, "PCIe")->overall, DiagStatus::skip);
  EXPECT_EQ(test(*d, "PCIe")->category, "Integration");
  EXPECT_EQ(test(*d, "Memory Bandwidth")->category, "Stress");
  EXPECT_EQ(test(*d, "EUD Test")->overall, DiagStatus::skip);
  EXPECT_EQ(test(*d, "Denylist")->category, "Deployment");
}

TEST(DcgmDiag, A100PassDcgm333) {
  auto d = parse_dcgm_diag_text(golden("dcgmi-diag-r2_awsome-distributed-training-a100x8-pass.txt"));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->errors.empty());
  EXPECT_EQ(d->dcgm_version, "3.3.3");
  EXPECT_EQ(d->driver_version, "535.104.12");
  EXPECT_EQ(d->device_ids.size(), 8u);
  ASSERT_EQ(d->tests.size(), 11u);  // 9 deployment, PCIe, GPU Memory; the Stress section is empty
  for (const auto& t : d->tests) EXPECT_EQ(t.overall, DiagStatus::pass) << t.name;
  EXPECT_TRUE(test(*d, "GPU Memory")->all_gpus);
}

TEST(DcgmDiag, A10gPassDcgm4PerGpuRows) {
  auto d = parse_dcgm_diag(golden("dcgmi-diag-r2_dcgm-124-a10g-dcgm4.txt"));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->errors.empty());
  EXPECT_EQ(d->dcgm_version, "4.4.2");
  EXPECT_EQ(d->driver_version, "580.105.08");
  ASSERT_EQ(d->tests.size(), 3u);
  EXPECT_EQ(d->tests[0].name, "software");
  EXPECT_EQ(d->tests[0].category, "Deployment");
  EXPECT_EQ(d->tests[1].name, "memory");
  EXPECT_EQ(d->tests[1].category, "Hardware");
  EXPECT_EQ(d->tests[2].name, "pcie");
  for (const auto& t : d->tests) {
    EXPECT_EQ(t.overall, DiagStatus::pass);
    ASSERT_EQ(t.results.size(), 1u);
    EXPECT_EQ(t.results[0].entity, "GPU0");
    EXPECT_EQ(t.results[0].gpu, 0);
    EXPECT_EQ(t.results[0].status, DiagStatus::pass);
  }
}

TEST(DcgmDiag, MixedPerGpuStatusRows3x) {
  // The 3.x form for a mixed result (Diag.cpp@903d745 HelperDisplayGpuResults).
  auto d = parse_dcgm_diag_text(
      "| Diagnostic                | Result                                         |\n"
      "+-----  Hardware  ----------+------------------------------------------------+\n"
      "| GPU Memory                | Pass - GPUs: 0, 1, 3                           |\n"
      "|                           | Fail - GPU: 2                                  |\n"
      "| Warning                   | GPU 2 Error: DBE                               |\n");
  ASSERT_TRUE(d);
  ASSERT_EQ(d->tests.size(), 1u);
  EXPECT_EQ(d->tests[0].overall, DiagStatus::fail);
  ASSERT_EQ(d->tests[0].results.size(), 4u);
  EXPECT_EQ(d->tests[0].results[3].gpu, 2);
  EXPECT_EQ(d->tests[0].results[3].status, DiagStatus::fail);
  EXPECT_EQ(d->tests[0].warnings, std::vector<std::string>{"GPU 2 Error: DBE"});
}

constexpr const char* kJson4 = R"({
  "DCGM Diagnostic": {"test_categories": [
    {"category": "Deployment", "tests": [
      {"name": "software", "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"}],
       "test_summary": {"status": "Pass"}}]},
    {"category": "Hardware", "tests": [
      {"name": "memory", "results": [
         {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
         {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Fail",
          "warnings": [{"warning": "GPU 1 DBE", "error_id": 42, "error_category": 3, "error_severity": 2}],
          "info": ["ran 30 s"]}],
       "test_summary": {"status": "Fail", "warnings": [{"warning": "GPU 1 DBE", "error_id": 42}]}}]}]},
  "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1,
                     "entities": [{"entity_id": 0, "device_id": "2330"}, {"entity_id": 1, "device_id": "2330"}]}],
  "metadata": {"version": "4.6.0", "Driver Version Detected": "580.82.07"}
})";

TEST(DcgmDiag, Json4xSchema) {
  auto d = parse_dcgm_diag(kJson4);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->dcgm_version, "4.6.0");
  EXPECT_EQ(d->driver_version, "580.82.07");
  EXPECT_EQ(d->device_ids, (std::vector<std::string>{"2330", "2330"}));
  ASSERT_EQ(d->tests.size(), 2u);
  const auto& mem = d->tests[1];
  EXPECT_EQ(mem.category, "Hardware");
  EXPECT_EQ(mem.overall, DiagStatus::fail);
  ASSERT_EQ(mem.results.size(), 2u);
  EXPECT_EQ(mem.results[1].entity, "GPU1");
  EXPECT_EQ(mem.results[1].gpu, 1);
  EXPECT_EQ(mem.results[1].warnings, std::vector<std::string>{"GPU 1 DBE"});
  EXPECT_EQ(mem.results[1].info, std::vector<std::string>{"ran 30 s"});
  EXPECT_EQ(mem.warnings, std::vector<std::string>{"GPU 1 DBE"});
}

TEST(DcgmDiag, Json3xSchemaWithDeploymentQuirk) {
  // 3.3.8: root "DCGM GPU Diagnostic", version at the root, per-GPU "gpu_id" strings, and the
  // deployment tests' message under "warnings" inside the warning entry.
  auto d = parse_dcgm_diag_json(R"({"DCGM GPU Diagnostic": {"test_categories": [
      {"category": "Deployment", "tests": [{"name": "Persistence Mode", "results": [
          {"status": "Fail", "gpu_id": 3, "warnings": [{"warnings": "Persistence mode for GPU 3 is disabled.", "error_id": 9}]}]}]},
      {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [
          {"gpu_id": "0", "status": "Skip", "info": "not supported"}, {"gpu_id": "1", "status": "Skip"}]}]}]},
    "version": "3.3.8", "Driver Version Detected": "560.35.03", "GPU Device IDs": ["2330", "2330"]})");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->dcgm_version, "3.3.8");
  EXPECT_EQ(d->device_ids.size(), 2u);
  ASSERT_EQ(d->tests.size(), 2u);
  EXPECT_EQ(d->tests[0].overall, DiagStatus::fail);
  EXPECT_EQ(d->tests[0].results.at(0).warnings.at(0), "Persistence mode for GPU 3 is disabled.");
  EXPECT_EQ(d->tests[1].overall, DiagStatus::skip);
  EXPECT_EQ(d->tests[1].results.at(0).info, std::vector<std::string>{"not supported"});
}

TEST(DcgmDiag, JsonRuntimeErrorAndIterations) {
  auto e = parse_dcgm_diag_json(R"({"DCGM Diagnostic": {"version": "4.6.0", "runtime_error": "Unable to connect"}})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->runtime_error, "Unable to connect");
  EXPECT_TRUE(e->tests.empty());
  auto it = parse_dcgm_diag_json(std::string(R"({"iterations": [)") + kJson4 + "," + kJson4 + R"(], "Overall Result": "Fail"})");
  ASSERT_TRUE(it) << it.error().message;
  ASSERT_EQ(it->tests.size(), 4u);
  EXPECT_EQ(it->tests[3].name, "memory (iteration 2)");
}

TEST(DcgmDiag, MalformedAndTruncatedInputNeverCrash) {
  EXPECT_FALSE(parse_dcgm_diag(""));
  EXPECT_FALSE(parse_dcgm_diag("Error: unable to establish a connection to the specified host: localhost\n"));
  EXPECT_FALSE(parse_dcgm_diag("{\"DCGM Diagnostic\": {"));
  EXPECT_FALSE(parse_dcgm_diag("{\"something\": 1}"));
  EXPECT_FALSE(parse_dcgm_diag(R"({"DCGM Diagnostic": {"test_categories": [{"category": 1, "tests": [{"name": 2, "results": [{"entity_id": "x", "entity_group": "GPU"}]}]}]}})"));
  for (const auto* name : {"dcgmi-diag-r3_nccl-tests-264-h100x8-fail.txt", "dcgmi-diag-r2_dcgm-124-a10g-dcgm4.txt"}) {
    const auto text = golden(name);
    for (std::size_t n = 0; n < text.size(); n += 41) (void)parse_dcgm_diag(std::string_view(text).substr(0, n));
    for (std::size_t n = 0; n < std::string_view(kJson4).size(); n += 23) (void)parse_dcgm_diag(std::string_view(kJson4).substr(0, n));
  }
}

}  // namespace
}  // namespace cmax::gputools
