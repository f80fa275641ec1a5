#pragma once
// The DIMM population from SMBIOS type 17 (Memory Device) records, and the theoretical memory
// bandwidth ceiling it implies. Three pure parsers, no I/O (each safe on any bytes, so each is a
// fuzz entry point):
//   parse_type17_record  one raw record, as the kernel exposes /sys/firmware/dmi/entries/17-*/raw
//   parse_smbios_table   a whole table (/sys/firmware/dmi/tables/DMI): every structure in a row
//   parse_dmidecode_memory  the text of `dmidecode -t memory` (collected bundles, sosreports)
// Speeds are taken as MT/s: SMBIOS 2.x named the field "clock speed" in MHz, but firmware reports
// the transfer rate there in practice ("Speed: 2666 MHz" on DDR4-2666), and 3.x made it MT/s.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::health {

/// One populated memory slot.
struct Dimm {
  std::string locator;                 ///< "P1-DIMMA1", "CPU0_DIMM_B2", "DIMM 0"
  std::string bank_locator;            ///< "P0_Node0_Channel0_Dimm0", "P0 CHANNEL A", "NODE 1"
  std::string type;                    ///< "DDR4", "DDR5", ... or "" when not known
  std::uint64_t size_bytes = 0;        ///< 0: the firmware says "unknown"
  std::uint32_t speed_mts = 0;         ///< rated speed; 0: unknown
  std::uint32_t configured_mts = 0;    ///< speed the controller runs it at; 0: unknown
  std::uint16_t data_width_bits = 0;   ///< 64 for a DDR4/DDR5 DIMM; 0: unknown
  std::uint16_t total_width_bits = 0;  ///< 72/80 with ECC; 0: unknown

  /// configured_mts when known, else speed_mts (0 when neither is).
  std::uint32_t effective_mts() const { return configured_mts ? configured_mts : speed_mts; }
};

/// One raw type 17 record: formatted area then its string table. nullopt for an empty slot
/// (size 0); an error for bytes that are not a type 17 record (wrong type, shorter than the
/// SMBIOS 2.1 layout, length byte past the end). String indexes past the table read as "".
Result<std::optional<Dimm>> parse_type17_record(std::span<const std::uint8_t> raw);
Result<std::optional<Dimm>> parse_type17_record(std::string_view raw);

/// Every populated DIMM in a table of SMBIOS structures laid end to end. Stops at the end-of-table
/// structure (type 127) or at a structure that runs past the end (a truncated table keeps what
/// came before). Never fails.
std::vector<Dimm> parse_smbios_table(std::string_view table);

/// Every populated DIMM in `dmidecode -t memory` (or `-t 17`) text: records start at a
/// "Memory Device" line; "Size: No Module Installed" slots are dropped. Never fails.
std::vector<Dimm> parse_dmidecode_memory(std::string_view text);

/// The channel a DIMM sits on, read from its locators; nullopt when they do not say. Recognised:
/// "DIMM_A1", "DIMMA1", "P1-DIMMC1", "CPU0_DIMM_B2", "CPU1_MC0_DIMM_A1" (the letter after DIMM is
/// the channel, what precedes it the socket), "CPU0_C1D0" (channel 1), and "Channel" tokens in
/// either locator ("P0_Node0_Channel2_Dimm0", "P0 CHANNEL A", "ChannelB-DIMM0"). The result is a
/// key: two DIMMs on one channel give the same key.
std::optional<std::string> channel_key(const Dimm& d);

/// The theoretical peak the population allows.
struct MemoryCeiling {
  double gbps = 0;           ///< sum over channels of MT/s x 8 bytes, in 10^9 bytes/s
  int channels = 0;          ///< channels counted
  int dimms = 0;             ///< populated DIMMs with a known speed
  int assumed_channels = 0;  ///< channels assumed (one DIMM each) because the locator did not say
  std::string basis;         ///< "16 channels x 3200 MT/s x 8 B (channels from locators)"
};

/// The peak bandwidth: DIMMs grouped by channel_key (a DIMM whose locator names no channel is
/// assumed to have a channel of its own, which overstates the peak on two-DIMM-per-channel boards
/// with opaque locators such as "A1" or "DIMM 3"); each channel runs at the slowest effective
/// speed of its DIMMs and moves 8 bytes (64 data bits; DDR5's two 32-bit subchannels together)
/// per transfer. `channels_hint` > 0 caps the channel count (the CPU's channels per socket times
/// sockets, when known): the fastest channels up to the hint are counted. nullopt when no DIMM
/// has a known speed.
std::optional<MemoryCeiling> memory_ceiling(std::span<const Dimm> dimms, int channels_hint = 0);

/// memory_ceiling(...)->gbps, or 0 when the population gives no ceiling.
double memory_ceiling_gbps(std::span<const Dimm> dimms, int channels_hint = 0);

}  // namespace cmax::health
