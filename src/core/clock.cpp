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

}  // namespace cmax::core
