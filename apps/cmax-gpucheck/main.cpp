// cmax-gpucheck: GPU checks as one JSON document (schema cmax.gpucheck.raw/1) on stdout, progress on
// stderr. cmax judges the numbers (src/health/gpu_judge.h); this program only measures. Exit codes
// are in usage() and docs/gpu-checks.md.

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cuda_util.h"
#include "json_out.h"
#include "options.h"
#include "steps.h"

namespace {

using gpucheck::Json;

constexpr int kExitUsage = 1;
constexpr int kExitNoDevice = 2;
constexpr int kExitCudaError = 3;

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// GPUs the NVIDIA kernel driver knows, whatever CUDA says: tells "no GPU" from "CUDA broken".
int driver_gpu_count() {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end; it.increment(ec))
    ++n;
  return n;
}

// The CUDA driver library cudart loads at its first call. Statically linked cudart reports its
// absence as "driver version is insufficient", which sends an operator looking for an upgrade; name
// the library instead. dlopen of an already loaded library only bumps its count.
std::string driver_library_problem() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {
    dlclose(h);
    return {};
  }
  const char* e = dlerror();
  return std::string("libcuda.so.1 (the NVIDIA driver's CUDA library) could not be loaded: ") + (e ? e : "not found");
}

void log(const std::string& line) { std::cerr << "cmax-gpucheck: " << line << '\n'; }

int emit(const Json& doc, int code) {
  std::cout << doc.dump() << '\n';
  return code;
}

// Runs one step, logs its outcome, and recovers the device when it failed.
template <class Step>
void step(Json& device_json, const char* key, int device, Step&& run) {
  Json r = run();
  const bool failed = r.contains("error");
  log("gpu" + std::to_string(device) + " " + key + ": " + (failed ? r.string_at("error") : std::string("done")));
  device_json[key] = std::move(r);
  if (failed) gpucheck::recover(device);
}

}  // namespace

int main(int argc, char** argv) {
  std::string error;
  auto options = gpucheck::parse_options(std::vector<std::string>(argv + 1, argv + argc), error);
  if (!options) {
    std::cerr << "cmax-gpucheck: " << error << "\n" << gpucheck::usage();
    return kExitUsage;
  }
  if (options->help) {
    std::cout << gpucheck::usage();
    return 0;
  }
  if (options->version) {
    std::cout << "cmax-gpucheck " << CMAX_VERSION << " (" << CMAX_CUDA_BUILD << ")\n";
    return 0;
  }
  // Ordinals in PCI bus order, as nvidia-smi numbers GPUs, unless the caller chose otherwise.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);

  Json doc = Json::object();
  doc["schema"] = "cmax.gpucheck.raw/1";
  doc["program"] = std::string("cmax-gpucheck ") + CMAX_VERSION;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  doc["runtime_version"] = cuda_version_text(runtime);
  doc["driver_version"] = driver ? cuda_version_text(driver) : std::string();
  Json& settings = doc["settings"];
  settings["seconds"] = options->seconds;
  settings["matmul_n"] = options->matmul_n;
  settings["check_n"] = options->check_n;
  settings["repeats"] = options->repeats;
  settings["membw_bytes"] = static_cast<unsigned long long>(options->membw_bytes);
  settings["transfer_bytes"] = static_cast<unsigned long long>(options->transfer_bytes);
  settings["steps"] = Json(options->steps);

  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  const int listed = driver_gpu_count();
  doc["driver_gpus"] = listed;
  if (e != cudaSuccess || count == 0) {
    // No driver at all or no device visible to this process (CUDA_VISIBLE_DEVICES, cgroups): nothing
    // to check here. Any other failure with GPUs on the bus is a broken CUDA stack: a finding.
    const bool absent = e == cudaSuccess || e == cudaErrorNoDevice || (e == cudaErrorInsufficientDriver && listed == 0);
    doc["status"] = absent ? "no_device" : "cuda_error";
    std::string why = e == cudaSuccess ? std::string("no CUDA device") : gpucheck::cuda_error_text(e);
    const std::string library = driver == 0 ? driver_library_problem() : std::string();
    if (!library.empty()) {
      why = "no NVIDIA driver: " + library + " (" + why + ")";
      doc["missing_library"] = "libcuda.so.1";
    }
    doc["error"] = why;
    doc["devices"] = Json::array();
    doc["peers"] = Json::array();
    log(doc.string_at("error") + " (" + std::to_string(listed) + " GPUs listed by the NVIDIA driver)");
    return emit(doc, absent ? kExitNoDevice : kExitCudaError);
  }
  doc["status"] = "ok";
  doc["device_count"] = count;

  std::vector<int> devices = options->devices;
  if (devices.empty())
    for (int d = 0; d < count; ++d) devices.push_back(d);

  Json devs = Json::array();
  std::vector<int> usable;
  for (int d : devices) {
    if (d >= count) {
      Json missing = Json::object();
      missing["index"] = d;
      missing["error"] = "no such device: " + std::to_string(count) + " visible";
      devs.push_back(std::move(missing));
      continue;
    }
    Json dj = gpucheck::device_info(d);
    if (dj.contains("error")) {
      devs.push_back(std::move(dj));
      continue;
    }
    usable.push_back(d);
    log("gpu" + std::to_string(d) + ": " + dj.string_at("name") + " " + dj.string_at("pci_bus_id"));
    const auto& o = *options;
    if (o.wants("matmul")) step(dj, "matmul", d, [&] { return gpucheck::run_matmul(d, o); });
    if (o.wants("correctness")) step(dj, "correctness", d, [&] { return gpucheck::run_correctness(d, o); });
    if (o.wants("membw")) step(dj, "membw", d, [&] { return gpucheck::run_membw(d, o); });
    if (o.wants("pcie")) {
      step(dj, "pcie_h2d", d, [&] { return gpucheck::run_pcie(d, o, true); });
      step(dj, "pcie_d2h", d, [&] { return gpucheck::run_pcie(d, o, false); });
    }
    devs.push_back(std::move(dj));
  }
  doc["devices"] = std::move(devs);

  Json peers = Json::array();
  if (options->wants("peer"))
    for (int s : usable)
      for (int t : usable) {
        if (s == t) continue;
        Json p = gpucheck::run_peer(s, t, *options);
        if (p.contains("error")) {
          log("gpu" + std::to_string(s) + "->gpu" + std::to_string(t) + ": " + p.string_at("error"));
          gpucheck::recover(s);
          gpucheck::recover(t);
        }
        peers.push_back(std::move(p));
      }
  doc["peers"] = std::move(peers);
  return emit(doc, 0);
}
