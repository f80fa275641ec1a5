// GPU software a user reaches for on a node: Nsight Compute and its counters, perf for the running
// kernel, the NCCL library, GDRCopy, dcgm-exporter, Docker on Slurm workers, and whether a host NCCL
// topology file reaches pyxis containers. ClusterMAX categories "Monitoring" and "Networking".

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"

namespace cmax::audit::checks {
namespace {

constexpr std::uint8_t kNode = kStandalone | kSlurm;

std::optional<Verdict> guard_read(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  if (f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read {}: {}", f->source, f->detail));
  return std::nullopt;
}

std::optional<Verdict> guard_gpu_read(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  return guard_read(ctx, check);
}

// GPU performance counters for users: the driver's RmProfilingAdminOnly (live), else the modprobe
// option NVreg_RestrictProfilingToAdminUsers that will apply at the next load.
Verdict pred_gpu_counters(const CheckContext& ctx, const Check&) {
  constexpr std::string_view kExpected = "RmProfilingAdminOnly: 0 (NVreg_RestrictProfilingToAdminUsers=0)";
  const Fact* live = ctx.facts.find("gpu.params.profiling_admin_only");
  if (live && live->status == FactStatus::present) {
    bool open = core::trim(live->value) == "0";
    Verdict v = verdict(open ? Outcome::pass : Outcome::warn, fmt::format("RmProfilingAdminOnly: {}", live->value),
                        std::string(kExpected),
                        open ? "" : "only root can read GPU performance counters: ncu and Nsight Systems' GPU metrics "
                                    "fail for users with ERR_NVGPUCTRPERM");
    v.evidence_source = live->source;
    v.evidence_value = live->value;
    return v;
  }
  const Fact* conf = ctx.facts.find("gpu.modprobe.restrict_profiling");
  if (conf && conf->status == FactStatus::present) {
    bool open = core::trim(conf->value) == "0";
    Verdict v = verdict(open ? Outcome::pass : Outcome::warn,
                        fmt::format("NVreg_RestrictProfilingToAdminUsers={} ({})", conf->value, conf->source),
                        std::string(kExpected),
                        fmt::format("{}the driver's live parameters were not readable, so this is the setting for its "
                                    "next load",
                                    open ? "" : "users cannot read GPU counters; "));
    return v;
  }
  if (live && live->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, std::string(kExpected), fmt::format("could not read {}: {}", live->source, live->detail));
  // The driver's default restricts counters to admins since R418.
  return verdict(Outcome::warn, "driver default (admins only)", std::string(kExpected),
                 "no RmProfilingAdminOnly was readable and no modprobe option relaxes it: since R418 the default lets "
                 "only root profile GPU counters");
}

Verdict pred_perf(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (f->status == FactStatus::present) return verdict(Outcome::pass, f->value, "perf for the running kernel");
  return verdict(Outcome::warn, "missing", "perf for the running kernel", f->detail);
}

Verdict pred_nccl_lib(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (f->status == FactStatus::present)
    return verdict(Outcome::pass, fmt::format("NCCL {} ({})", f->value, f->source), "libnccl.so on the host");
  return verdict(Outcome::warn, "missing", "libnccl.so on the host",
                 fmt::format("{}: host-built nccl-tests and MPI jobs cannot find NCCL (jobs that bring it in a "
                             "container or a Python wheel are unaffected)",
                             f->detail));
}

Verdict pred_gdrcopy(const CheckContext& ctx, const Check&) {
  bool lib = ctx.facts.is_present("gdrcopy.lib"), dev = ctx.facts.is_present("gdrcopy.dev");
  bool mod = false;
  const Fact* mods = ctx.facts.find("kernel.modules");
  if (mods && mods->status == FactStatus::present)
    for (auto m : core::split_any(mods->value, " "))
      if (m == "gdrdrv") mod = true;
  std::string observed = fmt::format("libgdrapi: {}, gdrdrv module: {}, /dev/gdrdrv: {}", lib ? "yes" : "no",
                                     !mods || mods->status != FactStatus::present ? "unknown" : (mod ? "loaded" : "not loaded"),
                                     dev ? "yes" : "no");
  constexpr std::string_view kExpected = "libgdrapi, the gdrdrv module and /dev/gdrdrv";
  if (lib && (mod || !mods || mods->status != FactStatus::present) && dev)
    return verdict(Outcome::pass, observed, std::string(kExpected));
  if (!lib && !mod && !dev)
    return verdict(Outcome::warn, observed, std::string(kExpected),
                   "GDRCopy is not installed: UCX, NVSHMEM and NCCL's low-latency paths fall back to slower copies");
  return verdict(Outcome::warn, observed, std::string(kExpected),
                 "GDRCopy is partly installed and unusable: the library needs the gdrdrv module loaded and /dev/gdrdrv");
}

Verdict pred_dcgm_exporter_running(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (f && f->status == FactStatus::present) return verdict(Outcome::pass, fmt::format("pid {}", f->value), "running");
  if (f && f->status == FactStatus::error) {
    if (!ctx.facts.is_present("tool.dcgm_exporter.version"))
      return verdict(Outcome::unverified, "not installed on the host", "running",
                     fmt::format("{}; on Kubernetes dcgm-exporter runs as a pod (see the cluster view)", f->detail));
    return verdict(Outcome::unverified, {}, "running", f->detail);
  }
  return verdict(Outcome::warn, "not running", "running",
                 "no dcgm-exporter process: GPU health and utilisation never reach the monitoring stack "
                 "(Prometheus scrapes :9400)");
}

Verdict pred_docker(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (f->status == FactStatus::present) return verdict(Outcome::pass, fmt::format("Docker {}", f->value), "Docker on the worker");
  std::vector<std::string> others;
  if (ctx.facts.is_present("tool.enroot.version") && ctx.facts.is_present("slurm.pyxis")) others.emplace_back("pyxis+enroot");
  if (ctx.facts.is_present("tool.apptainer.version")) others.emplace_back("Apptainer");
  if (!others.empty())
    return verdict(Outcome::warn, fmt::format("no Docker; {}", fmt::join(others, ", ")), "Docker on the worker",
                   fmt::format("users build and run containers through {} instead; Docker-only workflows need a "
                               "rootless Docker or podman",
                               fmt::join(others, " and ")));
  return verdict(Outcome::fail, "no container runtime", "Docker on the worker",
                 "no Docker, no pyxis+enroot and no Apptainer: users cannot run containers on this worker");
}

// The host's NCCL topology file inside a pyxis container: the file must be mounted into every
// container (enroot mounts.d) and NCCL must be told where it is (enroot environ.d, or the default
// path nvidia-topologyd uses).
Verdict pred_topo_in_container(const CheckContext& ctx, const Check& check) {
  std::string declared(ctx.facts.value_or("nccl.conf.NCCL_TOPO_FILE"));
  std::vector<std::string> files;
  for (auto f : core::split_any(ctx.facts.value_or(check.fact), " ")) files.emplace_back(f);
  if (!declared.empty() && std::find(files.begin(), files.end(), declared) == files.end()) files.insert(files.begin(), declared);
  if (files.empty())
    return verdict(Outcome::not_applicable, "no topology file", {}, "the host has no NCCL topology file to pass on");
  if (!ctx.facts.is_present("slurm.pyxis"))
    return verdict(Outcome::not_applicable, "no pyxis", {}, "pyxis is not configured: jobs do not run in enroot containers");
  const Fact* mounts_f = ctx.facts.find("enroot.mounts");
  if (!mounts_f || mounts_f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, mounts_f ? mounts_f->detail : "enroot's configuration was not read");
  std::string file = files.front();
  // Which container path the file appears at, if a mount covers it (the source or a parent dir).
  std::string inside;
  for (auto m : core::split_any(mounts_f->value, " ")) {
    auto colon = m.find(':');
    if (colon == std::string_view::npos) continue;
    std::string src(m.substr(0, colon)), dst(m.substr(colon + 1));
    if (file == src) inside = dst;
    else if (file.starts_with(src + "/")) inside = dst + file.substr(src.size());
    if (!inside.empty()) break;
  }
  constexpr std::string_view kExpected = "mounted by enroot into every container and named by NCCL_TOPO_FILE there";
  if (inside.empty())
    return verdict(Outcome::warn, fmt::format("{} not mounted", file), std::string(kExpected),
                   fmt::format("no /etc/enroot/mounts.d entry covers {}: inside a pyxis container NCCL runs without the "
                               "host's topology and may pick the wrong NICs for each GPU",
                               file));
  std::string env(ctx.facts.value_or("enroot.environ"));
  bool named = env.find("NCCL_TOPO_FILE") != std::string::npos ||
               inside == "/var/run/nvidia-topologyd/virtualTopology.xml";
  if (!named)
    return verdict(Outcome::warn, fmt::format("{} mounted at {}; NCCL_TOPO_FILE not set", file, inside),
                   std::string(kExpected),
                   "the file is in the container, but no /etc/enroot/environ.d entry sets NCCL_TOPO_FILE (the host's "
                   "/etc/nccl.conf is not the container's), so NCCL does not read it");
  return verdict(Outcome::pass, fmt::format("{} mounted at {}, NCCL_TOPO_FILE set", file, inside), std::string(kExpected));
}

Verdict pred_enroot_import(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  constexpr std::string_view kExpected = "enroot import of an image succeeds";
  if (!f) return verdict(Outcome::unverified, {}, std::string(kExpected), "enroot was not looked for");
  if (f->status == FactStatus::absent) return verdict(Outcome::not_applicable, "no enroot", {}, f->detail);
  if (ctx.facts.is_present("enroot.import_missing"))
    return verdict(Outcome::fail, fmt::format("missing {}", ctx.facts.value_or("enroot.import_missing")),
                   std::string(kExpected),
                   fmt::format("enroot import cannot work without {} (squashfs-tools, curl, jq, parallel): every "
                               "`srun --container-image` fails to import",
                               ctx.facts.value_or("enroot.import_missing")));
  if (f->status == FactStatus::error) return verdict(Outcome::unverified, {}, std::string(kExpected), f->detail);
  if (f->detail == "imported") return verdict(Outcome::pass, f->value, std::string(kExpected));
  return verdict(Outcome::fail, f->value, std::string(kExpected),
                 fmt::format("{} failed: users cannot pull container images onto this node", f->source));
}

const Check kChecks[] = {
    {"monitoring.ncu.present", Category::monitoring, Severity::missing, false, kAnyHarness,
     "Nsight Compute (ncu) is installed", "Monitoring: kernel profiling (Nsight Compute) available on GPU nodes",
     "Looks for ncu on PATH, in the CUDA toolkit's bin directories and under /opt/nvidia/nsight-compute.",
     "Install Nsight Compute (cuda-nsight-compute-XX-Y or the standalone installer).", guard_gpu_read, pred_present,
     "tool.ncu.path", {}, "warn"},
    {"monitoring.gpu_counters.users", Category::monitoring, Severity::config, false, kAnyHarness,
     "Users can read GPU performance counters",
     "Monitoring: ncu / Nsight GPU metrics usable without root (NVreg_RestrictProfilingToAdminUsers=0)",
     "Reads RmProfilingAdminOnly in /proc/driver/nvidia/params, else the nvidia module's "
     "NVreg_RestrictProfilingToAdminUsers option in modprobe.d.",
     "echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > /etc/modprobe.d/nvidia-profiling.conf, "
     "rebuild the initramfs and reload the driver.",
     guard_gpu_only, pred_gpu_counters, "gpu.params.profiling_admin_only", {}, {},
     "https://developer.nvidia.com/nvidia-development-tools-solutions-err_nvgpuctrperm-permission-issue-performance-counters"},
    {"monitoring.perf.present", Category::monitoring, Severity::missing, false, kAnyHarness,
     "perf works for the running kernel", "Monitoring: CPU profiling (perf) available",
     "Finds perf on PATH; where it is the distro's wrapper (Ubuntu linux-tools, Debian linux-perf), looks for the "
     "binary of the running kernel that the wrapper execs.",
     "Install linux-tools-$(uname -r) (Ubuntu) or linux-perf (Debian).", guard_read, pred_perf, "tool.perf"},
    {"networking.nccl.library", Category::networking, Severity::missing, false, kAnyHarness,
     "The NCCL library is installed on the host", "Networking: NCCL available for host-built collective jobs",
     "Looks for libnccl.so* in the linker's directories (ld.so.conf), /usr/local/cuda and /opt/*/lib*, and "
     "reads its version from the file name or the libnccl2 package.",
     "Install libnccl2 and libnccl-dev from NVIDIA's CUDA repository (matching the CUDA major).", guard_gpu_read,
     pred_nccl_lib, "lib.nccl"},
    {"networking.gdrcopy", Category::networking, Severity::missing, false, kSlurm | kKubernetes | kStandalone,
     "GDRCopy is installed and usable", "Networking: GPUDirect RDMA copies (GDRCopy) for UCX, NVSHMEM and NCCL",
     "Looks for libgdrapi in the linker's directories, the gdrdrv module in /proc/modules and /dev/gdrdrv.",
     "Install gdrcopy (gdrdrv-dkms, libgdrapi) and load gdrdrv (modprobe gdrdrv).", guard_gpu_only, pred_gdrcopy,
     "gdrcopy.lib", {}, {}, "https://github.com/NVIDIA/gdrcopy"},
    {"monitoring.dcgm_exporter.running", Category::monitoring, Severity::missing, false, kNode,
     "dcgm-exporter feeds the monitoring stack", "Monitoring: GPU metrics exported (dcgm-exporter)",
     "Looks for a running dcgm-exporter process on the GPU node.",
     "Run dcgm-exporter (systemd unit or container) on every GPU node and scrape it (:9400/metrics).",
     guard_gpu_only, pred_dcgm_exporter_running, "proc.dcgm-exporter"},
    {"orchestration.docker.workers", Category::orchestration, Severity::missing, false, kSlurm,
     "Docker is available on Slurm workers", "Orchestration: container runtimes on compute nodes",
     "Looks for Docker Engine on the worker; without it, weighs the other container runtimes it has.",
     "Install Docker Engine (or rootless Docker / podman) where users need Docker workflows.", guard_read,
     pred_docker, "tool.docker.version"},
    {"orchestration.enroot.import", Category::orchestration, Severity::config, false, kNode,
     "enroot can import container images", "Orchestration: pyxis + enroot pull images on compute nodes",
     "Looks for the tools enroot import runs (mksquashfs, curl, jq, parallel); with --enroot-import IMAGE, imports "
     "it into a temporary file and removes it.",
     "Install squashfs-tools, curl, jq and parallel; check ENROOT_CACHE_PATH is writable and the registry "
     "reachable (credentials in ENROOT_CONFIG_PATH/.credentials).",
     nullptr, pred_enroot_import, "enroot.import"},
    {"networking.nccl.topo_in_container", Category::networking, Severity::config, false, kSlurm,
     "The host's NCCL topology file reaches pyxis containers",
     "Networking: NCCL topology (NCCL_TOPO_FILE) visible inside containers",
     "With pyxis configured and a topology file on the host (NCCL_TOPO_FILE in /etc/nccl.conf, /etc/nccl/*.xml, "
     "nvidia-topologyd's virtualTopology.xml), looks for an enroot mount that carries it and an environ.d entry "
     "that names it.",
     "Add '/etc/nccl/topo.xml /etc/nccl/topo.xml none x-create=file,bind,ro,nosuid,nodev' to "
     "/etc/enroot/mounts.d/nccl.fstab and 'NCCL_TOPO_FILE=/etc/nccl/topo.xml' to /etc/enroot/environ.d/nccl.env.",
     nullptr, pred_topo_in_container, "nccl.topo_files"},
};

}  // namespace

std::span<const Check> software_checks() { return kChecks; }

}  // namespace cmax::audit::checks
