#pragma once
// Civil time and one IANA time zone as a table of UTC offsets, so that month boundaries ("local
// midnight on the 1st") and local timestamps convert without touching the process's TZ after load.
// g++ 12 has no std::chrono::tzdb; the table is read once from the system zoneinfo.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::sla {

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12, day 1-31).
std::int64_t days_from_civil(int year, int month, int day);

/// A broken-down civil date and time (no zone).
struct Civil {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};
/// The civil time of `seconds` since the epoch, read as UTC.
Civil civil_from_seconds(std::int64_t seconds);

/// A time zone: UTC offsets in seconds over time. A plain value; const methods are thread-safe.
class Zone {
 public:
  /// UTC, offset 0.
  static Zone utc();
  /// A fixed offset (for tests and "+05:30"-style contracts), named `name`.
  static Zone fixed(std::string name, std::int32_t offset_s);
  /// An IANA zone ("Europe/Berlin") from /usr/share/zoneinfo, resolved 1990-2080 to the second.
  /// Sets and restores TZ while it runs: call it at start-up, not beside other threads that read
  /// local time.
  static Result<Zone> load(std::string_view name);

  const std::string& name() const { return name_; }
  /// Seconds east of UTC in force at `utc_s`.
  std::int32_t offset_at(std::int64_t utc_s) const;
  /// The UTC instant of a local wall-clock time given as seconds since the epoch "as if UTC". A
  /// time skipped by a spring-forward is taken with the offset before it; a repeated hour is the
  /// first of the two.
  std::int64_t to_utc(std::int64_t local_s) const;
  /// The UTC instant of local midnight starting the 1st of `month` (1-12) of `year`.
  std::int64_t month_start(int year, int month) const;
  /// "2026-03-01T00:00:00-05:00": the local time of `utc_s` with its offset.
  std::string format_local(std::int64_t utc_s) const;

 private:
  struct Transition {
    std::int64_t utc_s;
    std::int32_t offset_s;  ///< in force from utc_s on
  };
  std::string name_;
  std::int32_t initial_offset_s_ = 0;
  std::vector<Transition> transitions_;
};

}  // namespace cmax::sla
