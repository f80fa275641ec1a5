#include "signals/prefix.h"

#include <cstring>

namespace cmax::signals {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// Reads an unsigned number of at most `max_digits` (<= 18, so it fits) at the front of `s`; false
// when there is none.
bool read_uint(std::string_view& s, long long& out, std::size_t max_digits = 18) {
  std::size_t n = 0;
  long long v = 0;
  while (n < s.size() && n < max_digits && digit(s[n])) v = v * 10 + (s[n++] - '0');
  if (n == 0) return false;
  out = v;
  s.remove_prefix(n);
  return true;
}

// 10^k as doubles, exact for every k here.
constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                             1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

bool eat(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

void skip_spaces(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

int month_index(std::string_view m) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i)
    if (m == kMonths[i]) return i + 1;
  return 0;
}

// "HH:MM:SS[.frac]"
bool read_clock(std::string_view& s, int& h, int& m, double& sec) {
  long long hh, mm, ss;
  std::string_view t = s;
  if (!read_uint(t, hh, 2) || !eat(t, ':') || !read_uint(t, mm, 2) || !eat(t, ':') || !read_uint(t, ss, 2))
    return false;
  sec = static_cast<double>(ss);
  if (!t.empty() && (t.front() == '.' || t.front() == ',')) {
    t.remove_prefix(1);
    double scale = 0.1;
    while (!t.empty() && digit(t.front())) {
      sec += (t.front() - '0') * scale;
      scale /= 10;
      t.remove_prefix(1);
    }
  }
  h = static_cast<int>(hh);
  m = static_cast<int>(mm);
  s = t;
  return h < 24 && m < 60 && sec < 61;
}

// After a syslog or journal stamp: " host tag: " -> host, and the message after the tag.
bool read_host_and_tag(std::string_view& s, LineInfo& info) {
  std::string_view t = s;
  if (!eat(t, ' ')) return false;
  auto sp = t.find(' ');
  if (sp == 0 || sp == std::string_view::npos) return false;
  std::string_view host = t.substr(0, sp);
  t.remove_prefix(sp + 1);
  auto colon = t.find(": ");
  auto space = t.find(' ');
  if (colon == std::string_view::npos || (space != std::string_view::npos && space < colon)) return false;
  info.host = host;
  t.remove_prefix(colon + 2);
  s = t;
  return true;
}

// "Nov 22 14:56:47 host tag: "
bool syslog_prefix(std::string_view& s, LineInfo& info, int year) {
  if (s.size() < 16 || s[3] != ' ') return false;
  int mon = month_index(s.substr(0, 3));
  if (!mon) return false;
  std::string_view t = s.substr(4);
  skip_spaces(t);
  long long day;
  if (!read_uint(t, day, 2) || !eat(t, ' ')) return false;
  int h, m;
  double sec;
  if (!read_clock(t, h, m, sec)) return false;
  std::string_view stamp = s.substr(0, static_cast<std::size_t>(t.data() - s.data()));
  if (!read_host_and_tag(t, info)) return false;
  info.stamp = stamp;
  info.time = epoch_seconds(year, mon, static_cast<int>(day), h, m, sec);
  info.has_time = info.wall_clock = true;
  s = t;
  return true;
}

// "2024-11-22T14:56:47[.frac][Z|+0000|+00:00] host tag: "
bool iso_prefix(std::string_view& s, LineInfo& info) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ')) return false;
  std::string_view t = s;
  long long y, mo, d;
  if (!read_uint(t, y, 4) || !eat(t, '-') || !read_uint(t, mo, 2) || !eat(t, '-') || !read_uint(t, d, 2)) return false;
  t.remove_prefix(1);
  int h, m;
  double sec;
  if (!read_clock(t, h, m, sec)) return false;
  double offset = 0;
  if (eat(t, 'Z')) {
  } else if (!t.empty() && (t.front() == '+' || t.front() == '-')) {
    int sign = t.front() == '-' ? -1 : 1;
    t.remove_prefix(1);
    long long oh, om = 0;
    if (!read_uint(t, oh, 2)) return false;
    eat(t, ':');
    read_uint(t, om, 2);
    offset = sign * (oh * 3600.0 + om * 60.0);
  }
  std::string_view stamp = s.substr(0, static_cast<std::size_t>(t.data() - s.data()));
  if (!read_host_and_tag(t, info)) return false;
  info.stamp = stamp;
  info.time = epoch_seconds(static_cast<int>(y), static_cast<int>(mo), static_cast<int>(d), h, m, sec) - offset;
  info.has_time = info.wall_clock = true;
  s = t;
  return true;
}

// dmesg "[ 123.456789] " (monotonic) or "[Sat Oct 12 18:35:32 2024] " (-T).
bool dmesg_stamp(std::string_view& s, LineInfo& info) {
  if (s.size() < 3 || s.front() != '[') return false;
  auto close = s.find(']');
  if (close == std::string_view::npos || close > 40) return false;
  std::string_view inner = s.substr(1, close - 1);
  std::string_view t = inner;
  skip_spaces(t);
  long long whole;
  std::string_view num = t;
  if (read_uint(num, whole) && (num.empty() || eat(num, '.'))) {
    // "[ 123.456789]", or whole seconds "[  123]" (printk's stamp without its fraction).
    const std::size_t frac_digits = num.size();
    long long frac = 0;
    if (frac_digits > 0 && (!read_uint(num, frac) || !num.empty())) return false;
    const double f = frac_digits ? static_cast<double>(frac) / kPow10[frac_digits] : 0.0;  // <= 18 digits
    if (!info.has_time) {
      info.time = static_cast<double>(whole) + f;
      info.has_time = true;
      info.stamp = s.substr(0, close + 1);
    }
  } else if (t.size() >= 24 && t[3] == ' ' && t[7] == ' ') {
    int mon = month_index(t.substr(4, 3));
    std::string_view rest = t.substr(8);
    skip_spaces(rest);
    long long day, year;
    int h, m;
    double sec;
    if (!mon || !read_uint(rest, day, 2) || !eat(rest, ' ') || !read_clock(rest, h, m, sec) || !eat(rest, ' ') ||
        !read_uint(rest, year, 4))
      return false;
    if (!info.has_time) {
      info.time = epoch_seconds(static_cast<int>(year), mon, static_cast<int>(day), h, m, sec);
      info.has_time = info.wall_clock = true;
      info.stamp = s.substr(0, close + 1);
    }
  } else {
    return false;
  }
  s.remove_prefix(close + 1);
  skip_spaces(s);
  return true;
}

// "[ T1946] " / "[    C2] " caller ids.
bool caller_id(std::string_view& s) {
  if (s.size() < 4 || s.front() != '[') return false;
  auto close = s.find(']');
  if (close == std::string_view::npos || close > 16) return false;
  std::string_view t = s.substr(1, close - 1);
  skip_spaces(t);
  if (t.empty() || (t.front() != 'T' && t.front() != 'C')) return false;
  t.remove_prefix(1);
  long long id;
  if (!read_uint(t, id) || !t.empty()) return false;
  s.remove_prefix(close + 1);
  skip_spaces(s);
  return true;
}

// srun -l "12: " or MPI "[12] " / "[1,0]<stdout>: ". `bare` is set for the "[12] " form, which a
// kernel stamp in whole seconds also has: the caller decides by what follows it.
bool rank_prefix(std::string_view& s, LineInfo& info, bool& bare) {
  std::string_view t = s;
  long long rank;
  bare = false;
  if (eat(t, '[')) {
    bare = true;
    long long job;
    if (!read_uint(t, rank, 6)) return false;
    if (eat(t, ',')) {
      job = rank;
      (void)job;
      if (!read_uint(t, rank, 6)) return false;
      bare = false;
    }
    if (!eat(t, ']')) return false;
    if (t.starts_with("<stdout>:") || t.starts_with("<stderr>:")) {
      t.remove_prefix(9);
      bare = false;
    }
    if (!eat(t, ' ') && !t.empty()) return false;
  } else {
    if (!read_uint(t, rank, 6) || !eat(t, ':') || !eat(t, ' ')) return false;
  }
  info.rank = static_cast<int>(rank);
  s = t;
  skip_spaces(s);
  return true;
}

// "6,1234,5678901,-;" (and ",c" style extra flags) from /dev/kmsg.
bool kmsg_prefix(std::string_view& s, LineInfo& info) {
  std::string_view t = s;
  long long prio, seq, usec;
  if (!read_uint(t, prio, 4) || !eat(t, ',') || !read_uint(t, seq) || !eat(t, ',') || !read_uint(t, usec) ||
      !eat(t, ','))
    return false;
  auto semi = t.find(';');
  if (semi == std::string_view::npos || semi > 16) return false;
  info.kmsg_prio = static_cast<int>(prio);
  info.kmsg_seq = static_cast<std::uint64_t>(seq);
  info.time = static_cast<double>(usec) / 1e6;
  info.has_time = true;
  info.stamp = s.substr(0, static_cast<std::size_t>(t.data() - s.data()) + semi);
  s = t.substr(semi + 1);
  return true;
}

}  // namespace

double epoch_seconds(int year, int month, int day, int hour, int minute, double second) {
  // days_from_civil (Howard Hinnant).
  int y = year - (month <= 2);
  int era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + static_cast<unsigned>(day) - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  long long days = static_cast<long long>(era) * 146097 + static_cast<long long>(doe) - 719468;
  return static_cast<double>(days) * 86400.0 + hour * 3600.0 + minute * 60.0 + second;
}

LineInfo parse_line_prefix(std::string_view line, int assumed_year) {
  LineInfo info;
  std::string_view s = line;
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  if (kmsg_prefix(s, info)) {
    info.message = s;
    return info;
  }
  const std::string_view before_rank = s;
  bool bare = false;
  if (rank_prefix(s, info, bare) && bare) {
    // "[12] " is an MPI rank (MPICH -prepend-rank) only in front of another prefix; in front of
    // the message itself ("[123] nvidia-nvswitch3: SXid ...") it is the kernel's stamp in whole
    // seconds, and the line belongs to no rank.
    std::string_view t = s;
    LineInfo probe = info;
    if (!(syslog_prefix(t, probe, assumed_year) || iso_prefix(t, probe) || dmesg_stamp(t, probe) || caller_id(t))) {
      s = before_rank;
      info.rank = -1;
    }
  }
  if (!syslog_prefix(s, info, assumed_year)) iso_prefix(s, info);
  // dmesg stamps and caller ids, in either order, at most a few.
  for (int i = 0; i < 3; ++i)
    if (!dmesg_stamp(s, info) && !caller_id(s)) break;
  info.message = s;
  return info;
}

}  // namespace cmax::signals
