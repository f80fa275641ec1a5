#pragma once
// Writing a drill's lines into this machine's kernel ring buffer, as the failing driver would, and
// remembering exactly what was written and when (the drill's audit record).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace cmax::drill {

/// One line to write: after `after_ms` from the previous one, at kernel level `level` (0-7).
struct KmsgLine {
  int after_ms = 0;
  int level = 4;
  std::string text;
};

/// One line as written: when (wall clock, and since the drill's start on the steady clock).
struct Injected {
  double t_unix = 0;
  std::int64_t t_us = 0;  ///< since the drill's t0
  int level = 4;
  std::string text;
};

/// Writes each line as one /dev/kmsg record ("<level>text\n"; the kernel tags it with the user
/// facility, so detectors that keep only kernel records can tell it from a real fault: a setting
/// they should report). Sleeps `after_ms` before each. On a failed write returns an error naming
/// the line; `done` holds the lines written before it.
Result<void> inject_kmsg(const std::vector<KmsgLine>& lines, const std::string& kmsg_path,
                         std::chrono::steady_clock::time_point t0, std::vector<Injected>& done);

/// While alive, lets every userspace write to /dev/kmsg through: the kernel drops those past 10
/// per 5 s when /proc/sys/kernel/printk_devkmsg is "ratelimit" (its default), silently, and a
/// drill's marker and lines, or two drills close together, pass that. Sets "on" only when the
/// setting was "ratelimit"; puts the old value back on destruction. Move-only.
class DevkmsgGuard {
 public:
  /// Raises the limit when it is "ratelimit"; `note()` says what was done (for the audit record).
  static DevkmsgGuard raise(const std::string& sysctl = "/proc/sys/kernel/printk_devkmsg");
  DevkmsgGuard(DevkmsgGuard&& o) noexcept : sysctl_(std::move(o.sysctl_)), old_(std::move(o.old_)), note_(std::move(o.note_)) {
    o.old_.clear();
  }
  DevkmsgGuard& operator=(DevkmsgGuard&&) = delete;
  DevkmsgGuard(const DevkmsgGuard&) = delete;
  ~DevkmsgGuard();
  /// "printk_devkmsg was ratelimit: set on for the drill, put back after", or why not.
  const std::string& note() const { return note_; }

 private:
  DevkmsgGuard() = default;
  std::string sysctl_, old_, note_;
};

/// The kernel drops userspace writes to /dev/kmsg past 10 per 5 s unless
/// /proc/sys/kernel/printk_devkmsg is "on". A warning when `lines` could be dropped, else "".
std::string devkmsg_ratelimit_warning(std::size_t lines,
                                      const std::string& sysctl = "/proc/sys/kernel/printk_devkmsg");

}  // namespace cmax::drill
