#include <gtest/gtest.h>

#include <set>
#include <string>

#include "audit/check.h"
#include "audit/checks/tables.h"
#include "audit/collectors/collector.h"
#include "support/temp_host.h"

namespace cmax::audit {
namespace {

using test::run_check_by_id;

Outcome outcome_of(std::string_view id, const Facts& f) { return run_check_by_id(id, f).outcome; }

// A GPU node with InfiniBand rails, all healthy.
Facts ib_gpu_node() {
  Facts f;
  f.present("gpu.nvidia.count", "8", "/sys/bus/pci/devices/*/{vendor,class}");
  f.present("gpu.driver.version", "570.172.08", "/proc/driver/nvidia/version");
  f.present("gpu.driver.flavor", "open", "/proc/driver/nvidia/version");
  f.present("kernel.release", "6.8.0-45-generic", "/proc/sys/kernel/osrelease");
  f.present("kernel.modules", "nvidia nvidia_uvm ib_core mlx5_core mlx5_ib", "/proc/modules");
  f.present("host.virtualized", "no", "/proc/cpuinfo");
  f.present("limits.memlock", "unlimited", "/proc/self/limits");
  f.present("rdma.device_count", "2", "/sys/class/infiniband");
  f.present("rdma.devices", "mlx5_0 mlx5_1", "/sys/class/infiniband");
  f.present("rdma.port_count", "2", "/sys/class/infiniband/*/ports");
  f.present("rdma.link_layers", "InfiniBand", "/sys/class/infiniband/*/ports/*/link_layer");
  f.present("rdma.roce", "no", "/sys/class/infiniband/*/ports/*/link_layer");
  f.absent("rdma.ports_down", "/sys/class/infiniband/*/ports/*/{state,phys_state}", "all up");
  f.present("net.interfaces", "eno1 ibp12s0 lo", "/sys/class/net");
  f.present("iommu.enabled", "yes", "/sys/class/iommu");
  f.present("iommu.mode", "passthrough", "/proc/cmdline", "iommu=pt");
  f.present("pci.gpu_nic_bridges", "3", "/sys/bus/pci/devices");
  f.absent("pci.acs_redirect", "/sys/bus/pci/devices/*/config", "no P2P redirect on any of the 3 bridges");
  f.present("nccl.conf.path", "/etc/nccl.conf", "/etc/nccl.conf");
  return f;
}

Facts roce_gpu_node() {
  Facts f = ib_gpu_node();
  f.present("rdma.link_layers", "Ethernet", "/sys/class/infiniband/*/ports/*/link_layer");
  f.present("rdma.roce", "yes", "/sys/class/infiniband/*/ports/*/link_layer");
  return f;
}

Facts cpu_node_without_rdma() {
  Facts f;
  f.present("gpu.nvidia.count", "0", "/sys/bus/pci/devices/*/{vendor,class}");
  f.present("rdma.device_count", "0", "/sys/class/infiniband");
  f.present("rdma.roce", "no", "/sys/class/infiniband");
  f.absent("nccl.conf.path", "/etc/nccl.conf", "no /etc/nccl.conf");
  f.present("pci.gpu_nic_bridges", "0", "/sys/bus/pci/devices");
  f.absent("pci.acs_redirect", "/sys/bus/pci/devices/*/config", "no GPU shares a PCIe switch with a NIC");
  f.present("iommu.mode", "translated", "/proc/cmdline");
  f.present("host.virtualized", "no", "/proc/cpuinfo");
  f.error("limits.memlock", "/proc/self/limits", "host root");
  return f;
}

TEST(NetworkingChecks, TableHasElevenOrMoreNetworkingChecksWithText) {
  auto table = checks::networking_checks();
  EXPECT_GE(table.size(), 11u);
  std::set<std::string_view> ids;
  for (const auto& c : table) {
    EXPECT_EQ(c.category, Category::networking) << c.id;
    EXPECT_TRUE(c.id.starts_with("networking.")) << c.id;
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate " << c.id;
    EXPECT_FALSE(c.title.empty()) << c.id;
    EXPECT_FALSE(c.criterion.empty()) << c.id;
    EXPECT_FALSE(c.description.empty()) << c.id;
    EXPECT_FALSE(c.remediation.empty()) << c.id;
    EXPECT_NE(c.guard, nullptr) << c.id;
    EXPECT_NE(c.predicate, nullptr) << c.id;
  }
}

TEST(NetworkingChecks, EmptyFactsNeverPassOrCrash) {
  Facts empty;
  for (const auto& c : checks::networking_checks()) {
    auto r = run_check_by_id(c.id, empty);
    EXPECT_NE(r.outcome, Outcome::pass) << c.id;
    EXPECT_NE(r.outcome, Outcome::fail) << c.id;
    EXPECT_FALSE(r.reason.empty()) << c.id;
  }
}

TEST(NetworkingChecks, ForcedAlgoFails) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_ALGO", "Ring", "/etc/nccl.conf:3");
  auto r = run_check_by_id("networking.nccl_conf.no_forced_algo", f);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.observed, "NCCL_ALGO=Ring");
  EXPECT_EQ(r.evidence_source, "/etc/nccl.conf:3");
  EXPECT_EQ(r.evidence_value, "NCCL_ALGO=Ring");
  EXPECT_FALSE(r.remediation.empty());
}

TEST(NetworkingChecks, EmptyValueIsNotForcing) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_PROTO", "", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_proto", f), Outcome::pass);
}

TEST(NetworkingChecks, ExcludingAnAlgoWarns) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_ALGO", "^NVLS", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_algo", f), Outcome::warn);
}

TEST(NetworkingChecks, ForcedProtoAndChannelsFail) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_PROTO", "LL128", "/etc/nccl.conf:2");
  f.present("nccl.conf.NCCL_MIN_NCHANNELS", "32", "/etc/nccl.conf:4");
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_proto", f), Outcome::fail);
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_min_nchannels", f), Outcome::fail);
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_algo", f), Outcome::pass);
}

TEST(NetworkingChecks, UnforcedNcclConfPasses) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_IB_GID_INDEX", "3", "/etc/nccl.conf:1");
  for (auto id : {"networking.nccl_conf.no_forced_algo", "networking.nccl_conf.no_forced_proto",
                  "networking.nccl_conf.no_forced_min_nchannels"})
    EXPECT_EQ(outcome_of(id, f), Outcome::pass) << id;
}

TEST(NetworkingChecks, NoNcclConfIsNotApplicableUnreadableIsUnverified) {
  Facts none = cpu_node_without_rdma();
  Facts unreadable = ib_gpu_node();
  unreadable.error("nccl.conf.path", "/etc/nccl.conf", "open /etc/nccl.conf: permission denied");
  for (auto id : {"networking.nccl_conf.no_forced_algo", "networking.nccl_conf.no_forced_proto",
                  "networking.nccl_conf.no_forced_min_nchannels"}) {
    EXPECT_EQ(outcome_of(id, none), Outcome::not_applicable) << id;
    EXPECT_EQ(outcome_of(id, unreadable), Outcome::unverified) << id;
  }
}

TEST(NetworkingChecks, RoceGidIndex) {
  Facts f = roce_gpu_node();
  f.present("nccl.conf.NCCL_IB_GID_INDEX", "3", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", f), Outcome::pass);

  f.present("nccl.conf.NCCL_IB_GID_INDEX", "1", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", f), Outcome::warn);

  Facts unset = roce_gpu_node();
  auto r = run_check_by_id("networking.nccl.roce_gid_index", unset);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_EQ(r.observed, "not set");

  Facts no_conf = roce_gpu_node();
  no_conf.absent("nccl.conf.path", "/etc/nccl.conf", "none");
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", no_conf), Outcome::warn);

  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", ib_gpu_node()), Outcome::not_applicable);
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", cpu_node_without_rdma()), Outcome::not_applicable);

  Facts unknown = roce_gpu_node();
  unknown.error("rdma.roce", "/sys/class/infiniband/*/ports/*/link_layer", "no readable link_layer file");
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", unknown), Outcome::unverified);
}

TEST(NetworkingChecks, QpsPerConnection) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_IB_QPS_PER_CONNECTION", "4", "/etc/nccl.conf:2");
  EXPECT_EQ(outcome_of("networking.nccl.ib_qps_per_connection", f), Outcome::pass);

  f.present("nccl.conf.NCCL_IB_QPS_PER_CONNECTION", "1", "/etc/nccl.conf:2");
  auto r = run_check_by_id("networking.nccl.ib_qps_per_connection", f);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.reason.find("64 nodes"), std::string::npos);
  EXPECT_NE(r.reason.find("cluster's size"), std::string::npos);

  auto unset = run_check_by_id("networking.nccl.ib_qps_per_connection", ib_gpu_node());
  EXPECT_EQ(unset.outcome, Outcome::warn);
  EXPECT_NE(unset.observed.find("default 1"), std::string::npos);

  f.present("nccl.conf.NCCL_IB_QPS_PER_CONNECTION", "two", "/etc/nccl.conf:2");
  EXPECT_EQ(outcome_of("networking.nccl.ib_qps_per_connection", f), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.nccl.ib_qps_per_connection", cpu_node_without_rdma()), Outcome::not_applicable);
}

TEST(NetworkingChecks, IbHcaNamesMustExist) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::pass);

  f.present("nccl.conf.NCCL_IB_HCA", "mlx5", "/etc/nccl.conf:1");  // prefix match
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::pass);

  f.present("nccl.conf.NCCL_IB_HCA", "=mlx5", "/etc/nccl.conf:1");  // exact match: none
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::fail);

  f.present("nccl.conf.NCCL_IB_HCA", "mlx5_0,mlx5_7", "/etc/nccl.conf:1");
  auto r = run_check_by_id("networking.nccl_conf.ib_hca_present", f);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.reason.find("mlx5_7"), std::string::npos);

  f.present("nccl.conf.NCCL_IB_HCA", "ibp", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::fail);

  f.present("nccl.conf.NCCL_IB_HCA", "^mlx5_9", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::pass);

  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", ib_gpu_node()), Outcome::not_applicable);
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", cpu_node_without_rdma()), Outcome::not_applicable);

  Facts no_rdma = cpu_node_without_rdma();
  no_rdma.present("nccl.conf.path", "/etc/nccl.conf", "/etc/nccl.conf");
  no_rdma.present("nccl.conf.NCCL_IB_HCA", "mlx5_0", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", no_rdma), Outcome::fail);
  no_rdma.error("rdma.device_count", "/sys/class/infiniband", "permission denied");
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", no_rdma), Outcome::unverified);
}

TEST(NetworkingChecks, SocketIfnameMustMatchAnInterface) {
  Facts f = ib_gpu_node();
  f.present("nccl.conf.NCCL_SOCKET_IFNAME", "eno,eth", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.socket_ifname_present", f), Outcome::pass);
  f.present("nccl.conf.NCCL_SOCKET_IFNAME", "bond0", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.socket_ifname_present", f), Outcome::fail);
  f.present("nccl.conf.NCCL_SOCKET_IFNAME", "^docker,lo", "/etc/nccl.conf:1");
  EXPECT_EQ(outcome_of("networking.nccl_conf.socket_ifname_present", f), Outcome::pass);
  EXPECT_EQ(outcome_of("networking.nccl_conf.socket_ifname_present", ib_gpu_node()), Outcome::not_applicable);
  f.error("net.interfaces", "/sys/class/net", "permission denied");
  EXPECT_EQ(outcome_of("networking.nccl_conf.socket_ifname_present", f), Outcome::unverified);
}

TEST(NetworkingChecks, HcaNaming) {
  EXPECT_EQ(outcome_of("networking.rdma.hca_naming", ib_gpu_node()), Outcome::pass);

  Facts persistent = ib_gpu_node();
  persistent.present("rdma.devices", "ibp12s0 ibp75s0 rocep65s0f1", "/sys/class/infiniband");
  EXPECT_EQ(outcome_of("networking.rdma.hca_naming", persistent), Outcome::pass);

  Facts mixed = ib_gpu_node();
  mixed.present("rdma.devices", "ibp12s0 mlx5_1", "/sys/class/infiniband");
  auto r = run_check_by_id("networking.rdma.hca_naming", mixed);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.observed.find("ibp12s0 (persistent)"), std::string::npos);
  EXPECT_NE(r.observed.find("mlx5_1 (kernel)"), std::string::npos);

  EXPECT_EQ(outcome_of("networking.rdma.hca_naming", cpu_node_without_rdma()), Outcome::not_applicable);
  Facts err;
  err.error("rdma.device_count", "/sys/class/infiniband", "no /sys in the host root");
  EXPECT_EQ(outcome_of("networking.rdma.hca_naming", err), Outcome::unverified);
}

TEST(NetworkingChecks, PortsActive) {
  EXPECT_EQ(outcome_of("networking.rdma.ports_active", ib_gpu_node()), Outcome::pass);
  Facts down = ib_gpu_node();
  down.present("rdma.ports_down", "mlx5_1/1=1: DOWN/3: Disabled", "/sys/class/infiniband/*/ports/*/state");
  auto r = run_check_by_id("networking.rdma.ports_active", down);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.observed, "mlx5_1/1=1: DOWN/3: Disabled");
  Facts garbage = ib_gpu_node();
  garbage.error("rdma.ports_down", "/sys/class/infiniband/*/ports/*/state", "no 'N: NAME' state in mlx5_0/1");
  EXPECT_EQ(outcome_of("networking.rdma.ports_active", garbage), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.rdma.ports_active", cpu_node_without_rdma()), Outcome::not_applicable);
}

TEST(NetworkingChecks, Memlock) {
  EXPECT_EQ(outcome_of("networking.rdma.memlock", ib_gpu_node()), Outcome::pass);
  Facts low = ib_gpu_node();
  low.present("limits.memlock", "8388608", "/proc/self/limits");
  auto r = run_check_by_id("networking.rdma.memlock", low);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_EQ(r.observed, "8388608 bytes");
  Facts image = ib_gpu_node();
  image.error("limits.memlock", "/proc/self/limits", "limits of a host root image cannot be read");
  EXPECT_EQ(outcome_of("networking.rdma.memlock", image), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.rdma.memlock", cpu_node_without_rdma()), Outcome::not_applicable);
}

TEST(NetworkingChecks, GdrOpenModule) {
  EXPECT_EQ(outcome_of("networking.gdr.open_module", ib_gpu_node()), Outcome::pass);
  Facts prop = ib_gpu_node();
  prop.present("gpu.driver.flavor", "proprietary", "/proc/driver/nvidia/version");
  EXPECT_EQ(outcome_of("networking.gdr.open_module", prop), Outcome::warn);
  Facts old_kernel = ib_gpu_node();
  old_kernel.present("kernel.release", "5.4.0-216-generic", "/proc/sys/kernel/osrelease");
  EXPECT_EQ(outcome_of("networking.gdr.open_module", old_kernel), Outcome::warn);
  Facts no_driver = ib_gpu_node();
  Facts fresh;
  for (const Fact* fact : no_driver.all())
    if (fact->key != "gpu.driver.flavor" && fact->key != "gpu.driver.version") fresh.put(*fact);
  fresh.absent("gpu.driver.version", "/proc/driver/nvidia/version", "the NVIDIA kernel driver is not loaded");
  EXPECT_EQ(outcome_of("networking.gdr.open_module", fresh), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.gdr.open_module", cpu_node_without_rdma()), Outcome::not_applicable);
  Facts gpu_no_rdma = ib_gpu_node();
  gpu_no_rdma.present("rdma.device_count", "0", "/sys/class/infiniband");
  EXPECT_EQ(outcome_of("networking.gdr.open_module", gpu_no_rdma), Outcome::not_applicable);
}

TEST(NetworkingChecks, GdrPeermemLegacy) {
  Facts open = ib_gpu_node();
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", open), Outcome::pass);
  open.present("kernel.modules", "nvidia nvidia_peermem mlx5_core", "/proc/modules");
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", open), Outcome::pass);

  Facts legacy = ib_gpu_node();
  legacy.present("gpu.driver.flavor", "proprietary", "/proc/driver/nvidia/version");
  legacy.present("kernel.modules", "nvidia nvidia_peermem mlx5_core", "/proc/modules");
  auto r = run_check_by_id("networking.gdr.peermem_legacy", legacy);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.reason.find("legacy path"), std::string::npos);

  Facts nothing = legacy;
  nothing.present("kernel.modules", "nvidia mlx5_core", "/proc/modules");
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", nothing), Outcome::fail);

  Facts retired = ib_gpu_node();
  retired.present("kernel.modules", "nvidia nv_peer_mem mlx5_core", "/proc/modules");
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", retired), Outcome::warn);

  Facts unreadable = ib_gpu_node();
  unreadable.error("kernel.modules", "/proc/modules", "permission denied");
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", unreadable), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.gdr.peermem_legacy", cpu_node_without_rdma()), Outcome::not_applicable);
}

TEST(NetworkingChecks, IommuPassthrough) {
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", ib_gpu_node()), Outcome::pass);
  Facts off = ib_gpu_node();
  off.present("iommu.mode", "off", "/proc/cmdline");
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", off), Outcome::pass);
  Facts translated = ib_gpu_node();
  translated.present("iommu.mode", "translated", "/proc/cmdline", "GPU/NIC IOMMU groups: 8 group(s) DMA-FQ");
  auto r = run_check_by_id("networking.iommu.passthrough", translated);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.reason.find("bandwidth"), std::string::npos);
  Facts unknown = ib_gpu_node();
  unknown.present("iommu.mode", "unknown", "/proc/cmdline");
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", unknown), Outcome::unverified);

  Facts vm = translated;
  vm.present("host.virtualized", "yes", "/proc/cpuinfo");
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", vm), Outcome::not_applicable);
  vm.present("iommu.mode", "passthrough", "/proc/cmdline");
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", vm), Outcome::pass);

  Facts err = ib_gpu_node();
  err.error("iommu.mode", "/proc/cmdline", "no /proc/cmdline");
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", err), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.iommu.passthrough", cpu_node_without_rdma()), Outcome::not_applicable);
}

TEST(NetworkingChecks, AcsDisabled) {
  EXPECT_EQ(outcome_of("networking.pcie.acs_disabled", ib_gpu_node()), Outcome::pass);
  Facts on = ib_gpu_node();
  on.present("pci.acs_redirect", "0000:02:00.0 (SV+ TB- RR+ CR+ UF+ EC- DT-)", "/sys/bus/pci/devices/*/config");
  auto r = run_check_by_id("networking.pcie.acs_disabled", on);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.observed.find("RR+"), std::string::npos);
  EXPECT_NE(r.reason.find("root complex"), std::string::npos);
  Facts unreadable = ib_gpu_node();
  unreadable.error("pci.acs_redirect", "/sys/bus/pci/devices/*/config",
                   "cannot read ACS of 0000:02:00.0 (only 64 bytes of config space readable)");
  EXPECT_EQ(outcome_of("networking.pcie.acs_disabled", unreadable), Outcome::unverified);
  EXPECT_EQ(outcome_of("networking.pcie.acs_disabled", cpu_node_without_rdma()), Outcome::not_applicable);
  Facts topo = ib_gpu_node();
  topo.error("pci.gpu_nic_bridges", "/sys/bus/pci/devices", "cannot resolve the sysfs device path");
  EXPECT_EQ(outcome_of("networking.pcie.acs_disabled", topo), Outcome::unverified);
}

// Collector and checks together, on a sysfs tree with the formats Linux writes.
TEST(NetworkingChecks, EndToEndOnAFixtureHost) {
  test::TempHost h;
  h.write("/etc/nccl.conf", "NCCL_ALGO=Ring\nNCCL_IB_HCA=mlx5_0,mlx5_1\n");
  for (auto dev : {"mlx5_0", "mlx5_1"}) {
    std::string base = std::string("/sys/class/infiniband/") + dev + "/ports/1";
    h.write(base + "/state", "4: ACTIVE\n");
    h.write(base + "/phys_state", "5: LinkUp\n");
    h.write(base + "/link_layer", "Ethernet\n");
  }
  auto f = test::collect_with(h.host(), collect_network);
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_algo", f), Outcome::fail);
  EXPECT_EQ(outcome_of("networking.nccl_conf.no_forced_proto", f), Outcome::pass);
  EXPECT_EQ(outcome_of("networking.nccl.roce_gid_index", f), Outcome::warn);
  EXPECT_EQ(outcome_of("networking.nccl_conf.ib_hca_present", f), Outcome::pass);
  EXPECT_EQ(outcome_of("networking.rdma.ports_active", f), Outcome::pass);
  EXPECT_EQ(outcome_of("networking.rdma.hca_naming", f), Outcome::pass);
  EXPECT_EQ(outcome_of("networking.pcie.acs_disabled", f), Outcome::not_applicable);

  h.write("/sys/class/infiniband/mlx5_1/ports/1/state", "garbage\n");
  auto g = test::collect_with(h.host(), collect_network);
  EXPECT_EQ(outcome_of("networking.rdma.ports_active", g), Outcome::unverified);
}

}  // namespace
}  // namespace cmax::audit
