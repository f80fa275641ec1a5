#include "loadgen/sse.h"

#include <climits>
#include <cstring>

namespace cmax::loadgen {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The next '\n' or '\r' at or after `from`, or npos. The two searches are cached by the caller so
// that a buffer holding only one kind of line end is scanned once, not once per line.
std::size_t find_from(const char* data, std::size_t size, std::size_t from, char c) {
  const void* hit = std::memchr(data + from, c, size - from);
  return hit == nullptr ? std::string_view::npos : static_cast<std::size_t>(static_cast<const char*>(hit) - data);
}

// `retry:` is honoured only when the value is all ASCII digits (the spec); one that does not fit a
// long is ignored rather than clamped.
bool parse_retry(std::string_view v, long& out) {
  if (v.empty()) return false;
  long n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    const int d = c - '0';
    if (n > (LONG_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  out = n;
  return true;
}

}  // namespace

SseParser::SseParser(std::size_t max_event_bytes, std::size_t max_line_bytes)
    : max_event_bytes_(max_event_bytes), max_line_bytes_(max_line_bytes) {}

void SseParser::feed(std::string_view bytes, SseSink& sink) {
  feed_lines(bytes, sink);
  // An event's data held as a view into `bytes` outlives this call only as a copy.
  if (data_viewed_) {
    data_.assign(data_view_);
    data_viewed_ = false;
  }
}

void SseParser::feed_lines(std::string_view bytes, SseSink& sink) {
  if (overflow_) return;
  if (!started_) {
    // A BOM may itself arrive split: hold its bytes in pending_ (they are a prefix of the BOM, so
    // no line end) until it is complete or proven not to be one; then they are the first line's.
    while (!bytes.empty() && pending_.size() < kBom.size() && bytes[0] == kBom[pending_.size()]) {
      pending_.push_back(bytes[0]);
      bytes.remove_prefix(1);
    }
    if (pending_.size() == kBom.size()) {
      pending_.clear();
      started_ = true;
    } else if (!bytes.empty()) {
      started_ = true;
    } else {
      return;  // still a BOM prefix; wait for more
    }
  }

  const char* const p = bytes.data();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  if (after_cr_ && n > 0) {
    // The previous feed ended on '\r': a '\n' opening this one belongs to that line end.
    if (p[0] == '\n') i = 1;
    after_cr_ = false;
  }
  std::size_t next_lf = 0, next_cr = 0;
  bool lf_known = false, cr_known = false;
  while (i < n) {
    if (!lf_known || (next_lf != std::string_view::npos && next_lf < i)) {
      next_lf = find_from(p, n, i, '\n');
      lf_known = true;
    }
    if (!cr_known || (next_cr != std::string_view::npos && next_cr < i)) {
      next_cr = find_from(p, n, i, '\r');
      cr_known = true;
    }
    const std::size_t eol = next_lf < next_cr ? next_lf : next_cr;
    if (eol == std::string_view::npos) {
      if (pending_.size() + (n - i) > max_line_bytes_) {
        overflow_ = true;
        return;
      }
      pending_.append(p + i, n - i);
      return;
    }
    std::string_view l(p + i, eol - i);
    const bool in_bytes = pending_.empty();  // l points into `bytes`, not into pending_
    if (!in_bytes) {
      if (pending_.size() + l.size() > max_line_bytes_) {
        overflow_ = true;
        return;
      }
      pending_.append(l);
      l = pending_;
    } else if (l.size() > max_line_bytes_) {
      overflow_ = true;
      return;
    }
    line(l, in_bytes, sink);
    pending_.clear();
    if (overflow_) return;
    i = eol + 1;
    if (p[eol] == '\r') {
      if (i == n) {
        after_cr_ = true;
      } else if (p[i] == '\n') {
        ++i;
      }
    }
  }
}

void SseParser::line(std::string_view l, bool in_bytes, SseSink& sink) {
  if (l.empty()) {
    // Dispatch. The last event ID is sticky; an event with no data lines is dropped (the spec).
    if (has_data_) {
      ++events_;
      sink.on_event(SseEvent{event_, data_viewed_ ? data_view_ : std::string_view(data_), id_});
    }
    data_.clear();
    data_viewed_ = false;
    event_.clear();
    has_data_ = false;
    return;
  }
  if (l[0] == ':') {
    ++comments_;
    return;
  }
  std::string_view field = l, value;
  if (const auto colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    const std::size_t have = data_viewed_ ? data_view_.size() : data_.size();
    const std::size_t grown = have + (has_data_ ? 1 : 0) + value.size();
    if (grown > max_event_bytes_) {
      overflow_ = true;
      return;
    }
    if (!has_data_ && in_bytes) {
      // The common event: one data line, its blank line in the same read. Not copied unless the
      // event is still open when feed() returns.
      data_view_ = value;
      data_viewed_ = true;
      has_data_ = true;
      return;
    }
    if (data_viewed_) {
      data_.assign(data_view_);
      data_viewed_ = false;
    }
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  } else if (field == "retry") {
    long ms = 0;
    if (parse_retry(value, ms)) retry_ms_ = ms;
  }
}

bool SseParser::finish() {
  if (overflow_) return false;  // the caller fails the response on overflow() already
  const bool partial = !pending_.empty() || has_data_ || !event_.empty();
  pending_.clear();
  data_.clear();
  data_viewed_ = false;
  event_.clear();
  has_data_ = false;
  after_cr_ = false;
  return partial;
}

void SseParser::reset() {
  pending_.clear();
  data_.clear();
  data_viewed_ = false;
  event_.clear();
  id_.clear();
  has_data_ = false;
  started_ = false;
  after_cr_ = false;
  overflow_ = false;
  events_ = 0;
  comments_ = 0;
  retry_ms_ = -1;
}

}  // namespace cmax::loadgen
