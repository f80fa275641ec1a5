// Host identity, distribution, kernel (running and installed), boot command line, mounts,
// virtualisation, locked-memory limit, CPU frequency governors.

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/collectors/collector.h"
#include "audit/parse/os_release.h"
#include "audit/parse/sysfs.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit {
namespace {

void collect_distro(const CollectContext& ctx, Facts& facts) {
  std::string err;
  std::string_view path = "/etc/os-release";
  auto text = read_optional(ctx, path, &err);
  if (!text) {
    path = "/usr/lib/os-release";
    text = read_optional(ctx, path, &err);
  }
  if (!text) {
    if (err.empty())
      facts.absent("os.id", "/etc/os-release", "no /etc/os-release or /usr/lib/os-release");
    else
      facts.error("os.id", "/etc/os-release", err);
    return;
  }
  auto kv = parse_os_release(*text);
  auto get = [&](std::string_view k) -> std::string {
    auto it = kv.find(k);
    return it == kv.end() ? std::string() : it->second;
  };
  std::string id = get("ID"), version_id = get("VERSION_ID");
  if (id.empty()) {
    facts.error("os.id", std::string(path), "no ID= line");
    return;
  }
  facts.present("os.id", id, std::string(path));
  if (!version_id.empty()) facts.present("os.version_id", version_id, std::string(path));
  if (!get("PRETTY_NAME").empty()) facts.present("os.pretty_name", get("PRETTY_NAME"), std::string(path));
  // "debian-12", "ubuntu-22.04": the key the kernel CVE table uses.
  if (!version_id.empty()) facts.present("os.distro", fmt::format("{}-{}", id, version_id), std::string(path));
  if (!get("ID_LIKE").empty()) facts.present("os.id_like", get("ID_LIKE"), std::string(path));
}

void collect_kernel(const CollectContext& ctx, Facts& facts) {
  auto release = read_fact(ctx, facts, "kernel.release", "/proc/sys/kernel/osrelease");
  auto version = read_fact(ctx, facts, "kernel.version_string", "/proc/version");
  std::string err;
  auto signature = read_optional(ctx, "/proc/version_signature", &err);
  std::string pkg = kernel_package_version(version.value_or(""), signature.value_or(""));
  std::string upstream = kernel_upstream_version(pkg, signature.value_or(""));
  if (!upstream.empty())
    facts.present("kernel.upstream_version", upstream, signature ? "/proc/version_signature" : "/proc/version",
                  "the upstream release the distro kernel is built from");
  if (!pkg.empty())
    facts.present("kernel.package_version", pkg, signature ? "/proc/version_signature" : "/proc/version");
  else
    facts.absent("kernel.package_version", "/proc/version", "the running kernel names no distro package version");
  read_fact(ctx, facts, "kernel.cmdline", "/proc/cmdline");

  // Installed kernels: one directory per release under /lib/modules.
  auto mods = ctx.host.list_dir("/lib/modules");
  if (!mods) {
    facts.error("kernel.installed", "/lib/modules", mods.error().message);
    return;
  }
  std::vector<std::string> releases;
  for (const auto& e : *mods)
    if (e.is_dir && ctx.host.exists(core::join_path(core::join_path("/lib/modules", e.name), "modules.dep")))
      releases.push_back(e.name);
  if (releases.empty()) {
    facts.absent("kernel.installed", "/lib/modules", "no kernel module trees under /lib/modules");
    return;
  }
  facts.present("kernel.installed", fmt::format("{}", fmt::join(releases, " ")), "/lib/modules");
}

void collect_identity(const CollectContext& ctx, Facts& facts) {
  auto name = read_fact(ctx, facts, "host.name", "/proc/sys/kernel/hostname");
  if (!name || !ctx.host.is_live()) read_fact(ctx, facts, "host.name", "/etc/hostname");
  // Virtualisation: the CPU's hypervisor flag, then DMI.
  std::string err;
  if (auto cpuinfo = read_optional(ctx, "/proc/cpuinfo", &err, 8u << 20)) {
    bool hv = false;
    for (auto line : core::split_lines(*cpuinfo))
      if (line.starts_with("flags") && line.find(" hypervisor") != std::string_view::npos) hv = true;
    facts.present("host.virtualized", hv ? "yes" : "no", "/proc/cpuinfo", "cpu flag 'hypervisor'");
  } else {
    facts.error("host.virtualized", "/proc/cpuinfo", err.empty() ? "no /proc/cpuinfo" : err);
  }
  if (auto v = read_optional(ctx, "/sys/class/dmi/id/sys_vendor"))
    facts.present("host.vendor", std::string(core::trim(*v)), "/sys/class/dmi/id/sys_vendor");
  if (auto v = read_optional(ctx, "/sys/class/dmi/id/product_name"))
    facts.present("host.product", std::string(core::trim(*v)), "/sys/class/dmi/id/product_name");
}

void collect_mounts(const CollectContext& ctx, Facts& facts) {
  std::string err;
  auto text = read_optional(ctx, "/proc/mounts", &err, 16u << 20);
  if (!text) {
    // Without the mount table nothing is known about mounts: an error, not "none mounted".
    std::string why = err.empty() ? "no /proc/mounts (an image without procfs): mounts are unknown" : err;
    for (const char* key : {"storage.fs_types", "storage.shared_mounts", "storage.nfs_soft_mounts"})
      facts.error(key, "/proc/mounts", why);
    return;
  }
  static constexpr std::string_view kShared[] = {"nfs", "nfs4", "lustre", "gpfs", "wekafs", "beegfs",
                                                 "ceph", "cephfs", "fuse.weka", "fuse.juicefs", "virtiofs",
                                                 "fuse.gcsfuse", "9p", "glusterfs", "fuse.glusterfs",
                                                 "panfs", "vast", "fuse.ddn"};
  std::vector<std::string> shared, soft_nfs;
  std::set<std::string> types;
  for (const auto& m : parse_proc_mounts(*text)) {
    types.insert(m.fs_type);
    if (m.fs_type.starts_with("nfs") && ("," + m.options + ",").find(",soft,") != std::string::npos)
      soft_nfs.push_back(fmt::format("{} ({})", m.mount_point, m.options));
    for (auto s : kShared)
      if (m.fs_type == s) shared.push_back(fmt::format("{} ({})", m.mount_point, m.fs_type));
  }
  facts.present("storage.fs_types", fmt::format("{}", fmt::join(types, " ")), "/proc/mounts");
  if (soft_nfs.empty())
    facts.absent("storage.nfs_soft_mounts", "/proc/mounts", "no NFS mount with the 'soft' option");
  else
    facts.present("storage.nfs_soft_mounts", fmt::format("{}", fmt::join(soft_nfs, ", ")), "/proc/mounts");
  if (shared.empty())
    facts.absent("storage.shared_mounts", "/proc/mounts", "no network or parallel filesystem is mounted");
  else
    facts.present("storage.shared_mounts", fmt::format("{}", fmt::join(shared, ", ")), "/proc/mounts");
}

void collect_limits(const CollectContext& ctx, Facts& facts) {
  if (!ctx.host.is_live()) {
    facts.error("limits.memlock", "/proc/self/limits", "limits of a host root image cannot be read; run on the host");
    return;
  }
  std::string err;
  auto text = read_optional(ctx, "/proc/self/limits", &err);
  auto memlock = text ? parse_limits_memlock(*text) : std::nullopt;
  if (!memlock) {
    facts.error("limits.memlock", "/proc/self/limits", err.empty() ? "no 'Max locked memory' line" : err);
    return;
  }
  facts.present("limits.memlock", *memlock, "/proc/self/limits", "soft limit of the cmax process");
}

void collect_governors(const CollectContext& ctx, Facts& facts) {
  auto cpus = ctx.host.list_dir("/sys/devices/system/cpu");
  if (!cpus) {
    facts.error("cpu.governors", "/sys/devices/system/cpu", cpus.error().message);
    return;
  }
  std::set<std::string> governors;
  int n = 0;
  for (const auto& e : *cpus) {
    if (!e.name.starts_with("cpu") || e.name.size() < 4 || !(e.name[3] >= '0' && e.name[3] <= '9')) continue;
    ++n;
    auto g = read_optional(ctx, fmt::format("/sys/devices/system/cpu/{}/cpufreq/scaling_governor", e.name));
    if (g) governors.insert(std::string(core::trim(*g)));
  }
  facts.present("cpu.count", std::to_string(n), "/sys/devices/system/cpu");
  if (governors.empty())
    facts.absent("cpu.governors", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
                 "no cpufreq scaling governor exposed (typical in a VM or with firmware-controlled P-states)");
  else
    facts.present("cpu.governors", fmt::format("{}", fmt::join(governors, " ")),
                  "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor");
}

void collect_sudo(const CollectContext& ctx, Facts& facts) {
  // Passwordless sudo rules in sudoers and sudoers.d (a tenant's admin access to its nodes).
  std::vector<std::string> files = {"/etc/sudoers"};
  if (auto d = ctx.host.list_dir("/etc/sudoers.d"))
    for (const auto& e : *d)
      if (!e.is_dir && e.name.find('.') == std::string::npos && !e.name.ends_with("~"))
        files.push_back("/etc/sudoers.d/" + e.name);
  std::vector<std::string> rules;
  bool any = false;
  std::string err;
  for (const auto& f : files) {
    std::string e;
    auto text = read_optional(ctx, f, &e);
    if (!text) {
      if (!e.empty()) err = e;
      continue;
    }
    any = true;
    int line_no = 0;
    for (auto line : core::split_lines(*text)) {
      ++line_no;
      auto t = core::trim(line);
      if (t.empty() || t.front() == '#' || t.starts_with("Defaults")) continue;
      if (t.find("NOPASSWD:") != std::string_view::npos) rules.push_back(fmt::format("{}:{}: {}", f, line_no, core::clip(t, 80)));
    }
  }
  if (!rules.empty())
    facts.present("access.sudo_nopasswd", fmt::format("{}", fmt::join(rules, "; ")), "/etc/sudoers, /etc/sudoers.d");
  else if (!any && !err.empty())
    facts.error("access.sudo_nopasswd", "/etc/sudoers", err);
  else
    facts.absent("access.sudo_nopasswd", "/etc/sudoers, /etc/sudoers.d",
                 any ? "no NOPASSWD rule in sudoers" : "no sudoers file (sudo not installed)");
}

}  // namespace

void collect_os(const CollectContext& ctx, Facts& facts) {
  collect_identity(ctx, facts);
  collect_distro(ctx, facts);
  collect_kernel(ctx, facts);
  collect_mounts(ctx, facts);
  collect_limits(ctx, facts);
  collect_governors(ctx, facts);
  collect_sudo(ctx, facts);
}

}  // namespace cmax::audit
