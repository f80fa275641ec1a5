// NVIDIA GPUs and NVSwitches on the PCI bus, the loaded driver (/proc/driver/nvidia/version),
// relevant kernel modules and the daemons that should run beside them.

#include <map>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/collectors/collector.h"
#include "audit/parse/nvidia_version.h"
#include "audit/parse/sysfs.h"
#include "core/strings.h"

namespace cmax::audit {
namespace {

constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorMellanox = 0x15b3;
constexpr unsigned kVendorAmd = 0x1002;

// AMD Instinct accelerators by PCI device id (the kernel's amdgpu id table; lspci names them
// "Aqua Vanjaram [Instinct MI300X]"). The model decides the ROCm floor (AMD-SB-6024/6027).
struct AmdModel {
  unsigned device;
  std::string_view model;
};
constexpr AmdModel kAmdModels[] = {
    {0x738c, "MI100"},  {0x738e, "MI100"},  {0x7408, "MI250X"}, {0x740c, "MI250"},  {0x740f, "MI210"},
    {0x74a0, "MI300A"}, {0x74a1, "MI300X"}, {0x74a2, "MI308X"}, {0x74a5, "MI325X"}, {0x74b5, "MI300X"},
    {0x75a0, "MI350X"}, {0x75a3, "MI355X"},
};

// NVIDIA (Mellanox) BlueField DPUs by the device id of their integrated ConnectX function.
constexpr AmdModel kBlueFields[] = {
    {0xa2d2, "BlueField"}, {0xa2d6, "BlueField-2"}, {0xa2dc, "BlueField-3"}, {0xa2d9, "BlueField-3 Lx"},
    {0xa2df, "BlueField-4"},
};

std::string model_of(std::span<const AmdModel> table, unsigned device, std::string_view fallback) {
  for (const auto& m : table)
    if (m.device == device) return std::string(m.model);
  return fmt::format("{} 0x{:04x}", fallback, device);
}

void collect_pci(const CollectContext& ctx, Facts& facts) {
  auto devices = ctx.host.list_dir("/sys/bus/pci/devices");
  if (!devices) {
    if (!ctx.host.exists("/sys/bus/pci")) {
      facts.present("gpu.nvidia.count", "0", "/sys/bus/pci/devices", "no PCI bus in sysfs");
      facts.present("gpu.amd.count", "0", "/sys/bus/pci/devices", "no PCI bus in sysfs");
      facts.absent("nic.bluefield", "/sys/bus/pci/devices", "no PCI bus in sysfs");
    } else
      facts.error("gpu.nvidia.count", "/sys/bus/pci/devices", devices.error().message);
    return;
  }
  std::vector<std::string> gpus, nvswitches, nics, amd, bluefield;
  std::map<std::string, int> amd_models;
  for (const auto& d : *devices) {
    std::string base = "/sys/bus/pci/devices/" + d.name;
    auto vendor = read_optional(ctx, base + "/vendor", nullptr, 64);
    auto klass = read_optional(ctx, base + "/class", nullptr, 64);
    if (!vendor || !klass) continue;
    auto v = core::parse_uint(*vendor, 16);
    auto c = core::parse_uint(*klass, 16);
    if (!v || !c) continue;
    unsigned cls = static_cast<unsigned>(*c >> 8);  // class and subclass
    if (*v == kVendorNvidia && (cls == 0x0300 || cls == 0x0302)) gpus.push_back(d.name);
    if (*v == kVendorNvidia && cls == 0x0680) nvswitches.push_back(d.name);
    if (*v == kVendorMellanox && (cls == 0x0200 || cls == 0x0207)) nics.push_back(d.name);
    if (*v != kVendorAmd && *v != kVendorMellanox) continue;
    auto device_text = read_optional(ctx, base + "/device", nullptr, 64);
    auto device = device_text ? core::parse_uint(*device_text, 16) : std::nullopt;
    if (!device) continue;
    if (*v == kVendorAmd && (cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200)) {
      std::string model = model_of(kAmdModels, static_cast<unsigned>(*device), "AMD GPU");
      ++amd_models[model];
      amd.push_back(fmt::format("{}={}", d.name, model));
    }
    if (*v == kVendorMellanox && (cls == 0x0200 || cls == 0x0207)) {
      for (const auto& b : kBlueFields)
        if (b.device == *device) bluefield.push_back(fmt::format("{}={}", d.name, b.model));
    }
  }
  std::string src = "/sys/bus/pci/devices/*/{vendor,class}";
  facts.present("gpu.nvidia.count", std::to_string(gpus.size()), src);
  if (!gpus.empty()) facts.present("gpu.nvidia.pci", fmt::format("{}", fmt::join(gpus, " ")), src);
  facts.present("gpu.nvswitch.count", std::to_string(nvswitches.size()), src);
  facts.present("nic.mellanox.count", std::to_string(nics.size()), src);
  if (!nics.empty()) facts.present("nic.mellanox.pci", fmt::format("{}", fmt::join(nics, " ")), src);
  std::string dev_src = "/sys/bus/pci/devices/*/{vendor,class,device}";
  facts.present("gpu.amd.count", std::to_string(amd.size()), dev_src);
  if (!amd.empty()) {
    std::vector<std::string> counted;
    for (const auto& [m, n] : amd_models) counted.push_back(fmt::format("{} x{}", m, n));
    facts.present("gpu.amd.models", fmt::format("{}", fmt::join(counted, ", ")), dev_src,
                  fmt::format("{}", fmt::join(amd, " ")));
  }
  if (bluefield.empty())
    facts.absent("nic.bluefield", dev_src, "no BlueField DPU (15b3:a2d2/a2d6/a2dc/a2d9/a2df) on the PCI bus");
  else
    facts.present("nic.bluefield", fmt::format("{}", fmt::join(bluefield, " ")), dev_src);
}

// "Video BIOS: 96.00.74.00.01" and "Model: NVIDIA H100 80GB HBM3" of every GPU the driver lists,
// as counted multisets so nodes compare by equality ("96.00.74.00.01 x8").
void collect_vbios(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kGpus = "/proc/driver/nvidia/gpus";
  auto dirs = ctx.host.list_dir(kGpus);
  if (!dirs || dirs->empty()) return;
  std::map<std::string, int> versions, models;
  for (const auto& d : *dirs) {
    auto text = read_optional(ctx, fmt::format("{}/{}/information", kGpus, d.name), nullptr, 64 * 1024);
    if (!text) continue;
    for (auto line : core::split_lines(*text)) {
      if (line.starts_with("Video BIOS:")) ++versions[std::string(core::trim(line.substr(11)))];
      if (line.starts_with("Model:")) ++models[std::string(core::trim(line.substr(6)))];
    }
  }
  auto counted = [](const std::map<std::string, int>& m) {
    std::vector<std::string> parts;
    for (const auto& [v, n] : m) parts.push_back(fmt::format("{} x{}", v, n));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  std::string src = std::string(kGpus) + "/*/information";
  if (!versions.empty()) facts.present("gpu.vbios.versions", counted(versions), src);
  if (!models.empty()) facts.present("gpu.nvidia.models", counted(models), src);
}

void collect_driver(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kPath = "/proc/driver/nvidia/version";
  std::string err;
  auto text = read_optional(ctx, kPath, &err, 64 * 1024);
  if (!text) {
    if (err.empty())
      facts.absent("gpu.driver.version", std::string(kPath), "the NVIDIA kernel driver is not loaded");
    else
      facts.error("gpu.driver.version", std::string(kPath), err);
    return;
  }
  auto info = parse_nvidia_version(*text);
  if (!info) {
    facts.error("gpu.driver.version", std::string(kPath),
                fmt::format("no 'NVRM version:' line with a version: {}", core::clip(core::trim(*text), 120)));
    return;
  }
  facts.present("gpu.driver.version", info->version, std::string(kPath), core::clip(core::trim(*text), 300));
  facts.present("gpu.driver.flavor", info->open_module ? "open" : "proprietary", std::string(kPath),
                "'Open Kernel Module' in the NVRM version line");
  collect_vbios(ctx, facts);
}

void collect_modules(const CollectContext& ctx, Facts& facts) {
  std::string err;
  auto text = read_optional(ctx, "/proc/modules", &err, 4u << 20);
  if (!text) {
    if (err.empty()) facts.absent("kernel.modules", "/proc/modules", "no /proc/modules");
    else facts.error("kernel.modules", "/proc/modules", err);
    return;
  }
  static constexpr std::string_view kInteresting[] = {
      "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem", "nv_peer_mem", "nvidia_fs",
      "ib_core", "mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_cm", "efa", "gdrdrv", "lustre", "nfs"};
  std::vector<std::string> loaded;
  for (const auto& m : parse_proc_modules(*text))
    for (auto k : kInteresting)
      if (m == k) loaded.push_back(m);
  facts.present("kernel.modules", fmt::format("{}", fmt::join(loaded, " ")), "/proc/modules",
                "only modules cmax looks for are listed");
}

void collect_daemons(const CollectContext& ctx, Facts& facts) {
  static constexpr std::string_view kDaemons[] = {"nvidia-persiste", "nv-hostengine", "nv-fabricmanage",
                                                  "dcgm-exporter", "slurmd", "slurmctld", "munged",
                                                  "kubelet", "nvidia-imex"};
  if (!ctx.host.is_live()) {
    for (auto d : kDaemons)
      facts.error(fmt::format("proc.{}", d), "/proc/*/comm", "processes of a host root image cannot be seen");
    return;
  }
  auto procs = ctx.host.list_dir("/proc");
  if (!procs) return;
  std::map<std::string_view, std::string> pids;
  for (const auto& p : *procs) {
    if (p.name.empty() || !(p.name[0] >= '0' && p.name[0] <= '9')) continue;
    auto comm = read_optional(ctx, "/proc/" + p.name + "/comm", nullptr, 64);
    if (!comm) continue;
    auto name = core::trim(*comm);
    for (auto d : kDaemons)
      if (name == d && !pids.count(d)) pids[d] = p.name;
  }
  for (auto d : kDaemons) {
    auto key = fmt::format("proc.{}", d);
    if (pids.count(d))
      facts.present(key, pids[d], "/proc/*/comm", "pid");
    else
      facts.absent(key, "/proc/*/comm", fmt::format("no process named {}", d));
  }
}

}  // namespace

void collect_gpu(const CollectContext& ctx, Facts& facts) {
  collect_pci(ctx, facts);
  collect_driver(ctx, facts);
  collect_modules(ctx, facts);
  collect_daemons(ctx, facts);
}

}  // namespace cmax::audit
