// GpuBuild: the GPU programs are built on every machine (a CUDA toolkit, or the PyPI wheels
// scripts/test installs under the build tree) and behave as documented where there is no GPU: each
// exits with its documented code and names what is missing (no driver: libcuda.so.1), cmax turns
// that into not_applicable GPU checks with the reason, and NCCL's bootstrap runs over loopback.
// On a machine with an NVIDIA driver the no-device expectations do not hold; those tests skip and
// bench/gpu_device.sh is the check that runs there.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"

namespace {

using cmax::core::ProcessResult;
using cmax::core::ProcessSpec;

ProcessResult run(std::vector<std::string> argv, std::vector<std::string> env = {}) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = std::chrono::seconds(120);
  spec.extra_env = std::move(env);
  auto r = cmax::core::run_process(spec);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : ProcessResult{};
}

// A host with the NVIDIA kernel driver loaded: the no-driver expectations do not apply.
bool host_has_nvidia_driver() {
  std::error_code ec;
  return std::filesystem::exists("/proc/driver/nvidia/gpus", ec) ||
         std::filesystem::exists("/dev/nvidiactl", ec);
}

#define SKIP_ON_GPU_HOST()                                                                              \
  if (host_has_nvidia_driver())                                                                         \
  GTEST_SKIP() << "this host has the NVIDIA driver: the no-device path is not testable here (bench/gpu_device.sh)"

}  // namespace

TEST(GpuBuild, GpucheckIsBuiltForAmpereHopperAndBlackwell) {
#ifndef CMAX_GPUCHECK_BIN
  GTEST_SKIP() << CMAX_GPU_SKIP_REASON;
#else
  auto r = run({CMAX_GPUCHECK_BIN, "--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "cmax-gpucheck 0.1.0 (CUDA 13.5.37, architectures 80-real 90-real 100-real 120-real 120-virtual)"
  EXPECT_NE(r.out.find("cmax-gpucheck "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("80-real"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("90-real"), std::string::npos) << r.out;
  const auto at = r.out.find("CUDA ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int major = std::stoi(r.out.substr(at + 5));
  const int minor = std::stoi(r.out.substr(r.out.find('.', at) + 1));
  if (major > 12 || (major == 12 && minor >= 8)) {
    EXPECT_NE(r.out.find("100-real"), std::string::npos) << "Blackwell SASS missing: " << r.out;
    EXPECT_NE(r.out.find("120-"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("-virtual"), std::string::npos) << "no PTX for later GPUs: " << r.out;
#endif
}

TEST(GpuBuild, GpucheckWithoutADriverExitsTwoAndNamesTheMissingLibrary) {
#ifndef CMAX_GPUCHECK_BIN
  GTEST_SKIP() << CMAX_GPU_SKIP_REASON;
#else
  SKIP_ON_GPU_HOST();
  auto r = run({CMAX_GPUCHECK_BIN, "--seconds", "0.1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // docs/gpu-checks.md: 2 = no CUDA device
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc.value("schema", ""), "cmax.gpucheck.raw/1");
  EXPECT_EQ(doc.value("status", ""), "no_device");
  EXPECT_EQ(doc.value("missing_library", ""), "libcuda.so.1");
  EXPECT_NE(doc.value("error", "").find("no NVIDIA driver: libcuda.so.1"), std::string::npos) << doc.dump();
  EXPECT_TRUE(doc["devices"].empty());
  EXPECT_FALSE(doc.value("runtime_version", "").empty());  // cudart is linked in and answers
  EXPECT_NE(r.err.find("libcuda.so.1"), std::string::npos) << r.err;
#endif
}

TEST(GpuBuild, GpucheckUsageErrorExitsOne) {
#ifndef CMAX_GPUCHECK_BIN
  GTEST_SKIP() << CMAX_GPU_SKIP_REASON;
#else
  auto r = run({CMAX_GPUCHECK_BIN, "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
#endif
}

// The whole path an operator sees: cmax finds the build tree's cmax-gpucheck, runs it, and reports
// every GPU check not_applicable with the reason (never a pass, never a silent skip).
TEST(GpuBuild, CmaxCheckReportsGpuChecksNotApplicableWithTheReason) {
#ifndef CMAX_GPUCHECK_BIN
  GTEST_SKIP() << CMAX_GPU_SKIP_REASON;
#else
  SKIP_ON_GPU_HOST();
  auto r = run({CMAX_BIN, "check", "--active", "--checks", "gpu", "--json"});
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  ASSERT_TRUE(doc.contains("results")) << doc.dump(2);
  int gpu = 0;
  for (const auto& c : doc["results"]) {
    const std::string id = c.value("id", "");
    if (id.rfind("gpu.", 0) != 0) continue;
    ++gpu;
    EXPECT_EQ(c.value("outcome", ""), "not_applicable") << c.dump();
    EXPECT_NE(c.value("reason", "").find("no CUDA device"), std::string::npos) << c.dump();
  }
  EXPECT_GE(gpu, 5) << doc.dump(2);
#endif
}

TEST(GpuBuild, CollbenchNcclBackendWithoutADriverExitsThreeAndSaysWhy) {
#if !defined(CMAX_COLLBENCH_BIN) || !defined(CMAX_COLLBENCH_HAS_NCCL)
  GTEST_SKIP() << CMAX_NCCL_SKIP_REASON;
#else
  SKIP_ON_GPU_HOST();
  const auto mpirun = cmax::test::find_system_program("mpirun");
  if (!mpirun) GTEST_SKIP() << "mpirun is not installed";
  auto r = run({*mpirun, "--allow-run-as-root", "-np", "1", "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include",
                "lo", CMAX_COLLBENCH_BIN, "--backend", "nccl", "-b", "8", "-e", "8"});
  // mpirun passes on the rank's exit code; cmax-collbench --help: 3 = environment error.
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("no CUDA device: no NVIDIA driver: libcuda.so.1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--backend mpi"), std::string::npos) << r.err;
#endif
}

// --backend auto on a host without GPUs: the NCCL backend is compiled in, finds no device on any
// rank and falls back to MPI, which measures and prints the nccl-tests table.
TEST(GpuBuild, CollbenchAutoFallsBackToMpiWithoutAGpu) {
#if !defined(CMAX_COLLBENCH_BIN) || !defined(CMAX_COLLBENCH_HAS_NCCL)
  GTEST_SKIP() << CMAX_NCCL_SKIP_REASON;
#else
  SKIP_ON_GPU_HOST();
  const auto mpirun = cmax::test::find_system_program("mpirun");
  if (!mpirun) GTEST_SKIP() << "mpirun is not installed";
  auto r = run({*mpirun, "--allow-run-as-root", "-np", "2", "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include",
                "lo", CMAX_COLLBENCH_BIN, "--backend", "auto", "-b", "8", "-e", "1K", "-f", "2", "-n", "2", "-w", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Avg bus bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("        1024"), std::string::npos) << r.out;
#endif
}

TEST(GpuBuild, NcclBootstrapMakesAUniqueIdOnLoopback) {
#ifndef CMAX_NCCL_BOOTSTRAP_BIN
  GTEST_SKIP() << CMAX_NCCL_SKIP_REASON;
#else
  auto r = run({CMAX_NCCL_BOOTSTRAP_BIN}, {"NCCL_SOCKET_IFNAME=lo", "NCCL_DEBUG=WARN"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_GE(doc.value("nccl_version", 0), 22000) << r.out;  // NCCL 2.x encodes 2.32.6 as 23206
  EXPECT_EQ(doc.value("family", 0), 2) << r.out;            // AF_INET
  EXPECT_EQ(doc.value("address", ""), "127.0.0.1") << r.out;
  EXPECT_GT(doc.value("port", 0), 0) << r.out;
#endif
}
