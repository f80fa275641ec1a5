#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "audit/collectors/collector.h"
#include "audit/parse/pci_config.h"
#include "support/temp_host.h"

namespace cmax::audit {
namespace {

using test::collect_with;
using test::TempHost;

std::string acs_config(std::uint16_t ctl) {
  std::string c(kPciConfigExtendedBytes, '\0');
  auto put = [&](std::size_t at, std::uint32_t v, int n) {
    for (int i = 0; i < n; ++i) c[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  put(0x00, 0xc0301000, 4);                             // Broadcom PEX switch port
  put(0x08, 0x06040000, 4);                             // class 0x060400
  put(0x100, 0x0001 | (2u << 16) | (0x148u << 20), 4);  // AER v2 -> 0x148
  put(0x148, 0x000D | (1u << 16), 4);                   // ACS v1, end of list
  put(0x14c, 0x005f, 2);
  put(0x14e, ctl, 2);
  return c;
}

// A device at /sys/devices/<path> with the sysfs link /sys/bus/pci/devices/<bdf> -> ../../../devices/<path>.
void add_pci(TempHost& h, const std::string& path, std::string_view vendor, std::string_view klass,
             const std::string& config = {}) {
  std::string dir = "/sys/devices/" + path;
  std::string bdf = path.substr(path.rfind('/') + 1);
  h.write(dir + "/vendor", std::string(vendor) + "\n");
  h.write(dir + "/class", std::string(klass) + "\n");
  if (!config.empty()) h.write(dir + "/config", config);
  h.symlink("../../../devices/" + path, "/sys/bus/pci/devices/" + bdf);
}

constexpr std::string_view kRootPort = "pci0000:00/0000:00:01.0";
constexpr std::string_view kUsp = "pci0000:00/0000:00:01.0/0000:01:00.0";
constexpr std::string_view kDspGpu = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
constexpr std::string_view kDspNic = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0";

// An HGX-like switch: root port -> switch upstream port -> two downstream ports, one with an H100,
// one with a ConnectX-7. A second GPU hangs off its own root port. The root port has ACS redirect
// on (as Linux sets it for isolation), which must not count: GPU-NIC traffic never reaches it.
void add_switch(TempHost& h, std::uint16_t gpu_port_acs, std::uint16_t nic_port_acs) {
  add_pci(h, std::string(kRootPort), "0x8086", "0x060400", acs_config(0x001d));
  add_pci(h, std::string(kUsp), "0x1000", "0x060400", acs_config(0x0000));
  add_pci(h, std::string(kDspGpu), "0x1000", "0x060400", acs_config(gpu_port_acs));
  add_pci(h, std::string(kDspNic), "0x1000", "0x060400", acs_config(nic_port_acs));
  add_pci(h, std::string(kDspGpu) + "/0000:03:00.0", "0x10de", "0x030200");
  add_pci(h, std::string(kDspNic) + "/0000:04:00.0", "0x15b3", "0x020700");
  add_pci(h, "pci0000:00/0000:00:02.0", "0x8086", "0x060400", acs_config(0x001d));
  add_pci(h, "pci0000:00/0000:00:02.0/0000:05:00.0", "0x10de", "0x030200");
}

void add_port(TempHost& h, std::string_view dev, int port, std::string_view state, std::string_view phys,
              std::string_view layer) {
  std::string base = "/sys/class/infiniband/" + std::string(dev) + "/ports/" + std::to_string(port);
  h.write(base + "/state", std::string(state) + "\n");
  h.write(base + "/phys_state", std::string(phys) + "\n");
  h.write(base + "/link_layer", std::string(layer) + "\n");
}

TEST(NetworkCollector, NcclConfFirstLineOfANameWins) {
  TempHost h;
  h.write("/etc/nccl.conf",
          "# site defaults\nNCCL_ALGO=Ring\nNCCL_IB_GID_INDEX=3\n#NCCL_PROTO=LL128\nNCCL_ALGO=Tree\n"
          "NCCL_SOCKET_IFNAME=^docker,lo\n");
  auto f = collect_with(h.host(), collect_network);
  ASSERT_TRUE(f.is_present("nccl.conf.path"));
  EXPECT_EQ(f.value_or("nccl.conf.path"), "/etc/nccl.conf");
  EXPECT_EQ(f.value_or("nccl.conf.NCCL_ALGO"), "Ring");
  EXPECT_EQ(f.find("nccl.conf.NCCL_ALGO")->source, "/etc/nccl.conf:2");
  EXPECT_EQ(f.value_or("nccl.conf.NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(f.value_or("nccl.conf.NCCL_SOCKET_IFNAME"), "^docker,lo");
  EXPECT_EQ(f.find("nccl.conf.NCCL_PROTO"), nullptr);
}

TEST(NetworkCollector, NcclConfAbsentAndUnreadable) {
  TempHost none;
  auto f = collect_with(none.host(), collect_network);
  ASSERT_NE(f.find("nccl.conf.path"), nullptr);
  EXPECT_EQ(f.find("nccl.conf.path")->status, FactStatus::absent);

  TempHost dir;
  dir.mkdir("/etc/nccl.conf");
  auto g = collect_with(dir.host(), collect_network);
  EXPECT_EQ(g.find("nccl.conf.path")->status, FactStatus::error);
}

TEST(NetworkCollector, InfinibandPortsOneDown) {
  TempHost h;
  add_port(h, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "InfiniBand");
  add_port(h, "mlx5_1", 1, "1: DOWN", "3: Disabled", "InfiniBand");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("rdma.device_count"), "2");
  EXPECT_EQ(f.value_or("rdma.devices"), "mlx5_0 mlx5_1");
  EXPECT_EQ(f.value_or("rdma.port_count"), "2");
  EXPECT_EQ(f.value_or("rdma.link_layers"), "InfiniBand");
  EXPECT_EQ(f.value_or("rdma.roce"), "no");
  EXPECT_EQ(f.value_or("rdma.ports_down"), "mlx5_1/1=1: DOWN/3: Disabled");
}

TEST(NetworkCollector, RoceAllUp) {
  TempHost h;
  add_port(h, "rocep65s0f0", 1, "4: ACTIVE", "5: LinkUp", "Ethernet");
  add_port(h, "rocep65s0f1", 1, "4: ACTIVE", "5: LinkUp", "Ethernet");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("rdma.device_count"), "2");
  EXPECT_EQ(f.value_or("rdma.roce"), "yes");
  EXPECT_EQ(f.value_or("rdma.link_layers"), "Ethernet");
  ASSERT_NE(f.find("rdma.ports_down"), nullptr);
  EXPECT_EQ(f.find("rdma.ports_down")->status, FactStatus::absent);
}

TEST(NetworkCollector, GarbageStateFilesAreAnErrorNotAPass) {
  TempHost h;
  add_port(h, "mlx5_0", 1, "ACTIVE", "LinkUp", "InfiniBand");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.find("rdma.ports_down")->status, FactStatus::error);

  // A definite down port still counts when another port is unreadable.
  TempHost mixed;
  add_port(mixed, "mlx5_0", 1, "\x01\x02garbage", "", "InfiniBand");
  add_port(mixed, "mlx5_1", 1, "2: INIT", "5: LinkUp", "InfiniBand");
  auto g = collect_with(mixed.host(), collect_network);
  ASSERT_TRUE(g.is_present("rdma.ports_down"));
  EXPECT_EQ(g.value_or("rdma.ports_down"), "mlx5_1/1=2: INIT/5: LinkUp");
  EXPECT_NE(g.find("rdma.ports_down")->detail.find("mlx5_0/1"), std::string::npos);
}

TEST(NetworkCollector, NoRdmaStackIsAnAnswer) {
  TempHost h;
  h.mkdir("/sys/class/net/eth0");
  h.mkdir("/sys/class/net/lo");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("rdma.device_count"), "0");
  EXPECT_EQ(f.value_or("rdma.roce"), "no");
  EXPECT_EQ(f.find("rdma.devices"), nullptr);
  EXPECT_EQ(f.value_or("net.interfaces"), "eth0 lo");
}

TEST(NetworkCollector, NoSysfsAtAllIsUnknown) {
  TempHost h;
  h.write("/etc/hostname", "n1\n");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.find("rdma.device_count")->status, FactStatus::error);
  EXPECT_EQ(f.find("iommu.enabled")->status, FactStatus::error);
  EXPECT_EQ(f.find("iommu.mode")->status, FactStatus::error);
}

TEST(NetworkCollector, IommuPassthroughFromCmdline) {
  TempHost h;
  h.mkdir("/sys/class/iommu/dmar0");
  h.mkdir("/sys/kernel/iommu_groups/0");
  h.write("/proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=x ro intel_iommu=on iommu=pt quiet\n");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("iommu.enabled"), "yes");
  EXPECT_EQ(f.value_or("iommu.mode"), "passthrough");
  EXPECT_NE(f.find("iommu.mode")->detail.find("iommu=pt"), std::string::npos);
}

TEST(NetworkCollector, IommuTranslatedFromCmdline) {
  TempHost h;
  h.mkdir("/sys/class/iommu/dmar0");
  h.mkdir("/sys/kernel/iommu_groups/0");
  h.write("/proc/cmdline", "root=/dev/sda1 intel_iommu=on,sm_on\n");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("iommu.mode"), "translated");
}

TEST(NetworkCollector, IommuModeFromTheGpuGroupType) {
  TempHost h;
  add_switch(h, 0, 0);
  h.symlink("../../../../../../kernel/iommu_groups/12",
            "/sys/devices/" + std::string(kDspGpu) + "/0000:03:00.0/iommu_group");
  h.write("/sys/kernel/iommu_groups/12/type", "DMA-FQ\n");
  h.mkdir("/sys/class/iommu/dmar3");
  h.write("/proc/cmdline", "root=/dev/nvme0n1p2 ro\n");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("iommu.enabled"), "yes");
  EXPECT_EQ(f.value_or("iommu.mode"), "translated");

  h.write("/sys/kernel/iommu_groups/12/type", "identity\n");
  EXPECT_EQ(collect_with(h.host(), collect_network).value_or("iommu.mode"), "passthrough");
}

TEST(NetworkCollector, IommuOffAndUnknown) {
  TempHost off;
  off.mkdir("/sys/class/net/eth0");
  off.write("/proc/cmdline", "root=/dev/sda1 amd_iommu=off\n");
  // A tree that did not capture /sys/kernel/iommu_groups says nothing about the IOMMU...
  auto uncaptured = collect_with(off.host(), collect_network);
  EXPECT_EQ(uncaptured.find("iommu.enabled")->status, FactStatus::error);
  // ...a kernel with the IOMMU off has the directory, empty.
  off.mkdir("/sys/kernel/iommu_groups");
  auto f = collect_with(off.host(), collect_network);
  EXPECT_EQ(f.value_or("iommu.enabled"), "no");
  EXPECT_EQ(f.value_or("iommu.mode"), "off");

  TempHost unknown;
  unknown.mkdir("/sys/kernel/iommu_groups/0");
  unknown.write("/proc/cmdline", "root=/dev/sda1 quiet\n");
  auto g = collect_with(unknown.host(), collect_network);
  EXPECT_EQ(g.value_or("iommu.enabled"), "yes");
  EXPECT_EQ(g.value_or("iommu.mode"), "unknown");
}

TEST(NetworkCollector, AcsRedirectOnTheGpuSwitchPort) {
  TempHost h;
  add_switch(h, 0x001d, 0x0000);
  auto f = collect_with(h.host(), collect_network);
  // Upstream port plus both downstream ports; not the root ports.
  EXPECT_EQ(f.value_or("pci.gpu_nic_bridges"), "3");
  ASSERT_TRUE(f.is_present("pci.acs_redirect"));
  EXPECT_EQ(f.value_or("pci.acs_redirect"), "0000:02:00.0 (SV+ TB- RR+ CR+ UF+ EC- DT-)");
  EXPECT_EQ(f.find("pci.acs_redirect")->detail.find("0000:00:01.0"), std::string::npos);
}

TEST(NetworkCollector, AcsClearOnEveryGpuNicBridge) {
  TempHost h;
  add_switch(h, 0x0000, 0x0000);
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("pci.gpu_nic_bridges"), "3");
  ASSERT_NE(f.find("pci.acs_redirect"), nullptr);
  EXPECT_EQ(f.find("pci.acs_redirect")->status, FactStatus::absent);
  EXPECT_NE(f.find("pci.acs_redirect")->detail.find("3 GPU-NIC switch bridge"), std::string::npos);
}

TEST(NetworkCollector, UnprivilegedConfigReadIsAnError) {
  TempHost h;
  add_switch(h, 0x001d, 0x0000);
  // What a non-root reader sees: the first 64 bytes only.
  h.write("/sys/devices/" + std::string(kDspGpu) + "/config", acs_config(0x001d).substr(0, 64));
  h.write("/sys/devices/" + std::string(kDspNic) + "/config", acs_config(0).substr(0, 64));
  h.write("/sys/devices/" + std::string(kUsp) + "/config", acs_config(0).substr(0, 256));
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("pci.gpu_nic_bridges"), "3");
  ASSERT_NE(f.find("pci.acs_redirect"), nullptr);
  EXPECT_EQ(f.find("pci.acs_redirect")->status, FactStatus::error);
  EXPECT_NE(f.find("pci.acs_redirect")->detail.find("need root"), std::string::npos);
}

TEST(NetworkCollector, AllOnesConfigAndBrokenCapabilityLoop) {
  TempHost h;
  add_switch(h, 0, 0);
  h.write("/sys/devices/" + std::string(kDspGpu) + "/config", std::string(kPciConfigExtendedBytes, '\xff'));
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.find("pci.acs_redirect")->status, FactStatus::error);

  // A capability list that loops without ACS: "no ACS", not a hang.
  std::string loop(kPciConfigExtendedBytes, '\0');
  loop[0] = 0x00;
  loop[1] = 0x10;
  loop[0x100] = 0x01;
  loop[0x102] = 0x02;
  loop[0x103] = 0x10;  // next = 0x100
  h.write("/sys/devices/" + std::string(kDspGpu) + "/config", loop);
  auto g = collect_with(h.host(), collect_network);
  EXPECT_EQ(g.find("pci.acs_redirect")->status, FactStatus::absent);
  EXPECT_NE(g.find("pci.acs_redirect")->detail.find("0000:02:00.0 (no ACS)"), std::string::npos);
}

TEST(NetworkCollector, GpuAndNicOnDifferentRootPortsShareNoSwitch) {
  TempHost h;
  add_pci(h, "pci0000:00/0000:00:01.0", "0x8086", "0x060400", acs_config(0x001d));
  add_pci(h, "pci0000:00/0000:00:01.0/0000:01:00.0", "0x10de", "0x030200");
  add_pci(h, "pci0000:00/0000:00:03.0", "0x8086", "0x060400", acs_config(0x001d));
  add_pci(h, "pci0000:00/0000:00:03.0/0000:02:00.0", "0x15b3", "0x020000");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.value_or("pci.gpu_nic_bridges"), "0");
  EXPECT_EQ(f.find("pci.acs_redirect")->status, FactStatus::absent);
}

TEST(NetworkCollector, NoPciBusOrNoNic) {
  TempHost none;
  none.mkdir("/sys/class/net/eth0");
  auto f = collect_with(none.host(), collect_network);
  EXPECT_EQ(f.value_or("pci.gpu_nic_bridges"), "0");

  TempHost gpu_only;
  add_pci(gpu_only, "pci0000:00/0000:00:01.0", "0x8086", "0x060400", acs_config(0x001d));
  add_pci(gpu_only, "pci0000:00/0000:00:01.0/0000:01:00.0", "0x10de", "0x030200");
  EXPECT_EQ(collect_with(gpu_only.host(), collect_network).value_or("pci.gpu_nic_bridges"), "0");
}

TEST(NetworkCollector, DeviceEntriesThatAreNotLinksCannotBeResolved) {
  TempHost h;
  h.write("/sys/bus/pci/devices/0000:03:00.0/vendor", "0x10de\n");
  h.write("/sys/bus/pci/devices/0000:03:00.0/class", "0x030200\n");
  h.write("/sys/bus/pci/devices/0000:04:00.0/vendor", "0x15b3\n");
  h.write("/sys/bus/pci/devices/0000:04:00.0/class", "0x020700\n");
  auto f = collect_with(h.host(), collect_network);
  EXPECT_EQ(f.find("pci.gpu_nic_bridges")->status, FactStatus::error);
  EXPECT_EQ(f.find("pci.acs_redirect")->status, FactStatus::error);
}

}  // namespace
}  // namespace cmax::audit
