#include "sla/zone.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <optional>

namespace cmax::sla {
namespace {

constexpr std::int64_t kDay_s = 86400;

bool valid_zone_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.find("..") != std::string_view::npos)
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' || c == '_' ||
           c == '-' || c == '+';
  });
}

// Restores TZ (and the C library's view of it) when the probe is done, whatever happens.
class TzGuard {
 public:
  explicit TzGuard(const std::string& zone) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", (":" + zone).c_str(), 1);
    ::tzset();
  }
  ~TzGuard() {
    if (old_)
      ::setenv("TZ", old_->c_str(), 1);
    else
      ::unsetenv("TZ");
    ::tzset();
  }
  TzGuard(const TzGuard&) = delete;
  TzGuard& operator=(const TzGuard&) = delete;

 private:
  std::optional<std::string> old_;
};

std::int32_t probe_offset(std::int64_t utc_s) {
  std::time_t t = static_cast<std::time_t>(utc_s);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  return static_cast<std::int32_t>(tm.tm_gmtoff);
}

}  // namespace

std::int64_t days_from_civil(int year, int month, int day) {
  // Howard Hinnant's algorithm: eras of 400 years starting in March.
  const std::int64_t y = static_cast<std::int64_t>(year) - (month <= 2 ? 1 : 0);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t mp = (month + 9) % 12;
  const std::int64_t doy = (153 * mp + 2) / 5 + day - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

Civil civil_from_seconds(std::int64_t seconds) {
  std::int64_t days = seconds / kDay_s;
  std::int64_t rem = seconds % kDay_s;
  if (rem < 0) {
    rem += kDay_s;
    --days;
  }
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  Civil c;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = static_cast<int>(yoe + era * 400 + (c.month <= 2 ? 1 : 0));
  c.hour = static_cast<int>(rem / 3600);
  c.minute = static_cast<int>(rem % 3600 / 60);
  c.second = static_cast<int>(rem % 60);
  return c;
}

Zone Zone::utc() { return fixed("UTC", 0); }

Zone Zone::fixed(std::string name, std::int32_t offset_s) {
  Zone z;
  z.name_ = std::move(name);
  z.initial_offset_s_ = offset_s;
  return z;
}

Result<Zone> Zone::load(std::string_view name) {
  if (name == "UTC" || name == "Etc/UTC" || name == "Z") return utc();
  if (!valid_zone_name(name))
    return fail("read time zone '{}': not an IANA zone name; use one like \"Europe/Berlin\" or \"UTC\"", name);
  const std::string zone(name);
  const std::string path = "/usr/share/zoneinfo/" + zone;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return fail("read time zone '{}': no {} on this machine; check the spelling or install the Debian package tzdata",
                zone, path);
  Zone z;
  z.name_ = zone;
  TzGuard guard(zone);
  // Daily probes find every change of offset (zones change at most twice a year); bisection then
  // finds the exact second.
  const std::int64_t from = days_from_civil(1990, 1, 1) * kDay_s, to = days_from_civil(2080, 1, 1) * kDay_s;
  z.initial_offset_s_ = probe_offset(from);
  std::int32_t current = z.initial_offset_s_;
  for (std::int64_t t = from + kDay_s; t <= to; t += kDay_s) {
    const std::int32_t off = probe_offset(t);
    if (off == current) continue;
    std::int64_t lo = t - kDay_s, hi = t;  // offset(lo) == current, offset(hi) == off
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (probe_offset(mid) == current ? lo : hi) = mid;
    }
    z.transitions_.push_back({hi, off});
    current = off;
  }
  return z;
}

std::int32_t Zone::offset_at(std::int64_t utc_s) const {
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_s,
                             [](std::int64_t t, const Transition& tr) { return t < tr.utc_s; });
  return it == transitions_.begin() ? initial_offset_s_ : std::prev(it)->offset_s;
}

std::int64_t Zone::to_utc(std::int64_t local_s) const {
  // Offsets change at most once within a day either side, so the offsets a day before and after
  // are the only candidates; a candidate is right when it is the offset in force at its instant.
  const std::int32_t before = offset_at(local_s - kDay_s), after = offset_at(local_s + kDay_s);
  const std::int64_t ua = local_s - before, ub = local_s - after;
  const bool a_ok = offset_at(ua) == before, b_ok = offset_at(ub) == after;
  if (a_ok && b_ok) return std::min(ua, ub);
  if (b_ok) return ub;
  return ua;  // valid, or a skipped time read with the offset before the change
}

std::int64_t Zone::month_start(int year, int month) const {
  return to_utc(days_from_civil(year, month, 1) * kDay_s);
}

std::string Zone::format_local(std::int64_t utc_s) const {
  const std::int32_t off = offset_at(utc_s);
  const Civil c = civil_from_seconds(utc_s + off);
  if (off == 0)
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", c.year, c.month, c.day, c.hour, c.minute, c.second);
  const std::int32_t a = off < 0 ? -off : off;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{:02}:{:02}", c.year, c.month, c.day, c.hour, c.minute,
                     c.second, off < 0 ? '-' : '+', a / 3600, a % 3600 / 60);
}

}  // namespace cmax::sla
