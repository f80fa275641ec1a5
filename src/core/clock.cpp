#include "core/clock.h"

#include <ctime>

#include <fmt/format.h>

namespace cmax::core {
namespace {

std::tm to_tm(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  return tm;
}

}  // namespace

std::string format_utc(std::chrono::system_clock::time_point t) {
  std::tm tm = to_tm(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int utc_year(std::chrono::system_clock::time_point t) { return to_tm(t).tm_year + 1900; }

std::string format_utc_compact(std::chrono::system_clock::time_point t) {
  std::tm tm = to_tm(t);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::optional<int> days_since(std::string_view ymd, std::chrono::system_clock::time_point now) {
  if (ymd.size() < 10 || ymd[4] != '-' || ymd[7] != '-') return std::nullopt;
  auto num = [&](std::size_t at, std::size_t n) -> int {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (ymd[i] < '0' || ymd[i] > '9') return -1;
      v = v * 10 + (ymd[i] - '0');
    }
    return v;
  };
  int y = num(0, 4), m = num(5, 2), d = num(8, 2);
  if (y < 0 || m < 0 || d < 0) return std::nullopt;
  std::chrono::year_month_day date{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(m)},
                                   std::chrono::day{static_cast<unsigned>(d)}};
  if (!date.ok()) return std::nullopt;
  auto today = std::chrono::floor<std::chrono::days>(now);
  return static_cast<int>((today - std::chrono::sys_days{date}).count());
}

}  // namespace cmax::core
