#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "audit/parse/pci_config.h"

namespace cmax::audit {
namespace {

void put16(std::string& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<char>(v & 0xFF);
  b[at + 1] = static_cast<char>(v >> 8);
}

void put32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint32_t ext_header(std::uint16_t id, std::uint8_t version, std::uint16_t next) {
  return id | (static_cast<std::uint32_t>(version) << 16) | (static_cast<std::uint32_t>(next) << 20);
}

// A PCIe switch downstream port as `hexdump /sys/bus/pci/devices/0000:02:00.0/config` shows one
// (Broadcom PEX890xx): type-1 header, AER at 0x100, then ACS at 0x148 with `acs_ctl`.
std::string bridge_config(std::uint16_t acs_ctl) {
  std::string c(kPciConfigExtendedBytes, '\0');
  put16(c, 0x00, 0x1000);  // vendor: Broadcom / LSI
  put16(c, 0x02, 0xc030);  // device
  c[0x09] = 0x00;
  c[0x0a] = 0x04;  // subclass: PCI-to-PCI bridge
  c[0x0b] = 0x06;  // class: bridge
  c[0x0e] = 0x01;  // header type 1
  put32(c, 0x100, ext_header(kPciExtCapAer, 2, 0x148));
  put32(c, 0x148, ext_header(kPciExtCapAcs, 1, 0));
  put16(c, 0x14c, 0x005f);  // ACS capability: SV TB RR CR UF DT
  put16(c, 0x14e, acs_ctl);
  return c;
}

TEST(PciConfig, DecodesAcsControlAfterAer) {
  // lspci: ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
  auto acs = parse_acs_control(bridge_config(0x001d));
  ASSERT_TRUE(acs.has_value());
  EXPECT_EQ(acs->cap_offset, 0x148);
  EXPECT_EQ(acs->raw, 0x001d);
  EXPECT_TRUE(acs->source_validation);
  EXPECT_FALSE(acs->translation_blocking);
  EXPECT_TRUE(acs->request_redirect);
  EXPECT_TRUE(acs->completion_redirect);
  EXPECT_TRUE(acs->upstream_forwarding);
  EXPECT_FALSE(acs->egress_control);
  EXPECT_FALSE(acs->direct_translated);
  EXPECT_TRUE(acs->redirects_p2p());
  EXPECT_EQ(describe_acs(*acs), "SV+ TB- RR+ CR+ UF+ EC- DT-");
}

TEST(PciConfig, AcsControlClearDoesNotRedirect) {
  auto acs = parse_acs_control(bridge_config(0x0000));
  ASSERT_TRUE(acs.has_value());
  EXPECT_FALSE(acs->redirects_p2p());
  EXPECT_EQ(describe_acs(*acs), "SV- TB- RR- CR- UF- EC- DT-");
}

TEST(PciConfig, EachControlBitDecodesAlone) {
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 1))->translation_blocking);
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 2))->request_redirect);
  EXPECT_FALSE(parse_acs_control(bridge_config(1u << 2))->completion_redirect);
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 3))->completion_redirect);
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 3))->redirects_p2p());
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 5))->egress_control);
  EXPECT_TRUE(parse_acs_control(bridge_config(1u << 6))->direct_translated);
  EXPECT_EQ(describe_acs(*parse_acs_control(bridge_config(0x7f))), "SV+ TB+ RR+ CR+ UF+ EC+ DT+");
}

TEST(PciConfig, WalksTheExtendedCapabilityList) {
  auto caps = parse_pci_ext_caps(bridge_config(0));
  ASSERT_EQ(caps.size(), 2u);
  EXPECT_EQ(caps[0].id, kPciExtCapAer);
  EXPECT_EQ(caps[0].version, 2);
  EXPECT_EQ(caps[0].offset, 0x100);
  EXPECT_EQ(caps[1].id, kPciExtCapAcs);
  EXPECT_EQ(caps[1].offset, 0x148);
}

TEST(PciConfig, AcsAsTheFirstCapability) {
  std::string c(kPciConfigExtendedBytes, '\0');
  put32(c, 0x100, ext_header(kPciExtCapAcs, 1, 0));
  put16(c, 0x106, 0x0004);
  auto acs = parse_acs_control(c);
  ASSERT_TRUE(acs.has_value());
  EXPECT_EQ(acs->cap_offset, 0x100);
  EXPECT_TRUE(acs->request_redirect);
}

TEST(PciConfig, NoAcsCapability) {
  std::string c(kPciConfigExtendedBytes, '\0');
  put32(c, 0x100, ext_header(kPciExtCapAer, 2, 0x148));
  put32(c, 0x148, ext_header(0x0019, 1, 0));  // Secondary PCIe, end of list
  EXPECT_FALSE(parse_acs_control(c).has_value());
  EXPECT_EQ(parse_pci_ext_caps(c).size(), 2u);
  EXPECT_TRUE(has_extended_config(c));
}

TEST(PciConfig, EmptyExtendedSpace) {
  std::string c(kPciConfigExtendedBytes, '\0');
  EXPECT_TRUE(parse_pci_ext_caps(c).empty());
  EXPECT_FALSE(parse_acs_control(c).has_value());
}

TEST(PciConfig, ShortReadsSeeNoExtendedCapabilities) {
  // 64 bytes: what an unprivileged reader gets; 256: a conventional PCI device or lspci -x dump.
  for (std::size_t size : {0u, 4u, 64u, 256u, 0x103u}) {
    std::string c = bridge_config(0x001d).substr(0, size);
    EXPECT_FALSE(parse_acs_control(c).has_value()) << size;
    EXPECT_TRUE(parse_pci_ext_caps(c).empty()) << size;
  }
  EXPECT_FALSE(has_extended_config(std::string(64, '\0')));
  EXPECT_FALSE(has_extended_config(std::string(256, '\0')));
  EXPECT_TRUE(has_extended_config(std::string(4096, '\0')));
}

TEST(PciConfig, TruncatedInsideTheAcsCapability) {
  std::string full = bridge_config(0x001d);
  // Header readable, control register cut.
  EXPECT_FALSE(parse_acs_control(full.substr(0, 0x14f)).has_value());
  EXPECT_EQ(parse_pci_ext_caps(full.substr(0, 0x14f)).size(), 2u);
  // Header itself cut: the walk stops after AER.
  EXPECT_EQ(parse_pci_ext_caps(full.substr(0, 0x14a)).size(), 1u);
  EXPECT_FALSE(parse_acs_control(full.substr(0, 0x14a)).has_value());
  // Exactly long enough.
  EXPECT_TRUE(parse_acs_control(full.substr(0, 0x150)).has_value());
}

TEST(PciConfig, LoopInTheCapabilityListTerminates) {
  std::string c(kPciConfigExtendedBytes, '\0');
  put32(c, 0x100, ext_header(kPciExtCapAer, 2, 0x148));
  put32(c, 0x148, ext_header(0x000B, 1, 0x100));  // vendor-specific, pointing back to AER
  auto caps = parse_pci_ext_caps(c);
  EXPECT_EQ(caps.size(), 2u);
  EXPECT_FALSE(parse_acs_control(c).has_value());

  std::string self(kPciConfigExtendedBytes, '\0');
  put32(self, 0x100, ext_header(kPciExtCapAer, 2, 0x100));
  EXPECT_EQ(parse_pci_ext_caps(self).size(), 1u);
}

TEST(PciConfig, LoopAfterAcsStillFindsIt) {
  std::string c(kPciConfigExtendedBytes, '\0');
  put32(c, 0x100, ext_header(kPciExtCapAcs, 1, 0x200));
  put16(c, 0x106, 0x000c);
  put32(c, 0x200, ext_header(kPciExtCapAer, 1, 0x100));
  auto acs = parse_acs_control(c);
  ASSERT_TRUE(acs.has_value());
  EXPECT_TRUE(acs->completion_redirect);
}

TEST(PciConfig, OutOfRangeNextPointersStopTheWalk) {
  std::string below(kPciConfigExtendedBytes, '\0');
  put32(below, 0x100, ext_header(kPciExtCapAer, 2, 0x0fc));  // into conventional space
  put32(below, 0x0fc, ext_header(kPciExtCapAcs, 1, 0));
  EXPECT_EQ(parse_pci_ext_caps(below).size(), 1u);
  EXPECT_FALSE(parse_acs_control(below).has_value());

  std::string past(512, '\0');
  put32(past, 0x100, ext_header(kPciExtCapAer, 2, 0x300));  // beyond a 512-byte buffer
  EXPECT_EQ(parse_pci_ext_caps(past).size(), 1u);

  std::string last(kPciConfigExtendedBytes, '\0');
  put32(last, 0x100, ext_header(kPciExtCapAer, 2, 0xffc));  // the last dword is in range
  put32(last, 0xffc, ext_header(kPciExtCapAcs, 1, 0));
  auto caps = parse_pci_ext_caps(last);
  ASSERT_EQ(caps.size(), 2u);
  EXPECT_EQ(caps[1].offset, 0xffc);
  EXPECT_FALSE(parse_acs_control(last).has_value());  // its control register would lie past 4096
}

TEST(PciConfig, ReservedLowBitsOfTheNextPointerAreIgnored) {
  std::string c = bridge_config(0x0004);
  put32(c, 0x100, ext_header(kPciExtCapAer, 2, 0x14b));
  auto acs = parse_acs_control(c);
  ASSERT_TRUE(acs.has_value());
  EXPECT_EQ(acs->cap_offset, 0x148);
}

TEST(PciConfig, AllOnesMeansNoDevice) {
  std::string c(kPciConfigExtendedBytes, '\xff');
  EXPECT_TRUE(parse_pci_ext_caps(c).empty());
  EXPECT_FALSE(parse_acs_control(c).has_value());
}

TEST(PciConfig, GarbageNeverCrashesAndStaysBounded) {
  std::uint32_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::size_t size = (round * 37) % 4200;
    std::string c(size, '\0');
    for (auto& ch : c) {
      state = state * 1664525u + 1013904223u;
      ch = static_cast<char>(state >> 24);
    }
    auto caps = parse_pci_ext_caps(c);
    EXPECT_LE(caps.size(), (kPciConfigExtendedBytes - kPciExtCapStart) / 4);
    for (const auto& cap : caps) EXPECT_LE(cap.offset + 4u, c.size());
    (void)parse_acs_control(c);
  }
}

TEST(PciConfig, PciAddresses) {
  EXPECT_TRUE(is_pci_address("0000:1b:00.0"));
  EXPECT_TRUE(is_pci_address("0000:00:01.7"));
  EXPECT_TRUE(is_pci_address("10000:e1:00.0"));  // VMD domain
  EXPECT_FALSE(is_pci_address("pci0000:00"));
  EXPECT_FALSE(is_pci_address("0000:1b:00"));
  EXPECT_FALSE(is_pci_address("0000:1g:00.0"));
  EXPECT_FALSE(is_pci_address("0000-1b:00.0"));
  EXPECT_FALSE(is_pci_address("infiniband"));
  EXPECT_FALSE(is_pci_address(""));
}

TEST(PciConfig, UpstreamChainFromTheSysfsPath) {
  EXPECT_EQ(pci_upstream_chain("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0"),
            (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}));
  EXPECT_TRUE(pci_upstream_chain("/sys/devices/pci0000:00/0000:00:14.0").empty());
  EXPECT_TRUE(pci_upstream_chain("/sys/devices/platform/serial8250").empty());
  EXPECT_TRUE(pci_upstream_chain("").empty());
  EXPECT_EQ(pci_upstream_chain("/sys/devices/pci0000:e0/0000:e0:03.0/10000:e1:00.0/10000:e2:00.0"),
            (std::vector<std::string>{"0000:e0:03.0", "10000:e1:00.0"}));
}

TEST(PciConfig, ResolvesRelativeSysfsLinks) {
  EXPECT_EQ(
      resolve_link_target("/sys/bus/pci/devices/0000:01:00.0", "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
      "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  EXPECT_EQ(resolve_link_target("/sys/bus/pci/devices/x", "/sys/devices/./pci0000:00//0000:00:02.0"),
            "/sys/devices/pci0000:00/0000:00:02.0");
  EXPECT_EQ(resolve_link_target("/a/b", "../../../../c"), "/c");
  EXPECT_EQ(resolve_link_target("/a/b", ".."), "/");
}

}  // namespace
}  // namespace cmax::audit
