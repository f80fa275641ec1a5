// libFuzzer target: the kernel-log line prefix parser. Invariants checked on every input and on
// each of its lines: every view returned lies inside the line, the message is a suffix of the
// line (prefixes only come off the front, line ends off the back), times are finite, no crash.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "signals/prefix.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void parse_one(std::string_view line, int year) {
  auto info = cmax::signals::parse_line_prefix(line, year);
  check(inside(info.message, line));
  check(inside(info.host, line));
  check(inside(info.stamp, line));
  check(info.message.size() <= line.size());
  // Only '\r' and '\n' may follow the message.
  if (!info.message.empty()) {
    std::string_view after = line.substr(static_cast<std::size_t>(info.message.data() - line.data()) + info.message.size());
    check(after.find_first_not_of("\r\n") == std::string_view::npos);
  }
  if (info.has_time) check(std::isfinite(info.time));
  if (!info.has_time) check(!info.wall_clock);
  check(info.rank >= -1);
  check(info.kmsg_prio >= -1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  int year = size > 0 ? 1970 + data[0] : 2024;
  parse_one(input, year);
  while (!input.empty()) {
    auto nl = input.find('\n');
    parse_one(input.substr(0, nl), year);
    if (nl == std::string_view::npos) break;
    input.remove_prefix(nl + 1);
  }
  (void)cmax::signals::epoch_seconds(year, 1 + static_cast<int>(size % 12), 1 + static_cast<int>(size % 28), 0, 0, 0);
  return 0;
}
