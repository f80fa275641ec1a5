// isolation.host.gpu_devices and isolation.host.container_toolkit_envvar: which GPUs this tenant
// can open beyond its allocation, and whether the container toolkit lets any container ask for all.

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "isolation/host_judge.h"

namespace cmax::isolation::host_judge {
namespace {

constexpr std::string_view kVolumeDevicesDir = "/var/run/nvidia-container-devices";
constexpr std::string_view kEnvvarKey = "accept-nvidia-visible-devices-envvar-when-unprivileged";
constexpr std::string_view kVolumeKey = "accept-nvidia-visible-devices-as-volume-mounts";

constexpr CheckText kGpuText = {
    "gpu_devices", "GPU device nodes this process can open beyond its allocation",
    "only the allocated GPUs' /dev/nvidiaN open; the others refuse with EACCES or EPERM",
    "Tries open(O_RDWR) on every /dev/nvidiaN (closing it at once), which is what the device "
    "cgroup refuses, and compares the ones that open with the allocation: SLURM_STEP_GPUS or "
    "SLURM_JOB_GPUS in a Slurm job, else NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES. A GPU "
    "that opens outside the allocation can be used, read and disturbed by this tenant.",
    "Constrain devices to the allocation: ConstrainDevices=yes in Slurm's cgroup.conf (with "
    "gres.conf File= for every GPU), or the NVIDIA device plugin with "
    "accept-nvidia-visible-devices-envvar-when-unprivileged = false in Kubernetes."};

struct Allocation {
  enum class Kind { none, minors, count, all, unreadable } kind = Kind::none;
  std::vector<unsigned> minors;  // Kind::minors
  std::size_t count = 0;         // Kind::minors and Kind::count
  std::string what;              // "0,1 (SLURM_STEP_GPUS)"
  std::string note;              // why only counts compare, or why unreadable
};

Allocation no_gpus(std::string why) {
  Allocation a;
  a.kind = Allocation::Kind::minors;
  a.what = fmt::format("of no GPUs ({})", why);
  return a;
}

Allocation from_list(std::string_view name, std::string_view value, bool by_minor) {
  Allocation a;
  std::vector<unsigned> indices;
  std::size_t uuids = 0;
  for (auto item : core::split_any(value, ",")) {
    item = core::trim(item);
    if (item.empty()) continue;
    if (auto index = core::parse_uint(item); index && *index <= 0xffff) {
      indices.push_back(static_cast<unsigned>(*index));
    } else if (item.starts_with("GPU-") || item.starts_with("MIG-")) {
      ++uuids;
    } else {
      a.kind = Allocation::Kind::unreadable;
      a.note = fmt::format("{}={} holds {}, neither a device index nor a GPU UUID", name,
                           one_line(value, 80), one_line(item, 40));
      return a;
    }
  }
  a.count = indices.size() + uuids;
  a.what = fmt::format("{} ({})", one_line(value, 80), name);
  if (by_minor && uuids == 0) {
    a.kind = Allocation::Kind::minors;
    a.minors = std::move(indices);
  } else {
    a.kind = Allocation::Kind::count;
    a.note = uuids > 0 ? "GPU UUIDs cannot be mapped to device minors without NVML, so only "
                         "counts are compared"
                       : "CUDA_VISIBLE_DEVICES counts the GPUs CUDA was left to see, not device "
                         "minors, so only counts are compared";
  }
  return a;
}

// Slurm's own variables first (they hold device indices), then what the container runtime was
// asked for, then CUDA's mask; a pod without a device-plugin list has no GPUs.
Allocation gpu_allocation(const HostIsolationFacts& f) {
  const HostIsolationEnv& e = f.env;
  if (e.slurm_job_id) {
    if (e.slurm_step_gpus) return from_list("SLURM_STEP_GPUS", *e.slurm_step_gpus, true);
    if (e.slurm_job_gpus) return from_list("SLURM_JOB_GPUS", *e.slurm_job_gpus, true);
    return no_gpus(fmt::format("Slurm job {} sets no SLURM_JOB_GPUS or SLURM_STEP_GPUS",
                               one_line(*e.slurm_job_id, 40)));
  }
  const auto& nv = e.nvidia_visible_devices;
  if (nv && *nv != "all") {
    if (nv->empty() || *nv == "none" || *nv == "void")
      return no_gpus(fmt::format("NVIDIA_VISIBLE_DEVICES={}", *nv));
    if (*nv == kVolumeDevicesDir) {
      if (!is_read(f.volume_devices)) {
        Allocation a;
        a.kind = Allocation::Kind::unreadable;
        a.note = fmt::format("cannot list the volume-mounted devices: {}", f.volume_devices.error);
        return a;
      }
      std::string ids;
      for (auto name : core::split_lines(f.volume_devices.text))
        ids += (ids.empty() ? "" : ",") + std::string(name);
      if (ids.empty()) return no_gpus(fmt::format("{} is empty", kVolumeDevicesDir));
      return from_list(kVolumeDevicesDir, ids, true);
    }
    return from_list("NVIDIA_VISIBLE_DEVICES", *nv, true);
  }
  if (const auto& cv = e.cuda_visible_devices) {
    if (cv->empty() || *cv == "none" || *cv == "void" || *cv == "NoDevFiles" || *cv == "-1")
      return no_gpus(fmt::format("CUDA_VISIBLE_DEVICES={}", *cv));
    return from_list("CUDA_VISIBLE_DEVICES", *cv, false);
  }
  if (e.kubernetes_service_host)
    return no_gpus("a pod without a device-plugin GPU list in NVIDIA_VISIBLE_DEVICES");
  if (nv) {
    Allocation a;
    a.kind = Allocation::Kind::all;
    a.what = "all (NVIDIA_VISIBLE_DEVICES)";
    return a;
  }
  return {};
}

constexpr CheckText kToolkitText = {
    "container_toolkit_envvar",
    "NVIDIA Container Toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers",
    "accept-nvidia-visible-devices-envvar-when-unprivileged = false",
    "Reads the top-level accept-nvidia-visible-devices-envvar-when-unprivileged key of the NVIDIA "
    "Container Toolkit config. It defaults to true: any unprivileged container can then set "
    "NVIDIA_VISIBLE_DEVICES=all (many CUDA images do) and get every GPU on the node, whatever the "
    "scheduler allocated.",
    "Set accept-nvidia-visible-devices-envvar-when-unprivileged = false and "
    "accept-nvidia-visible-devices-as-volume-mounts = true in "
    "/etc/nvidia-container-runtime/config.toml, and run the NVIDIA device plugin with the "
    "volume-mounts device list strategy (deviceListStrategy=volume-mounts)."};

}  // namespace

Finding judge_gpu(const HostIsolationFacts& f) {
  Finding x = base(kGpuText, "/dev/nvidia[0-9]*");
  if (f.dev.state == ReadState::unreadable)
    return with(std::move(x), Outcome::unverified, "cannot list /dev: " + f.dev.error);
  if (f.gpus.empty())
    return with(std::move(x), Outcome::not_applicable, "no NVIDIA GPU device nodes");

  std::vector<std::string> states;
  std::vector<const GpuNode*> opened, problems;
  std::vector<std::string> refused;
  for (const auto& g : f.gpus) {
    const std::string path = fmt::format("/dev/nvidia{}", g.minor);
    if (g.open_errno == 0) {
      opened.push_back(&g);
      states.push_back(path + "=opened");
    } else if (g.open_errno == EACCES || g.open_errno == EPERM) {
      refused.push_back(path);
      states.push_back(path + "=refused");
    } else {
      problems.push_back(&g);
      states.push_back(path + "=error");
    }
  }
  x.evidence_value = core::clip(join(states, " "), 200);

  const Allocation a = gpu_allocation(f);
  if (a.kind == Allocation::Kind::none)
    return with(std::move(x), Outcome::not_applicable,
                "not inside an allocation (no SLURM_JOB_ID, no "
                "CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES)");
  if (a.kind == Allocation::Kind::unreadable) {
    x.observed = fmt::format("{} GPU device nodes; allocation not readable", f.gpus.size());
    return with(std::move(x), Outcome::unverified, "cannot read the allocation: " + a.note);
  }
  auto allocated = [&](unsigned minor) {
    return a.kind == Allocation::Kind::all ||
           (a.kind == Allocation::Kind::minors &&
            std::find(a.minors.begin(), a.minors.end(), minor) != a.minors.end());
  };
  auto names = [](const std::vector<const GpuNode*>& nodes) {
    std::vector<std::string> out;
    for (const auto* g : nodes) out.push_back(fmt::format("/dev/nvidia{}", g->minor));
    return join(out);
  };

  Worst v;
  if (a.kind == Allocation::Kind::minors) {
    std::vector<const GpuNode*> outside;
    for (const auto* g : opened)
      if (!allocated(g->minor)) outside.push_back(g);
    if (!outside.empty())
      v.add(Outcome::fail,
            fmt::format("can open {} outside the allocation {}", names(outside), a.what));
    std::vector<const GpuNode*> unknown;
    for (const auto* g : problems)
      if (!allocated(g->minor)) unknown.push_back(g);
    for (const auto* g : unknown)
      v.add(Outcome::unverified,
            fmt::format("cannot tell whether the device cgroup allows /dev/nvidia{}: {}", g->minor,
                        g->error));
  } else if (a.kind == Allocation::Kind::count) {
    if (opened.size() > a.count)
      v.add(Outcome::fail, fmt::format("can open {} ({}), more than the {} allocated {}; {}",
                                       plural(opened.size(), "GPU device node", "GPU device nodes"),
                                       names(opened), a.count, a.what, a.note));
    else if (opened.size() + problems.size() > a.count)
      for (const auto* g : problems)
        v.add(Outcome::unverified,
              fmt::format("cannot tell whether the device cgroup allows /dev/nvidia{}: {}",
                          g->minor, g->error));
  }
  const bool nv_all = f.env.nvidia_visible_devices == "all";
  if (nv_all && a.kind != Allocation::Kind::all && a.count < f.gpus.size())
    v.add(Outcome::fail,
          fmt::format("NVIDIA_VISIBLE_DEVICES=all asks the container runtime for every GPU ({} "
                      "device nodes here) while the allocation is {}",
                      f.gpus.size(), a.what));
  if (!v.any())
    v.add(Outcome::pass, opened.empty()
                             ? fmt::format("no GPU device node opens; the allocation is {}", a.what)
                             : fmt::format("only allocated GPUs open ({}); the allocation is {}",
                                           names(opened), a.what));
  v.apply(x);
  x.observed = fmt::format("allocation {}; opened: {}", a.what,
                           opened.empty() ? std::string("none") : names(opened));
  if (!refused.empty()) x.observed += "; refused: " + join(refused);
  if (!problems.empty()) x.observed += "; open failed: " + names(problems);
  return x;
}

Finding judge_toolkit(const HostIsolationFacts& f) {
  Finding x = base(kToolkitText, f.toolkit_config.path);
  if (f.toolkit_config.state == ReadState::absent) {
    std::string reason = "no NVIDIA Container Toolkit config";
    if (container_evidence(f))
      reason += " here (inside a container the host's config is not visible)";
    return with(std::move(x), Outcome::not_applicable, reason);
  }
  if (!is_read(f.toolkit_config))
    return with(std::move(x), Outcome::unverified,
                "cannot read the toolkit config: " + f.toolkit_config.error);
  std::vector<std::string_view> values;
  std::string volume = "not set (false)";
  for (const auto& e : toml_top_level(f.toolkit_config.text)) {
    if (e.key == kEnvvarKey) values.push_back(e.value);
    if (e.key == kVolumeKey) volume = std::string(e.value);
  }
  const std::string volume_note = fmt::format("{} is {}", kVolumeKey, volume);
  if (values.empty()) {
    x.observed = fmt::format("{} not set (defaults to true); {}", kEnvvarKey, volume_note);
    x.evidence_value = "(key absent)";
    return with(std::move(x), Outcome::warn,
                "the key is absent, so it is true: any unprivileged container can set "
                "NVIDIA_VISIBLE_DEVICES=all and get every GPU on the node");
  }
  x.evidence_value = fmt::format("{} = {}", kEnvvarKey, one_line(values.front(), 60));
  if (values.size() > 1) {
    x.observed = fmt::format("{} set {} times", kEnvvarKey, values.size());
    return with(std::move(x), Outcome::unverified,
                fmt::format("{} is set {} times: invalid TOML, which the toolkit would refuse",
                            kEnvvarKey, values.size()));
  }
  auto value = toml_bool(values.front());
  x.observed = fmt::format("{} = {}; {}", kEnvvarKey, one_line(values.front(), 60), volume_note);
  if (!value)
    return with(
        std::move(x), Outcome::unverified,
        fmt::format("{} = {} is not a TOML boolean", kEnvvarKey, one_line(values.front(), 60)));
  if (*value)
    return with(std::move(x), Outcome::warn,
                "any unprivileged container can set NVIDIA_VISIBLE_DEVICES=all and get every GPU "
                "on the node");
  return with(std::move(x), Outcome::pass,
              "unprivileged containers get only the GPUs the runtime is given, not the ones "
              "their environment asks for");
}
}  // namespace cmax::isolation::host_judge
