// The node's side of the fabric: /etc/nccl.conf, RDMA devices and ports (/sys/class/infiniband),
// network interfaces, the IOMMU mode, and PCIe ACS on the switches that a GPU shares with a NIC.

#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/collectors/collector.h"
#include "audit/parse/kv_conf.h"
#include "audit/parse/pci_config.h"
#include "audit/parse/sysfs.h"
#include "core/strings.h"

namespace cmax::audit {
namespace {

constexpr std::string_view kNcclConf = "/etc/nccl.conf";
constexpr std::string_view kInfiniband = "/sys/class/infiniband";
constexpr std::string_view kPciDevices = "/sys/bus/pci/devices";
constexpr std::string_view kIommuGroups = "/sys/kernel/iommu_groups";
constexpr unsigned kVendorNvidia = 0x10de;
constexpr int kPortActive = 4;  // IB_PORT_ACTIVE
constexpr int kPhysLinkUp = 5;  // LinkUp in phys_state
// More entries than any real node has; keeps a corrupt or hostile tree from stalling the audit.
constexpr std::size_t kMaxEntries = 4096;

std::string joined(const auto& items, std::string_view sep = " ") { return fmt::format("{}", fmt::join(items, sep)); }

// A host-root image without /sys cannot say "no RDMA" or "no IOMMU"; a live node always has it.
bool has_sysfs(const CollectContext& ctx) { return ctx.host.exists("/sys/class") || ctx.host.exists("/sys/kernel"); }

void collect_nccl_conf(const CollectContext& ctx, Facts& facts) {
  std::string err;
  auto text = read_optional(ctx, kNcclConf, &err, 1u << 20);
  if (!text) {
    if (err.empty())
      facts.absent("nccl.conf.path", std::string(kNcclConf), "no /etc/nccl.conf: NCCL runs with its defaults");
    else
      facts.error("nccl.conf.path", std::string(kNcclConf), err);
    return;
  }
  auto entries = parse_kv_conf(*text);
  facts.present("nccl.conf.path", std::string(kNcclConf), std::string(kNcclConf),
                fmt::format("{} setting(s)", entries.size()));
  // NCCL loads the file with setenv(name, value, 0): the first line of a name wins, names are
  // case-sensitive, and a variable already in the job's environment wins over the file.
  std::set<std::string> seen;
  for (const auto& e : entries) {
    if (!seen.insert(e.key).second) continue;
    facts.present("nccl.conf." + e.key, e.value, fmt::format("{}:{}", kNcclConf, e.line));
  }
}

struct PortState {
  std::string name;  // "mlx5_0/1"
  std::optional<SysfsState> state, phys;
  std::string link_layer;
};

std::optional<SysfsState> read_state(const CollectContext& ctx, const std::string& path) {
  auto text = read_optional(ctx, path, nullptr, 256);
  return text ? parse_sysfs_state(*text) : std::nullopt;
}

void collect_rdma(const CollectContext& ctx, Facts& facts) {
  std::string src(kInfiniband);
  auto devices = ctx.host.list_dir(kInfiniband);
  if (!devices) {
    if (ctx.host.exists(kInfiniband)) {
      facts.error("rdma.device_count", src, devices.error().message);
    } else if (!has_sysfs(ctx)) {
      facts.error("rdma.device_count", src, "no /sys in the host root: RDMA devices cannot be listed");
    } else {
      facts.present("rdma.device_count", "0", src, "no /sys/class/infiniband: no RDMA driver is loaded");
      facts.present("rdma.roce", "no", src, "no RDMA device");
    }
    return;
  }
  std::vector<std::string> names;
  std::vector<PortState> ports;
  std::vector<std::string> portless;
  std::map<std::string, int> rates, firmware;  // value -> how many ports / devices: compared across nodes
  std::vector<std::string> mlx_fw;              // "mlx5_0=28.39.1002": NVIDIA (Mellanox) adapters only
  for (const auto& d : *devices) {
    if (names.size() >= kMaxEntries) break;
    names.push_back(d.name);
    if (auto fw = read_optional(ctx, fmt::format("{}/{}/fw_ver", kInfiniband, d.name), nullptr, 128)) {
      std::string ver(core::trim(*fw));
      ++firmware[ver];
      auto vendor = read_optional(ctx, fmt::format("{}/{}/device/vendor", kInfiniband, d.name), nullptr, 64);
      bool mellanox = vendor ? core::trim(*vendor) == "0x15b3" : d.name.starts_with("mlx5_");
      if (mellanox) mlx_fw.push_back(fmt::format("{}={}", d.name, ver));
    }
    std::string dir = fmt::format("{}/{}/ports", kInfiniband, d.name);
    auto list = ctx.host.list_dir(dir);
    if (!list || list->empty()) {
      portless.push_back(d.name);
      continue;
    }
    for (const auto& p : *list) {
      if (ports.size() >= kMaxEntries) break;
      std::string base = dir + "/" + p.name;
      PortState ps{d.name + "/" + p.name, read_state(ctx, base + "/state"), read_state(ctx, base + "/phys_state"), {}};
      if (auto ll = read_optional(ctx, base + "/link_layer", nullptr, 64)) ps.link_layer = core::trim(*ll);
      if (auto rate = read_optional(ctx, base + "/rate", nullptr, 128)) ++rates[std::string(core::trim(*rate))];
      ports.push_back(std::move(ps));
    }
  }
  facts.present("rdma.device_count", std::to_string(names.size()), src);
  if (names.empty()) {
    facts.present("rdma.roce", "no", src, "no RDMA device");
    return;
  }
  facts.present("rdma.devices", joined(names), src);
  facts.present("rdma.port_count", std::to_string(ports.size()), src + "/*/ports");
  // "400 Gb/sec (4X NDR) x8": the multiset of rates, so two nodes compare by string equality.
  auto counted = [](const std::map<std::string, int>& m) {
    std::vector<std::string> parts;
    for (const auto& [value, n] : m) parts.push_back(fmt::format("{} x{}", value, n));
    return joined(parts, ", ");
  };
  if (!rates.empty()) facts.present("rdma.port_rates", counted(rates), src + "/*/ports/*/rate");
  if (!firmware.empty()) facts.present("rdma.fw_versions", counted(firmware), src + "/*/fw_ver");
  if (!mlx_fw.empty())
    facts.present("rdma.mlx_fw", joined(mlx_fw), src + "/*/fw_ver", "devices whose PCI vendor is 0x15b3");
  else
    facts.absent("rdma.mlx_fw", src + "/*/device/vendor", "no NVIDIA (Mellanox) ConnectX or BlueField adapter");

  std::set<std::string> layers;
  std::vector<std::string> down, unreadable;
  for (const auto& p : ports) {
    if (!p.link_layer.empty()) layers.insert(p.link_layer);
    if (!p.state || !p.phys) {
      unreadable.push_back(p.name);
      continue;
    }
    if (p.state->code != kPortActive || p.phys->code != kPhysLinkUp)
      down.push_back(fmt::format("{}={}: {}/{}: {}", p.name, p.state->code, p.state->name, p.phys->code, p.phys->name));
  }
  for (const auto& d : portless) unreadable.push_back(d + " (no ports)");
  std::string port_src = src + "/*/ports/*/{state,phys_state}";
  std::string note = unreadable.empty() ? std::string() : fmt::format("unreadable: {}", joined(unreadable, ", "));
  if (!down.empty())
    facts.present("rdma.ports_down", joined(down, ", "), port_src, note);
  else if (!unreadable.empty())
    facts.error("rdma.ports_down", port_src, fmt::format("no 'N: NAME' state in {}", joined(unreadable, ", ")));
  else
    facts.absent("rdma.ports_down", port_src, fmt::format("all {} port(s) are 4: ACTIVE and 5: LinkUp", ports.size()));

  std::string ll_src = src + "/*/ports/*/link_layer";
  if (layers.empty()) {
    facts.error("rdma.link_layers", ll_src, "no readable link_layer file");
    facts.error("rdma.roce", ll_src, "no readable link_layer file");
    return;
  }
  facts.present("rdma.link_layers", joined(layers), ll_src);
  facts.present("rdma.roce", layers.count("Ethernet") ? "yes" : "no", ll_src, "a port with link_layer Ethernet");
}

void collect_interfaces(const CollectContext& ctx, Facts& facts) {
  auto list = ctx.host.list_dir("/sys/class/net");
  if (!list) {
    if (ctx.host.exists("/sys/class/net"))
      facts.error("net.interfaces", "/sys/class/net", list.error().message);
    else
      facts.absent("net.interfaces", "/sys/class/net", "no /sys/class/net in this host tree");
    return;
  }
  std::vector<std::string> names;
  for (const auto& e : *list)
    if (names.size() < kMaxEntries) names.push_back(e.name);
  facts.present("net.interfaces", joined(names), "/sys/class/net");
}

struct PciDevice {
  std::string address;
  unsigned vendor = 0;
  unsigned klass = 0;  // class and subclass: 0x0302, 0x0200, 0x0604
};

bool is_gpu(const PciDevice& d) { return d.vendor == kVendorNvidia && (d.klass == 0x0300 || d.klass == 0x0302); }
bool is_nic(const PciDevice& d) { return d.klass == 0x0200 || d.klass == 0x0207; }

std::optional<unsigned> read_hex(const CollectContext& ctx, const std::string& path) {
  auto text = read_optional(ctx, path, nullptr, 64);
  auto v = text ? core::parse_uint(*text, 16) : std::nullopt;
  return v ? std::optional<unsigned>(static_cast<unsigned>(*v)) : std::nullopt;
}

std::vector<PciDevice> scan_pci(const CollectContext& ctx, std::string* error) {
  std::vector<PciDevice> out;
  auto list = ctx.host.list_dir(kPciDevices);
  if (!list) {
    if (ctx.host.exists(kPciDevices)) *error = list.error().message;
    return out;
  }
  for (const auto& e : *list) {
    if (out.size() >= kMaxEntries) break;
    std::string base = fmt::format("{}/{}", kPciDevices, e.name);
    auto vendor = read_hex(ctx, base + "/vendor");
    auto klass = read_hex(ctx, base + "/class");
    out.push_back({e.name, vendor.value_or(0), klass ? (*klass >> 8) : 0u});
  }
  return out;
}

// "Kernel command line" flags that set the IOMMU mode; unknown when they say nothing.
std::string iommu_mode_from_cmdline(std::string_view cmdline, std::vector<std::string>& flags) {
  bool off = false, pt = false, translated = false;
  for (auto tok : core::split_any(cmdline, " \t\n")) {
    auto eq = tok.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = tok.substr(0, eq);
    auto value = tok.substr(eq + 1);
    bool hit = true;
    if (key == "iommu") {
      off |= value == "off";
      pt |= value == "pt";
      translated |= value == "nopt" || value == "force";
    } else if (key == "iommu.passthrough") {
      pt |= value == "1" || value == "on" || value == "y";
      translated |= value == "0" || value == "off" || value == "n";
    } else if (key == "intel_iommu" || key == "amd_iommu") {
      for (auto opt : core::split_any(value, ",")) {
        off |= opt == "off";
        translated |= opt == "on" || opt == "force_isolation" || opt == "force_enable";
      }
    } else {
      hit = false;
    }
    if (hit) flags.emplace_back(tok);
  }
  if (off) return "off";
  if (pt) return "passthrough";
  if (translated) return "translated";
  return "unknown";
}

// The default-domain types (identity / DMA / DMA-FQ, Linux 5.11+) of the IOMMU groups that hold
// the GPUs and NICs; those are the devices whose DMA GPUDirect RDMA sends through the IOMMU.
std::map<std::string, int> group_types(const CollectContext& ctx, const std::vector<PciDevice>& devices) {
  std::map<std::string, int> types;
  std::set<std::string> groups;
  for (const auto& d : devices) {
    if (!is_gpu(d) && !is_nic(d)) continue;
    auto link = ctx.host.read_link(fmt::format("{}/{}/iommu_group", kPciDevices, d.address));
    if (!link) continue;
    auto slash = link->rfind('/');
    groups.insert(slash == std::string::npos ? *link : link->substr(slash + 1));
  }
  for (const auto& g : groups) {
    auto type = read_optional(ctx, fmt::format("{}/{}/type", kIommuGroups, g), nullptr, 64);
    if (!type) continue;
    std::string t(core::trim(*type));
    if (t == "identity" || t == "DMA" || t == "DMA-FQ") ++types[t];
  }
  return types;
}

void collect_iommu(const CollectContext& ctx, Facts& facts, const std::vector<PciDevice>& devices) {
  std::string src = "/sys/class/iommu, /sys/kernel/iommu_groups";
  std::size_t units = 0, groups = 0;
  std::string err;
  auto count_entries = [&](std::string_view path, std::size_t& count) {
    auto list = ctx.host.list_dir(path);
    if (list)
      count = list->size();
    else if (ctx.host.exists(path))
      err = list.error().message;
  };
  count_entries("/sys/class/iommu", units);
  count_entries(kIommuGroups, groups);
  // Every distribution kernel has /sys/kernel/iommu_groups (empty when the IOMMU is off); a host
  // tree without it did not capture it, which says nothing about the IOMMU.
  bool known = err.empty() && has_sysfs(ctx) && (ctx.host.is_live() || ctx.host.exists(kIommuGroups));
  bool enabled = units > 0 || groups > 0;
  if (known || enabled)
    facts.present("iommu.enabled", enabled ? "yes" : "no", src,
                  fmt::format("{} IOMMU unit(s), {} group(s)", units, groups));
  else
    facts.error("iommu.enabled", src,
                !err.empty() ? err
                : has_sysfs(ctx) ? "the host tree has no /sys/kernel/iommu_groups (every kernel with an IOMMU layer has one, "
                                   "even empty): not captured"
                                 : "no /sys in the host root");

  std::vector<std::string> flags;
  std::string cmdline_err;
  auto cmdline = read_optional(ctx, "/proc/cmdline", &cmdline_err, 64 * 1024);
  std::string from_cmdline = cmdline ? iommu_mode_from_cmdline(*cmdline, flags) : "unknown";
  std::string flag_text = flags.empty() ? "no IOMMU flags on /proc/cmdline" : joined(flags);
  auto types = group_types(ctx, devices);
  std::string type_text;
  for (const auto& [t, n] : types) type_text += fmt::format("{}{} group(s) {}", type_text.empty() ? "" : ", ", n, t);

  std::string mode, why;
  if (known && !enabled) {
    mode = "off";
    why = fmt::format("no IOMMU registered with the kernel; {}", flag_text);
  } else if (types.count("DMA") || types.count("DMA-FQ")) {
    mode = "translated";
    why = fmt::format("GPU/NIC IOMMU groups: {}; {}", type_text, flag_text);
  } else if (types.count("identity")) {
    mode = "passthrough";
    why = fmt::format("GPU/NIC IOMMU groups: {}; {}", type_text, flag_text);
  } else {
    mode = from_cmdline;
    why = flag_text;
  }
  if (mode == "unknown" && !known) {
    facts.error("iommu.mode", "/proc/cmdline",
                cmdline ? why : (cmdline_err.empty() ? "no /proc/cmdline" : cmdline_err));
    return;
  }
  facts.present("iommu.mode", mode, "/proc/cmdline, /sys/kernel/iommu_groups/*/type", why);
}

struct Chain {
  std::string address;
  std::vector<std::string> ancestors;
};

// The bridges whose ACS settings decide whether GPU<->NIC peer traffic stays inside a switch:
// the lowest common ancestor (the switch's upstream port) and every port below it on either
// path (the downstream ports, where Request/Completion Redirect applies). Root ports above the
// shared switch never see that traffic, so their ACS (which the kernel enables for isolation)
// does not matter here.
void add_shared_bridges(const Chain& a, const Chain& b, std::set<std::string>& out) {
  std::size_t k = 0;
  while (k < a.ancestors.size() && k < b.ancestors.size() && a.ancestors[k] == b.ancestors[k]) ++k;
  if (k == 0) return;  // only the host bridge in common: traffic goes through the root complex anyway
  out.insert(a.ancestors[k - 1]);
  for (std::size_t i = k; i < a.ancestors.size(); ++i) out.insert(a.ancestors[i]);
  for (std::size_t i = k; i < b.ancestors.size(); ++i) out.insert(b.ancestors[i]);
}

void collect_acs(const CollectContext& ctx, Facts& facts, const std::vector<PciDevice>& devices,
                 const std::string& scan_error) {
  std::string src = "/sys/bus/pci/devices/*/config";
  if (!scan_error.empty()) {
    facts.error("pci.gpu_nic_bridges", std::string(kPciDevices), scan_error);
    facts.error("pci.acs_redirect", src, scan_error);
    return;
  }
  std::vector<Chain> gpus, nics;
  std::vector<std::string> unresolved;
  for (const auto& d : devices) {
    if (!is_gpu(d) && !is_nic(d)) continue;
    std::string path = fmt::format("{}/{}", kPciDevices, d.address);
    auto link = ctx.host.read_link(path);
    if (!link) {
      unresolved.push_back(d.address);
      continue;
    }
    Chain c{d.address, pci_upstream_chain(resolve_link_target(path, *link))};
    (is_gpu(d) ? gpus : nics).push_back(std::move(c));
  }
  std::set<std::string> bridges;
  for (const auto& g : gpus)
    for (const auto& n : nics) add_shared_bridges(g, n, bridges);
  // Only PCI-to-PCI bridges (class 0x0604) carry an ACS control that routes P2P traffic.
  for (auto it = bridges.begin(); it != bridges.end();) {
    auto klass = read_hex(ctx, fmt::format("{}/{}/class", kPciDevices, *it));
    it = klass && (*klass >> 8) != 0x0604 ? bridges.erase(it) : std::next(it);
  }
  if (bridges.empty() && !unresolved.empty()) {
    std::string why = fmt::format("cannot resolve the sysfs device path of {}", joined(unresolved, ", "));
    facts.error("pci.gpu_nic_bridges", std::string(kPciDevices), why);
    facts.error("pci.acs_redirect", src, why);
    return;
  }
  std::string note = unresolved.empty() ? std::string() : fmt::format("; unresolved: {}", joined(unresolved, ", "));
  facts.present("pci.gpu_nic_bridges", std::to_string(bridges.size()), std::string(kPciDevices),
                fmt::format("{} GPU(s), {} NIC(s); bridges: {}{}", gpus.size(), nics.size(),
                            bridges.empty() ? "none" : joined(bridges), note));
  if (bridges.empty()) {
    facts.absent("pci.acs_redirect", src, "no GPU shares a PCIe switch with a NIC");
    return;
  }
  std::vector<std::string> redirecting, unreadable, clear;
  for (const auto& b : bridges) {
    auto config = ctx.host.read_prefix(fmt::format("{}/{}/config", kPciDevices, b), kPciConfigExtendedBytes);
    if (!config) {
      unreadable.push_back(fmt::format("{} ({})", b, config.error().message));
    } else if (!has_extended_config(*config)) {
      unreadable.push_back(fmt::format("{} (only {} bytes of config space readable; extended capabilities need root)",
                                       b, config->size()));
    } else if (config->compare(0, 4, "\xff\xff\xff\xff") == 0) {
      unreadable.push_back(fmt::format("{} (reads as all ones: the device does not answer)", b));
    } else if (auto acs = parse_acs_control(*config); acs && acs->redirects_p2p()) {
      redirecting.push_back(fmt::format("{} ({})", b, describe_acs(*acs)));
    } else {
      clear.push_back(acs ? fmt::format("{} ({})", b, describe_acs(*acs)) : fmt::format("{} (no ACS)", b));
    }
  }
  std::string rest = fmt::format("clear: {}{}", clear.empty() ? "none" : joined(clear, ", "),
                                 unreadable.empty() ? "" : fmt::format("; unreadable: {}", joined(unreadable, ", ")));
  if (!redirecting.empty())
    facts.present("pci.acs_redirect", joined(redirecting, ", "), src, rest);
  else if (!unreadable.empty())
    facts.error("pci.acs_redirect", src, fmt::format("cannot read ACS of {}", joined(unreadable, ", ")));
  else
    facts.absent("pci.acs_redirect", src,
                 fmt::format("no P2P redirect on any of the {} GPU-NIC switch bridge(s): {}", bridges.size(), rest));
}

void collect_pci_paths(const CollectContext& ctx, Facts& facts) {
  std::string scan_error;
  auto devices = scan_pci(ctx, &scan_error);
  collect_iommu(ctx, facts, devices);
  collect_acs(ctx, facts, devices, scan_error);
}

}  // namespace

void collect_network(const CollectContext& ctx, Facts& facts) {
  collect_nccl_conf(ctx, facts);
  collect_rdma(ctx, facts);
  collect_interfaces(ctx, facts);
  collect_pci_paths(ctx, facts);
}

}  // namespace cmax::audit
