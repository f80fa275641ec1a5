// Judging the host isolation facts. Pure: every input is in HostIsolationFacts. Evidence that was
// not read gives unverified with the error; a check whose subject is absent gives not_applicable.

#include "isolation/host_isolation.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "audit/attention.h"
#include "core/strings.h"
#include "isolation/host_parse.h"

namespace cmax::isolation {
namespace {

using audit::Finding;
using audit::Outcome;

constexpr std::string_view kCriterion = "Security: tenant isolation (host)";
constexpr std::string_view kVolumeDevicesDir = "/var/run/nvidia-container-devices";
constexpr std::string_view kEnvvarKey = "accept-nvidia-visible-devices-envvar-when-unprivileged";
constexpr std::string_view kVolumeKey = "accept-nvidia-visible-devices-as-volume-mounts";
constexpr std::uint16_t kDefaultPartition = 0x7fff;
constexpr std::string_view kInitialPidNs = "pid:[4026531836]";  // 0xEFFFFFFC

struct CheckText {
  std::string_view name, title, expected, description, remediation;
};

Finding base(const CheckText& t, std::string_view source) {
  Finding f;
  f.check_id = fmt::format("isolation.host.{}", t.name);
  f.category = audit::Category::security;
  f.severity = audit::Severity::config;
  f.security = true;
  f.title = std::string(t.title);
  f.expected = std::string(t.expected);
  f.criterion = std::string(kCriterion);
  f.evidence_source = std::string(source);
  f.description = std::string(t.description);
  f.remediation = std::string(t.remediation);
  return f;
}

std::string one_line(std::string_view s, std::size_t max_chars = 200) {
  std::string out;
  for (char c : core::trim(s)) out += c == '\n' ? ' ' : c;
  return core::clip(out, max_chars);
}

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The worst of several sub-results, with the reasons of that rank.
class Verdict {
 public:
  void add(Outcome o, std::string why) {
    if (!any_ || audit::attention_rank(o) > audit::attention_rank(outcome_)) {
      any_ = true;
      outcome_ = o;
      why_.clear();
    }
    if (o == outcome_) why_.push_back(std::move(why));
  }
  bool any() const { return any_; }
  void apply(Finding& f) const {
    f.outcome = outcome_;
    f.reason = join(why_, "; ");
  }

 private:
  bool any_ = false;
  Outcome outcome_ = Outcome::unverified;
  std::vector<std::string> why_;
};

Finding with(Finding f, Outcome o, std::string reason) {
  f.outcome = o;
  f.reason = std::move(reason);
  return f;
}

bool is_read(const PathRead& r) { return r.state == ReadState::read; }

std::string mode_text(unsigned mode) { return fmt::format("{:04o}", mode & 07777); }

std::string user_name(const HostIsolationFacts& f, unsigned uid) {
  if (is_read(f.passwd))
    if (auto name = passwd_name(f.passwd.text, uid)) return *name;
  return fmt::format("uid {}", uid);
}

std::optional<unsigned> munge_uid(const HostIsolationFacts& f) {
  if (!is_read(f.passwd)) return std::nullopt;
  return passwd_uid(f.passwd.text, "munge");
}

std::string munge_user_problem(const HostIsolationFacts& f) {
  if (!is_read(f.passwd)) return fmt::format("cannot find the munge user: {}", f.passwd.error);
  return "cannot find the munge user: no munge entry in /etc/passwd";
}

// What says this process runs in a container; nullopt when nothing does.
std::optional<std::string> container_evidence(const HostIsolationFacts& f) {
  if (f.dockerenv) return std::string("/.dockerenv exists");
  if (f.containerenv) return std::string("/run/.containerenv exists");
  if (f.env.kubernetes_service_host) return std::string("KUBERNETES_SERVICE_HOST is set");
  for (const PathRead* r : {&f.self_cgroup, &f.pid1_cgroup}) {
    if (!is_read(*r)) continue;
    if (auto marker = container_cgroup_marker(r->text))
      return fmt::format("{} names {}", r->path, *marker);
  }
  return std::nullopt;
}

// ---- isolation.host.gpu_devices

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

  Verdict v;
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

// ---- isolation.host.container_toolkit_envvar

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

// ---- isolation.host.ib_pkeys

constexpr CheckText kIbText = {
    "ib_pkeys", "InfiniBand ports outside a tenant partition",
    "a tenant PKey on every InfiniBand port, and at most limited membership of the default "
    "partition 0x7fff",
    "Reads each InfiniBand port's pkey table under /sys/class/infiniband/<dev>/ports/<n>/pkeys. "
    "The "
    "high bit of a PKey is membership (1 full, 0 limited), the low 15 bits the partition. A full "
    "member of the default partition 0x7fff can reach every other full member on the fabric, so "
    "on a shared fabric the subnet manager should give each tenant its own PKey and the default "
    "partition only limited membership.",
    "In the subnet manager's partitions.conf give each tenant a partition of its own "
    "(e.g. tenant_a=0x8001, ipoib : <its port GUIDs>=full) and make the default partition limited "
    "for compute ports (Default=0x7fff : ALL=limited, SELF=full); with UFM, use its PKey API."};

std::string pkey_text(std::uint16_t pkey) {
  const std::uint16_t partition = pkey & 0x7fff;
  return fmt::format(
      "0x{:04x} ({}, {})", pkey, (pkey & 0x8000) ? "full" : "limited",
      partition == kDefaultPartition ? std::string("default") : fmt::format("0x{:04x}", partition));
}

Finding judge_ib(const HostIsolationFacts& f) {
  Finding x = base(kIbText, f.ib_class.path + "/*/ports/*/pkeys");
  if (f.ib_class.state == ReadState::absent)
    return with(std::move(x), Outcome::not_applicable,
                "no InfiniBand ports (no /sys/class/infiniband)");
  if (!is_read(f.ib_class))
    return with(std::move(x), Outcome::unverified,
                "cannot list InfiniBand devices: " + f.ib_class.error);
  Verdict v;
  std::vector<std::string> ports;
  std::size_t roce = 0;
  std::size_t ib = 0;
  for (const auto& p : f.ib_ports) {
    if (!is_read(p.link_layer)) {
      v.add(Outcome::unverified, fmt::format("{}: {}", p.name, p.link_layer.error));
      ports.push_back(p.name + ": link layer not readable");
      continue;
    }
    if (p.link_layer.text != "InfiniBand") {
      if (p.link_layer.text == "Ethernet") ++roce;
      continue;
    }
    ++ib;
    if (!p.pkeys_error.empty()) {
      v.add(Outcome::unverified, fmt::format("{}: {}", p.name, p.pkeys_error));
      ports.push_back(p.name + ": pkeys not readable");
      continue;
    }
    std::vector<std::uint16_t> keys;
    std::string bad;
    for (const auto& [index, raw] : p.pkeys) {
      auto key = parse_pkey(raw);
      if (!key) {
        bad = fmt::format("pkeys/{} holds \"{}\"", index, one_line(raw, 40));
        break;
      }
      if ((*key & 0x7fff) != 0) keys.push_back(*key);  // 0x0000 and 0x8000 are empty slots
    }
    if (!bad.empty()) {
      v.add(Outcome::unverified, fmt::format("{}: {}, not a PKey", p.name, bad));
      ports.push_back(p.name + ": pkeys malformed");
      continue;
    }
    if (keys.empty()) {
      v.add(Outcome::unverified,
            fmt::format("{}: the pkey table is empty (the subnet manager has not configured the "
                        "port yet)",
                        p.name));
      ports.push_back(p.name + ": no PKeys");
      continue;
    }
    std::vector<std::string> shown;
    bool default_full = false;
    bool tenant = false;
    for (auto k : keys) {
      shown.push_back(pkey_text(k));
      if ((k & 0x7fff) == kDefaultPartition)
        default_full = default_full || (k & 0x8000);
      else
        tenant = true;
    }
    ports.push_back(fmt::format("{}: {}", p.name, join(shown)));
    if (default_full && !tenant)
      v.add(Outcome::warn,
            fmt::format("{}: full member of the default partition: any port on a shared fabric "
                        "can reach it; no tenant PKey",
                        p.name));
    else if (default_full)
      v.add(Outcome::warn,
            fmt::format("{}: has a tenant PKey but is also a full member of the default "
                        "partition, which lets it talk to every other full member",
                        p.name));
    else if (tenant)
      v.add(Outcome::pass, fmt::format("{}: in a tenant partition", p.name));
    else
      v.add(Outcome::pass,
            fmt::format("{}: limited member of the default partition only: it reaches only full "
                        "members (normally the subnet manager)",
                        p.name));
  }
  if (ib == 0 && !v.any()) {
    return with(std::move(x), Outcome::not_applicable,
                roce > 0 ? "RoCE: partitioning is by VLAN, not visible from the host's pkey table"
                         : "no InfiniBand ports");
  }
  v.apply(x);
  x.observed = join(ports, "; ");
  if (roce > 0)
    x.observed += fmt::format("; {} not judged", plural(roce, "RoCE port", "RoCE ports"));
  x.evidence_value = core::clip(x.observed, 200);
  return x;
}

// ---- isolation.host.netns

// The rule. Outside a container: another non-root user's process in this network namespace (its
// /proc/<pid>/ns/net link equals ours, or a socket of its uid in /proc/self/net/{tcp,udp}*) can see
// and bind this node's ports: warn. Inside a container, /proc/1 is normally the container's own
// init, so "our netns equals PID 1's" proves nothing; it is evidence of hostNetwork only when PID 1
// is also in our PID namespace, that namespace is the initial one (pid:[4026531836]) and PID 1 is
// a host init (systemd, init). The host ends of container links (veth*, cni0, docker0, cali*, ...)
// in our namespace are evidence of it too. Anything else inside a container is unverified.
constexpr CheckText kNetnsText = {
    "netns", "Network namespace shared with other tenants or with the host",
    "a network namespace of its own (containers), or none shared with other users' processes",
    "Compares /proc/self/ns/net with /proc/1/ns/net and with every other user's process. In a "
    "container it fails when the namespace is the host's: PID 1 shares our PID namespace, which is "
    "the initial one, is a host init (systemd or init) and its network namespace is ours; or the "
    "namespace holds the "
    "node-side ends of container links (veth*, cni0, docker0, cali*). Inside a container with "
    "its own PID namespace /proc/1 is the container's init, so equality with it proves nothing. "
    "Outside a container it warns when processes or sockets of other non-root users share the "
    "namespace.",
    "Run tenant workloads in their own network namespace: no hostNetwork for tenant pods "
    "(PodSecurity baseline forbids it), a network namespace per job where the site supports it, "
    "and no shared login processes on compute nodes."};

Finding judge_netns(const HostIsolationFacts& f) {
  Finding x = base(kNetnsText, f.self_net.path);
  if (!is_read(f.self_net))
    return with(std::move(x), Outcome::unverified,
                "cannot read our network namespace: " + f.self_net.error);
  x.evidence_value = f.self_net.text;
  const auto container = container_evidence(f);
  if (container) {
    const bool pid_read = is_read(f.self_pid) && is_read(f.pid1_pid) && is_read(f.pid1_comm);
    const std::string comm(is_read(f.pid1_comm) ? core::trim(f.pid1_comm.text)
                                                : std::string_view());
    // The initial PID namespace's inode is fixed (PROC_PID_INIT_INO), which keeps a container
    // that runs systemd as its own init from passing for the host.
    const bool host_pid = pid_read && f.self_pid.text == f.pid1_pid.text &&
                          f.self_pid.text == kInitialPidNs && (comm == "systemd" || comm == "init");
    std::vector<std::string> node_side;
    if (is_read(f.net_dev)) node_side = node_side_interfaces(f.net_dev.text);
    x.observed = fmt::format("in a container ({}); {}; PID 1 ({}) {}", *container, f.self_net.text,
                             comm.empty() ? "comm unknown" : comm,
                             is_read(f.pid1_net) ? f.pid1_net.text : "net not readable");
    if (host_pid && is_read(f.pid1_net) && f.pid1_net.text == f.self_net.text)
      return with(std::move(x), Outcome::fail,
                  "a container in the host's network namespace (hostNetwork): PID 1 is the host's "
                  "init and shares our network namespace");
    if (!node_side.empty()) {
      x.evidence_value = "/proc/self/net/dev: " + core::clip(join(node_side), 160);
      return with(std::move(x), Outcome::fail,
                  fmt::format("a container in the host's network namespace (hostNetwork): it "
                              "holds the node's container interfaces ({})",
                              core::clip(join(node_side), 120)));
    }
    if (host_pid && is_read(f.pid1_net))
      return with(std::move(x), Outcome::pass,
                  "the container has a network namespace of its own (the host's init is in " +
                      f.pid1_net.text + ")");
    std::string why =
        "inside a container with its own PID namespace /proc/1 is the container's init, so "
        "comparing with it proves nothing";
    if (!pid_read) why = "cannot compare with the host's init: PID namespace or comm not readable";
    why += is_read(f.net_dev) ? "; no node-side container interfaces in /proc/self/net/dev"
                              : "; " + f.net_dev.error;
    return with(std::move(x), Outcome::unverified, why);
  }

  std::set<unsigned> users;
  std::size_t sharing = 0;
  std::size_t unreadable = 0;
  std::set<unsigned> unreadable_users;
  for (const auto& p : f.others) {
    if (!is_read(p.net)) {
      ++unreadable;
      unreadable_users.insert(p.uid);
    } else if (p.net.text == f.self_net.text) {
      ++sharing;
      users.insert(p.uid);
    }
  }
  std::set<unsigned> socket_users;
  std::vector<std::string> tables_unread;
  for (const auto& t : f.socket_tables) {
    if (t.state == ReadState::absent) continue;  // tcp6 and udp6 are absent without IPv6
    if (!is_read(t)) {
      tables_unread.push_back(t.error);
      continue;
    }
    for (unsigned uid : socket_table_uids(t.text))
      if (uid != 0 && uid != f.env.uid) socket_users.insert(uid);
  }
  std::set<unsigned> all_users = users;
  all_users.insert(socket_users.begin(), socket_users.end());
  x.observed = fmt::format("not in a container; {}; shared with {} of {}", f.self_net.text,
                           plural(sharing, "process", "processes"),
                           plural(users.size(), "other user", "other users"));
  if (!socket_users.empty())
    x.observed += fmt::format("; sockets of {} in this namespace",
                              plural(socket_users.size(), "other user", "other users"));
  if (!all_users.empty()) {
    std::vector<std::string> names;
    for (unsigned uid : all_users) names.push_back(user_name(f, uid));
    return with(std::move(x), Outcome::warn,
                fmt::format("shared with {} of {} ({}): they can see and bind this node's ports "
                            "and sockets",
                            plural(sharing, "process", "processes"),
                            plural(all_users.size(), "other user", "other users"),
                            core::clip(join(names), 120)));
  }
  std::vector<std::string> gaps;
  if (!is_read(f.proc)) gaps.push_back("cannot list /proc: " + f.proc.error);
  if (unreadable > 0)
    gaps.push_back(
        fmt::format("the network namespace of {} of {} is not readable (it needs "
                    "ptrace access, i.e. root)",
                    plural(unreadable, "process", "processes"),
                    plural(unreadable_users.size(), "other user", "other users")));
  if (f.status_unreadable > 0)
    gaps.push_back(fmt::format("the owner of {} is not readable ({})",
                               plural(f.status_unreadable, "process", "processes"),
                               f.status_error));
  if (f.proc_truncated) gaps.push_back("the process scan stopped at its bound");
  const auto options = is_read(f.mounts) ? proc_mount_options(f.mounts.text) : std::nullopt;
  if (f.env.uid != 0 && options && hidepid_hides(hidepid_option(*options)))
    gaps.push_back(fmt::format("hidepid={} hides other users' processes from this one",
                               hidepid_option(*options)));
  for (const auto& e : tables_unread) gaps.push_back(e);
  if (!gaps.empty()) return with(std::move(x), Outcome::unverified, join(gaps, "; "));
  return with(std::move(x), Outcome::pass,
              "no process or socket of another non-root user is in this network namespace");
}

// ---- isolation.host.proc_visibility

constexpr CheckText kProcText = {
    "proc_visibility", "Other users' processes visible in /proc",
    "/proc mounted with hidepid=invisible (2), so a tenant sees only its own processes",
    "Counts the processes in /proc owned by users other than root and this one (real uid from "
    "/proc/<pid>/status) and reads the proc mount's hidepid= option in /proc/mounts. Without "
    "hidepid every tenant can read the others' command lines (often holding tokens and paths), "
    "environment metadata, and resource use.",
    "Mount /proc with hidepid=invisible (hidepid=2; e.g. `proc /proc proc "
    "defaults,hidepid=invisible,gid=<monitoring group> 0 0` in /etc/fstab, and "
    "ProtectProc=invisible for services), keeping a gid= exemption for monitoring agents."};

Finding judge_proc(const HostIsolationFacts& f) {
  Finding x = base(kProcText, "/proc/<pid>/status, /proc/mounts");
  if (!is_read(f.proc))
    return with(std::move(x), Outcome::unverified, "cannot list /proc: " + f.proc.error);
  std::optional<std::string_view> options;
  if (is_read(f.mounts)) options = proc_mount_options(f.mounts.text);
  const std::string_view hidepid = options ? hidepid_option(*options) : std::string_view();
  const bool hides = hidepid_hides(hidepid);
  const std::string mount_note = !is_read(f.mounts) ? "/proc/mounts not readable"
                                 : !options         ? "no proc mount on /proc in /proc/mounts"
                                 : hidepid.empty()
                                     ? "/proc mounted without hidepid"
                                     : fmt::format("/proc mounted with hidepid={}", hidepid);
  if (options) x.evidence_value = one_line(*options, 200);
  std::set<unsigned> users;
  for (const auto& p : f.others) users.insert(p.uid);
  x.observed =
      fmt::format("{} of {} visible; {}", plural(f.others.size(), "process", "processes"),
                  plural(users.size(), "other non-root user", "other non-root users"), mount_note);
  const std::string visible =
      fmt::format("{} of {} are visible: their command lines and environment metadata can be read",
                  plural(f.others.size(), "process", "processes"),
                  plural(users.size(), "other user", "other users"));
  if (f.env.uid == 0) {
    // Root sees every process whatever hidepid says, so the mount option is the evidence.
    if (hides)
      return with(std::move(x), Outcome::pass,
                  fmt::format("hidepid={} hides other users' processes from tenants (root sees "
                              "every process regardless)",
                              hidepid));
    if (!f.others.empty() && !options)
      return with(std::move(x), Outcome::unverified,
                  "running as root, which sees every process; whether tenants see them depends on "
                  "hidepid, and " +
                      mount_note);
    if (!f.others.empty())
      return with(std::move(x), Outcome::warn, visible + " to every tenant (no hidepid)");
    if (f.status_unreadable > 0)
      return with(std::move(x), Outcome::unverified,
                  fmt::format("the owner of {} is not readable ({})",
                              plural(f.status_unreadable, "process", "processes"), f.status_error));
    return with(std::move(x), Outcome::pass, "no process of another non-root user is running");
  }
  if (!f.others.empty()) return with(std::move(x), Outcome::warn, visible);
  if (f.proc_truncated)
    return with(std::move(x), Outcome::unverified, "the process scan stopped at its bound");
  if (f.status_unreadable > 0 && !hides)
    return with(std::move(x), Outcome::unverified,
                fmt::format("the owner of {} is not readable ({}); {}",
                            plural(f.status_unreadable, "process", "processes"), f.status_error,
                            mount_note));
  return with(std::move(x), Outcome::pass,
              hides ? fmt::format("hidepid={} hides other users' processes", hidepid)
                    : std::string("no process of another non-root user is visible"));
}

// ---- isolation.host.munge_key and isolation.host.munge_socket

constexpr CheckText kMungeKeyText = {
    "munge_key", "MUNGE key readable by other users",
    "/etc/munge/munge.key a regular file, mode 0600 or 0400, owned by the munge user",
    "Stats /etc/munge/munge.key. Whoever can read the key can mint MUNGE credentials for any uid, "
    "which Slurm accepts as proof of identity: a tenant with the key can run jobs as, and read "
    "the data of, any user, root included.",
    "chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key (and /etc/munge "
    "0700); if the key was ever readable by others, generate a new one (mungekey or "
    "create-munge-key) "
    "and restart munged on every node."};

constexpr CheckText kMungeSocketText = {
    "munge_socket", "MUNGE socket directory writable by other users",
    "/run/munge not writable by group or others (or sticky), owned by munge or root; "
    "munge.socket.2 owned by munge",
    "Stats /run/munge and /run/munge/munge.socket.2. Slurm trusts whatever answers on that "
    "socket: a tenant who can replace it can hand out forged credentials to every local client.",
    "chown munge:munge /run/munge && chmod 0755 /run/munge (systemd: RuntimeDirectory=munge "
    "with RuntimeDirectoryMode=0755 in munge.service), and restart munged."};

Finding judge_munge_key(const HostIsolationFacts& f) {
  Finding x = base(kMungeKeyText, f.munge_key.path);
  const PathStat& k = f.munge_key;
  if (k.error_number == ENOENT && f.munge_dir.error_number == ENOENT)
    return with(std::move(x), Outcome::not_applicable,
                "munge not installed (no /etc/munge/munge.key, no /run/munge)");
  if (k.error_number == ENOENT)
    return with(std::move(x), Outcome::unverified,
                "munge runs here (/run/munge exists) but /etc/munge/munge.key is absent: the key "
                "lives elsewhere (munged --key-file) or is not visible from here");
  if (k.error_number == EACCES && f.munge_etc.error_number == 0 && S_ISDIR(f.munge_etc.mode) &&
      (f.munge_etc.mode & 0011) == 0) {
    x.observed = fmt::format("key not reachable: /etc/munge is mode {} owned by {}",
                             mode_text(f.munge_etc.mode), user_name(f, f.munge_etc.uid));
    x.evidence_value = x.observed;
    return with(std::move(x), Outcome::pass,
                "other users cannot reach the key: /etc/munge grants group and others no search "
                "permission (" +
                    k.error + ")");
  }
  if (k.error_number != 0)
    return with(std::move(x), Outcome::unverified, "cannot stat the key: " + k.error);
  const std::string owner = user_name(f, k.uid);
  x.observed = fmt::format("munge.key is mode {} owned by {}", mode_text(k.mode), owner);
  x.evidence_value = fmt::format("mode {} uid {}", mode_text(k.mode), k.uid);
  if (!S_ISREG(k.mode))
    return with(std::move(x), Outcome::unverified, "munge.key is not a regular file");
  if (k.mode & 0077) {
    const std::string who = (k.mode & 0007) ? "any local user" : "members of its group";
    const std::string what = (k.mode & 0044)
                                 ? "forge MUNGE credentials and impersonate any user to Slurm"
                                 : "replace it with a key they know, then forge MUNGE credentials";
    return with(std::move(x), Outcome::fail,
                fmt::format("munge.key is mode {}: {} can {}", mode_text(k.mode), who, what));
  }
  auto munge = munge_uid(f);
  if (!munge) return with(std::move(x), Outcome::unverified, munge_user_problem(f));
  if (k.uid != *munge)
    return with(
        std::move(x), Outcome::warn,
        fmt::format("munge.key is owned by {}, not the munge user (uid {})", owner, *munge));
  return with(std::move(x), Outcome::pass,
              fmt::format("only munge can read the key (mode {})", mode_text(k.mode)));
}

Finding judge_munge_socket(const HostIsolationFacts& f) {
  Finding x = base(kMungeSocketText, f.munge_dir.path);
  const PathStat& d = f.munge_dir;
  const PathStat& s = f.munge_socket;
  if (d.error_number == ENOENT)
    return with(std::move(x), Outcome::not_applicable,
                f.munge_key.error_number == ENOENT
                    ? "munge not installed (no /etc/munge/munge.key, no /run/munge)"
                    : "munged does not run here (no /run/munge)");
  if (d.error_number != 0)
    return with(std::move(x), Outcome::unverified, "cannot stat /run/munge: " + d.error);
  if (!S_ISDIR(d.mode))
    return with(std::move(x), Outcome::unverified, "/run/munge is not a directory");
  auto munge = munge_uid(f);
  x.observed =
      fmt::format("/run/munge is mode {} owned by {}", mode_text(d.mode), user_name(f, d.uid));
  x.evidence_value = fmt::format("/run/munge mode {} uid {}", mode_text(d.mode), d.uid);
  Verdict v;
  if ((d.mode & 0022) && !(d.mode & S_ISVTX))
    v.add(Outcome::fail,
          fmt::format("/run/munge is mode {}: a tenant could replace the socket and hand out "
                      "forged credentials",
                      mode_text(d.mode)));
  if (d.uid != 0) {
    if (!munge)
      v.add(Outcome::unverified, munge_user_problem(f));
    else if (d.uid != *munge)
      v.add(Outcome::fail, fmt::format("/run/munge is owned by {}, who could replace the socket",
                                       user_name(f, d.uid)));
  }
  if (s.error_number == ENOENT) {
    x.observed += "; no munge.socket.2 (munged not running?)";
  } else if (s.error_number != 0) {
    v.add(Outcome::unverified, "cannot stat the socket: " + s.error);
  } else {
    x.observed += fmt::format("; munge.socket.2 owned by {}", user_name(f, s.uid));
    x.evidence_value += fmt::format("; munge.socket.2 mode {} uid {}", mode_text(s.mode), s.uid);
    if (!S_ISSOCK(s.mode))
      v.add(Outcome::warn, "munge.socket.2 is not a socket");
    else if (!munge)
      v.add(Outcome::unverified, munge_user_problem(f));
    else if (s.uid != *munge)
      v.add(Outcome::warn,
            fmt::format("munge.socket.2 is owned by {}, not the munge user", user_name(f, s.uid)));
  }
  if (!v.any()) v.add(Outcome::pass, "only munge (or root) can replace the socket");
  v.apply(x);
  return x;
}

}  // namespace

std::vector<Finding> judge_host_isolation(const HostIsolationFacts& facts) {
  return {judge_gpu(facts),  judge_toolkit(facts),   judge_ib(facts),          judge_netns(facts),
          judge_proc(facts), judge_munge_key(facts), judge_munge_socket(facts)};
}

}  // namespace cmax::isolation
