// cmax-gpucheck's raw document (cmax.gpucheck.raw/1) parsed into structs.
#include <gtest/gtest.h>

#include <string>

#include "health/gpu_raw.h"

namespace cmax::health {
namespace {

// Shaped like a real run on an HGX H200 (two of its eight GPUs), numbers rounded.
constexpr std::string_view kH200 = R"({
  "schema": "cmax.gpucheck.raw/1",
  "program": "cmax-gpucheck 0.1.0",
  "runtime_version": "12.8",
  "driver_version": "12.8",
  "settings": {"seconds": 0.5, "matmul_n": 8192, "check_n": 2048, "repeats": 3},
  "driver_gpus": 8,
  "status": "ok",
  "device_count": 8,
  "devices": [
    {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-3f1c2a9e-0b7d-4c55-9e1a-6d2f8b4c7a10",
     "pci_bus_id": "00000000:19:00.0", "compute_capability": "9.0", "memory_bytes": 150754820096,
     "sm_count": 132, "ecc_enabled": true,
     "matmul": {"kernel": "wmma_fp16_fp32acc_128x128x32", "n": 8192, "reps": 180, "seconds": 0.49,
                "tflops": 402.5, "best_tflops": 405.1},
     "correctness": {"kernel": "wmma_fp16_fp32acc_128x128x32", "n": 2048, "repeats": 3,
                     "kat_mismatches": 0, "kat_elements": 4194304, "kat_checksum": "0x5b0e3f41c2d1a977",
                     "checksum": "0x91d2c3b4a5968778", "run_checksums": ["0x91d2c3b4a5968778",
                     "0x91d2c3b4a5968778", "0x91d2c3b4a5968778"], "repeat_mismatches": 0},
     "membw": {"bytes": 1073741824, "method": "copy kernel, read + write", "reps": 1000, "gbps": 4105.2,
               "best_gbps": 4131.9},
     "pcie_h2d": {"bytes": 268435456, "method": "cudaMemcpyAsync, pinned host memory", "reps": 97,
                  "gbps": 53.4, "best_gbps": 53.9},
     "pcie_d2h": {"bytes": 268435456, "method": "cudaMemcpyAsync, pinned host memory", "reps": 99,
                  "gbps": 54.6, "best_gbps": 54.8}},
    {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d",
     "pci_bus_id": "00000000:3B:00.0", "compute_capability": "9.0", "memory_bytes": 150754820096,
     "sm_count": 132, "ecc_enabled": true,
     "matmul": {"kernel": "wmma_fp16_fp32acc_128x128x32", "n": 8192, "reps": 178, "seconds": 0.49,
                "tflops": 398.9, "best_tflops": 401.0},
     "correctness": {"kernel": "wmma_fp16_fp32acc_128x128x32", "n": 2048, "repeats": 3,
                     "kat_mismatches": 0, "kat_elements": 4194304, "kat_checksum": "0x5b0e3f41c2d1a977",
                     "checksum": "0x91d2c3b4a5968778", "run_checksums": ["0x91d2c3b4a5968778",
                     "0x91d2c3b4a5968778", "0x91d2c3b4a5968778"], "repeat_mismatches": 0},
     "membw": {"bytes": 1073741824, "reps": 1000, "gbps": 4098.7, "best_gbps": 4120.3},
     "pcie_h2d": {"bytes": 268435456, "reps": 96, "gbps": 53.1, "best_gbps": 53.6},
     "pcie_d2h": {"bytes": 268435456, "reps": 99, "gbps": 54.4, "best_gbps": 54.7}}
  ],
  "peers": [
    {"src": 0, "dst": 1, "can_access": true, "performance_rank": 0, "bytes": 268435456,
     "method": "cudaMemcpyPeerAsync, peer access enabled", "reps": 500, "gbps": 376.2, "best_gbps": 389.0},
    {"src": 1, "dst": 0, "can_access": true, "performance_rank": 0, "bytes": 268435456, "reps": 500,
     "gbps": 375.8, "best_gbps": 388.1}
  ]
})";

TEST(GpuRaw, ParsesAnH200Run) {
  auto raw = parse_gpu_raw(kH200);
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_EQ(raw->status, "ok");
  EXPECT_EQ(raw->driver_gpus, 8);
  ASSERT_EQ(raw->devices.size(), 2u);
  const auto& d = raw->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(d.compute_capability, "9.0");
  EXPECT_EQ(d.memory_bytes, 150754820096u);
  EXPECT_TRUE(d.matmul.ran);
  EXPECT_DOUBLE_EQ(d.matmul.value, 402.5);
  EXPECT_DOUBLE_EQ(d.matmul.best, 405.1);
  EXPECT_EQ(d.matmul.kernel, "wmma_fp16_fp32acc_128x128x32");
  EXPECT_EQ(d.correctness.kat_elements, 4194304u);
  EXPECT_EQ(d.correctness.checksum, "0x91d2c3b4a5968778");
  EXPECT_EQ(d.correctness.repeats, 3);
  EXPECT_DOUBLE_EQ(d.membw.value, 4105.2);
  EXPECT_EQ(d.membw.bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(d.pcie_h2d.value, 53.4);
  EXPECT_DOUBLE_EQ(d.pcie_d2h.value, 54.6);
  ASSERT_EQ(raw->peers.size(), 2u);
  EXPECT_TRUE(raw->peers[0].can_access);
  EXPECT_EQ(raw->peers[0].performance_rank, 0);
  EXPECT_TRUE(raw->peers[0].copy.ran);
  EXPECT_DOUBLE_EQ(raw->peers[1].copy.value, 375.8);
}

TEST(GpuRaw, MissingStepsDidNotRun) {
  auto raw = parse_gpu_raw(R"({"schema":"cmax.gpucheck.raw/1","status":"ok",
    "devices":[{"index":0,"name":"NVIDIA H200","membw":{"gbps":4000}}],"peers":[]})");
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_FALSE(raw->devices[0].matmul.ran);
  EXPECT_FALSE(raw->devices[0].correctness.ran);
  EXPECT_TRUE(raw->devices[0].membw.ran);
}

TEST(GpuRaw, StepErrorsAreKept) {
  auto raw = parse_gpu_raw(R"({"schema":"cmax.gpucheck.raw/1","status":"ok",
    "devices":[{"index":0,"name":"NVIDIA H200",
      "matmul":{"kernel":"k","n":8192,"error":"timed run: cudaErrorIllegalAddress: an illegal memory access was encountered"}}],
    "peers":[{"src":0,"dst":1,"can_access":true,"error":"cudaDeviceEnablePeerAccess: cudaErrorTooManyPeers: x"},
             {"src":1,"dst":0,"can_access":false}]})");
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_NE(raw->devices[0].matmul.error.find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_TRUE(raw->peers[0].copy.ran);
  EXPECT_FALSE(raw->peers[0].copy.error.empty());
  EXPECT_FALSE(raw->peers[1].copy.ran);
}

TEST(GpuRaw, NoDevice) {
  auto raw = parse_gpu_raw(R"({"schema":"cmax.gpucheck.raw/1","status":"no_device",
    "error":"cudaErrorNoDevice: no CUDA-capable device is detected","driver_gpus":0,"devices":[],"peers":[]})");
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_EQ(raw->status, "no_device");
  EXPECT_TRUE(raw->devices.empty());
}

TEST(GpuRaw, MalformedDocumentsAreErrors) {
  const char* bad[] = {
      "",
      "not json",
      "[]",
      R"({"schema":"cmax.gpucheck.raw/2","status":"ok"})",
      R"({"schema":"cmax.gpucheck.raw/1"})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":{}})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"name":"x"}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"index":0}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"index":0,"name":"x","matmul":{"tflops":"fast"}}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"index":0,"name":"x","membw":{"reps":3}}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"index":0,"name":"x","correctness":{"n":2}}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","devices":[{"index":0,"name":"x","correctness":{"kat_mismatches":-1,"checksum":"0x1","kat_checksum":"0x2"}}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","peers":[{"src":0}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","peers":[{"src":0,"dst":1,"can_access":true}]})",
      R"({"schema":"cmax.gpucheck.raw/1","status":"ok","peers":[{"src":0,"dst":1,"can_access":"yes"}]})",
  };
  for (const char* text : bad) {
    auto raw = parse_gpu_raw(text);
    EXPECT_FALSE(raw) << text;
    if (!raw) {
      EXPECT_NE(raw.error().message.find("cmax-gpucheck output"), std::string::npos) << raw.error().message;
    }
  }
}

}  // namespace
}  // namespace cmax::health
