#include "health/gpu_thresholds.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace cmax::health {

namespace {

using nlohmann::json;

// data/gpu-thresholds.json, verbatim. src/health/CMakeLists.txt belongs to the health module's
// owner; until it embeds the file like min-versions.json, this copy stands in, and
// tests/unit/health/test_gpu_judge.cpp fails when it drifts from the file.
constexpr std::string_view kBuiltinGpuThresholds = R"json(
{
  "schema": "cmax.gpu-thresholds/1",
  "notes": [
    "Floors for cmax-gpucheck's measurements, per GPU model. A device matches the entry whose 'match' is the longest substring of its CUDA name ('NVIDIA GH200 480GB' matches GH200, not H200).",
    "A value below fail_below fails, below warn_below warns; an absent or null floor is unset: the value is reported, unverified, never a silent pass.",
    "membw_gbps is a device-to-device copy kernel counting read + write bytes; fail_below is 70% and warn_below 75% of the HBM spec ('spec').",
    "pcie_*_gbps is cudaMemcpyAsync of 256 MiB with pinned host memory; Gen5 x16 reaches ~50-55 GB/s, Gen4 x16 ~25 GB/s. A NUMA-remote buffer or a link trained down (x8, Gen3) shows here.",
    "nvlink_gbps is cudaMemcpyPeerAsync, one direction; fail_below is 2/3 and warn_below 3/4 of the per-direction NVLink spec. Unset for PCIe and NVL-bridge models, whose peer path may be PCIe.",
    "matmul_tflops is unset everywhere: the kernel (matmul_kernel) is a hand-written WMMA FP16 GEMM with FP32 accumulate, not cuBLAS, and reaches a fraction of the tensor-core peak. Its value is judged against the other GPUs of the same model on the node (node_relative_min of their median) until a floor is calibrated from a recorded run (docs/PERFORMANCE.md)."
  ],
  "sources": [
    "NVIDIA H200 datasheet: 4.8 TB/s HBM3e, NVLink 900 GB/s (bidirectional), PCIe Gen5",
    "NVIDIA H100 datasheet: SXM 3.35 TB/s, PCIe 2.0 TB/s, NVL 3.9 TB/s; NVLink 900 GB/s (SXM)",
    "NVIDIA A100 datasheet: 80GB SXM 2.039 TB/s, 80GB PCIe 1.935 TB/s, 40GB 1.555 TB/s; NVLink 600 GB/s; PCIe Gen4",
    "NVIDIA L40S datasheet: 864 GB/s GDDR6, PCIe Gen4 x16, no NVLink",
    "NVIDIA B200 / GB200 NVL72: 8 TB/s HBM3e per GPU, NVLink 5 1.8 TB/s (bidirectional)",
    "NVIDIA GH200: 4 TB/s HBM3 (96 GB) or 4.9 TB/s HBM3e (144 GB); host link NVLink-C2C"
  ],
  "matmul_kernel": "wmma_fp16_fp32acc_128x128x32",
  "node_relative_min": 0.85,
  "models": [
    {"match": "H200", "model": "H200 SXM (HGX)",
     "membw_gbps": {"spec": 4800, "fail_below": 3360, "warn_below": 3600},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": {"spec": 450, "fail_below": 300, "warn_below": 337},
     "matmul_tflops": null},
    {"match": "H200 NVL", "model": "H200 NVL (PCIe card)",
     "membw_gbps": {"spec": 4800, "fail_below": 3360, "warn_below": 3600},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "GH200", "model": "GH200 Grace Hopper",
     "membw_gbps": {"spec": 4000, "fail_below": 2800, "warn_below": 3000},
     "pcie_h2d_gbps": null, "pcie_d2h_gbps": null, "nvlink_gbps": null, "matmul_tflops": null,
     "notes": "Host link is NVLink-C2C, not PCIe: no floor until measured."},
    {"match": "H100 80GB HBM3", "model": "H100 SXM5 80GB (HGX)",
     "membw_gbps": {"spec": 3350, "fail_below": 2345, "warn_below": 2512},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": {"spec": 450, "fail_below": 300, "warn_below": 337},
     "matmul_tflops": null},
    {"match": "H100 PCIe", "model": "H100 PCIe 80GB",
     "membw_gbps": {"spec": 2000, "fail_below": 1400, "warn_below": 1500},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "H100 NVL", "model": "H100 NVL 94GB",
     "membw_gbps": {"spec": 3900, "fail_below": 2730, "warn_below": 2925},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "A100-SXM4-80GB", "model": "A100 SXM4 80GB (HGX)",
     "membw_gbps": {"spec": 2039, "fail_below": 1427, "warn_below": 1529},
     "pcie_h2d_gbps": {"fail_below": 18, "warn_below": 22},
     "pcie_d2h_gbps": {"fail_below": 18, "warn_below": 22},
     "nvlink_gbps": {"spec": 300, "fail_below": 200, "warn_below": 225},
     "matmul_tflops": null},
    {"match": "A100-SXM4-40GB", "model": "A100 SXM4 40GB (HGX)",
     "membw_gbps": {"spec": 1555, "fail_below": 1088, "warn_below": 1166},
     "pcie_h2d_gbps": {"fail_below": 18, "warn_below": 22},
     "pcie_d2h_gbps": {"fail_below": 18, "warn_below": 22},
     "nvlink_gbps": {"spec": 300, "fail_below": 200, "warn_below": 225},
     "matmul_tflops": null},
    {"match": "A100-PCIE", "model": "A100 PCIe 40GB",
     "membw_gbps": {"spec": 1555, "fail_below": 1088, "warn_below": 1166},
     "pcie_h2d_gbps": {"fail_below": 18, "warn_below": 22},
     "pcie_d2h_gbps": {"fail_below": 18, "warn_below": 22},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "A100 80GB PCIe", "model": "A100 PCIe 80GB",
     "membw_gbps": {"spec": 1935, "fail_below": 1354, "warn_below": 1451},
     "pcie_h2d_gbps": {"fail_below": 18, "warn_below": 22},
     "pcie_d2h_gbps": {"fail_below": 18, "warn_below": 22},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "L40S", "model": "L40S",
     "membw_gbps": {"spec": 864, "fail_below": 605, "warn_below": 648},
     "pcie_h2d_gbps": {"fail_below": 18, "warn_below": 22},
     "pcie_d2h_gbps": {"fail_below": 18, "warn_below": 22},
     "nvlink_gbps": null, "matmul_tflops": null},
    {"match": "B200", "model": "B200 (HGX)",
     "membw_gbps": {"spec": 8000, "fail_below": 5600, "warn_below": 6000},
     "pcie_h2d_gbps": {"fail_below": 40, "warn_below": 48},
     "pcie_d2h_gbps": {"fail_below": 40, "warn_below": 48},
     "nvlink_gbps": {"spec": 900, "fail_below": 600, "warn_below": 675},
     "matmul_tflops": null,
     "notes": "Runs the compute_90 PTX JIT-compiled; no B200 run recorded yet."},
    {"match": "GB200", "model": "GB200 (NVL72 compute tray)",
     "membw_gbps": {"spec": 8000, "fail_below": 5600, "warn_below": 6000},
     "pcie_h2d_gbps": null, "pcie_d2h_gbps": null,
     "nvlink_gbps": {"spec": 900, "fail_below": 600, "warn_below": 675},
     "matmul_tflops": null,
     "notes": "Host link is NVLink-C2C, not PCIe: no floor until measured. Runs the compute_90 PTX JIT-compiled."}
  ]
}
)json";

Result<GpuFloor> floor_of(const json& entry, const char* key, const std::string& where) {
  GpuFloor f;
  auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return f;
  if (!it->is_object()) return fail("{}: '{}' must be an object with fail_below / warn_below, or null", where, key);
  for (const char* k : {"fail_below", "warn_below", "spec"}) {
    auto v = it->find(k);
    if (v == it->end() || v->is_null()) continue;
    if (!v->is_number() || v->get<double>() < 0)
      return fail("{}: '{}.{}' must be a non-negative number", where, key, k);
    (std::string_view(k) == "fail_below" ? f.fail_below : std::string_view(k) == "warn_below" ? f.warn_below : f.spec) =
        v->get<double>();
  }
  return f;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<GpuThresholds> parse_gpu_thresholds(std::string_view text, std::string_view origin) {
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return fail("read GPU thresholds {}: not valid JSON; fix the file or drop the option", origin);
  if (!doc.is_object() || str(doc, "schema") != "cmax.gpu-thresholds/1")
    return fail("read GPU thresholds {}: schema must be \"cmax.gpu-thresholds/1\"", origin);
  GpuThresholds t;
  t.origin = std::string(origin);
  t.matmul_kernel = str(doc, "matmul_kernel");
  if (auto it = doc.find("node_relative_min"); it != doc.end()) {
    if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 1)
      return fail("read GPU thresholds {}: node_relative_min must be a number in (0, 1]", origin);
    t.node_relative_min = it->get<double>();
  }
  auto models = doc.find("models");
  if (models == doc.end() || !models->is_array())
    return fail("read GPU thresholds {}: 'models' must be an array", origin);
  for (std::size_t i = 0; i < models->size(); ++i) {
    const json& m = (*models)[i];
    std::string where = fmt::format("read GPU thresholds {}: models[{}]", origin, i);
    if (!m.is_object() || str(m, "match").empty()) return fail("{}: needs a non-empty string 'match'", where);
    GpuModelThresholds e;
    e.match = str(m, "match");
    e.model = str(m, "model");
    e.notes = str(m, "notes");
    where += " (" + e.match + ")";
    struct Field {
      const char* key;
      GpuFloor GpuModelThresholds::*floor;
    };
    for (auto [key, member] : {Field{"matmul_tflops", &GpuModelThresholds::matmul_tflops},
                               Field{"membw_gbps", &GpuModelThresholds::membw_gbps},
                               Field{"pcie_h2d_gbps", &GpuModelThresholds::pcie_h2d_gbps},
                               Field{"pcie_d2h_gbps", &GpuModelThresholds::pcie_d2h_gbps},
                               Field{"nvlink_gbps", &GpuModelThresholds::nvlink_gbps}}) {
      auto f = floor_of(m, key, where);
      if (!f) return Unexpected<Error>{f.error()};
      e.*member = *f;
    }
    t.models.push_back(std::move(e));
  }
  return t;
}

std::string_view builtin_gpu_thresholds_text() { return kBuiltinGpuThresholds.substr(1); }

Result<GpuThresholds> builtin_gpu_thresholds() {
  return parse_gpu_thresholds(builtin_gpu_thresholds_text(), "built-in data/gpu-thresholds.json");
}

Result<GpuThresholds> load_gpu_thresholds_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail("read GPU thresholds {}: cannot open the file; check the path", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_gpu_thresholds(ss.str(), path);
}

const GpuModelThresholds* match_gpu_model(const GpuThresholds& t, std::string_view device_name) {
  const GpuModelThresholds* best = nullptr;
  for (const auto& m : t.models)
    if (device_name.find(m.match) != std::string_view::npos && (!best || m.match.size() > best->match.size()))
      best = &m;
  return best;
}

}  // namespace cmax::health
