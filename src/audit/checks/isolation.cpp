// Isolation between a tenant and what lies under it: nested virtualisation handed to a guest
// (Januscape), the BlueField DPU's VIRTIO-Net controller and RShim link, and the boundaries a
// tenant cannot see from inside (UFM's secured profile, PCIe passthrough, the NVLink domain),
// which the provider must attest: those are `unverified` with what to attest, never a pass.

#include <fmt/format.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {
namespace {

constexpr std::string_view kFloorsDoc = "docs/min-versions.md";

bool is_guest(std::string_view virt_type) { return !virt_type.empty() && virt_type != "none"; }

// Januscape (CVE-2026-53359): a guest that can run its own guests (vmx/svm, /dev/kvm, nested on)
// reaches the host kernel's nested-KVM code; only the host's kernel fix closes it.
Verdict pred_nested_kvm(const CheckContext& ctx, const Check&) {
  const Fact* type = ctx.facts.find("virt.type");
  constexpr std::string_view kExpected = "nested virtualisation not exposed, or the host's fix attested";
  if (type && type->status == FactStatus::present && type->value == "none")
    return verdict(Outcome::not_applicable, "bare metal", std::string(kExpected),
                   "bare metal: no host kernel beneath this one to escape to");
  for (const char* key : {"cpu.virt_flags", "kvm.device"})
    if (const Fact* f = ctx.facts.find(key); !f || f->status == FactStatus::error)
      return verdict(Outcome::unverified, {}, std::string(kExpected),
                     fmt::format("could not read {}", f ? f->source : std::string(key)));
  bool flags = ctx.facts.is_present("cpu.virt_flags"), kvm = ctx.facts.is_present("kvm.device");
  const Fact* nested = ctx.facts.find("kvm.nested");
  std::string nested_v = nested && nested->status == FactStatus::present ? core::to_lower(nested->value) : "";
  bool nested_on = nested_v == "y" || nested_v == "1";
  bool nested_off = nested_v == "n" || nested_v == "0";
  std::string observed = fmt::format("virt flags: {}, /dev/kvm: {}, nested: {}",
                                     flags ? ctx.facts.value_or("cpu.virt_flags") : "none", kvm ? "yes" : "no",
                                     nested_v.empty() ? "unknown" : nested_v);
  if (!flags || !kvm || nested_off)
    return verdict(Outcome::pass, observed, std::string(kExpected),
                   !flags ? "the CPU offers this host no vmx/svm" : !kvm ? "no /dev/kvm" : "nested KVM is off");
  if (!type || type->status != FactStatus::present || type->value == "unknown") {
    if (!nested_on)
      return verdict(Outcome::unverified, observed, std::string(kExpected),
                     "vmx/svm and /dev/kvm are here, but whether this is a guest and whether nested KVM is on are unknown");
  }
  if (!nested_on)
    return verdict(Outcome::unverified, observed, std::string(kExpected),
                   "vmx/svm and /dev/kvm are exposed, but the nested parameter could not be read");
  Verdict v = verdict(Outcome::warn, observed, std::string(kExpected),
                      "nested virtualisation is exposed to this guest: the host kernel must carry the Januscape fix "
                      "(CVE-2026-53359; Ubuntu USN-8630-1, linux 6.8.0-137.137). A guest cannot see its host's kernel, "
                      "so the provider must attest it, or turn nested virtualisation off for tenants");
  v.cves = {"CVE-2026-53359"};
  return v;
}

bool bluefield3(const CheckContext& ctx) {
  return ctx.facts.value_or("nic.bluefield").find("BlueField-3") != std::string_view::npos;
}

std::optional<Verdict> guard_bluefield(const CheckContext& ctx, const Check&) {
  const Fact* bf = ctx.facts.find("nic.bluefield");
  if (!bf) return verdict(Outcome::unverified, {}, {}, "the PCI bus was not read");
  if (bf->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, bf->detail);
  if (bf->status == FactStatus::absent) return verdict(Outcome::not_applicable, "no BlueField", {}, bf->detail);
  return std::nullopt;
}

// NVIDIA bulletin 5815 (CVE-2026-65094): the BlueField-3 VIRTIO-Net controller. It runs on the
// DPU's Arm cores in DPU mode; in NIC mode it does not run, but its firmware stays and the mode is a
// setting away.
Verdict pred_virtio_net(const CheckContext& ctx, const Check& check) {
  if (!bluefield3(ctx))
    return verdict(Outcome::not_applicable, std::string(ctx.facts.value_or("nic.bluefield")), {},
                   "the bulletin covers the BlueField-3 VIRTIO-Net controller; this DPU is not a BlueField-3");
  const Fact* mode = ctx.facts.find("dpu.mode");
  std::string m = mode && mode->status == FactStatus::present ? mode->value : "";
  if (m == "nic" || m == "separated-host") {
    Verdict v = verdict(Outcome::warn, fmt::format("BlueField-3 in {} mode", m == "nic" ? "NIC" : "separated-host"),
                        "DPU mode with the controller at its floor, or attested",
                        "no VIRTIO-Net controller runs in this mode, but its firmware is installed and DPU mode is one "
                        "mlxconfig setting and a power cycle away (a latent exposure to CVE-2026-65094)");
    v.cves = {"CVE-2026-65094"};
    return v;
  }
  if (ctx.facts.is_present(check.fact)) return pred_version_floor(ctx, check);
  const Fact* vn = ctx.facts.find(check.fact);
  std::string why = m.empty() ? (mode ? mode->detail : std::string("the DPU's mode was not read"))
                              : "DPU mode, and the controller's version is only visible on the DPU";
  Verdict v = verdict(Outcome::unverified, m.empty() ? "BlueField-3, mode unknown" : "BlueField-3 in DPU mode",
                      "VIRTIO-Net controller at or above its line's floor",
                      fmt::format("{}{}: run `virtnet version` on the DPU (or cmax audit there), or have the provider "
                                  "attest the controller release",
                                  why, vn && vn->status == FactStatus::error ? fmt::format(" ({})", vn->detail) : ""));
  v.cves = {"CVE-2026-65094"};
  return v;
}

// Zero-trust DPU: the host cannot reach the DPU's console, boot stream or network link (RShim,
// tmfifo_net0); NVIDIA's mlxprivhost ... --disable_rshim restricts it.
Verdict pred_rshim(const CheckContext& ctx, const Check&) {
  constexpr std::string_view kExpected = "no RShim on the host (INTERNAL_CPU_RSHIM disabled)";
  std::vector<std::string> exposed;
  for (const char* key : {"dpu.rshim", "dpu.tmfifo"})
    if (ctx.facts.is_present(key)) exposed.emplace_back(ctx.facts.value_or(key));
  std::string setting(ctx.facts.value_or("dpu.rshim_setting"));
  bool restricted = setting == "DISABLED" || setting == "1";
  if (!exposed.empty())
    return verdict(Outcome::warn, fmt::format("{}", fmt::join(exposed, ", ")), std::string(kExpected),
                   "the host can reach the DPU over RShim (console, boot image, tmfifo network): the DPU is not in "
                   "zero-trust mode, and root on this host reaches the DPU's control plane");
  if (restricted) return verdict(Outcome::pass, "INTERNAL_CPU_RSHIM=DISABLED", std::string(kExpected));
  if (!setting.empty())
    return verdict(Outcome::warn, fmt::format("INTERNAL_CPU_RSHIM={}", setting), std::string(kExpected),
                   "no RShim device is loaded now, but the card lets the host load one (root can modprobe rshim)");
  const Fact* mode = ctx.facts.find("dpu.mode");
  return verdict(Outcome::unverified, "no /dev/rshim*, no tmfifo_net0", std::string(kExpected),
                 fmt::format("no RShim device now, but INTERNAL_CPU_RSHIM could not be read ({}); root could load the "
                             "rshim driver unless the card restricts the host",
                             mode ? mode->detail : "mlxconfig was not run"));
}

// Boundaries a tenant cannot observe: unverified with what the provider must attest.
Verdict attest(std::string observed, std::string what) {
  return verdict(Outcome::unverified, std::move(observed), "attested by the provider",
                 fmt::format("a tenant cannot verify this from inside; the provider must attest: {}", what));
}

Verdict pred_ufm_profile(const CheckContext& ctx, const Check&) {
  std::string layers(ctx.facts.value_or("rdma.link_layers"));
  if (layers.find("InfiniBand") == std::string::npos)
    return verdict(Outcome::not_applicable, layers.empty() ? "no RDMA" : layers, {},
                   "no native InfiniBand port: there is no subnet manager to secure");
  return attest(fmt::format("InfiniBand ({})", ctx.facts.value_or("rdma.devices")),
                "UFM runs the Secured Bare Metal Cloud profile: M_Key and SA key set, tenants in their own "
                "limited-membership partitions (P_Key), SHARP and management traffic unreachable from tenant hosts");
}

Verdict pred_pcie_passthrough(const CheckContext& ctx, const Check&) {
  std::string type(ctx.facts.value_or("virt.type"));
  if (type == "none") return verdict(Outcome::not_applicable, "bare metal", {}, "bare metal: no device is passed through");
  if (!has_nvidia_gpu(ctx) && ctx.facts.value_or("rdma.device_count", "0") == "0")
    return verdict(Outcome::not_applicable, "no GPU or RDMA device", {}, "no device of interest is passed through");
  if (!is_guest(type))
    return verdict(Outcome::unverified, "guest or bare metal unknown", "attested by the provider",
                   "whether this is a guest is unknown; if it is, the provider must attest its passthrough isolation");
  return attest(fmt::format("{} guest with {} GPU(s)", type, ctx.facts.value_or("gpu.nvidia.count", "0")),
                "the host's IOMMU isolates every passed-through GPU and NIC (ACS on the switch ports above them, no "
                "peer-to-peer to another tenant's device), and each device is reset and its firmware verified between "
                "tenants");
}

Verdict pred_nvlink_domain(const CheckContext& ctx, const Check&) {
  auto n = core::parse_uint(ctx.facts.value_or("gpu.nvidia.count", "0")).value_or(0);
  auto switches = core::parse_uint(ctx.facts.value_or("gpu.nvswitch.count", "0")).value_or(0);
  std::string models(ctx.facts.value_or("gpu.nvidia.models"));
  bool rack = models.find("GB200") != std::string::npos || models.find("GB300") != std::string::npos;
  if (n <= 1 && switches == 0 && !rack)
    return verdict(Outcome::not_applicable, fmt::format("{} GPU, no NVSwitch", n), {},
                   "a single GPU with no NVSwitch has no NVLink peer");
  return attest(fmt::format("{} GPU(s), {} NVSwitch(es){}", n, switches, rack ? ", NVL rack" : ""),
                "the NVLink domain (NVSwitch partition / IMEX domain) holds this tenant's GPUs only, so no other "
                "tenant's GPU can reach this one's memory over NVLink (NVBleed-class side channels)");
}

const Check kChecks[] = {
    {"security.virt.nested_kvm", Category::security, Severity::config, true, kAnyHarness,
     "Nested virtualisation is not handed to tenants (Januscape)",
     "Security: tenant VMs cannot reach the host's nested-KVM code (CVE-2026-53359)",
     "In a guest, reads the CPU's vmx/svm flags, /dev/kvm and kvm_intel/kvm_amd's nested parameter: all three "
     "let the tenant run its own guests through the host kernel's nested KVM.",
     "Turn nested virtualisation off for tenant VMs (kvm_intel nested=0 on the host, or no vmx/svm in the guest's "
     "CPU model), or patch the host kernel and attest it.",
     nullptr, pred_nested_kvm, "virt.type", {}, {}, "https://ubuntu.com/security/notices/USN-8630-1"},
    {"security.bluefield.virtio_net", Category::security, Severity::version, true, kSlurm | kKubernetes | kStandalone,
     "BlueField-3 VIRTIO-Net controller at or above its security floor",
     "Security: DPU firmware patched (NVIDIA bulletin 5815, CVE-2026-65094)",
     "On a host with a BlueField-3, reads the card's mode (mlxconfig INTERNAL_CPU_MODEL / OFFLOAD_ENGINE) and, on "
     "the DPU itself, `virtnet version`; grades the running controller against its release line's floor.",
     "Upgrade the DPU's DOCA / BFB to a release whose VIRTIO-Net controller is at the floor of its line.",
     guard_bluefield, pred_virtio_net, "dpu.virtnet.version", "bluefield-virtio-net", {}, kFloorsDoc},
    {"security.bluefield.rshim", Category::security, Severity::config, true, kAnyHarness,
     "The host cannot reach the BlueField DPU over RShim",
     "Security: DPU in zero-trust mode (host isolated from the DPU control plane)",
     "Looks for /dev/rshim*, the tmfifo_net0 link and the card's INTERNAL_CPU_RSHIM setting.",
     "Restrict the host: mlxprivhost -d <dev> r --disable_rshim --disable_tracer --disable_counter_rd "
     "--disable_port_owner, then power-cycle.",
     guard_bluefield, pred_rshim, "nic.bluefield", {}, {},
     "https://docs.nvidia.com/networking/display/bluefielddpuosv4100/modes+of+operation"},
    {"security.attest.ufm_secured_profile", Category::security, Severity::config, true, kSlurm | kKubernetes,
     "InfiniBand fabric managed with UFM's secured profile (attested)",
     "Security: InfiniBand tenant isolation (UFM Secured Bare Metal Cloud profile)",
     "On a node with native InfiniBand, says what the provider must attest about the subnet manager.",
     "Ask the provider for its UFM profile and partition plan.", nullptr, pred_ufm_profile, "rdma.link_layers"},
    {"security.attest.pcie_passthrough", Category::security, Severity::config, true, kAnyHarness,
     "Passed-through GPUs and NICs are isolated on the host (attested)",
     "Security: VM passthrough isolation (IOMMU, ACS, device reset between tenants)",
     "In a guest with GPUs or RDMA devices, says what the provider must attest about the host.",
     "Ask the provider to attest IOMMU, ACS and per-tenant device reset on the hypervisor.", nullptr,
     pred_pcie_passthrough, "virt.type"},
    {"security.attest.nvlink_domain", Category::security, Severity::config, true, kAnyHarness,
     "The NVLink domain is the tenant's alone (attested)",
     "Security: NVLink partition isolation between tenants",
     "On a node with several GPUs, NVSwitches or an NVL rack, says what the provider must attest.",
     "Ask the provider to attest NVLink partitions (Fabric Manager / IMEX domains) per tenant.", guard_gpu_only,
     pred_nvlink_domain, "gpu.nvidia.count"},
};

}  // namespace

std::span<const Check> isolation_checks() { return kChecks; }

}  // namespace cmax::audit::checks
