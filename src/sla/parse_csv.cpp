#include <array>

#include <fmt/format.h>

#include "core/strings.h"
#include "sla/parse.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

constexpr std::size_t kMaxFields = 6;

// Splits one CSV line; a field may be double-quoted (its quotes are dropped, "" inside is kept
// as is: only the reason is ever quoted, and it is not used in arithmetic). Returns the field
// count, or 0 for an unterminated quote.
std::size_t split_csv(std::string_view line, std::array<std::string_view, kMaxFields>& out) {
  std::size_t n = 0, pos = 0;
  while (true) {
    if (n == kMaxFields) return n;
    if (pos < line.size() && line[pos] == '"') {
      std::size_t end = pos + 1;
      while (true) {
        end = line.find('"', end);
        if (end == std::string_view::npos) return 0;
        if (end + 1 < line.size() && line[end + 1] == '"') {
          end += 2;
          continue;
        }
        break;
      }
      out[n++] = line.substr(pos + 1, end - pos - 1);
      pos = end + 1;
      if (pos >= line.size()) return n;
      if (line[pos] != ',') return 0;
      ++pos;
      continue;
    }
    const std::size_t comma = line.find(',', pos);
    if (comma == std::string_view::npos) {
      out[n++] = core::trim(line.substr(pos));
      return n;
    }
    out[n++] = core::trim(line.substr(pos, comma - pos));
    pos = comma + 1;
  }
}

bool is_open(std::string_view end) {
  return end.empty() || end == "Unknown" || end == "unknown" || end == "open" || end == "null";
}

}  // namespace

Result<EventSet> parse_events_csv(std::string_view text, const Zone& zone) {
  EventSet set;
  set.intervals.reserve(text.size() / 64);  // rows are 30-70 bytes; one growth at most for most files
  std::size_t line_no = 0, pos = 0;
  bool first = true;
  std::array<std::string_view, kMaxFields> f;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t n = split_csv(line, f);
    if (first) {
      first = false;
      if (n > 0 && (f[0] == "node" || f[0] == "Node" || f[0] == "NODE" || f[0] == "node_name")) continue;
    }
    ++set.records;
    if (n < 4 || f[0].empty()) {
      if (set.anomalies.malformed.wants_example())
        set.anomalies.malformed.add(
            fmt::format("line {}: want node,start,end,state[,reason]: {}", line_no, core::clip(line, 120)));
      else
        ++set.anomalies.malformed.count;
      continue;
    }
    const auto start = parse_timestamp(f[1], zone);
    const bool open = is_open(f[2]);
    const auto end = open ? std::optional<std::int64_t>(kOpenEnd) : parse_timestamp(f[2], zone);
    if (!start || !end) {
      if (set.anomalies.malformed.wants_example())
        set.anomalies.malformed.add(fmt::format("line {}: unreadable time '{}': {}", line_no,
                                                core::clip(!start ? f[1] : f[2], 40), core::clip(line, 120)));
      else
        ++set.anomalies.malformed.count;
      continue;
    }
    const std::int32_t node = set.node(f[0]);
    const std::int32_t state = set.state(f[3].empty() ? std::string_view("down") : f[3]);
    set.intervals.push_back(RawInterval{*start, *end, node, state});
  }
  return set;
}

}  // namespace cmax::sla
