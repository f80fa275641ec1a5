// NVIDIA GPUs and NVSwitches on the PCI bus, the loaded driver (/proc/driver/nvidia/version),
// relevant kernel modules and the daemons that should run beside them.

#include <map>

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

void collect_pci(const CollectContext& ctx, Facts& facts) {
  auto devices = ctx.host.list_dir("/sys/bus/pci/devices");
  if (!devices) {
    if (!ctx.host.exists("/sys/bus/pci"))
      facts.present("gpu.nvidia.count", "0", "/sys/bus/pci/devices", "no PCI bus in sysfs");
    else
      facts.error("gpu.nvidia.count", "/sys/bus/pci/devices", devices.error().message);
    return;
  }
  std::vector<std::string> gpus, nvswitches, nics;
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
  }
  std::string src = "/sys/bus/pci/devices/*/{vendor,class}";
  facts.present("gpu.nvidia.count", std::to_string(gpus.size()), src);
  if (!gpus.empty()) facts.present("gpu.nvidia.pci", fmt::format("{}", fmt::join(gpus, " ")), src);
  facts.present("gpu.nvswitch.count", std::to_string(nvswitches.size()), src);
  facts.present("nic.mellanox.count", std::to_string(nics.size()), src);
  if (!nics.empty()) facts.present("nic.mellanox.pci", fmt::format("{}", fmt::join(nics, " ")), src);
}

// "Video BIOS: 96.00.74.00.01" of every GPU the driver lists, as a counted multiset so nodes compare
// by equality ("96.00.74.00.01 x8").
void collect_vbios(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kGpus = "/proc/driver/nvidia/gpus";
  auto dirs = ctx.host.list_dir(kGpus);
  if (!dirs || dirs->empty()) return;
  std::map<std::string, int> versions;
  for (const auto& d : *dirs) {
    auto text = read_optional(ctx, fmt::format("{}/{}/information", kGpus, d.name), nullptr, 64 * 1024);
    if (!text) continue;
    for (auto line : core::split_lines(*text)) {
      if (!line.starts_with("Video BIOS:")) continue;
      ++versions[std::string(core::trim(line.substr(11)))];
    }
  }
  if (versions.empty()) return;
  std::vector<std::string> parts;
  for (const auto& [v, n] : versions) parts.push_back(fmt::format("{} x{}", v, n));
  facts.present("gpu.vbios.versions", fmt::format("{}", fmt::join(parts, ", ")), std::string(kGpus) + "/*/information");
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
