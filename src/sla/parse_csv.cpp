#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/strings.h"
#include "sla/huge_pages.h"
#include "sla/parse.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

constexpr std::size_t kMaxFields = 6;
// Rows are 30-70 bytes: room for most files without growing the intervals.
constexpr std::size_t kBytesPerRowEstimate = 48;
// Parts smaller than this are not worth a thread.
constexpr std::size_t kMinPartBytes = std::size_t{4} << 20;

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

// The line of `text` starting at `pos` (without its "\n" or "\r\n") and where the next begins.
std::string_view next_line(std::string_view text, std::size_t end, std::size_t& pos) {
  std::size_t nl = text.find('\n', pos);
  if (nl == std::string_view::npos || nl > end) nl = end;
  std::string_view line = text.substr(pos, nl - pos);
  pos = nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// core::trim, inline: it runs on every field.
std::string_view trim_field(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// One line, found with its first commas and any quote in one pass over its bytes, 16 at a time
// (a memchr per line and per field was a tenth of the run).
struct ScannedLine {
  std::string_view line;                         // without "\n" or "\r\n"
  std::array<std::size_t, kMaxFields> commas{};  // offsets into line
  std::size_t comma_count = 0;
  bool quote = false;
};

// Bit i of each mask: byte p[i] (i < width <= 16) is a newline, a comma, a quote.
struct ByteMasks {
  std::uint32_t newline = 0, comma = 0, quote = 0;
};
ByteMasks classify(const char* p, std::size_t width) {
  ByteMasks m;
#if defined(__SSE2__)
  if (width == 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    m.newline =
        static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
    m.comma = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(','))));
    m.quote = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))));
    return m;
  }
#endif
  for (std::size_t i = 0; i < width; ++i) {
    m.newline |= std::uint32_t{p[i] == '\n'} << i;
    m.comma |= std::uint32_t{p[i] == ','} << i;
    m.quote |= std::uint32_t{p[i] == '"'} << i;
  }
  return m;
}

// Scans the line of `text` starting at `pos` and moves `pos` past its newline.
void scan_line(std::string_view text, std::size_t& pos, ScannedLine& out) {
  const std::size_t begin = pos;
  out.comma_count = 0;
  out.quote = false;
  std::size_t p = begin, line_end = text.size();
  while (p < text.size()) {
    // Never a load past the text's end: the last bytes go one at a time.
    const std::size_t width = std::min<std::size_t>(16, text.size() - p);
    ByteMasks m = classify(text.data() + p, width);
    if (m.newline) {
      const std::uint32_t before = (1u << std::countr_zero(m.newline)) - 1;
      m.comma &= before;
      m.quote &= before;
    }
    out.quote |= m.quote != 0;
    for (; m.comma && out.comma_count < kMaxFields; m.comma &= m.comma - 1)
      out.commas[out.comma_count++] =
          p + static_cast<std::size_t>(std::countr_zero(m.comma)) - begin;
    if (m.newline) {
      line_end = p + static_cast<std::size_t>(std::countr_zero(m.newline));
      break;
    }
    p += width;
  }
  out.line = text.substr(begin, line_end - begin);
  pos = line_end + 1;
  if (!out.line.empty() && out.line.back() == '\r') out.line.remove_suffix(1);
}

// split_csv of a scanned line: without a quote, straight from its commas.
std::size_t split_scanned(const ScannedLine& s, std::array<std::string_view, kMaxFields>& out) {
  if (s.quote) return split_csv(s.line, out);
  std::size_t n = 0, start = 0;
  for (; n < kMaxFields; ++n) {
    if (n == s.comma_count) {
      out[n++] = trim_field(s.line.substr(start));
      break;
    }
    out[n] = trim_field(s.line.substr(start, s.commas[n] - start));
    start = s.commas[n] + 1;
  }
  return n;
}

// Where the rows begin: past the header line when the first line that is neither blank nor a
// comment is one ("node,start,..."), with the count of lines before that point.
struct Body {
  std::size_t begin = 0, lines_before = 0;
};
Body find_body(std::string_view text) {
  std::size_t pos = 0, lines = 0;
  std::array<std::string_view, kMaxFields> f;
  while (pos < text.size()) {
    const std::size_t at = pos;
    const std::string_view line = next_line(text, text.size(), pos);
    ++lines;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t n = split_csv(line, f);
    if (n > 0 && (f[0] == "node" || f[0] == "Node" || f[0] == "NODE" || f[0] == "node_name"))
      return {std::min(pos, text.size()), lines};
    return {at, lines - 1};
  }
  return {text.size(), lines};
}

// The first line boundary at or after `at` (an offset just past a '\n', or the end).
std::size_t line_boundary(std::string_view text, std::size_t at) {
  if (at == 0 || at >= text.size()) return std::min(at, text.size());
  if (text[at - 1] == '\n') return at;
  const std::size_t nl = text.find('\n', at);
  return nl == std::string_view::npos ? text.size() : nl + 1;
}

// Rows of the whole lines text[begin, end) into `set`. `lines_before` is the number of lines of
// `text` before `begin`; nullopt counts them only when an example needs a line number.
void parse_rows(std::string_view text, std::size_t begin, std::size_t end,
                std::optional<std::size_t> lines_before, const Zone& zone, EventSet& set) {
  std::size_t line_in_part = 0, pos = begin;
  auto line_no = [&] {
    if (!lines_before)
      lines_before = static_cast<std::size_t>(std::count(text.begin(), text.begin() + begin, '\n'));
    return *lines_before + line_in_part;
  };
  // A row's node is looked up a few rows after it is read: the name table is far larger than the
  // cache and hit at random in time-ordered input, so slots are prefetched ahead of their use.
  struct Pending {
    std::string_view node;
    std::uint64_t hash = 0;
    RawInterval row;
  };
  constexpr std::size_t kAhead = 8;
  std::array<Pending, kAhead> ring;
  std::size_t queued = 0;  // ring[queued % kAhead] is the next free place
  auto resolve = [&](Pending& p) {
    p.row.node = set.node(p.node, p.hash);
    set.intervals.push_back(p.row);
  };
  std::array<std::string_view, kMaxFields> f;
  ScannedLine scanned;
  while (pos < end) {
    scan_line(text, pos, scanned);
    const std::string_view line = scanned.line;
    ++line_in_part;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t n = split_scanned(scanned, f);
    ++set.records;
    if (n < 4 || f[0].empty()) {
      if (set.anomalies.malformed.wants_example())
        set.anomalies.malformed.add(fmt::format("line {}: want node,start,end,state[,reason]: {}",
                                                line_no(), core::clip(line, 120)));
      else
        ++set.anomalies.malformed.count;
      continue;
    }
    const auto start = parse_timestamp(f[1], zone);
    const bool open = is_open(f[2]);
    const auto end_s = open ? std::optional<std::int64_t>(kOpenEnd) : parse_timestamp(f[2], zone);
    if (!start || !end_s) {
      if (set.anomalies.malformed.wants_example())
        set.anomalies.malformed.add(fmt::format("line {}: unreadable time '{}': {}", line_no(),
                                                core::clip(!start ? f[1] : f[2], 40),
                                                core::clip(line, 120)));
      else
        ++set.anomalies.malformed.count;
      continue;
    }
    const std::uint64_t hash = EventSet::node_hash(f[0]);
    set.prefetch_node(hash);
    const std::int32_t state = set.state(f[3].empty() ? std::string_view("down") : f[3]);
    Pending& slot = ring[queued++ % kAhead];
    if (queued > kAhead) resolve(slot);
    slot = Pending{f[0], hash, RawInterval{*start, *end_s, 0, state}};
  }
  for (std::size_t i = queued > kAhead ? queued - kAhead : 0; i < queued; ++i)
    resolve(ring[i % kAhead]);
}

}  // namespace

Result<EventSet> parse_events_csv(std::string_view text, const Zone& zone) {
  return parse_events_csv_parts(text, zone, {});
}

Result<EventSet> parse_events_csv_parallel(std::string_view text, const Zone& zone,
                                           unsigned threads) {
  const std::size_t parts =
      std::clamp<std::size_t>(text.size() / kMinPartBytes, 1, std::max(threads, 1u));
  std::vector<std::size_t> splits;
  for (std::size_t i = 1; i < parts; ++i) splits.push_back(text.size() / parts * i);
  return parse_events_csv_parts(text, zone, splits);
}

Result<EventSet> parse_events_csv_parts(std::string_view text, const Zone& zone,
                                        std::span<const std::size_t> splits) {
  const Body body = find_body(text);
  std::vector<std::size_t> bounds{body.begin};
  for (const std::size_t s : splits)
    bounds.push_back(std::max(bounds.back(), line_boundary(text, std::max(s, body.begin))));
  bounds.push_back(text.size());
  std::vector<EventSet> sets(bounds.size() - 1);
  // The first part's intervals have room for all parts': the merge appends in place.
  for (std::size_t i = 0; i < sets.size(); ++i)
    reserve_huge(
        sets[i].intervals,
        (i == 0 ? text.size() - body.begin : bounds[i + 1] - bounds[i]) / kBytesPerRowEstimate);
  {
    std::vector<std::jthread> workers;
    for (std::size_t i = 1; i < sets.size(); ++i)
      if (bounds[i] < bounds[i + 1])
        workers.emplace_back(
            [&, i] { parse_rows(text, bounds[i], bounds[i + 1], std::nullopt, zone, sets[i]); });
    parse_rows(text, bounds[0], bounds[1], body.lines_before, zone, sets[0]);
  }
  for (std::size_t i = 1; i < sets.size(); ++i) append_events(sets[0], std::move(sets[i]));
  return std::move(sets[0]);
}

}  // namespace cmax::sla
