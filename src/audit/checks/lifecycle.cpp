// Lifecycle: the OS release still gets security updates, the newest installed kernel is the one
// running, the CUDA toolkit is current and the driver can run it. ClusterMAX category "Lifecycle".

#include <chrono>

#include <fmt/format.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {
namespace {

// End of standard security support, per distribution release. Sources: Debian wiki LTS page,
// Ubuntu release cycle page, Red Hat Enterprise Linux life cycle page.
struct OsSupport {
  std::string_view distro;  ///< os.distro: "<ID>-<VERSION_ID>"
  int year, month, day;
};
constexpr OsSupport kOsSupport[] = {
    {"debian-10", 2024, 6, 30},   {"debian-11", 2026, 8, 31},   {"debian-12", 2028, 6, 30},
    {"debian-13", 2030, 6, 30},   {"ubuntu-18.04", 2023, 5, 31}, {"ubuntu-20.04", 2025, 5, 31},
    {"ubuntu-22.04", 2027, 6, 1}, {"ubuntu-24.04", 2029, 5, 31}, {"rhel-7", 2024, 6, 30},
    {"rhel-8", 2029, 5, 31},      {"rhel-9", 2032, 5, 31},       {"rocky-8", 2029, 5, 31},
    {"rocky-9", 2032, 5, 31},     {"almalinux-8", 2029, 3, 1},   {"almalinux-9", 2032, 5, 31},
};

std::string major_distro(std::string_view distro) {
  // "rhel-9.4" -> "rhel-9" (RHEL-like VERSION_IDs carry the minor release).
  auto dash = distro.find('-');
  if (dash == std::string_view::npos) return std::string(distro);
  auto name = distro.substr(0, dash);
  if (name == "ubuntu") return std::string(distro);
  auto ver = distro.substr(dash + 1);
  return fmt::format("{}-{}", name, ver.substr(0, ver.find('.')));
}

Verdict pred_os_supported(const CheckContext& ctx, const Check&) {
  std::string distro = major_distro(ctx.facts.value_or("os.distro"));
  std::string pretty(ctx.facts.value_or("os.pretty_name", distro));
  for (const auto& s : kOsSupport) {
    if (s.distro != distro) continue;
    using namespace std::chrono;
    auto eol = sys_days(year_month_day(year(s.year), month(s.month), day(s.day)));
    std::string date = fmt::format("{:04}-{:02}-{:02}", s.year, s.month, s.day);
    bool ok = ctx.clock.now() < eol;
    return verdict(ok ? Outcome::pass : Outcome::fail, pretty, fmt::format("security support until {}", date),
                   ok ? fmt::format("supported until {}", date) : fmt::format("security support ended {}", date));
  }
  return verdict(Outcome::unverified, pretty, "a release with security support",
                 fmt::format("'{}' is not in cmax's support table", distro));
}

Verdict pred_kernel_current(const CheckContext& ctx, const Check&) {
  std::string running(ctx.facts.value_or("kernel.release"));
  auto run_v = core::parse_version(running);
  if (!run_v) return verdict(Outcome::unverified, running, {}, run_v.error().message);
  std::string newest = running;
  core::Version newest_v = *run_v;
  for (auto rel : core::split_any(ctx.facts.value_or("kernel.installed"), " ")) {
    auto v = core::parse_version(rel);
    if (!v) continue;
    // Only kernels of the same flavour ("-amd64", "-generic") are candidates to boot into.
    auto flavour = [](std::string_view r) { return r.substr(r.rfind('-') == std::string_view::npos ? r.size() : r.rfind('-')); };
    if (flavour(rel) != flavour(running)) continue;
    if (core::compare_versions(*v, newest_v) > 0) {
      newest_v = *v;
      newest = std::string(rel);
    }
  }
  Verdict v = verdict(newest == running ? Outcome::pass : Outcome::warn, running, fmt::format("running {}", newest));
  if (newest != running)
    v.reason = fmt::format("kernel {} is installed but {} is running: a reboot is due to apply it", newest, running);
  v.evidence_source = "/proc/sys/kernel/osrelease, /lib/modules";
  v.evidence_value = std::string(ctx.facts.value_or("kernel.installed"));
  return v;
}

// Minimum Linux driver per CUDA major (minor-version compatibility), from NVIDIA's CUDA
// compatibility guide ("CUDA Toolkit and Minimum Required Driver Version").
struct CudaDriverMin {
  unsigned cuda_major;
  std::string_view driver;
};
constexpr CudaDriverMin kCudaDriver[] = {{11, "450.80.02"}, {12, "525.60.13"}, {13, "580.65.06"}};

Verdict pred_driver_runs_cuda(const CheckContext& ctx, const Check&) {
  auto cuda = core::parse_version(ctx.facts.value_or("cuda.version"));
  auto driver = core::parse_version(ctx.facts.value_or("gpu.driver.version"));
  if (!cuda || !driver) return verdict(Outcome::unverified, {}, {}, "driver or CUDA version unparseable");
  std::string observed = fmt::format("driver {} with CUDA {}", driver->text, cuda->text);
  for (const auto& row : kCudaDriver) {
    if (row.cuda_major != cuda->major()) continue;
    auto min = core::parse_version(row.driver);
    bool ok = core::compare_versions(*driver, *min) >= 0;
    return verdict(ok ? Outcome::pass : Outcome::fail, observed, fmt::format("driver >= {}", row.driver),
                   ok ? "" : fmt::format("CUDA {}.x needs driver {} or newer", row.cuda_major, row.driver));
  }
  return verdict(Outcome::unverified, observed, {}, fmt::format("no driver table entry for CUDA {}", cuda->major()));
}

std::optional<Verdict> guard_driver_and_cuda(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu(ctx, check)) return g;
  return unverified_if_not_present(ctx, "cuda.version");
}

const Check kChecks[] = {
    {"lifecycle.os.supported", Category::lifecycle, Severity::version, false, kAnyHarness,
     "Operating system release still receives security updates", "Lifecycle: supported OS and kernel",
     "Looks up the distribution release from /etc/os-release in a table of security-support end dates.",
     "Upgrade to a supported release of the distribution.", guard_fact, pred_os_supported, "os.distro"},
    {"lifecycle.kernel.reboot_pending", Category::lifecycle, Severity::version, false, kAnyHarness,
     "The newest installed kernel is the one running", "Lifecycle: patches applied, not just installed",
     "Compares the running kernel release with the kernel module trees installed under /lib/modules.",
     "Reboot the node (drain it first) so the installed kernel takes effect.", guard_fact, pred_kernel_current,
     "kernel.release"},
    {"lifecycle.cuda.floor", Category::lifecycle, Severity::version, false, kAnyHarness,
     "CUDA toolkit is a supported release", "Lifecycle: current CUDA (not CUDA 12.0 when 13.x is out)",
     "Reads /usr/local/cuda/version.json and compares it with the CUDA floor.",
     "Install a current CUDA toolkit (and keep older ones side by side if jobs need them).", guard_fact,
     pred_version_floor, "cuda.version", "cuda-toolkit", {}, "docs/min-versions.md"},
    {"lifecycle.cuda.driver_compat", Category::lifecycle, Severity::version, false, kAnyHarness,
     "The GPU driver can run the installed CUDA toolkit", "Lifecycle: driver and CUDA toolkit match",
     "Checks the loaded driver against the minimum driver of the CUDA toolkit's major release.",
     "Upgrade the driver, or install the cuda-compat package for forward compatibility.", guard_driver_and_cuda,
     pred_driver_runs_cuda, "gpu.driver.version"},
    {"lifecycle.nvcc.present", Category::lifecycle, Severity::missing, false, kAnyHarness,
     "nvcc is available to users", "Lifecycle: CUDA compiler available on GPU nodes",
     "Looks for nvcc on PATH and under /usr/local/cuda/bin.",
     "Install the CUDA toolkit (cuda-toolkit-XX-Y) and put /usr/local/cuda/bin on PATH.", guard_gpu_only,
     pred_present, "tool.nvcc.version", {}, "warn"},
};

}  // namespace

std::span<const Check> lifecycle_checks() { return kChecks; }

}  // namespace cmax::audit::checks
