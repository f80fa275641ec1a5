#pragma once
// Injected time: code that stamps or windows by wall time takes a Clock, so tests can fix it.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::core {

/// Wall-clock source. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return std::chrono::system_clock::now(); }
};

/// A clock that always says the same time (tests, reproducible renders).
class FixedClock final : public Clock {
 public:
  explicit FixedClock(std::chrono::system_clock::time_point t) : t_(t) {}
  std::chrono::system_clock::time_point now() const override { return t_; }

 private:
  std::chrono::system_clock::time_point t_;
};

/// "2026-12-02T12:21:22Z" (RFC 3339, UTC, seconds).
std::string format_utc(std::chrono::system_clock::time_point t);

/// The UTC calendar year of `t` (dates syslog stamps, which print none).
int utc_year(std::chrono::system_clock::time_point t);

/// "20261202T122122Z": a UTC stamp safe in file names, sortable.
std::string format_utc_compact(std::chrono::system_clock::time_point t);

/// Whole days from the UTC date "YYYY-MM-DD" (a leading date of a longer stamp is enough) to `now`;
/// negative when the date is in the future; nullopt when `ymd` is not a valid date.
std::optional<int> days_since(std::string_view ymd, std::chrono::system_clock::time_point now);

}  // namespace cmax::core
