#include "sla/timestamp.h"

#include <charconv>

namespace cmax::sla {
namespace {

constexpr int kDaysIn[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Exactly `n` digits at s[pos]; advances pos.
bool digits(std::string_view s, std::size_t& pos, int n, int& out) {
  if (pos + static_cast<std::size_t>(n) > s.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = s[pos + static_cast<std::size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  pos += static_cast<std::size_t>(n);
  return true;
}

bool eat(std::string_view s, std::size_t& pos, char c) {
  if (pos < s.size() && s[pos] == c) {
    ++pos;
    return true;
  }
  return false;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool valid_date(int y, int m, int d) {
  if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1) return false;
  const int dim = kDaysIn[m - 1] + (m == 2 && leap(y) ? 1 : 0);
  return d <= dim;
}

}  // namespace

std::optional<std::int64_t> parse_timestamp(std::string_view text, const Zone& zone) {
  const std::string_view s = trim_spaces(text);
  if (s.empty()) return std::nullopt;
  if (s.size() < 10 || s[4] != '-') {
    // Unix seconds, with an optional fraction.
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || v < 0 || v > 253402300799) return std::nullopt;
    if (p != s.data() + s.size()) {
      if (*p != '.') return std::nullopt;
      for (++p; p != s.data() + s.size(); ++p)
        if (*p < '0' || *p > '9') return std::nullopt;
    }
    return v;
  }
  std::size_t pos = 0;
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!digits(s, pos, 4, y) || !eat(s, pos, '-') || !digits(s, pos, 2, mo) || !eat(s, pos, '-') ||
      !digits(s, pos, 2, d) || !valid_date(y, mo, d))
    return std::nullopt;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != ' ') return std::nullopt;
    ++pos;
    if (!digits(s, pos, 2, h) || !eat(s, pos, ':') || !digits(s, pos, 2, mi)) return std::nullopt;
    if (eat(s, pos, ':')) {
      if (!digits(s, pos, 2, sec)) return std::nullopt;
      if (eat(s, pos, '.')) {
        const std::size_t first = pos;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
        if (pos == first) return std::nullopt;
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  }
  const std::int64_t local = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (sec == 60 ? 59 : sec);
  if (pos == s.size()) return zone.to_utc(local);
  if (s[pos] == 'Z' && pos + 1 == s.size()) return local;
  if (s[pos] != '+' && s[pos] != '-') return std::nullopt;
  const int sign = s[pos] == '-' ? -1 : 1;
  ++pos;
  int oh = 0, om = 0;
  if (!digits(s, pos, 2, oh)) return std::nullopt;
  eat(s, pos, ':');
  if (pos < s.size() && !digits(s, pos, 2, om)) return std::nullopt;
  if (pos != s.size() || oh > 23 || om > 59) return std::nullopt;
  return local - sign * (oh * 3600 + om * 60);
}

std::optional<YearMonth> parse_year_month(std::string_view text) {
  const std::string_view s = trim_spaces(text);
  std::size_t pos = 0;
  YearMonth ym;
  if (!digits(s, pos, 4, ym.year) || !eat(s, pos, '-') || !digits(s, pos, 2, ym.month)) return std::nullopt;
  if (ym.month < 1 || ym.month > 12 || ym.year < 1970) return std::nullopt;
  if (pos == s.size()) return ym;
  int d = 0;
  if (!eat(s, pos, '-') || !digits(s, pos, 2, d) || pos != s.size() || !valid_date(ym.year, ym.month, d))
    return std::nullopt;
  return ym;
}

}  // namespace cmax::sla
