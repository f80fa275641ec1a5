// The platform under the GPUs: CPU architecture and virtualisation (is this a guest, is nested
// virtualisation handed to the tenant), NUMA nodes (coherent GPU memory shown as system memory),
// the NVIDIA driver's parameters, the Arm SMMU's command-queue virtualisation, the AMD GPU driver
// and ROCm, and the BlueField DPU's host-side surface (RShim, tmfifo, its mode, its controller).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/collectors/collector.h"
#include "audit/parse/platform.h"
#include "core/strings.h"

namespace cmax::audit {
namespace {

constexpr std::string_view kCpuinfo = "/proc/cpuinfo";

// Hypervisors as DMI names them (sys_vendor, product_name, bios_vendor), lower case.
struct VirtMark {
  std::string_view needle;
  std::string_view type;
};
constexpr VirtMark kVirtMarks[] = {
    {"qemu", "kvm"},      {"kvm", "kvm"},          {"openstack", "kvm"},  {"standard pc (", "kvm"},
    {"amazon ec2", "amazon"}, {"google compute engine", "google"}, {"microsoft corporation virtual machine", "microsoft"},
    {"vmware", "vmware"}, {"xen", "xen"},          {"cloud hypervisor", "kvm"}, {"firecracker", "kvm"},
};

void collect_cpu_and_virt(const CollectContext& ctx, Facts& facts) {
  std::string err;
  auto text = read_optional(ctx, kCpuinfo, &err, 8u << 20);
  CpuInfo cpu;
  if (text) cpu = parse_cpuinfo(*text);
  // The architecture: kernel.arch where the kernel has it, else what cpuinfo implies.
  if (auto arch = read_optional(ctx, "/proc/sys/kernel/arch", nullptr, 64); arch && !core::trim(*arch).empty())
    facts.present("cpu.arch", std::string(core::trim(*arch)), "/proc/sys/kernel/arch");
  else if (!cpu.arch.empty())
    facts.present("cpu.arch", cpu.arch, std::string(kCpuinfo), "implied by its fields (vendor_id / CPU implementer)");
  else
    facts.error("cpu.arch", std::string(kCpuinfo), text ? "neither x86 nor Arm fields in /proc/cpuinfo" : (err.empty() ? "no /proc/cpuinfo" : err));

  if (!text) {
    facts.error("cpu.virt_flags", std::string(kCpuinfo), err.empty() ? "no /proc/cpuinfo" : err);
  } else {
    std::vector<std::string> virt;
    for (const char* f : {"vmx", "svm"})
      if (cpu.flags.count(f)) virt.emplace_back(f);
    if (virt.empty())
      facts.absent("cpu.virt_flags", std::string(kCpuinfo), "no vmx or svm flag: the CPU offers no hardware virtualisation here");
    else
      facts.present("cpu.virt_flags", fmt::format("{}", fmt::join(virt, " ")), std::string(kCpuinfo), "flags");
  }

  // What kind of guest: DMI names the hypervisor; the x86 'hypervisor' flag proves a guest.
  std::string dmi;
  for (const char* f : {"sys_vendor", "product_name", "bios_vendor", "board_vendor"})
    if (auto v = read_optional(ctx, fmt::format("/sys/class/dmi/id/{}", f), nullptr, 256))
      dmi += core::to_lower(core::trim(*v)) + " ";
  std::string type;
  for (const auto& m : kVirtMarks)
    if (type.empty() && dmi.find(m.needle) != std::string::npos) type = std::string(m.type);
  if (auto xen = read_optional(ctx, "/sys/hypervisor/type", nullptr, 64); xen && core::trim(*xen) == "xen") type = "xen";
  const bool hv_flag = cpu.flags.count("hypervisor") > 0;
  if (!type.empty())
    facts.present("virt.type", type, "/sys/class/dmi/id/*", core::clip(core::trim(dmi), 160));
  else if (hv_flag)
    facts.present("virt.type", "unknown", std::string(kCpuinfo), "the 'hypervisor' flag says guest; DMI names no hypervisor");
  else if (cpu.arch == "x86_64")
    facts.present("virt.type", "none", "/proc/cpuinfo, /sys/class/dmi/id/*",
                  "no 'hypervisor' flag and DMI names no hypervisor: bare metal");
  else
    facts.error("virt.type", "/sys/class/dmi/id/*",
                text ? "an Arm CPU has no 'hypervisor' flag and DMI names no hypervisor: guest or bare metal is unknown"
                     : "no /proc/cpuinfo");

  if (ctx.host.exists("/dev/kvm"))
    facts.present("kvm.device", "/dev/kvm", "/dev/kvm");
  else
    facts.absent("kvm.device", "/dev/kvm", "no /dev/kvm: KVM is not available to this host's users");
  bool nested_seen = false;
  for (const char* mod : {"kvm_intel", "kvm_amd"}) {
    std::string path = fmt::format("/sys/module/{}/parameters/nested", mod);
    std::string e;
    if (auto v = read_optional(ctx, path, &e, 64)) {
      facts.present("kvm.nested", std::string(core::trim(*v)), path, mod);
      nested_seen = true;
      break;
    } else if (!e.empty()) {
      facts.error("kvm.nested", path, e);
      nested_seen = true;
      break;
    }
  }
  if (!nested_seen)
    facts.absent("kvm.nested", "/sys/module/kvm_{intel,amd}/parameters/nested", "no KVM module loaded");
}

void collect_numa(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kNodes = "/sys/devices/system/node";
  auto list = ctx.host.list_dir(kNodes);
  if (!list) {
    if (ctx.host.exists(kNodes)) facts.error("numa.nodes", std::string(kNodes), list.error().message);
    else facts.absent("numa.nodes", std::string(kNodes), "no NUMA information in sysfs");
    return;
  }
  std::vector<std::string> all, memory_only;
  std::vector<std::string> unreadable;
  for (const auto& e : *list) {
    if (!e.name.starts_with("node") || e.name.size() < 5 || !core::parse_uint(std::string_view(e.name).substr(4))) continue;
    std::string base = fmt::format("{}/{}", kNodes, e.name);
    auto cpulist = read_optional(ctx, base + "/cpulist", nullptr, 64 * 1024);
    auto meminfo = read_optional(ctx, base + "/meminfo", nullptr, 64 * 1024);
    auto cpus = cpulist ? count_cpulist(*cpulist) : std::nullopt;
    auto kb = meminfo ? parse_node_memtotal_kb(*meminfo) : std::nullopt;
    if (!cpus || !kb) {
      unreadable.push_back(e.name);
      continue;
    }
    std::string entry = fmt::format("{}:cpus={}:mem_kb={}", e.name, *cpus, *kb);
    all.push_back(entry);
    if (*cpus == 0 && *kb > 0) memory_only.push_back(entry);
  }
  std::string src = std::string(kNodes) + "/node*/{cpulist,meminfo}";
  std::string note = unreadable.empty() ? std::string() : fmt::format("unreadable: {}", fmt::join(unreadable, " "));
  if (all.empty()) {
    facts.error("numa.nodes", src, unreadable.empty() ? "no node directories" : note);
    return;
  }
  facts.present("numa.nodes", fmt::format("{}", fmt::join(all, " ")), src, note);
  if (memory_only.empty())
    facts.absent("numa.memory_only_nodes", src, "every NUMA node with memory has CPUs");
  else
    facts.present("numa.memory_only_nodes", fmt::format("{}", fmt::join(memory_only, " ")), src, note);
}

// The NVIDIA driver's live parameters and the modprobe options that set them at load.
void collect_nvidia_params(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kParams = "/proc/driver/nvidia/params";
  std::string err;
  if (auto text = read_optional(ctx, kParams, &err, 256 * 1024)) {
    auto params = parse_nvidia_params(*text);
    for (auto [name, key] : {std::pair<std::string_view, std::string_view>{"RmProfilingAdminOnly", "gpu.params.profiling_admin_only"},
                             {"CoherentGPUMemoryMode", "gpu.params.coherent_memory_mode"}}) {
      auto it = params.find(name);
      if (it != params.end())
        facts.present(std::string(key), it->second, std::string(kParams), std::string(name));
      else
        facts.absent(std::string(key), std::string(kParams), fmt::format("the loaded driver has no {} parameter", name));
    }
  } else if (!err.empty()) {
    facts.error("gpu.params.profiling_admin_only", std::string(kParams), err);
    facts.error("gpu.params.coherent_memory_mode", std::string(kParams), err);
  } else {
    facts.absent("gpu.params.profiling_admin_only", std::string(kParams), "the NVIDIA driver is not loaded");
    facts.absent("gpu.params.coherent_memory_mode", std::string(kParams), "the NVIDIA driver is not loaded");
  }
  // modprobe.d: later files (by name) override earlier ones, as modprobe reads them.
  std::map<std::string, std::pair<std::string, std::string>> found;  // option -> value, file
  for (std::string_view dir : {"/lib/modprobe.d", "/usr/lib/modprobe.d", "/etc/modprobe.d"}) {
    auto list = ctx.host.list_dir(dir);
    if (!list) continue;
    for (const auto& e : *list) {
      if (!e.name.ends_with(".conf")) continue;
      std::string path = fmt::format("{}/{}", dir, e.name);
      auto text = read_optional(ctx, path, nullptr, 256 * 1024);
      if (!text) continue;
      for (const auto& [k, v] : parse_modprobe_options(*text)) found[k] = {v, path};
    }
  }
  for (auto [opt, key] : {std::pair<std::string_view, std::string_view>{"nvidia.NVreg_RestrictProfilingToAdminUsers", "gpu.modprobe.restrict_profiling"},
                          {"nvidia.NVreg_CoherentGPUMemoryMode", "gpu.modprobe.coherent_memory_mode"}}) {
    auto it = found.find(std::string(opt));
    if (it != found.end())
      facts.present(std::string(key), it->second.first, it->second.second, std::string(opt));
    else
      facts.absent(std::string(key), "/etc/modprobe.d/*.conf", fmt::format("no `options {}` line", opt));
  }
}

// Arm SMMUv3 and NVIDIA Grace's command-queue virtualisation (CMDQV / VCMDQ): in a guest, the
// tegra241-cmdqv driver bound to a device means invalidations go to a queue of its own.
void collect_smmu(const CollectContext& ctx, Facts& facts) {
  std::vector<std::string> units;
  if (auto list = ctx.host.list_dir("/sys/class/iommu"))
    for (const auto& e : *list) units.push_back(e.name);
  if (units.empty())
    facts.absent("iommu.units", "/sys/class/iommu", "no IOMMU unit in /sys/class/iommu");
  else
    facts.present("iommu.units", fmt::format("{}", fmt::join(units, " ")), "/sys/class/iommu");
  std::vector<std::string> cmdqv;
  for (std::string_view dir : {"/sys/bus/platform/drivers/tegra241_cmdqv", "/sys/bus/platform/drivers/tegra241-cmdqv"}) {
    auto list = ctx.host.list_dir(dir);
    if (!list) continue;
    for (const auto& e : *list)
      if (e.is_symlink && e.name != "module" && e.name != "bind" && e.name != "unbind" && e.name != "uevent")
        cmdqv.push_back(fmt::format("{}/{}", dir, e.name));
    if (cmdqv.empty()) cmdqv.push_back(std::string(dir) + " (driver, no device bound)");
  }
  if (cmdqv.empty())
    facts.absent("smmu.cmdqv", "/sys/bus/platform/drivers/tegra241*cmdqv", "no tegra241-cmdqv driver");
  else
    facts.present("smmu.cmdqv", fmt::format("{}", fmt::join(cmdqv, " ")), "/sys/bus/platform/drivers/tegra241*cmdqv");
}

// AMD's driver release as its package repository names it: "repo.radeon.com/amdgpu/31.40/ubuntu".
std::string radeon_release(std::string_view text) {
  constexpr std::string_view kRepo = "repo.radeon.com/amdgpu/";
  for (auto at = text.find(kRepo); at != std::string_view::npos; at = text.find(kRepo, at + 1)) {
    auto rest = text.substr(at + kRepo.size());
    auto end = rest.find_first_not_of("0123456789.");
    auto rel = rest.substr(0, end);
    if (!rel.empty() && rel.front() != '.' && rel.find('.') != std::string_view::npos) return std::string(rel);
  }
  return {};
}

void collect_amd(const CollectContext& ctx, Facts& facts) {
  // The amdgpu module's own version (AMD's out-of-tree amdgpu-dkms sets it, e.g. 6.12.12; the
  // in-kernel driver has none). The bulletins name AMD's driver *release* (31.40), which only the
  // package source says.
  constexpr std::string_view kVersion = "/sys/module/amdgpu/version";
  std::string err;
  std::string module;
  if (auto v = read_optional(ctx, kVersion, &err, 128)) module = std::string(core::trim(*v));
  std::string release, release_src;
  for (std::string_view dir : {"/etc/apt/sources.list.d", "/etc/yum.repos.d", "/etc/zypp/repos.d"}) {
    auto list = ctx.host.list_dir(dir);
    if (!list) continue;
    for (const auto& e : *list) {
      std::string path = fmt::format("{}/{}", dir, e.name);
      if (auto text = read_optional(ctx, path, nullptr, 64 * 1024); text && release.empty()) {
        release = radeon_release(*text);
        if (!release.empty()) release_src = path;
      }
    }
  }
  if (release.empty())
    if (auto text = read_optional(ctx, "/etc/apt/sources.list", nullptr, 256 * 1024)) {
      release = radeon_release(*text);
      if (!release.empty()) release_src = "/etc/apt/sources.list";
    }
  const bool loaded = ctx.host.exists("/sys/module/amdgpu");
  if (!release.empty())
    facts.present("gpu.amd.driver.version", release, release_src,
                  module.empty() ? "AMD GPU driver release" : fmt::format("AMD GPU driver release; amdgpu module {}", module));
  else if (!err.empty())
    facts.error("gpu.amd.driver.version", std::string(kVersion), err);
  else if (!module.empty())
    facts.error("gpu.amd.driver.version", std::string(kVersion),
                fmt::format("the amdgpu module is {} (amdgpu-dkms), but no repo.radeon.com/amdgpu/<release> package source "
                            "names the driver release the bulletins use",
                            module));
  else if (loaded)
    facts.absent("gpu.amd.driver.version", std::string(kVersion),
                 "amdgpu is loaded without a version: the in-kernel driver, not AMD's amdgpu-dkms");
  else
    facts.absent("gpu.amd.driver.version", "/sys/module/amdgpu", "the amdgpu module is not loaded");

  // ROCm: /opt/rocm/.info/version ("6.4.2-120"), else the versioned install directory.
  for (std::string_view path : {"/opt/rocm/.info/version", "/opt/rocm/.info/version-dev"}) {
    if (auto v = read_optional(ctx, path, nullptr, 256)) {
      std::string ver(core::trim(core::split_lines(*v).empty() ? std::string_view() : core::split_lines(*v)[0]));
      if (!ver.empty()) {
        facts.present("rocm.version", ver, std::string(path));
        return;
      }
    }
  }
  std::vector<std::string> dirs;
  if (auto list = ctx.host.list_dir("/opt"))
    for (const auto& e : *list)
      if (e.name.starts_with("rocm-") && e.name.size() > 5) dirs.push_back(e.name.substr(5));
  if (!dirs.empty())
    facts.present("rocm.version", dirs.back(), "/opt/rocm-*", fmt::format("installed: {}", fmt::join(dirs, " ")));
  else
    facts.absent("rocm.version", "/opt/rocm/.info/version, /opt/rocm-*", "ROCm is not installed");
}

void collect_bluefield(const CollectContext& ctx, Facts& facts) {
  // RShim: the host's path to the DPU's console and boot stream. NVIDIA's zero-trust mode
  // (mlxprivhost ... --disable_rshim) removes it from the host.
  std::vector<std::string> rshim;
  if (auto list = ctx.host.list_dir("/dev"))
    for (const auto& e : *list)
      if (e.name.starts_with("rshim")) rshim.push_back("/dev/" + e.name);
  if (rshim.empty()) facts.absent("dpu.rshim", "/dev/rshim*", "no RShim device on this host");
  else facts.present("dpu.rshim", fmt::format("{}", fmt::join(rshim, " ")), "/dev/rshim*");
  if (ctx.host.exists("/sys/class/net/tmfifo_net0"))
    facts.present("dpu.tmfifo", "tmfifo_net0", "/sys/class/net/tmfifo_net0", "the RShim network link to the DPU");
  else
    facts.absent("dpu.tmfifo", "/sys/class/net/tmfifo_net0", "no tmfifo_net0 interface");

  // The DPU's mode, from the card: mlxconfig q on the first BlueField function (live, root).
  auto first_bf = [&]() -> std::string {
    auto devices = ctx.host.list_dir("/sys/bus/pci/devices");
    if (!devices) return {};
    for (const auto& d : *devices) {
      auto v = read_optional(ctx, "/sys/bus/pci/devices/" + d.name + "/vendor", nullptr, 64);
      auto dev = read_optional(ctx, "/sys/bus/pci/devices/" + d.name + "/device", nullptr, 64);
      if (!v || !dev || core::trim(*v) != "0x15b3") continue;
      auto id = core::trim(*dev);
      if (id == "0xa2d6" || id == "0xa2dc" || id == "0xa2d9" || id == "0xa2df") return d.name;
    }
    return {};
  }();
  if (first_bf.empty()) {
    facts.absent("dpu.mode", "/sys/bus/pci/devices", "no BlueField DPU");
  } else if (auto run = run_tool(ctx, "mlxconfig", {"-e", "-d", first_bf, "q", "INTERNAL_CPU_MODEL",
                                                    "INTERNAL_CPU_OFFLOAD_ENGINE", "INTERNAL_CPU_RSHIM"})) {
    if (!*run) {
      facts.error("dpu.mode", "mlxconfig", run->error().message);
    } else {
      auto params = parse_mlxconfig_query((*run)->out);
      auto model = params.find("INTERNAL_CPU_MODEL");
      auto offload = params.find("INTERNAL_CPU_OFFLOAD_ENGINE");
      if (model == params.end()) {
        facts.error("dpu.mode", (*run)->command,
                    fmt::format("no INTERNAL_CPU_MODEL in its output (exit {}): {}", (*run)->exit_code,
                                core::clip(core::trim((*run)->out + (*run)->err), 160)));
      } else {
        // DPU mode: the embedded Arm CPU owns the card and its offload engine is enabled.
        bool embedded = model->second.number == 1 || model->second.label == "EMBEDDED_CPU";
        bool offload_on = offload == params.end() || offload->second.number == 0 || offload->second.label == "ENABLED";
        std::string mode = !embedded ? "separated-host" : (offload_on ? "dpu" : "nic");
        facts.present("dpu.mode", mode, (*run)->command,
                      fmt::format("INTERNAL_CPU_MODEL={}({}) INTERNAL_CPU_OFFLOAD_ENGINE={}", model->second.label,
                                  model->second.number.value_or(-1),
                                  offload == params.end() ? std::string("(not listed)") : offload->second.label));
        if (auto r = params.find("INTERNAL_CPU_RSHIM"); r != params.end())
          facts.present("dpu.rshim_setting", r->second.label.empty() ? std::to_string(r->second.number.value_or(-1)) : r->second.label,
                        (*run)->command, "INTERNAL_CPU_RSHIM");
      }
    }
  } else {
    facts.error("dpu.mode", "mlxconfig", ctx.host.is_live()
                                             ? "mlxconfig (NVIDIA MFT) is not installed: the DPU's mode cannot be read from the host"
                                             : "the DPU's mode is read with mlxconfig on the live host");
  }
  // The VIRTIO-Net controller runs on the DPU's Arm cores; `virtnet` exists only there.
  if (auto run = run_tool(ctx, "virtnet", {"version"})) {
    if (!*run) {
      facts.error("dpu.virtnet.version", "virtnet version", run->error().message);
    } else if (auto v = parse_virtnet_running_version((*run)->out)) {
      facts.present("dpu.virtnet.version", *v, (*run)->command, core::clip(core::trim((*run)->out), 200));
    } else {
      facts.error("dpu.virtnet.version", (*run)->command,
                  fmt::format("no \"Original Controller\" version in its output (exit {}): {}", (*run)->exit_code,
                              core::clip(core::trim((*run)->out + (*run)->err), 160)));
    }
  } else {
    facts.absent("dpu.virtnet.version", "virtnet",
                 "no virtnet here: the VIRTIO-Net controller's version is only visible on the DPU's Arm cores");
  }
}

// vBoost: the boost slider nvidia-smi lists (live only; nvidia-smi is never run against a host root).
void collect_vboost(const CollectContext& ctx, Facts& facts) {
  if (!ctx.host.exists("/proc/driver/nvidia/version")) {
    facts.absent("gpu.vboost", "nvidia-smi boost-slider -l", "the NVIDIA driver is not loaded");
    return;
  }
  auto run = run_tool(ctx, "nvidia-smi", {"boost-slider", "-l"});
  if (!run) {
    facts.error("gpu.vboost", "nvidia-smi boost-slider -l",
                ctx.host.is_live() ? "nvidia-smi is not installed" : "boost sliders are listed by nvidia-smi on the live host");
    return;
  }
  if (!*run) {
    facts.error("gpu.vboost", "nvidia-smi boost-slider -l", run->error().message);
    return;
  }
  std::vector<std::string> sliders;
  for (const auto& s : parse_boost_slider_list((*run)->out))
    if (s.name == "vboost")
      sliders.push_back(fmt::format("gpu{}={}/{}", s.gpu, s.value ? std::to_string(*s.value) : "?",
                                    s.max ? std::to_string(*s.max) : "?"));
  std::string text = (*run)->out + "\n" + (*run)->err;
  if (!sliders.empty())
    facts.present("gpu.vboost", fmt::format("{}", fmt::join(sliders, " ")), (*run)->command, "value/max per GPU");
  else if ((*run)->exit_code != 0 && !core::contains_icase(text, "not supported"))
    facts.error("gpu.vboost", (*run)->command,
                fmt::format("exit {}: {}", (*run)->exit_code, core::clip(core::trim((*run)->out + " " + (*run)->err), 160)));
  else
    facts.absent("gpu.vboost", (*run)->command,
                 fmt::format("no vboost slider listed: {}", core::clip(core::trim((*run)->out + " " + (*run)->err), 120)));
}

}  // namespace

void collect_platform(const CollectContext& ctx, Facts& facts) {
  collect_cpu_and_virt(ctx, facts);
  collect_numa(ctx, facts);
  collect_nvidia_params(ctx, facts);
  collect_smmu(ctx, facts);
  collect_amd(ctx, facts);
  collect_bluefield(ctx, facts);
  collect_vboost(ctx, facts);
}

}  // namespace cmax::audit
