// User-facing GPU software and access on a node: Nsight Compute, perf (for the running kernel),
// the NCCL and GDRCopy libraries, dcgm-exporter, user and group tools, SSH keys between nodes,
// directory/SSO integration, the kubelet's CPU manager, and what enroot mounts into containers.

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "audit/collectors/collector.h"
#include "audit/parse/dpkg_status.h"
#include "audit/parse/kv_conf.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit {
namespace {

std::string joined(const auto& items, std::string_view sep = " ") { return fmt::format("{}", fmt::join(items, sep)); }

// Directories the dynamic linker searches (ld.so.conf and its includes, plus the defaults) and
// where CUDA-side libraries are commonly installed. Bounded: no recursive walk of /usr.
std::vector<std::string> library_dirs(const CollectContext& ctx) {
  std::vector<std::string> dirs = {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                                   "/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/usr/local/lib64",
                                   "/usr/local/cuda/lib64", "/usr/local/cuda/lib"};
  std::vector<std::string> confs = {"/etc/ld.so.conf"};
  if (auto list = ctx.host.list_dir("/etc/ld.so.conf.d"))
    for (const auto& e : *list)
      if (e.name.ends_with(".conf")) confs.push_back("/etc/ld.so.conf.d/" + e.name);
  for (const auto& c : confs) {
    auto text = read_optional(ctx, c, nullptr, 64 * 1024);
    if (!text) continue;
    for (auto line : core::split_lines(*text)) {
      auto t = core::trim(line.substr(0, line.find('#')));
      if (t.empty() || t.starts_with("include")) continue;
      dirs.emplace_back(t);
    }
  }
  // One level under /opt and /usr/local: /opt/nccl/lib, /usr/local/nccl/lib64, /opt/gdrcopy/lib.
  for (std::string_view top : {"/opt", "/usr/local"}) {
    auto list = ctx.host.list_dir(top);
    if (!list) continue;
    for (const auto& e : *list) {
      if (!e.is_dir && !e.is_symlink) continue;
      for (const char* sub : {"lib", "lib64"}) dirs.push_back(fmt::format("{}/{}/{}", top, e.name, sub));
    }
  }
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (auto& d : dirs)
    if (seen.insert(d).second) out.push_back(std::move(d));
  return out;
}

// Every file named `stem`* in `dirs`: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5".
std::vector<std::string> find_libraries(const CollectContext& ctx, const std::vector<std::string>& dirs,
                                        std::string_view stem) {
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    auto list = ctx.host.list_dir(d);
    if (!list) continue;
    for (const auto& e : *list)
      if (e.name.starts_with(stem)) out.push_back(fmt::format("{}/{}", d, e.name));
  }
  return out;
}

// "libnccl.so.2.21.5" -> "2.21.5": the full version a library's real file carries.
std::string version_from_soname(std::string_view path, std::string_view stem) {
  auto name = path.substr(path.rfind('/') + 1);
  if (!name.starts_with(stem)) return {};
  auto rest = name.substr(stem.size());
  if (rest.empty() || rest[0] != '.') return {};
  rest.remove_prefix(1);
  return std::count(rest.begin(), rest.end(), '.') >= 2 ? std::string(rest) : std::string();
}

void collect_nccl_gdrcopy(const CollectContext& ctx, const std::map<std::string, std::string, std::less<>>& pkgs,
                          Facts& facts) {
  auto dirs = library_dirs(ctx);
  auto nccl = find_libraries(ctx, dirs, "libnccl.so");
  std::string src = "ld.so.conf directories, /opt/*/lib*, /usr/local/*/lib*";
  if (nccl.empty()) {
    facts.absent("lib.nccl", src, "no libnccl.so* in the linker's directories");
  } else {
    std::string version;
    for (const auto& p : nccl)
      if (auto v = version_from_soname(p, "libnccl.so"); !v.empty() && version.empty()) version = v;
    if (version.empty())
      if (auto it = pkgs.find("libnccl2"); it != pkgs.end()) version = core::split_package_version(it->second).upstream;
    facts.present("lib.nccl", version.empty() ? std::string("installed") : version, nccl.front(), joined(nccl));
  }
  auto gdr = find_libraries(ctx, dirs, "libgdrapi.so");
  if (gdr.empty()) facts.absent("gdrcopy.lib", src, "no libgdrapi.so* in the linker's directories");
  else facts.present("gdrcopy.lib", gdr.front(), src, joined(gdr));
  if (ctx.host.exists("/dev/gdrdrv")) facts.present("gdrcopy.dev", "/dev/gdrdrv", "/dev/gdrdrv");
  else facts.absent("gdrcopy.dev", "/dev/gdrdrv", "no /dev/gdrdrv device node");
}

void collect_ncu(const CollectContext& ctx, Facts& facts) {
  std::optional<std::string> path = find_tool(ctx, "ncu");
  std::string from_dir;
  if (!path) {
    // CUDA puts ncu in its bin directory; the standalone installer under /opt/nvidia.
    std::vector<std::string> candidates = {"/usr/local/cuda/bin/ncu"};
    if (auto list = ctx.host.list_dir("/usr/local"))
      for (const auto& e : *list)
        if (e.name.starts_with("cuda-")) candidates.push_back(fmt::format("/usr/local/{}/bin/ncu", e.name));
    if (auto list = ctx.host.list_dir("/opt/nvidia/nsight-compute"))
      for (const auto& e : *list) {
        candidates.push_back(fmt::format("/opt/nvidia/nsight-compute/{}/ncu", e.name));
        from_dir = e.name;
      }
    for (const auto& c : candidates)
      if (ctx.host.exists(c)) {
        path = c;
        break;
      }
  }
  if (!path) {
    facts.absent("tool.ncu.path", "PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute/*",
                 "Nsight Compute (ncu) is not installed");
    return;
  }
  std::string version;
  if (auto run = run_tool(ctx, *path, {"--version"}); run && *run) {
    if (auto tok = core::find_version_token((*run)->out, "Version")) version = std::string(*tok);
  }
  if (version.empty() && path->find("/nsight-compute/") != std::string::npos) version = from_dir;
  facts.present("tool.ncu.path", *path, *path, version.empty() ? std::string() : fmt::format("version {}", version));
}

// perf as the running kernel needs it: Ubuntu's /usr/bin/perf and Debian 12's are wrapper scripts
// that exec a kernel-specific binary (/usr/lib/linux-tools/<release>/perf, /usr/bin/perf_<x.y>),
// and print "perf not found for kernel ..." when it is missing.
void collect_perf(const CollectContext& ctx, Facts& facts) {
  auto path = find_tool(ctx, "perf");
  if (!path) {
    facts.absent("tool.perf", "PATH: perf", "perf is not installed (linux-tools / linux-perf)");
    return;
  }
  // A host-root path is relative to the root; find_tool returns the host path.
  auto head = ctx.host.read_prefix(*path, 4096);
  if (!head) {
    facts.error("tool.perf", *path, head.error().message);
    return;
  }
  if (head->starts_with("\x7f" "ELF")) {
    facts.present("tool.perf", *path, *path, "an executable");
    return;
  }
  std::string release(core::trim(read_optional(ctx, "/proc/sys/kernel/osrelease", nullptr, 256).value_or("")));
  if (release.empty()) {
    facts.error("tool.perf", *path, "perf is a wrapper script and the running kernel's release is unknown");
    return;
  }
  std::vector<std::string> wanted;
  if (head->find("linux-tools") != std::string::npos) {
    // Ubuntu: the flavour suffix is dropped for the directory ("6.8.0-45-generic" -> "6.8.0-45").
    std::string base = release;
    if (auto dash = release.rfind('-'); dash != std::string::npos && !core::parse_uint(std::string_view(release).substr(dash + 1)))
      base = release.substr(0, dash);
    wanted = {fmt::format("/usr/lib/linux-tools/{}/perf", release), fmt::format("/usr/lib/linux-tools-{}/perf", base),
              fmt::format("/usr/lib/linux-tools/{}/perf", base)};
  } else if (head->find("perf_") != std::string::npos) {
    // Debian: /usr/bin/perf_<major.minor> from linux-perf-<major.minor>.
    auto v = core::parse_version(release);
    if (v && v->parts.size() >= 2) wanted = {fmt::format("/usr/bin/perf_{}.{}", v->parts[0], v->parts[1])};
  }
  if (wanted.empty()) {
    facts.present("tool.perf", *path, *path, "a script of a kind cmax does not know; taken as installed");
    return;
  }
  for (const auto& w : wanted)
    if (ctx.host.exists(w)) {
      facts.present("tool.perf", w, *path, fmt::format("the wrapper's binary for kernel {}", release));
      return;
    }
  facts.absent("tool.perf", *path,
               fmt::format("{} is the distro's wrapper, but there is no perf for the running kernel {} (looked for {})",
                           *path, release, joined(wanted, ", ")));
}

void collect_dcgm_exporter(const CollectContext& ctx, const std::map<std::string, std::string, std::less<>>& pkgs,
                           Facts& facts) {
  if (auto run = run_tool(ctx, "dcgm-exporter", {"--version"})) {
    if (*run) {
      std::string text = (*run)->out + "\n" + (*run)->err;
      if (auto tok = core::find_version_token(text, "version"))
        facts.present("tool.dcgm_exporter.version", std::string(*tok), (*run)->command, core::clip(core::trim(text), 160));
      else
        facts.error("tool.dcgm_exporter.version", (*run)->command,
                    fmt::format("no version in its output: {}", core::clip(core::trim(text), 120)));
    } else {
      facts.error("tool.dcgm_exporter.version", "dcgm-exporter --version", run->error().message);
    }
    return;
  }
  for (const char* name : {"datacenter-gpu-manager-exporter", "dcgm-exporter"})
    if (auto it = pkgs.find(name); it != pkgs.end()) {
      facts.present("tool.dcgm_exporter.version", it->second, fmt::format("dpkg: {}", name), "distro package");
      return;
    }
  if (auto p = find_tool(ctx, "dcgm-exporter"))
    facts.error("tool.dcgm_exporter.version", *p, "installed, but its version is read by running it on the live host");
  else
    facts.absent("tool.dcgm_exporter.version", "PATH: dcgm-exporter, dpkg",
                 "dcgm-exporter is not installed on the host (on Kubernetes it runs as a pod: see the cluster view)");
}

void collect_access(const CollectContext& ctx, Facts& facts) {
  for (const char* tool : {"useradd", "groupadd"}) {
    std::string key = fmt::format("access.{}", tool);
    bool found = false;
    for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"})
      if (ctx.host.exists(fmt::format("{}/{}", dir, tool))) {
        facts.present(key, fmt::format("{}/{}", dir, tool), fmt::format("{}/{}", dir, tool));
        found = true;
        break;
      }
    if (!found) facts.absent(key, "/usr/sbin, /sbin", fmt::format("no {} (the passwd package)", tool));
  }

  // Directory and SSO integration: SSSD's providers, PAM modules of identity providers, sshd
  // trusting an SSH certificate authority or asking a command for keys.
  std::vector<std::string> idp;
  std::vector<std::string> sssd_files = {"/etc/sssd/sssd.conf"};
  if (auto list = ctx.host.list_dir("/etc/sssd/conf.d"))
    for (const auto& e : *list)
      if (e.name.ends_with(".conf")) sssd_files.push_back("/etc/sssd/conf.d/" + e.name);
  for (const auto& f : sssd_files) {
    auto text = read_optional(ctx, f, nullptr, 256 * 1024);
    if (!text) continue;
    for (auto line : core::split_lines(*text)) {
      auto kv = core::parse_key_value(line);
      if (kv && (kv->key == "id_provider" || kv->key == "auth_provider") && kv->value != "files" && kv->value != "none")
        idp.push_back(fmt::format("{}: {} = {}", f, kv->key, kv->value));
    }
  }
  static constexpr std::string_view kPamIdp[] = {"pam_oauth2", "pam_oidc", "pam_okta", "pam_aad", "pam_sss",
                                                 "pam_ldap",   "pam_krb5", "pam_keycloak"};
  if (auto list = ctx.host.list_dir("/etc/pam.d")) {
    for (const auto& e : *list) {
      std::string f = "/etc/pam.d/" + e.name;
      auto text = read_optional(ctx, f, nullptr, 64 * 1024);
      if (!text) continue;
      for (auto line : core::split_lines(*text)) {
        auto t = core::trim(line);
        if (t.empty() || t[0] == '#') continue;
        for (auto m : kPamIdp)
          if (t.find(m) != std::string_view::npos) {
            std::string item = fmt::format("/etc/pam.d/{}: {}", e.name, m);
            if (std::find(idp.begin(), idp.end(), item) == idp.end()) idp.push_back(item);
          }
      }
    }
  }
  if (auto text = read_optional(ctx, "/etc/ssh/sshd_config", nullptr, 256 * 1024)) {
    for (auto line : core::split_lines(*text)) {
      auto kv = core::parse_key_value(line, ' ');
      if (!kv) continue;
      auto key = core::to_lower(kv->key);
      if (key == "trustedusercakeys" || key == "authorizedkeyscommand")
        idp.push_back(fmt::format("/etc/ssh/sshd_config: {} {}", kv->key, core::clip(kv->value, 60)));
      if (key == "hostbasedauthentication")
        facts.present("access.ssh.hostbased", std::string(core::to_lower(kv->value)), "/etc/ssh/sshd_config");
    }
  }
  if (idp.empty())
    facts.absent("access.idp", "/etc/sssd, /etc/pam.d, /etc/ssh/sshd_config",
                 "no SSSD provider, identity-provider PAM module, SSH CA or AuthorizedKeysCommand: local accounts only");
  else
    facts.present("access.idp", joined(idp, "; "), "/etc/sssd, /etc/pam.d, /etc/ssh/sshd_config");

  // Passwordless SSH between nodes as clusters set it up: the user's key in the user's own
  // authorized_keys on a home shared by every node. Only the live user's home can be read.
  if (!ctx.host.is_live()) {
    facts.error("access.ssh.user_key", "~/.ssh", "the auditing user's home is read on the live host");
    return;
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    facts.error("access.ssh.user_key", "$HOME", "HOME is not set");
    return;
  }
  std::string ssh = fmt::format("{}/.ssh", home);
  auto authorized = read_optional(ctx, ssh + "/authorized_keys", nullptr, 1u << 20);
  std::vector<std::string> keys;
  for (const char* k : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
    auto pub = read_optional(ctx, fmt::format("{}/{}.pub", ssh, k), nullptr, 64 * 1024);
    if (!pub || !ctx.host.exists(fmt::format("{}/{}", ssh, k))) continue;
    auto words = core::split_any(*pub, " \t\n");
    bool authorized_self = authorized && words.size() >= 2 && authorized->find(words[1]) != std::string::npos;
    keys.push_back(fmt::format("{}{}", k, authorized_self ? " (in authorized_keys)" : " (not in authorized_keys)"));
  }
  if (keys.empty())
    facts.absent("access.ssh.user_key", ssh, "no id_ed25519, id_ecdsa or id_rsa key pair");
  else
    facts.present("access.ssh.user_key", joined(keys, ", "), ssh);
}

void collect_kubelet(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kState = "/var/lib/kubelet/cpu_manager_state";
  std::string err;
  if (auto text = read_optional(ctx, kState, &err, 1u << 20)) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_object() && doc.contains("policyName") && doc["policyName"].is_string())
      facts.present("kubelet.cpu_manager_policy", doc["policyName"].get<std::string>(), std::string(kState), "policyName");
    else
      facts.error("kubelet.cpu_manager_policy", std::string(kState),
                  fmt::format("not a CPU manager checkpoint (no string policyName): {}", core::clip(core::trim(*text), 100)));
    return;
  }
  if (!err.empty()) {
    facts.error("kubelet.cpu_manager_policy", std::string(kState), err);
    return;
  }
  // No checkpoint yet: the kubelet's configuration says what it will run.
  for (std::string_view conf : {"/var/lib/kubelet/config.yaml", "/etc/kubernetes/kubelet-config.yaml"}) {
    auto text = read_optional(ctx, conf, nullptr, 1u << 20);
    if (!text) continue;
    std::string policy = "none";  // the kubelet's default
    for (auto line : core::split_lines(*text)) {
      auto t = core::trim(line);
      if (t.starts_with("cpuManagerPolicy:")) policy = std::string(core::unquote(core::trim(t.substr(17))));
    }
    facts.present("kubelet.cpu_manager_policy", policy, std::string(conf), "cpuManagerPolicy (default none)");
    return;
  }
  facts.absent("kubelet.cpu_manager_policy", std::string(kState), "no kubelet on this host");
}

// What enroot gives every container: fstab-style mounts (mounts.d/*.fstab) and environment
// (environ.d/*.env). A host file reaches a pyxis job only through these.
void collect_enroot(const CollectContext& ctx, Facts& facts) {
  std::vector<std::string> mounts, env;
  bool any = false;
  for (auto [dir, suffix, out] : {std::tuple<std::string_view, std::string_view, std::vector<std::string>*>{"/etc/enroot/mounts.d", ".fstab", &mounts},
                                  {"/etc/enroot/environ.d", ".env", &env}}) {
    auto list = ctx.host.list_dir(dir);
    if (!list) continue;
    any = true;
    for (const auto& e : *list) {
      if (!e.name.ends_with(suffix)) continue;
      auto text = read_optional(ctx, fmt::format("{}/{}", dir, e.name), nullptr, 64 * 1024);
      if (!text) continue;
      for (auto line : core::split_lines(*text)) {
        auto t = core::trim(line);
        if (t.empty() || t[0] == '#') continue;
        if (out == &mounts) {
          auto words = core::split_any(t, " \t");
          if (words.size() >= 2) mounts.push_back(fmt::format("{}:{}", words[0], words[1]));
        } else {
          env.emplace_back(t);
        }
      }
    }
  }
  if (!any) {
    facts.absent("enroot.mounts", "/etc/enroot/mounts.d", "no enroot configuration");
    return;
  }
  facts.present("enroot.mounts", joined(mounts, " "), "/etc/enroot/mounts.d/*.fstab", "SRC:DST");
  facts.present("enroot.environ", joined(env, " "), "/etc/enroot/environ.d/*.env");
  // Topology files the host has, whether or not anything names them.
  std::vector<std::string> topo;
  if (auto list = ctx.host.list_dir("/etc/nccl"))
    for (const auto& e : *list)
      if (e.name.ends_with(".xml")) topo.push_back("/etc/nccl/" + e.name);
  for (const char* p : {"/etc/nccl-topology.xml", "/var/run/nvidia-topologyd/virtualTopology.xml"})
    if (ctx.host.exists(p)) topo.emplace_back(p);
  if (topo.empty()) facts.absent("nccl.topo_files", "/etc/nccl/*.xml", "no NCCL topology file on the host");
  else facts.present("nccl.topo_files", joined(topo), "/etc/nccl/*.xml, /var/run/nvidia-topologyd");
}

// What `enroot import` needs besides enroot (it shells out to these), and, when asked, the import
// itself into a temporary file that is removed afterwards.
void collect_enroot_import(const CollectContext& ctx, Facts& facts) {
  auto enroot = find_tool(ctx, "enroot");
  if (!enroot) {
    facts.absent("enroot.import", "PATH: enroot", "enroot is not installed");
    return;
  }
  std::vector<std::string> missing;
  for (const char* tool : {"mksquashfs", "curl", "jq", "parallel"})
    if (!find_tool(ctx, tool)) missing.emplace_back(tool);
  if (!missing.empty())
    facts.present("enroot.import_missing", joined(missing, " "), "PATH",
                  "enroot import runs mksquashfs (squashfs-tools), curl, jq and parallel");
  if (!ctx.enroot_import_image) {
    facts.error("enroot.import", *enroot,
                "not run: `enroot import` pulls an image from a registry, so cmax runs it only with --enroot-import IMAGE");
    return;
  }
  if (!ctx.host.is_live()) {
    facts.error("enroot.import", *enroot, "enroot import runs on the live host only");
    return;
  }
  char tmpl[] = "/tmp/cmax-enroot-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (!dir) {
    facts.error("enroot.import", "/tmp", fmt::format("create a temporary directory: {}", std::strerror(errno)));
    return;
  }
  std::string out = fmt::format("{}/probe.sqsh", dir);
  core::ProcessSpec spec;
  spec.argv = {*enroot, "import", "-o", out, *ctx.enroot_import_image};
  spec.timeout = ctx.enroot_import_timeout;
  spec.max_output_bytes = 64 * 1024;
  std::string cmd = core::describe_argv(spec.argv);
  auto r = core::run_process(spec);
  std::error_code ec;
  auto size = std::filesystem::file_size(out, ec);
  std::filesystem::remove_all(dir, ec);
  if (!r) {
    facts.error("enroot.import", cmd, r.error().message);
    return;
  }
  if (r->timed_out) {
    facts.present("enroot.import", fmt::format("timed out after {} s", ctx.enroot_import_timeout.count() / 1000), cmd,
                  "failed");
    return;
  }
  std::string text = r->out + "\n" + r->err;
  if (r->exit_code == 0 && size > 0) {
    facts.present("enroot.import", fmt::format("ok ({} bytes)", size), cmd, "imported");
    return;
  }
  std::string error_line = line_with(text, "[ERROR]");
  facts.present("enroot.import",
                fmt::format("exit {}: {}", r->exit_code, error_line.empty() ? core::clip(core::trim(text), 160) : error_line),
                cmd, "failed");
}

}  // namespace

void collect_software(const CollectContext& ctx, Facts& facts) {
  std::map<std::string, std::string, std::less<>> pkgs;
  if (auto text = read_optional(ctx, "/var/lib/dpkg/status", nullptr, 256u << 20))
    for (auto& [k, v] : parse_dpkg_status(*text)) pkgs.emplace(k, v);
  collect_nccl_gdrcopy(ctx, pkgs, facts);
  collect_ncu(ctx, facts);
  collect_perf(ctx, facts);
  collect_dcgm_exporter(ctx, pkgs, facts);
  collect_access(ctx, facts);
  collect_kubelet(ctx, facts);
  collect_enroot(ctx, facts);
  collect_enroot_import(ctx, facts);
}

}  // namespace cmax::audit
