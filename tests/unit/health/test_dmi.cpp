// SMBIOS type 17 parsing and the memory ceiling. The binary records are built by hand to the
// SMBIOS 3.3 layout with values a real board reports; the dmidecode samples are written for these
// tests in the shape dmidecode 3.4 and 3.0 print (no real capture was available on this machine
// or under shared/data).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "health/dmi.h"

using namespace cmax::health;

namespace {

/// A type 17 record of `length` bytes (0x5C = SMBIOS 3.3) with its string table.
struct Type17 {
  std::uint8_t length = 0x5C;
  std::uint16_t handle = 0x1100;
  std::uint16_t total_width = 72, data_width = 64;
  std::uint16_t size = 0;           // MiB, bit 15 = KiB; 0x7FFF = see extended_size
  std::uint32_t extended_size = 0;  // MiB
  std::uint8_t type = 0x1A;         // DDR4
  std::uint16_t speed = 0, configured = 0;
  std::uint32_t extended_speed = 0, extended_configured = 0;
  std::string locator, bank_locator, manufacturer = "Samsung", part = "M393A4K40DB3-CWE";

  std::string bytes() const {
    std::vector<std::uint8_t> b(length, 0);
    auto put16 = [&](std::size_t off, std::uint16_t v) {
      if (off + 2 <= b.size()) b[off] = v & 0xFF, b[off + 1] = v >> 8;
    };
    auto put32 = [&](std::size_t off, std::uint32_t v) {
      for (int i = 0; i < 4; ++i)
        if (off + i < b.size()) b[off + i] = (v >> (8 * i)) & 0xFF;
    };
    auto put8 = [&](std::size_t off, std::uint8_t v) {
      if (off < b.size()) b[off] = v;
    };
    put8(0, 17);
    put8(1, length);
    put16(2, handle);
    put16(4, 0x1000);  // physical memory array
    put16(6, 0xFFFE);  // no error information
    put16(0x08, total_width);
    put16(0x0A, data_width);
    put16(0x0C, size);
    put8(0x0E, 0x09);  // DIMM
    // Strings are numbered from 1 in table order; an absent one is index 0 (never an empty string,
    // which would end the table early).
    std::string strings;
    std::uint8_t next = 1;
    auto str = [&](std::size_t off, const std::string& v) {
      if (v.empty()) return;
      put8(off, next++);
      strings += v + '\0';
    };
    str(0x10, locator);
    str(0x11, bank_locator);
    put8(0x12, type);
    put16(0x13, 0x2080);  // synchronous, registered
    put16(0x15, speed);
    str(0x17, manufacturer);
    str(0x1A, part);
    put8(0x1B, 2);  // rank 2
    put32(0x1C, extended_size);
    put16(0x20, configured);
    put16(0x22, 1200), put16(0x24, 1200), put16(0x26, 1200);
    put8(0x28, 3);  // DRAM
    put32(0x54, extended_speed);
    put32(0x58, extended_configured);
    std::string s(b.begin(), b.end());
    s += strings.empty() ? std::string(2, '\0') : strings + '\0';
    return s;
  }
};

Type17 ddr5_4800(std::string locator, std::string bank) {
  Type17 t;
  t.total_width = 80;  // DDR5 RDIMM: 64 data + 16 ECC bits
  t.size = 0x7FFF;
  t.extended_size = 65536;  // 64 GiB needs the extended field
  t.type = 0x22;
  t.speed = 4800;
  t.configured = 4800;
  t.locator = std::move(locator);
  t.bank_locator = std::move(bank);
  t.manufacturer = "Hynix";
  t.part = "HMCG94MEBRA109N";
  return t;
}

std::vector<Dimm> parse_all(const std::vector<std::string>& records) {
  std::vector<Dimm> out;
  for (const auto& r : records) {
    auto d = parse_type17_record(std::string_view(r));
    EXPECT_TRUE(d) << d.error().message;
    if (d && *d) out.push_back(**d);
  }
  return out;
}

}  // namespace

TEST(Dmi, Ddr5ServerRecord) {
  auto d = parse_type17_record(std::string_view(ddr5_4800("CPU0_DIMM_A1", "NODE 0").bytes()));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(*d);
  EXPECT_EQ((*d)->locator, "CPU0_DIMM_A1");
  EXPECT_EQ((*d)->bank_locator, "NODE 0");
  EXPECT_EQ((*d)->type, "DDR5");
  EXPECT_EQ((*d)->size_bytes, 64ull << 30);
  EXPECT_EQ((*d)->speed_mts, 4800u);
  EXPECT_EQ((*d)->configured_mts, 4800u);
  EXPECT_EQ((*d)->data_width_bits, 64);
  EXPECT_EQ((*d)->total_width_bits, 80);
}

TEST(Dmi, EmptySlotIsNotADimm) {
  Type17 t;
  t.size = 0;
  t.total_width = t.data_width = 0xFFFF;
  t.locator = "DIMM_A2";
  t.bank_locator = "P0_Node0_Channel0_Dimm1";
  auto d = parse_type17_record(std::string_view(t.bytes()));
  ASSERT_TRUE(d);
  EXPECT_FALSE(*d);
}

TEST(Dmi, SizeEncodingsAndExtendedSpeeds) {
  Type17 kib;
  kib.size = 0x8000 | 512;  // 512 KiB granularity bit
  kib.speed = 0xFFFF;
  kib.extended_speed = 70000;  // a speed past the 16-bit field
  kib.configured = 0xFFFF;
  kib.extended_configured = 68000 | 0x80000000u;  // bit 31 is reserved and ignored
  auto d = parse_type17_record(std::string_view(kib.bytes()));
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->size_bytes, 512u * 1024);
  EXPECT_EQ((*d)->speed_mts, 70000u);
  EXPECT_EQ((*d)->configured_mts, 68000u);

  Type17 mib;
  mib.size = 16384;
  mib.speed = 3200;
  mib.configured = 2933;
  d = parse_type17_record(std::string_view(mib.bytes()));
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->size_bytes, 16ull << 30);
  EXPECT_EQ((*d)->effective_mts(), 2933u);
}

TEST(Dmi, OldLayoutsWithoutLaterFields) {
  // SMBIOS 2.3: 0x1B bytes, no configured speed, no extended size.
  Type17 t;
  t.length = 0x1B;
  t.size = 8192;
  t.speed = 2133;
  t.locator = "DIMM 3";
  auto d = parse_type17_record(std::string_view(t.bytes()));
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->speed_mts, 2133u);
  EXPECT_EQ((*d)->configured_mts, 0u);
  EXPECT_EQ((*d)->effective_mts(), 2133u);
  EXPECT_EQ((*d)->locator, "DIMM 3");
  // 0xFFFF speed with no room for the extended field: unknown, not 65535.
  t.speed = 0xFFFF;
  d = parse_type17_record(std::string_view(t.bytes()));
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->speed_mts, 0u);
}

TEST(Dmi, MalformedRecordsAreErrors) {
  EXPECT_FALSE(parse_type17_record(std::string_view("")));
  std::string t16 = ddr5_4800("A", "B").bytes();
  t16[0] = 16;
  auto e = parse_type17_record(std::string_view(t16));
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("type is 16"), std::string::npos);
  std::string cut = ddr5_4800("A", "B").bytes().substr(0, 0x30);
  EXPECT_FALSE(parse_type17_record(std::string_view(cut)));
  // A string index past the table reads as "" (dmidecode prints <BAD INDEX>), not an error.
  std::string bad = ddr5_4800("A", "B").bytes();
  bad[0x10] = 9;
  auto d = parse_type17_record(std::string_view(bad));
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->locator, "");
}

TEST(Dmi, EveryTruncationAndRandomBytesAreSafe) {
  const std::string full = ddr5_4800("CPU1_DIMM_H1", "NODE 1").bytes();
  for (std::size_t n = 0; n <= full.size(); ++n) {
    (void)parse_type17_record(std::string_view(full.data(), n));
    (void)parse_smbios_table(std::string_view(full.data(), n));
  }
  std::mt19937 rng(17);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 200, '\0');
    for (auto& c : junk) c = static_cast<char>(rng() % 4 == 0 ? 17 : rng());
    (void)parse_type17_record(std::string_view(junk));
    (void)parse_smbios_table(junk);
    (void)parse_dmidecode_memory(junk);
  }
}

TEST(Dmi, Ddr5TwoSocketCeiling) {
  // Sapphire Rapids 2-socket, 8 channels per socket, one 64 GiB DDR5-4800 RDIMM per channel.
  std::vector<std::string> records;
  for (int cpu = 0; cpu < 2; ++cpu)
    for (char ch = 'A'; ch <= 'H'; ++ch) {
      records.push_back(
          ddr5_4800(fmt::format("CPU{}_DIMM_{}1", cpu, ch), fmt::format("NODE {}", cpu)).bytes());
      Type17 empty;  // the second slot of each channel is empty
      empty.locator = fmt::format("CPU{}_DIMM_{}2", cpu, ch);
      records.push_back(empty.bytes());
    }
  auto dimms = parse_all(records);
  ASSERT_EQ(dimms.size(), 16u);
  auto c = memory_ceiling(dimms);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->channels, 16);
  EXPECT_EQ(c->assumed_channels, 0);
  EXPECT_DOUBLE_EQ(c->gbps, 16 * 4800 * 8 / 1000.0);  // 614.4 GB/s
  EXPECT_EQ(c->basis, "16 channels x 4800 MT/s x 8 B (channels from locators)");
}

TEST(Dmi, Ddr4TwoDimmsPerChannelShareTheChannel) {
  // EPYC Rome 1-socket board, 8 channels x 2 slots, all populated: the controller runs 2DPC at
  // 2933 MT/s though the DIMMs are rated 3200. Channel from "DIMM_<channel><slot>".
  std::vector<std::string> records;
  for (char ch = 'A'; ch <= 'H'; ++ch)
    for (int slot = 1; slot <= 2; ++slot) {
      Type17 t;
      t.size = 0x7FFF;
      t.extended_size = 32768;
      t.speed = 3200;
      t.configured = 2933;
      t.locator = fmt::format("DIMM_{}{}", ch, slot);
      t.bank_locator = fmt::format("P0_Node0_Channel{}_Dimm{}", ch - 'A', slot - 1);
      records.push_back(t.bytes());
    }
  auto dimms = parse_all(records);
  ASSERT_EQ(dimms.size(), 16u);
  EXPECT_EQ(dimms[0].size_bytes, 32ull << 30);
  auto c = memory_ceiling(dimms);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->channels, 8);
  EXPECT_EQ(c->dimms, 16);
  EXPECT_NEAR(c->gbps, 8 * 2933 * 8 / 1000.0, 1e-9);  // 187.7 GB/s
}

TEST(Dmi, ChannelKeysFromLocatorPatterns) {
  auto key = [](std::string loc, std::string bank = "") {
    Dimm d;
    d.locator = std::move(loc);
    d.bank_locator = std::move(bank);
    return channel_key(d).value_or("-");
  };
  EXPECT_EQ(key("DIMM_A1"), "/a");
  EXPECT_EQ(key("DIMM_A2"), "/a");
  EXPECT_EQ(key("DIMMB1"), "/b");
  EXPECT_EQ(key("CPU0_DIMM_B2"), "cpu0/b");
  EXPECT_NE(key("CPU0_DIMM_B2"), key("CPU1_DIMM_B1"));
  EXPECT_EQ(key("P1-DIMMC1"), "p1/c");
  EXPECT_EQ(key("P1-DimmC2"), "p1/c");
  EXPECT_EQ(key("CPU1_MC0_DIMM_A1"), "cpu1_mc0/a");
  EXPECT_EQ(key("CPU0_C1D0"), "cpu0/c1");
  EXPECT_EQ(key("CPU0_C1D1"), "cpu0/c1");
  EXPECT_EQ(key("ChannelB-DIMM0", "BANK 2"), "channelb");
  EXPECT_EQ(key("DIMM 0", "P0 CHANNEL A"), "bank:p0 channel a");
  EXPECT_EQ(key("DIMM 1", "P0_Node0_Channel3_Dimm1"), "bank:p0_node0_channel3");
  EXPECT_EQ(key("A1"), "-");             // Dell: the letter is the socket, not the channel
  EXPECT_EQ(key("PROC 1 DIMM 4"), "-");  // HPE: slot numbers only
}

TEST(Dmi, OpaqueLocatorsAssumeOneDimmPerChannelAndHintCaps) {
  std::vector<Dimm> dimms;
  for (int i = 1; i <= 24; ++i) {
    Dimm d;
    d.locator = fmt::format("PROC {} DIMM {}", (i - 1) / 12 + 1, (i - 1) % 12 + 1);
    d.speed_mts = 3200;
    d.configured_mts = 2933;
    dimms.push_back(d);
  }
  auto c = memory_ceiling(dimms);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->channels, 24);
  EXPECT_EQ(c->assumed_channels, 24);
  EXPECT_NE(c->basis.find("assumed one DIMM per channel"), std::string::npos);
  // Cascade Lake: 6 channels per socket, 2 sockets.
  c = memory_ceiling(dimms, 12);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->channels, 12);
  EXPECT_NEAR(c->gbps, 12 * 2933 * 8 / 1000.0, 1e-9);
  EXPECT_DOUBLE_EQ(memory_ceiling_gbps(dimms, 12), c->gbps);
}

TEST(Dmi, NoSpeedNoCeiling) {
  // What QEMU reports: one "DIMM 0" with a size and no speed.
  Type17 qemu;
  qemu.size = 8192;
  qemu.type = 0x07;  // RAM
  qemu.locator = "DIMM 0";
  qemu.manufacturer = "QEMU";
  auto dimms = parse_all({qemu.bytes()});
  ASSERT_EQ(dimms.size(), 1u);
  EXPECT_FALSE(memory_ceiling(dimms));
  EXPECT_EQ(memory_ceiling_gbps(dimms), 0);
}

TEST(Dmi, TableWalkPicksType17AndStopsAtEnd) {
  std::string table;
  // Type 16 (Physical Memory Array), 23 bytes, no strings.
  std::string t16(23, '\0');
  t16[0] = 16;
  t16[1] = 23;
  table += t16 + std::string(2, '\0');
  table += ddr5_4800("CPU0_DIMM_A1", "NODE 0").bytes();
  Type17 empty;
  empty.locator = "CPU0_DIMM_A2";
  table += empty.bytes();
  table += ddr5_4800("CPU0_DIMM_B1", "NODE 0").bytes();
  std::string end(4, '\0');
  end[0] = 127;
  end[1] = 4;
  table += end + std::string(2, '\0');
  table += ddr5_4800("AFTER_END", "").bytes();
  auto dimms = parse_smbios_table(table);
  ASSERT_EQ(dimms.size(), 2u);
  EXPECT_EQ(dimms[1].locator, "CPU0_DIMM_B1");
  // Truncated inside the third record: the ones before it are kept.
  auto cut = table.substr(0, table.find("CPU0_DIMM_B1") - 10);
  EXPECT_EQ(parse_smbios_table(cut).size(), 1u);
}

namespace {

// `dmidecode -t memory` (dmidecode 3.4, SMBIOS 3.3) on a 1-socket EPYC board with 8 channels x 2
// slots and the first slot of each channel populated (abridged to four channels). Written for
// this test in dmidecode's format.
constexpr std::string_view kDmidecodeEpyc = R"(# dmidecode 3.4
Getting SMBIOS data from sysfs.
SMBIOS 3.3.0 present.

Handle 0x0032, DMI type 16, 23 bytes
Physical Memory Array
	Location: System Board Or Motherboard
	Use: System Memory
	Error Correction Type: Multi-bit ECC
	Maximum Capacity: 4 TB
	Error Information Handle: 0x0031
	Number Of Devices: 8

Handle 0x0034, DMI type 17, 92 bytes
Memory Device
	Array Handle: 0x0032
	Error Information Handle: 0x0033
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 64 GB
	Form Factor: DIMM
	Set: None
	Locator: DIMMA1
	Bank Locator: P0_Node0_Channel0_Dimm0
	Type: DDR4
	Type Detail: Synchronous Registered (Buffered)
	Speed: 3200 MT/s
	Manufacturer: Micron Technology
	Serial Number: 2A3B4C5D
	Asset Tag: DIMMA1_AssetTag (date:21/14)
	Part Number: 36ASF8G72PZ-3G2E1
	Rank: 2
	Configured Memory Speed: 3200 MT/s
	Minimum Voltage: 1.2 V
	Maximum Voltage: 1.2 V
	Configured Voltage: 1.2 V
	Memory Technology: DRAM
	Memory Operating Mode Capability: Volatile memory
	Firmware Version: Not Specified
	Module Manufacturer ID: Bank 1, Hex 0x2C
	Module Product ID: Unknown
	Memory Subsystem Controller Manufacturer ID: Unknown
	Memory Subsystem Controller Product ID: Unknown
	Non-Volatile Size: None
	Volatile Size: 64 GB
	Cache Size: None
	Logical Size: None

Handle 0x0036, DMI type 17, 92 bytes
Memory Device
	Array Handle: 0x0032
	Error Information Handle: 0x0035
	Total Width: Unknown
	Data Width: Unknown
	Size: No Module Installed
	Form Factor: DIMM
	Set: None
	Locator: DIMMA2
	Bank Locator: P0_Node0_Channel0_Dimm1
	Type: Unknown
	Type Detail: Unknown
	Speed: Unknown
	Manufacturer: Unknown
	Serial Number: Unknown
	Asset Tag: Not Specified
	Part Number: Unknown
	Rank: Unknown
	Configured Memory Speed: Unknown
	Minimum Voltage: Unknown
	Maximum Voltage: Unknown
	Configured Voltage: Unknown
	Memory Technology: Unknown
	Memory Operating Mode Capability: Unknown
	Firmware Version: Unknown
	Module Manufacturer ID: Unknown
	Module Product ID: Unknown
	Memory Subsystem Controller Manufacturer ID: Unknown
	Memory Subsystem Controller Product ID: Unknown
	Non-Volatile Size: None
	Volatile Size: None
	Cache Size: None
	Logical Size: None

Handle 0x0038, DMI type 17, 92 bytes
Memory Device
	Array Handle: 0x0032
	Error Information Handle: 0x0037
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 64 GB
	Form Factor: DIMM
	Set: None
	Locator: DIMMB1
	Bank Locator: P0_Node0_Channel1_Dimm0
	Type: DDR4
	Type Detail: Synchronous Registered (Buffered)
	Speed: 3200 MT/s
	Manufacturer: Micron Technology
	Part Number: 36ASF8G72PZ-3G2E1
	Rank: 2
	Configured Memory Speed: 3200 MT/s

Handle 0x003A, DMI type 17, 92 bytes
Memory Device
	Array Handle: 0x0032
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 65536 MB
	Form Factor: DIMM
	Set: None
	Locator: DIMMC1
	Bank Locator: P0_Node0_Channel2_Dimm0
	Type: DDR4
	Speed: 3200 MT/s
	Manufacturer: Micron Technology
	Configured Memory Speed: 2933 MT/s

Handle 0x003C, DMI type 17, 92 bytes
Memory Device
	Array Handle: 0x0032
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 64 GB
	Form Factor: DIMM
	Set: None
	Locator: DIMMD1
	Bank Locator: P0_Node0_Channel3_Dimm0
	Type: DDR4
	Speed: 3200 MT/s
	Manufacturer: Micron Technology
	Configured Memory Speed: 3200 MT/s
)";

// dmidecode 3.0 on an older 2-socket Xeon board: "Configured Clock Speed", speeds in "MHz", an
// empty slot spelled "NO DIMM". Written for this test in that version's format.
constexpr std::string_view kDmidecodeLegacy = R"(# dmidecode 3.0
Getting SMBIOS data from sysfs.
SMBIOS 2.8 present.

Handle 0x0015, DMI type 17, 40 bytes
Memory Device
	Array Handle: 0x0013
	Error Information Handle: Not Provided
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 32 GB
	Form Factor: DIMM
	Set: None
	Locator: P1-DIMMA1
	Bank Locator: P0_Node0_Channel0_Dimm0
	Type: DDR4
	Type Detail: Synchronous
	Speed: 2666 MHz
	Manufacturer: Samsung
	Part Number: M393A4K40CB2-CTD
	Rank: 2
	Configured Clock Speed: 2666 MHz
	Minimum Voltage: 1.2 V
	Maximum Voltage: 1.2 V
	Configured Voltage: 1.2 V

Handle 0x0017, DMI type 17, 40 bytes
Memory Device
	Array Handle: 0x0013
	Error Information Handle: Not Provided
	Total Width: Unknown
	Data Width: Unknown
	Size: No Module Installed
	Form Factor: Unknown
	Set: None
	Locator: P1-DIMMA2
	Bank Locator: NO DIMM
	Type: Unknown
	Speed: Unknown
	Manufacturer: NO DIMM
	Configured Clock Speed: Unknown

Handle 0x0019, DMI type 17, 40 bytes
Memory Device
	Array Handle: 0x0013
	Error Information Handle: Not Provided
	Total Width: 72 bits
	Data Width: 64 bits
	Size: 32 GB
	Form Factor: DIMM
	Set: None
	Locator: P2-DIMMA1
	Bank Locator: P1_Node1_Channel0_Dimm0
	Type: DDR4
	Speed: 2666 MHz
	Manufacturer: Samsung
	Configured Clock Speed: 2400 MHz
)";

}  // namespace

TEST(Dmi, DmidecodeTextCurrent) {
  auto dimms = parse_dmidecode_memory(kDmidecodeEpyc);
  ASSERT_EQ(dimms.size(), 4u);
  EXPECT_EQ(dimms[0].locator, "DIMMA1");
  EXPECT_EQ(dimms[0].bank_locator, "P0_Node0_Channel0_Dimm0");
  EXPECT_EQ(dimms[0].type, "DDR4");
  EXPECT_EQ(dimms[0].size_bytes, 64ull << 30);
  EXPECT_EQ(dimms[0].speed_mts, 3200u);
  EXPECT_EQ(dimms[0].configured_mts, 3200u);
  EXPECT_EQ(dimms[0].data_width_bits, 64);
  EXPECT_EQ(dimms[0].total_width_bits, 72);
  EXPECT_EQ(dimms[2].size_bytes, 64ull << 30);  // "65536 MB"
  EXPECT_EQ(dimms[2].configured_mts, 2933u);
  auto c = memory_ceiling(dimms);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->channels, 4);
  EXPECT_NEAR(c->gbps, (3 * 3200 + 2933) * 8 / 1000.0, 1e-9);
  EXPECT_EQ(c->basis, "4 channels x 2933-3200 MT/s x 8 B (channels from locators)");
}

TEST(Dmi, DmidecodeTextLegacy) {
  auto dimms = parse_dmidecode_memory(kDmidecodeLegacy);
  ASSERT_EQ(dimms.size(), 2u);
  EXPECT_EQ(dimms[0].locator, "P1-DIMMA1");
  EXPECT_EQ(dimms[0].speed_mts, 2666u);
  EXPECT_EQ(dimms[1].configured_mts, 2400u);
  EXPECT_DOUBLE_EQ(memory_ceiling_gbps(dimms), (2666 + 2400) * 8 / 1000.0);
  EXPECT_TRUE(parse_dmidecode_memory("").empty());
  EXPECT_TRUE(
      parse_dmidecode_memory("# dmidecode 3.4\n# No SMBIOS nor DMI entry point found, sorry.\n")
          .empty());
}
