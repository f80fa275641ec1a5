#pragma once
// What the previous boot left in pstore (/sys/fs/pstore): the kernel's last words before a panic,
// an oops or a reboot, kept by a RAM, UEFI or ACPI ERST backend. Each record is a file whose first
// line is "Panic#1 Part1" (fs/pstore/platform.c: "%s#%d Part%u", why = Panic, Oops, Emergency,
// Restart, Halt, Poweroff, Shutdown), followed by the tail of the kernel log with its "<prio>"
// prefixes. A long dump is split into parts, Part1 holding the newest text.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::signals {

/// A record's header line: why it was written, the dump's count and the part.
struct PstoreHeader {
  std::string why;  ///< "Panic", "Oops", "Restart", ...
  int count = 0;    ///< the dump's number since the backend was cleared
  int part = 0;     ///< 1 = the newest text
  /// A crash (Panic, Oops, Emergency), not an orderly restart or shutdown.
  bool crash() const { return why == "Panic" || why == "Oops" || why == "Emergency"; }
};

/// "Panic#1 Part1" -> {Panic, 1, 1}; nullopt for anything else. Pure.
std::optional<PstoreHeader> parse_pstore_header(std::string_view line);

/// One record read from a pstore directory.
struct PstoreRecord {
  std::string path;
  std::optional<PstoreHeader> header;  ///< none: a console or pmsg record, read whole
  std::string text;                    ///< the kernel log lines, header removed
};

/// Every record in `dir` (the kernel's /sys/fs/pstore, or systemd-pstore's archive
/// /var/lib/systemd/pstore/<time>), oldest text first: dumps by count, each dump's parts from the
/// highest (oldest) to Part1. Records larger than `max_bytes` are cut to their newest bytes. A
/// missing directory is an empty list; an unreadable one an error naming it.
Result<std::vector<PstoreRecord>> read_pstore(const std::string& dir, std::size_t max_bytes = 4u << 20);

}  // namespace cmax::signals
