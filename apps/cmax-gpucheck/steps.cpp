#include "steps.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "cuda_util.h"
#include "kernels.h"

namespace gpucheck {

std::string cuda_error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

bool Errors::ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  if (text_.empty()) text_ = std::string(what) + ": " + cuda_error_text(e);
  return false;
}

namespace {

std::string hex64(unsigned long long v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", v);
  return buf;
}

std::string uuid_text(const cudaUUID_t& u) {
  std::string out = "GPU-";
  char buf[4];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(u.bytes[i]));
    out += buf;
  }
  return out;
}

// The step's object: the numbers when it finished, else {"error": ...} with what it had.
Json finish(Json j, const Errors& err) {
  if (!err.text().empty()) j["error"] = err.text();
  return j;
}

double gbps(double bytes, int reps, double seconds) { return seconds > 0 ? bytes * reps / seconds / 1e9 : 0; }

// Sum of a device counter after `launch` adds into it.
template <class Launch>
bool device_sum(cudaStream_t s, unsigned long long* d_sum, Launch&& launch, unsigned long long& out, Errors& err,
                const char* what) {
  return err.ok(cudaMemsetAsync(d_sum, 0, sizeof *d_sum, s), what) && err.ok(launch(), what) &&
         err.ok(cudaMemcpyAsync(&out, d_sum, sizeof out, cudaMemcpyDeviceToHost, s), what) &&
         err.ok(cudaStreamSynchronize(s), what);
}

}  // namespace

void recover(int device) {
  cudaSetDevice(device);
  cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    cudaDeviceReset();
    cudaGetLastError();
  }
}

Json device_info(int device) {
  Json j = Json::object();
  j["index"] = device;
  cudaDeviceProp p{};
  Errors err;
  if (!err.ok(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties")) return finish(j, err);
  char bus[32] = {0};
  err.ok(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "cudaDeviceGetPCIBusId");
  int ecc = 0;
  cudaDeviceGetAttribute(&ecc, cudaDevAttrEccEnabled, device);
  j["name"] = p.name;
  j["uuid"] = uuid_text(p.uuid);
  j["pci_bus_id"] = bus;
  j["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
  j["memory_bytes"] = static_cast<unsigned long long>(p.totalGlobalMem);
  j["sm_count"] = p.multiProcessorCount;
  j["ecc_enabled"] = ecc != 0;
  return finish(j, err);
}

Json run_matmul(int device, const Options& o) {
  const int n = o.matmul_n;
  const std::size_t elems = static_cast<std::size_t>(n) * n;
  Json j = Json::object();
  j["kernel"] = kGemmKernel;
  j["n"] = n;
  Errors err;
  DeviceMem a, b, c;
  Stream s;
  if (err.ok(cudaSetDevice(device), "cudaSetDevice") && err.ok(cudaStreamCreate(s.out()), "cudaStreamCreate") &&
      err.ok(cudaMalloc(a.out(), elems * 2), "cudaMalloc A") && err.ok(cudaMalloc(b.out(), elems * 2), "cudaMalloc B") &&
      err.ok(cudaMalloc(c.out(), elems * 4), "cudaMalloc C") &&
      err.ok(fill_uniform_inputs(a.get(), elems, 11, s.get()), "fill A") &&
      err.ok(fill_uniform_inputs(b.get(), elems, 12, s.get()), "fill B")) {
    auto body = [&] { return gemm_fp16(a.get(), b.get(), static_cast<float*>(c.get()), n, s.get()); };
    Timing t = time_loop(s.get(), o.seconds, 3, 1000, body, err);
    if (err.text().empty()) {
      const double flop = 2.0 * n * static_cast<double>(n) * n;
      j["reps"] = t.reps;
      j["seconds"] = t.total_s;
      j["tflops"] = flop * t.reps / t.total_s / 1e12;
      j["best_tflops"] = flop / t.best_s / 1e12;
    }
  }
  return finish(j, err);
}

Json run_correctness(int device, const Options& o) {
  const int n = o.check_n;
  const std::size_t elems = static_cast<std::size_t>(n) * n;
  Json j = Json::object();
  j["kernel"] = kGemmKernel;
  j["n"] = n;
  j["repeats"] = o.repeats;
  Errors err;
  DeviceMem a, b, c, ref, counter;
  Stream s;
  if (!err.ok(cudaSetDevice(device), "cudaSetDevice") || !err.ok(cudaStreamCreate(s.out()), "cudaStreamCreate") ||
      !err.ok(cudaMalloc(a.out(), elems * 2), "cudaMalloc A") || !err.ok(cudaMalloc(b.out(), elems * 2), "cudaMalloc B") ||
      !err.ok(cudaMalloc(c.out(), elems * 4), "cudaMalloc C") ||
      !err.ok(cudaMalloc(ref.out(), elems * 4), "cudaMalloc reference") ||
      !err.ok(cudaMalloc(counter.out(), sizeof(unsigned long long)), "cudaMalloc counter"))
    return finish(j, err);
  float* cf = static_cast<float*>(c.get());
  float* rf = static_cast<float*>(ref.get());
  auto* sum = static_cast<unsigned long long*>(counter.get());

  // Known answer: integer inputs make every output an exact FP32 integer whatever the summation
  // order, so the tensor-core result must equal the int32 reference bit for bit on any GPU.
  unsigned long long mismatches = 0, kat_checksum = 0;
  if (!err.ok(fill_integer_inputs(a.get(), elems, 1, s.get()), "fill A (integers)") ||
      !err.ok(fill_integer_inputs(b.get(), elems, 2, s.get()), "fill B (integers)") ||
      !err.ok(gemm_fp16(a.get(), b.get(), cf, n, s.get()), "GEMM (integers)") ||
      !err.ok(gemm_int_reference(a.get(), b.get(), rf, n, s.get()), "int32 reference GEMM") ||
      !device_sum(s.get(), sum, [&] { return count_mismatches(cf, rf, elems, sum, s.get()); }, mismatches, err,
                  "compare with reference") ||
      !device_sum(s.get(), sum, [&] { return checksum_floats(cf, elems, sum, s.get()); }, kat_checksum, err,
                  "checksum"))
    return finish(j, err);
  j["kat_mismatches"] = mismatches;
  j["kat_elements"] = static_cast<unsigned long long>(elems);
  j["kat_checksum"] = hex64(kat_checksum);

  // Repeatability: float inputs, the same launch each time; a healthy GPU gives the same bits.
  if (!err.ok(fill_uniform_inputs(a.get(), elems, 3, s.get()), "fill A (floats)") ||
      !err.ok(fill_uniform_inputs(b.get(), elems, 4, s.get()), "fill B (floats)"))
    return finish(j, err);
  Json runs = Json::array();
  unsigned long long first = 0;
  int differing = 0;
  for (int r = 0; r < o.repeats; ++r) {
    unsigned long long cs = 0;
    if (!err.ok(cudaMemsetAsync(cf, 0xff, elems * 4, s.get()), "clear C") ||
        !err.ok(gemm_fp16(a.get(), b.get(), cf, n, s.get()), "GEMM (floats)") ||
        !device_sum(s.get(), sum, [&] { return checksum_floats(cf, elems, sum, s.get()); }, cs, err, "checksum"))
      return finish(j, err);
    if (r == 0) first = cs;
    differing += cs != first;
    runs.push_back(hex64(cs));
  }
  j["checksum"] = hex64(first);
  j["run_checksums"] = std::move(runs);
  j["repeat_mismatches"] = differing;
  return finish(j, err);
}

Json run_membw(int device, const Options& o) {
  const std::size_t bytes = o.membw_bytes;
  Json j = Json::object();
  j["bytes"] = static_cast<unsigned long long>(bytes);
  j["method"] = "copy kernel, read + write";
  Errors err;
  DeviceMem src, dst;
  Stream s;
  if (err.ok(cudaSetDevice(device), "cudaSetDevice") && err.ok(cudaStreamCreate(s.out()), "cudaStreamCreate") &&
      err.ok(cudaMalloc(src.out(), bytes), "cudaMalloc source") &&
      err.ok(cudaMalloc(dst.out(), bytes), "cudaMalloc destination") &&
      err.ok(cudaMemsetAsync(src.get(), 1, bytes, s.get()), "cudaMemset")) {
    auto body = [&] { return copy_kernel(src.get(), dst.get(), bytes, s.get()); };
    Timing t = time_loop(s.get(), o.seconds, 5, 2000, body, err);
    if (err.text().empty()) {
      j["reps"] = t.reps;
      j["gbps"] = gbps(2.0 * bytes, t.reps, t.total_s);
      j["best_gbps"] = gbps(2.0 * bytes, 1, t.best_s);
    }
  }
  return finish(j, err);
}

Json run_pcie(int device, const Options& o, bool host_to_device) {
  const std::size_t bytes = o.transfer_bytes;
  Json j = Json::object();
  j["bytes"] = static_cast<unsigned long long>(bytes);
  j["method"] = "cudaMemcpyAsync, pinned host memory";
  Errors err;
  DeviceMem dev;
  PinnedMem host;
  Stream s;
  if (err.ok(cudaSetDevice(device), "cudaSetDevice") && err.ok(cudaStreamCreate(s.out()), "cudaStreamCreate") &&
      err.ok(cudaMalloc(dev.out(), bytes), "cudaMalloc") &&
      err.ok(cudaHostAlloc(host.out(), bytes, cudaHostAllocDefault), "cudaHostAlloc") &&
      err.ok(cudaMemsetAsync(dev.get(), 0, bytes, s.get()), "cudaMemset")) {
    std::memset(host.get(), 1, bytes);
    auto body = [&] {
      return host_to_device ? cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, s.get())
                            : cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, s.get());
    };
    Timing t = time_loop(s.get(), o.seconds, 3, 500, body, err);
    if (err.text().empty()) {
      j["reps"] = t.reps;
      j["gbps"] = gbps(static_cast<double>(bytes), t.reps, t.total_s);
      j["best_gbps"] = gbps(static_cast<double>(bytes), 1, t.best_s);
    }
  }
  return finish(j, err);
}

Json run_peer(int src, int dst, const Options& o) {
  const std::size_t bytes = o.transfer_bytes;
  Json j = Json::object();
  j["src"] = src;
  j["dst"] = dst;
  Errors err;
  int can = 0, rank = 0;
  if (!err.ok(cudaDeviceCanAccessPeer(&can, src, dst), "cudaDeviceCanAccessPeer")) return finish(j, err);
  j["can_access"] = can != 0;
  if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, src, dst) == cudaSuccess)
    j["performance_rank"] = rank;
  cudaGetLastError();
  if (!can) return j;
  j["bytes"] = static_cast<unsigned long long>(bytes);
  j["method"] = "cudaMemcpyPeerAsync, peer access enabled";
  // Enabling twice is harmless: the pair may have been enabled for the other direction already.
  auto enable = [&](int from, int to) {
    if (!err.ok(cudaSetDevice(from), "cudaSetDevice")) return false;
    cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
      return true;
    }
    return err.ok(e, "cudaDeviceEnablePeerAccess");
  };
  DeviceMem a, b;
  Stream s;
  if (enable(dst, src) && enable(src, dst) && err.ok(cudaMalloc(a.out(), bytes), "cudaMalloc on source") &&
      err.ok(cudaStreamCreate(s.out()), "cudaStreamCreate") && err.ok(cudaSetDevice(dst), "cudaSetDevice") &&
      err.ok(cudaMalloc(b.out(), bytes), "cudaMalloc on destination") && err.ok(cudaSetDevice(src), "cudaSetDevice") &&
      err.ok(cudaMemsetAsync(a.get(), 1, bytes, s.get()), "cudaMemset")) {
    auto body = [&] { return cudaMemcpyPeerAsync(b.get(), dst, a.get(), src, bytes, s.get()); };
    Timing t = time_loop(s.get(), o.seconds, 3, 500, body, err);
    if (err.text().empty()) {
      j["reps"] = t.reps;
      j["gbps"] = gbps(static_cast<double>(bytes), t.reps, t.total_s);
      j["best_gbps"] = gbps(static_cast<double>(bytes), 1, t.best_s);
    }
  }
  return finish(j, err);
}

}  // namespace gpucheck
