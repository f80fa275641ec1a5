#pragma once
// The two line formats the audit's 7-day Xid check needs: a /dev/kmsg record and an NVIDIA Xid
// message. (The full signal engine with every kernel fault kind comes with `cmax scan`.) Pure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace cmax::audit {

/// "prio,seq,usec,flags[,...];message" as one read() of /dev/kmsg returns it. Continuation
/// lines (" KEY=VALUE") after the first newline are not part of `message`.
struct KmsgRecord {
  unsigned prio = 0;  ///< facility << 3 | level
  std::uint64_t seq = 0;
  std::uint64_t usec = 0;  ///< CLOCK_MONOTONIC at logging
  std::string_view message;
  unsigned level() const { return prio & 7; }
  unsigned facility() const { return prio >> 3; }
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

/// "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus." anywhere in a line.
struct XidEvent {
  unsigned code = 0;
  std::string_view pci;  ///< as printed: "0000:3b:00" (without GPU-I/GPU-CI suffixes)
};
std::optional<XidEvent> parse_xid(std::string_view line);

}  // namespace cmax::audit
