// Networking: /etc/nccl.conf leaves NCCL's tuner alone and names devices that exist, RoCE uses
// the RoCEv2 GID, RDMA ports are up, GPUDirect RDMA takes the open module's dma_buf path, and
// nothing between a GPU and its NIC (IOMMU translation, PCIe ACS redirect) detours peer traffic.
// ClusterMAX category "Networking".

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {
namespace {

constexpr std::string_view kNcclEnvDoc = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html";
constexpr std::string_view kNcclAcsDoc =
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs";
constexpr std::string_view kGdrDoc = "https://docs.nvidia.com/cuda/gpudirect-rdma/";

const Fact* nccl_setting(const CheckContext& ctx, std::string_view key) {
  return ctx.facts.find(fmt::format("nccl.conf.{}", key));
}

Verdict with_evidence(Verdict v, const Fact* f, std::string_view key) {
  if (f && f->status == FactStatus::present) {
    v.evidence_source = f->source;
    v.evidence_value = fmt::format("{}={}", key, core::clip(f->value, 200));
  }
  return v;
}

// The node has RDMA devices; not_applicable without, unverified when they could not be listed.
std::optional<Verdict> need_rdma(const CheckContext& ctx) {
  const Fact* f = ctx.facts.find("rdma.device_count");
  if (!f) return verdict(Outcome::unverified, {}, {}, "rdma.device_count was not collected");
  if (f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not list RDMA devices: {}", f->detail));
  auto n = core::parse_uint(f->value);
  if (!n) return verdict(Outcome::unverified, f->value, {}, "RDMA device count unparseable");
  if (*n == 0) return verdict(Outcome::not_applicable, "no RDMA device", {}, "no RDMA device in /sys/class/infiniband");
  return std::nullopt;
}

// /etc/nccl.conf exists: not_applicable without one, unverified when unreadable.
std::optional<Verdict> guard_nccl_conf(const CheckContext& ctx, const Check&) {
  const Fact* f = ctx.facts.find("nccl.conf.path");
  if (!f) return verdict(Outcome::unverified, {}, {}, "nccl.conf.path was not collected");
  if (f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read /etc/nccl.conf: {}", f->detail));
  if (f->status == FactStatus::absent)
    return verdict(Outcome::not_applicable, "no /etc/nccl.conf", {}, "no /etc/nccl.conf: nothing is forced node-wide");
  return std::nullopt;
}

// check.param names an NCCL variable that the node-wide file must leave to NCCL's tuner.
Verdict pred_not_forced(const CheckContext& ctx, const Check& check) {
  const Fact* f = nccl_setting(ctx, check.param);
  // NCCL treats an empty value as unset.
  if (!f || f->status != FactStatus::present || core::trim(f->value).empty())
    return verdict(Outcome::pass, fmt::format("{} not set", check.param), "not set in /etc/nccl.conf",
                   "NCCL chooses per collective, message size and topology");
  std::string observed = fmt::format("{}={}", check.param, f->value);
  // "^NVLS" (NCCL 2.24+) removes one choice instead of imposing one: an override, but a narrow one.
  if (f->value.starts_with('^'))
    return with_evidence(verdict(Outcome::warn, observed, "not set in /etc/nccl.conf",
                                 fmt::format("{} excludes {} for every job on this node ({}); NCCL still tunes "
                                             "among the rest, but the exclusion should live in the jobs that need it",
                                             check.param, f->value.substr(1), f->source)),
                         f, check.param);
  return with_evidence(verdict(Outcome::fail, observed, "not set in /etc/nccl.conf",
                               fmt::format("{} forces {}={} on every job of this node; NCCL's tuner no longer "
                                           "chooses per collective and size (a job's own environment still wins)",
                                           f->source, check.param, f->value)),
                       f, check.param);
}

std::optional<Verdict> guard_roce(const CheckContext& ctx, const Check&) {
  if (auto g = need_rdma(ctx)) return g;
  const Fact* roce = ctx.facts.find("rdma.roce");
  if (!roce || roce->status != FactStatus::present)
    return verdict(
        Outcome::unverified, {}, {},
        fmt::format("cannot tell RoCE from InfiniBand: {}", roce ? roce->detail : "rdma.roce not collected"));
  if (roce->value != "yes")
    return verdict(Outcome::not_applicable, "no RoCE port", {},
                   fmt::format("every RDMA port is {}; GID index selection is a RoCE matter",
                               ctx.facts.value_or("rdma.link_layers", "InfiniBand")));
  if (const Fact* conf = ctx.facts.find("nccl.conf.path"); conf && conf->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read /etc/nccl.conf: {}", conf->detail));
  return std::nullopt;
}

Verdict pred_gid_index(const CheckContext& ctx, const Check& check) {
  const Fact* f = nccl_setting(ctx, check.param);
  std::string expected = fmt::format("{}=3 in /etc/nccl.conf", check.param);
  if (!f || f->status != FactStatus::present)
    return verdict(Outcome::warn, "not set", expected,
                   ctx.facts.is_present("nccl.conf.path")
                       ? "/etc/nccl.conf does not set NCCL_IB_GID_INDEX: each job picks a GID on its own, and a "
                         "RoCEv1 or link-local GID breaks routing across the fabric"
                       : "no /etc/nccl.conf: each job picks a GID on its own, and a RoCEv1 or link-local GID "
                         "breaks routing across the fabric");
  bool ok = core::trim(f->value) == "3";
  return with_evidence(
      verdict(ok ? Outcome::pass : Outcome::warn, fmt::format("{}={}", check.param, f->value), expected,
              ok ? ""
                 : "GID index 3 is the RoCEv2 IPv4 GID in the default mlx5 GID table; another index "
                   "usually means RoCEv1 or a link-local address"),
      f, check.param);
}

std::optional<Verdict> guard_rdma_conf(const CheckContext& ctx, const Check&) {
  if (auto g = need_rdma(ctx)) return g;
  if (const Fact* conf = ctx.facts.find("nccl.conf.path"); conf && conf->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read /etc/nccl.conf: {}", conf->detail));
  return std::nullopt;
}

Verdict pred_qps_per_connection(const CheckContext& ctx, const Check& check) {
  constexpr std::string_view kScale =
      "ClusterMAX asks for >= 2 on multi-tier Clos fabrics (more than 64 nodes), to spread each connection "
      "over more ECMP paths; one node cannot see the cluster's size, so this is advisory";
  const Fact* f = nccl_setting(ctx, check.param);
  if (!f || f->status != FactStatus::present)
    return verdict(Outcome::warn, "not set (NCCL default 1)", ">= 2 on fabrics of more than 64 nodes",
                   fmt::format("{}; on a single-tier fabric the default is fine", kScale));
  auto n = core::parse_int(f->value);
  if (!n)
    return with_evidence(verdict(Outcome::unverified, fmt::format("{}={}", check.param, f->value), ">= 2",
                                 fmt::format("'{}' is not an integer", f->value)),
                         f, check.param);
  bool ok = *n >= 2;
  return with_evidence(verdict(ok ? Outcome::pass : Outcome::warn, fmt::format("{}={}", check.param, *n),
                               ">= 2 on fabrics of more than 64 nodes", ok ? "" : std::string(kScale)),
                       f, check.param);
}

// An NCCL device or interface list: "^a,b" excludes, "=a" matches exactly, otherwise prefixes;
// entries may carry ":port".
struct NcclList {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
};

NcclList parse_nccl_list(std::string_view text) {
  NcclList out;
  text = core::trim(text);
  if (text.starts_with('^')) {
    out.exclude = true;
    text.remove_prefix(1);
  }
  if (text.starts_with('=')) {
    out.exact = true;
    text.remove_prefix(1);
  }
  for (auto part : core::split_any(text, ",")) {
    auto name = core::trim(part.substr(0, part.find(':')));
    if (!name.empty()) out.names.emplace_back(name);
  }
  return out;
}

std::optional<Verdict> guard_nccl_list(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_nccl_conf(ctx, check)) return g;
  const Fact* f = nccl_setting(ctx, check.param);
  if (!f || f->status != FactStatus::present)
    return verdict(Outcome::not_applicable, fmt::format("{} not set", check.param), {},
                   fmt::format("/etc/nccl.conf does not set {}: NCCL considers every device", check.param));
  // The device list to match against: RDMA devices, or network interfaces.
  if (check.fact == "rdma.devices") {
    const Fact* count = ctx.facts.find("rdma.device_count");
    if (!count || count->status != FactStatus::present)
      return verdict(Outcome::unverified, {}, {},
                     fmt::format("could not list RDMA devices: {}", count ? count->detail : "not collected"));
    return std::nullopt;
  }
  const Fact* have = ctx.facts.find(check.fact);
  if (!have || have->status != FactStatus::present)
    return verdict(Outcome::unverified, {}, {},
                   fmt::format("could not list {}: {}", check.fact, have ? have->detail : "not collected"));
  return std::nullopt;
}

// check.param is NCCL_IB_HCA or NCCL_SOCKET_IFNAME; check.fact the devices present. For HCAs a
// missing entry loses a rail (warn) and no match loses RDMA (fail); for interfaces any match is
// enough, since one bootstrap interface is all NCCL needs.
Verdict pred_nccl_list_present(const CheckContext& ctx, const Check& check) {
  const Fact* f = nccl_setting(ctx, check.param);
  NcclList list = parse_nccl_list(f->value);
  std::string observed = fmt::format("{}={}", check.param, f->value);
  std::string present(ctx.facts.value_or(check.fact));
  auto devices = core::split_any(present, " ");
  bool hca = check.fact == "rdma.devices";
  std::string expected = hca ? "every listed name matches an RDMA device" : "a listed name matches an interface";
  if (list.exclude)
    return with_evidence(
        verdict(Outcome::pass, observed, expected, "an exclusion list: names that are absent exclude nothing"), f,
        check.param);
  std::vector<std::string> missing;
  for (const auto& name : list.names) {
    bool found = false;
    for (auto d : devices) found |= list.exact ? d == name : d.starts_with(name);
    if (!found) missing.push_back(name);
  }
  std::string have = present.empty() ? std::string("none") : present;
  Outcome outcome = Outcome::pass;
  std::string reason;
  if (!list.names.empty() && missing.size() == list.names.size()) {
    outcome = Outcome::fail;
    reason = hca ? fmt::format("no RDMA device matches (present: {}); NCCL falls back to TCP sockets", have)
                 : fmt::format("no interface matches (present: {}); NCCL cannot bootstrap", have);
  } else if (!missing.empty() && hca) {
    outcome = Outcome::warn;
    reason =
        fmt::format("no RDMA device matches {} (present: {}); jobs lose those rails", fmt::join(missing, ", "), have);
  } else if (!missing.empty()) {
    reason = fmt::format("nothing here matches {}, other entries do (present: {})", fmt::join(missing, ", "), have);
  }
  return with_evidence(verdict(outcome, observed, expected, reason), f, check.param);
}

std::optional<Verdict> guard_rdma_fact(const CheckContext& ctx, const Check& check) {
  if (auto g = need_rdma(ctx)) return g;
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  if (f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read {}: {}", f->source, f->detail));
  return std::nullopt;
}

// mlx5_0, irdma0, bnxt_re1: the driver's name and an index. ibp12s0, rocep65s0f1, ibs3, ibo0,
// ibP1p2s0, ibx<mac>: rdma-core's persistent names (udev rdma_rename). Anything else: renamed locally.
std::string_view hca_naming_scheme(std::string_view name) {
  for (std::string_view prefix : {"roce", "ib"}) {
    if (name.size() > prefix.size() + 1 && name.starts_with(prefix) &&
        std::string_view("ospPx").find(name[prefix.size()]) != std::string_view::npos &&
        name.find_first_not_of("0123456789abcdefABCDEFopPsfx", prefix.size()) == std::string_view::npos)
      return "persistent";
  }
  auto digits = name.find_last_not_of("0123456789");
  if (digits != std::string_view::npos && digits + 1 < name.size()) return "kernel";
  return "other";
}

Verdict pred_hca_naming(const CheckContext& ctx, const Check& check) {
  std::string names(ctx.facts.value_or(check.fact));
  std::set<std::string_view> schemes;
  std::vector<std::string> labelled;
  for (auto n : core::split_any(names, " ")) {
    auto s = hca_naming_scheme(n);
    schemes.insert(s);
    labelled.push_back(fmt::format("{} ({})", n, s));
  }
  std::string expected = "one scheme: kernel (mlx5_N) or persistent (ibpXsY / rocepXsYfZ)";
  if (schemes.size() <= 1)
    return verdict(Outcome::pass, names, expected, schemes.empty() ? "" : fmt::format("{} names", *schemes.begin()));
  return verdict(Outcome::warn, fmt::format("{}", fmt::join(labelled, ", ")), expected,
                 "mixed naming: some devices were renamed by udev and some not, so NCCL_IB_HCA and job scripts "
                 "cannot name the same rails on every node");
}

Verdict pred_ports_active(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  std::string ports(ctx.facts.value_or("rdma.port_count", "?"));
  if (f && f->status == FactStatus::present)
    return verdict(Outcome::fail, f->value, "every port 4: ACTIVE, 5: LinkUp",
                   fmt::format("port(s) not up; NCCL skips them or stalls on them{}",
                               f->detail.empty() ? "" : fmt::format("; {}", f->detail)));
  return verdict(Outcome::pass, fmt::format("{} port(s) ACTIVE/LinkUp", ports), "every port 4: ACTIVE, 5: LinkUp");
}

Verdict pred_memlock(const CheckContext& ctx, const Check& check) {
  std::string value(ctx.facts.value_or(check.fact));
  if (value == "unlimited") return verdict(Outcome::pass, value, "unlimited");
  auto bytes = core::parse_uint(value);
  if (!bytes) return verdict(Outcome::unverified, value, "unlimited", fmt::format("'{}' is not a limit", value));
  return verdict(Outcome::warn, fmt::format("{} bytes", *bytes), "unlimited",
                 "RDMA pins (registers) every communication buffer; a finite memlock limit makes ibv_reg_mr fail "
                 "once NCCL or MPI buffers outgrow it");
}

std::optional<Verdict> guard_gpu_rdma(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  if (auto g = need_rdma(ctx)) return g;
  const Fact* flavor = ctx.facts.find("gpu.driver.flavor");
  if (flavor && flavor->status == FactStatus::present) return std::nullopt;
  const Fact* driver = ctx.facts.find("gpu.driver.version");
  if (driver && driver->status == FactStatus::absent)
    return verdict(Outcome::unverified, "driver not loaded", {},
                   "the NVIDIA driver is not loaded, so the GPUDirect RDMA path it offers cannot be seen");
  return verdict(Outcome::unverified, {}, {},
                 fmt::format("could not read the driver flavour: {}",
                             driver ? driver->detail : std::string("gpu.driver.version was not collected")));
}

Verdict pred_open_module(const CheckContext& ctx, const Check& check) {
  std::string flavor(ctx.facts.value_or(check.fact));
  std::string expected = "open kernel module (dma_buf GPUDirect RDMA)";
  if (flavor != "open")
    return verdict(Outcome::warn, fmt::format("{} kernel module", flavor), expected,
                   "the proprietary module offers GPUDirect RDMA only through nvidia_peermem; the open module "
                   "exports GPU memory as dma_buf, the path NVIDIA and ClusterMAX recommend");
  auto release = core::parse_version(ctx.facts.value_or("kernel.release"));
  auto dma_buf_floor = core::parse_version("5.12");
  if (release && dma_buf_floor && core::compare_versions(*release, *dma_buf_floor) < 0)
    return verdict(Outcome::warn, fmt::format("open kernel module on Linux {}", release->text), expected,
                   "dma_buf GPUDirect RDMA needs Linux 5.12 or newer");
  return verdict(Outcome::pass, "open kernel module", expected);
}

std::optional<Verdict> guard_peermem(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_rdma(ctx, check)) return g;
  return unverified_if_not_present(ctx, check.fact);
}

Verdict pred_peermem(const CheckContext& ctx, const Check& check) {
  std::string modules(ctx.facts.value_or(check.fact));
  bool peermem = false, nv_peer_mem = false;
  for (auto m : core::split_any(modules, " ")) {
    peermem |= m == "nvidia_peermem";
    nv_peer_mem |= m == "nv_peer_mem";
  }
  bool open = ctx.facts.value_or("gpu.driver.flavor") == "open";
  std::string loaded = peermem ? "nvidia_peermem loaded" : nv_peer_mem ? "nv_peer_mem loaded" : "no peer-memory module";
  std::string expected = "dma_buf through the open module";
  if (nv_peer_mem)
    return verdict(Outcome::warn, loaded, expected,
                   "nv_peer_mem is the retired out-of-tree Mellanox module; unload it and use dma_buf (open module) "
                   "or nvidia_peermem");
  if (open)
    return verdict(Outcome::pass, fmt::format("open module, {}", loaded), expected,
                   peermem ? "dma_buf is available; nvidia_peermem is loaded too but not needed" : "");
  if (peermem)
    return verdict(Outcome::warn, fmt::format("proprietary module, {}", loaded), expected,
                   "legacy path: GPUDirect RDMA through nvidia_peermem on the proprietary module");
  return verdict(Outcome::fail, fmt::format("proprietary module, {}", loaded), expected,
                 "no GPUDirect RDMA path: neither dma_buf (open module) nor nvidia_peermem, so NCCL stages every "
                 "transfer through host memory");
}

std::optional<Verdict> guard_iommu(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  if (f->status != FactStatus::present)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not tell the IOMMU mode: {}", f->detail));
  return std::nullopt;
}

Verdict pred_iommu_passthrough(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  std::string mode = f->value;
  std::string expected = "IOMMU off or passthrough (iommu=pt)";
  std::string_view virt = ctx.facts.value_or("host.virtualized", "unknown");
  if (virt == "yes" && mode != "passthrough")
    return verdict(
        Outcome::not_applicable, mode, expected,
        fmt::format("a virtual machine: the hypervisor's IOMMU decides GPUDirect bandwidth ({})", f->detail));
  std::string note = virt == "unknown" ? "; could not tell a VM from bare metal" : "";
  if (mode == "off" || mode == "passthrough") return verdict(Outcome::pass, mode, expected, f->detail + note);
  if (mode == "translated")
    return verdict(Outcome::warn, mode, expected,
                   fmt::format("DMA from GPUs and NICs goes through IOMMU translation, which costs GPUDirect RDMA "
                               "bandwidth and IOTLB misses ({}){}",
                               f->detail, note));
  return verdict(
      Outcome::unverified, mode, expected,
      fmt::format("the IOMMU is on but neither the groups' types nor the command line show its mode ({})", f->detail));
}

std::optional<Verdict> guard_acs(const CheckContext& ctx, const Check& check) {
  if (auto g = unverified_if_not_present(ctx, "pci.gpu_nic_bridges")) {
    if (g->outcome == Outcome::not_applicable) g->outcome = Outcome::unverified;
    return g;
  }
  const Fact* bridges = ctx.facts.find("pci.gpu_nic_bridges");
  if (bridges->value == "0")
    return verdict(Outcome::not_applicable, "no shared switch", {},
                   fmt::format("no GPU shares a PCIe switch with a NIC ({})", bridges->detail));
  const Fact* acs = ctx.facts.find(check.fact);
  if (!acs || acs->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, "ACS P2P redirect off on GPU-NIC switch ports",
                   acs ? acs->detail : std::string("pci.acs_redirect was not collected"));
  return std::nullopt;
}

Verdict pred_acs(const CheckContext& ctx, const Check& check) {
  const Fact* acs = ctx.facts.find(check.fact);
  std::string n(ctx.facts.value_or("pci.gpu_nic_bridges"));
  std::string expected = "ACS P2P redirect off on GPU-NIC switch ports";
  if (acs->status == FactStatus::present)
    return verdict(Outcome::fail, acs->value, expected,
                   "ACS Request/Completion Redirect sends GPU<->NIC peer traffic up to the root complex instead of "
                   "across the switch, which cuts GPUDirect RDMA bandwidth or breaks it");
  Verdict v = verdict(Outcome::pass, fmt::format("no redirect on {} bridge(s)", n), expected, acs->detail);
  v.evidence_value = core::clip(acs->detail, 300);
  return v;
}

const Check kChecks[] = {
    {"networking.nccl_conf.no_forced_algo", Category::networking, Severity::config, false, kAnyHarness,
     "/etc/nccl.conf does not force NCCL_ALGO", "Networking: /etc/nccl.conf must not force NCCL_ALGO",
     "NCCL picks Ring, Tree, NVLS or CollNet per collective and message size; a node-wide NCCL_ALGO in "
     "/etc/nccl.conf overrides that for every job (NVLS and Tree lost at scale). ~/.nccl.conf, NCCL_CONF_FILE and "
     "job environments are not looked at.",
     "Remove NCCL_ALGO from /etc/nccl.conf; set it in the few jobs that need it.", guard_nccl_conf, pred_not_forced,
     "nccl.conf.path", {}, "NCCL_ALGO", kNcclEnvDoc},
    {"networking.nccl_conf.no_forced_proto", Category::networking, Severity::config, false, kAnyHarness,
     "/etc/nccl.conf does not force NCCL_PROTO", "Networking: /etc/nccl.conf must not force NCCL_PROTO",
     "NCCL picks Simple, LL or LL128 per message size; a node-wide NCCL_PROTO slows small or large messages for "
     "every job, and LL128 forced on a platform NCCL does not enable it for can corrupt data.",
     "Remove NCCL_PROTO from /etc/nccl.conf.", guard_nccl_conf, pred_not_forced, "nccl.conf.path", {}, "NCCL_PROTO",
     kNcclEnvDoc},
    {"networking.nccl_conf.no_forced_min_nchannels", Category::networking, Severity::config, false, kAnyHarness,
     "/etc/nccl.conf does not force NCCL_MIN_NCHANNELS",
     "Networking: /etc/nccl.conf must not force NCCL_MIN_NCHANNELS",
     "A node-wide channel floor takes SMs from every job's compute kernels and overrides NCCL's tuner.",
     "Remove NCCL_MIN_NCHANNELS from /etc/nccl.conf.", guard_nccl_conf, pred_not_forced, "nccl.conf.path", {},
     "NCCL_MIN_NCHANNELS", kNcclEnvDoc},
    {"networking.nccl.roce_gid_index", Category::networking, Severity::config, false, kAnyHarness,
     "RoCE nodes set NCCL_IB_GID_INDEX=3", "Networking: NCCL_IB_GID_INDEX=3 in /etc/nccl.conf on RoCE",
     "On a port whose link_layer is Ethernet, NCCL must use the RoCEv2 GID (index 3 in the default mlx5 table) to "
     "route across the fabric.",
     "Add NCCL_IB_GID_INDEX=3 to /etc/nccl.conf (check `show_gids` that index 3 is the RoCEv2 IPv4 GID).",
     guard_roce, pred_gid_index, "rdma.roce", {}, "NCCL_IB_GID_INDEX", kNcclEnvDoc},
    {"networking.nccl.ib_qps_per_connection", Category::networking, Severity::config, false, kAnyHarness,
     "NCCL_IB_QPS_PER_CONNECTION >= 2 for large Clos fabrics",
     "Networking: NCCL_IB_QPS_PER_CONNECTION >= 2 on multi-tier Clos fabrics (> 64 nodes)",
     "More queue pairs per connection spread traffic over more ECMP paths of a multi-tier fabric. Advisory: the "
     "rule depends on the cluster's size, which one node cannot see.",
     "On fabrics of more than 64 nodes add NCCL_IB_QPS_PER_CONNECTION=2 (or 4) to /etc/nccl.conf.",
     guard_rdma_conf, pred_qps_per_connection, "rdma.device_count", {}, "NCCL_IB_QPS_PER_CONNECTION", kNcclEnvDoc},
    {"networking.nccl_conf.ib_hca_present", Category::networking, Severity::config, false, kAnyHarness,
     "NCCL_IB_HCA in /etc/nccl.conf names RDMA devices that exist",
     "Networking: NCCL uses every rail (GPUDirect RDMA over all NICs)",
     "Matches each NCCL_IB_HCA entry (prefix, '=' exact, '^' exclude; ':port' ignored) against "
     "/sys/class/infiniband.",
     "Fix NCCL_IB_HCA to the device names of this node (see `ibv_devices`), or remove it.", guard_nccl_list,
     pred_nccl_list_present, "rdma.devices", {}, "NCCL_IB_HCA", kNcclEnvDoc},
    {"networking.nccl_conf.socket_ifname_present", Category::networking, Severity::config, false, kAnyHarness,
     "NCCL_SOCKET_IFNAME in /etc/nccl.conf matches an interface",
     "Networking: NCCL bootstrap interface configured correctly",
     "Matches NCCL_SOCKET_IFNAME (prefix, '=' exact, '^' exclude) against /sys/class/net; with no match NCCL "
     "cannot bootstrap.",
     "Set NCCL_SOCKET_IFNAME to this node's management or data interface prefix, or remove it.", guard_nccl_list,
     pred_nccl_list_present, "net.interfaces", {}, "NCCL_SOCKET_IFNAME", kNcclEnvDoc},
    {"networking.rdma.hca_naming", Category::networking, Severity::config, false, kAnyHarness,
     "RDMA devices follow one naming scheme", "Networking: consistent RDMA device names across the cluster",
     "Classifies /sys/class/infiniband names as kernel (mlx5_N), persistent (ibpXsY, rocepXsYfZ) or other; "
     "a mix means udev renamed only some devices.",
     "Apply one naming policy on every node (rdma-core's 82-net-setup-link / rdma_rename rules, or none).",
     guard_rdma_fact, pred_hca_naming, "rdma.devices"},
    {"networking.rdma.ports_active", Category::networking, Severity::config, false, kAnyHarness,
     "Every RDMA port is ACTIVE and LinkUp", "Networking: every rail up",
     "Reads state and phys_state of every port under /sys/class/infiniband; anything but 4: ACTIVE and 5: LinkUp "
     "is a lost rail (cable, subnet manager, switch port).",
     "Check cabling and the switch port (`ibstat`, `mlxlink`), and that a subnet manager runs on InfiniBand.",
     guard_rdma_fact, pred_ports_active, "rdma.ports_down"},
    {"networking.rdma.memlock", Category::networking, Severity::config, false, kAnyHarness,
     "Locked-memory limit is unlimited on RDMA nodes", "Networking: RDMA can pin its buffers (memlock unlimited)",
     "RDMA registers buffers by pinning them; reads the soft RLIMIT_MEMLOCK of the cmax process. Slurm jobs inherit "
     "slurmd's limit, so run cmax the way jobs run.",
     "Set memlock unlimited in /etc/security/limits.d/ and LimitMEMLOCK=infinity for slurmd / the container "
     "runtime.",
     guard_rdma_fact, pred_memlock, "limits.memlock"},
    {"networking.gdr.open_module", Category::networking, Severity::config, false, kAnyHarness,
     "GPUDirect RDMA through the open kernel module's dma_buf",
     "Networking: GPUDirect RDMA via the open kernel module's dma_buf",
     "On GPU nodes with RDMA NICs, reads whether /proc/driver/nvidia/version names the Open Kernel Module, whose "
     "dma_buf export replaces nvidia_peermem (Linux 5.12+).",
     "Install the open flavour of the driver (nvidia-open / nvidia-driver-<branch>-open) of the same branch.",
     guard_gpu_rdma, pred_open_module, "gpu.driver.flavor", {}, {}, kGdrDoc},
    {"networking.gdr.peermem_legacy", Category::networking, Severity::config, false, kAnyHarness,
     "No legacy peer-memory module for GPUDirect RDMA",
     "Networking: GPUDirect RDMA via the open kernel module's dma_buf",
     "nvidia_peermem (or the retired nv_peer_mem) on the proprietary driver is the legacy GPUDirect RDMA path; "
     "neither it nor dma_buf means no GPUDirect RDMA at all.",
     "Move to the open kernel module and let NCCL use dma_buf; until then keep nvidia_peermem loaded.",
     guard_peermem, pred_peermem, "kernel.modules", {}, {}, kGdrDoc},
    {"networking.iommu.passthrough", Category::networking, Severity::config, false, kAnyHarness,
     "IOMMU off or in passthrough on GPU nodes", "Networking: IOMMU passthrough for GPUDirect",
     "Reads the default-domain type of the GPU and NIC IOMMU groups (identity, DMA) and the iommu= / intel_iommu= "
     "/ amd_iommu= / iommu.passthrough= flags on /proc/cmdline. In a VM the hypervisor decides.",
     "Boot with iommu=pt (and intel_iommu=on where VFIO is needed), then reboot.", guard_iommu,
     pred_iommu_passthrough, "iommu.mode"},
    {"networking.pcie.acs_disabled", Category::networking, Severity::config, false, kAnyHarness,
     "PCIe ACS redirect off on switches shared by a GPU and a NIC",
     "Networking: PCIe ACS disabled on GPU-NIC switches",
     "Decodes the ACS Control register from the config space of each PCIe bridge on a switch that holds both a "
     "GPU and a NIC (the upstream port and the downstream ports below it). Reading extended config space needs "
     "root.",
     "Disable ACS redirect on those ports (BIOS option, or `setpci -s <bridge> ECAP_ACS+0x6.w=0000` at boot), "
     "unless the node passes devices through to VMs.",
     guard_acs, pred_acs, "pci.acs_redirect", {}, {}, kNcclAcsDoc},
};

}  // namespace

std::span<const Check> networking_checks() { return kChecks; }

}  // namespace cmax::audit::checks
