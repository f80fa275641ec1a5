// Installed software: distro packages (dpkg), versions of the cluster software the floors cover
// (from the binaries themselves on a live host), CUDA, and the user-facing HPC tools.

#include <functional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "audit/collectors/collector.h"
#include "audit/parse/dpkg_status.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit {
namespace {

// Packages whose versions the checks may fall back on, or report.
constexpr std::string_view kPackages[] = {
    "runc", "containerd", "containerd.io", "docker-ce", "docker.io", "moby-engine",
    "nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
    "libnvidia-container1", "datacenter-gpu-manager", "datacenter-gpu-manager-4-core", "slurm-wlm",
    "slurmd", "slurm-client", "slurmctld", "munge", "libmunge2", "enroot", "apptainer", "singularity-ce",
    "lmod", "sudo", "openmpi-bin", "rdma-core", "ibverbs-utils", "infiniband-diags", "mlnx-ofed-kernel-utils",
    "doca-ofed", "nvidia-fabricmanager", "cuda-toolkit", "libnccl2", "libnccl-dev"};

Facts collect_packages(const CollectContext& ctx) {
  Facts facts;
  constexpr std::string_view kStatus = "/var/lib/dpkg/status";
  std::string err;
  auto text = read_optional(ctx, kStatus, &err, 256u << 20);
  if (!text) {
    if (err.empty())
      facts.absent("pkg.manager", std::string(kStatus), "no dpkg database (not a Debian/Ubuntu host)");
    else
      facts.error("pkg.manager", std::string(kStatus), err);
    return facts;
  }
  auto installed = parse_dpkg_status(*text);
  facts.present("pkg.manager", "dpkg", std::string(kStatus), fmt::format("{} packages installed", installed.size()));
  for (auto name : kPackages) {
    auto it = installed.find(name);
    if (it != installed.end()) facts.present(fmt::format("pkg.{}", name), it->second, fmt::format("dpkg: {}", name));
  }
  // Kernel images installed as packages (a newer one than the running kernel means a reboot is due).
  std::vector<std::string> kernels;
  for (auto it = installed.lower_bound(std::string_view("linux-image-")); it != installed.end() && it->first.starts_with("linux-image-"); ++it)
    kernels.push_back(fmt::format("{}={}", it->first, it->second));
  if (!kernels.empty()) facts.present("pkg.kernel_images", fmt::format("{}", fmt::join(kernels, " ")), "dpkg: linux-image-*");
  return facts;
}

struct ToolSpec {
  std::string_view key;
  std::initializer_list<std::string_view> programs;
  std::initializer_list<std::string_view> args;
  std::initializer_list<std::string_view> packages;
  std::string_view after_word;
};

// Software versions the floors judge or the checks need. Each runs in its own thread.
const ToolSpec kTools[] = {
    {"tool.runc.version", {"runc"}, {"--version"}, {"runc"}, "version"},
    {"tool.containerd.version", {"containerd"}, {"--version"}, {"containerd.io", "containerd"}, ""},
    {"tool.docker.version", {"docker"}, {"--version"}, {"docker-ce", "docker.io", "moby-engine"}, "version"},
    {"tool.nvidia_ctk.version", {"nvidia-ctk", "nvidia-container-cli"}, {"--version"},
     {"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools"}, "version"},
    {"tool.dcgm.version", {"dcgmi"}, {"--version"}, {"datacenter-gpu-manager-4-core", "datacenter-gpu-manager"}, "version"},
    {"tool.slurm.version", {"sinfo", "slurmd", "slurmctld"}, {"--version"}, {"slurm-wlm", "slurm-client", "slurmd", "slurmctld"}, ""},
    {"tool.munge.version", {"munged"}, {"--version"}, {"munge", "libmunge2"}, "munge-"},
    {"tool.nvcc.version", {"nvcc", "/usr/local/cuda/bin/nvcc"}, {"--version"}, {}, ", v"},
    {"tool.enroot.version", {"enroot"}, {"version"}, {"enroot"}, ""},
    {"tool.apptainer.version", {"apptainer", "singularity"}, {"--version"}, {"apptainer", "singularity-ce"}, "version"},
    {"tool.mpirun.version", {"mpirun"}, {"--version"}, {"openmpi-bin"}, ""},
    {"tool.kubelet.version", {"kubelet"}, {"--version"}, {}, ""},
};

void collect_cuda(const CollectContext& ctx, Facts& facts) {
  std::string err;
  constexpr std::string_view kJson = "/usr/local/cuda/version.json";
  if (auto text = read_optional(ctx, kJson, &err)) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_object() && doc.contains("cuda") && doc["cuda"].is_object() && doc["cuda"].contains("version") &&
        doc["cuda"]["version"].is_string()) {
      facts.present("cuda.version", doc["cuda"]["version"].get<std::string>(), std::string(kJson), "cuda.version");
    } else {
      facts.error("cuda.version", std::string(kJson), "no string at .cuda.version (malformed version.json)");
    }
  } else if (!err.empty()) {
    facts.error("cuda.version", std::string(kJson), err);
  } else if (auto txt = read_optional(ctx, "/usr/local/cuda/version.txt", &err)) {
    // CUDA <= 10: "CUDA Version 10.2.89"
    auto tok = core::find_version_token(*txt, "version");
    if (tok) facts.present("cuda.version", std::string(*tok), "/usr/local/cuda/version.txt");
    else facts.error("cuda.version", "/usr/local/cuda/version.txt", "no version in the file");
  } else {
    facts.absent("cuda.version", std::string(kJson), "no CUDA toolkit under /usr/local/cuda");
  }
  std::vector<std::string> installed;
  if (auto d = ctx.host.list_dir("/usr/local"))
    for (const auto& e : *d)
      if (e.name.starts_with("cuda-")) installed.push_back(e.name.substr(5));
  if (!installed.empty()) facts.present("cuda.installed", fmt::format("{}", fmt::join(installed, " ")), "/usr/local/cuda-*");
}

// The first of `paths` that exists, as a presence fact.
void first_path_fact(const CollectContext& ctx, Facts& facts, std::string key, std::initializer_list<std::string_view> paths,
                     std::string_view what) {
  std::string list;
  for (auto p : paths) {
    if (ctx.host.exists(p)) {
      facts.present(std::move(key), std::string(p), std::string(p));
      return;
    }
    list += (list.empty() ? "" : ", ") + std::string(p);
  }
  facts.absent(std::move(key), list, fmt::format("{} not found (looked in {})", what, list));
}

void collect_hpc_tools(const CollectContext& ctx, Facts& facts) {
  first_path_fact(ctx, facts, "tool.lmod.path",
                  {"/usr/share/lmod/lmod/libexec/lmod", "/opt/apps/lmod/lmod/libexec/lmod", "/usr/share/lmod/lmod",
                   "/etc/profile.d/lmod.sh", "/etc/profile.d/z00_lmod.sh"},
                  "Lmod");
  const char* hpcx_env = ctx.host.is_live() ? std::getenv("HPCX_HOME") : nullptr;
  if (hpcx_env && ctx.host.exists(hpcx_env))
    facts.present("tool.hpcx.path", hpcx_env, "$HPCX_HOME");
  else
    first_path_fact(ctx, facts, "tool.hpcx.path", {"/opt/hpcx", "/opt/nvidia/hpcx", "/usr/local/hpcx"}, "HPC-X");

  // GPU containers: Docker's nvidia runtime or CDI specs for nvidia.com/gpu.
  std::vector<std::string> found;
  if (auto daemon = read_optional(ctx, "/etc/docker/daemon.json")) {
    auto doc = nlohmann::json::parse(*daemon, nullptr, false);
    if (doc.is_object() && doc.contains("runtimes") && doc["runtimes"].is_object() && doc["runtimes"].contains("nvidia"))
      found.push_back("/etc/docker/daemon.json runtime nvidia");
  }
  for (std::string_view dir : {"/etc/cdi", "/var/run/cdi"}) {
    if (auto d = ctx.host.list_dir(dir))
      for (const auto& e : *d)
        if (e.name.find("nvidia") != std::string::npos) found.push_back(fmt::format("{}/{}", dir, e.name));
  }
  if (found.empty())
    facts.absent("containers.gpu_runtime", "/etc/docker/daemon.json, /etc/cdi, /var/run/cdi",
                 "no nvidia runtime in Docker's daemon.json and no NVIDIA CDI spec");
  else
    facts.present("containers.gpu_runtime", fmt::format("{}", fmt::join(found, ", ")), "/etc/docker/daemon.json, /etc/cdi");
}

}  // namespace

void collect_tools(const CollectContext& ctx, Facts& facts) {
  Facts pkgs = collect_packages(ctx);
  std::vector<Facts> parts(std::size(kTools));
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < std::size(kTools); ++i) {
      threads.emplace_back([&, i] {
        const auto& t = kTools[i];
        tool_version_fact(ctx, pkgs, parts[i], std::string(t.key), t.programs, t.args, t.packages, t.after_word);
      });
    }
  }
  collect_cuda(ctx, facts);
  collect_hpc_tools(ctx, facts);
  for (auto& p : parts) facts.merge(std::move(p));
  facts.merge(std::move(pkgs));
}

}  // namespace cmax::audit
