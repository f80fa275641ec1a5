// libFuzzer target: cmax endpoint bench's stream reading (loadgen/sse.h, loadgen/chunk.h).
// Input: byte 0 = k (low 3 bits, how many piece-size bytes follow) and a small limit (high 5
// bits); then k bytes of piece sizes (1 + byte, cycled); the rest is the stream. Invariants, each
// an abort when broken:
//   - the events, comments, retry, overflow and finish() of a feed in pieces (after reset()), each
//     piece overwritten once fed, equal those of one whole feed, with the default limits and with
//     small ones;
//   - they equal a plain reading of the WHATWG algorithm (below, written for clarity not speed);
//   - no event is larger than the limits; nothing is dispatched after overflow;
//   - on every event's data and on the raw stream, parse_stream_data / parse_completion_body give
//     exactly what chunk.cpp's nlohmann-only reader gives (the fast path is exact), error messages
//     are one line, counts are in range, content is UTF-8;
//   - error_body_message is at most 300 bytes, one line, UTF-8;
//   - the Messages API reader (loadgen/messages_chunk.h), over the stream's events with one usage
//     accumulator and on the raw stream as a body: the same bounds, errors on one line, and a
//     usage whose prompt holds its cached and written tokens.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/chunk.h"
#include "loadgen/chunk_reference.h"
#include "loadgen/messages_chunk.h"
#include "loadgen/sse.h"

namespace {

using namespace cmax::loadgen;
using cmax::Result;

void check(bool ok) {
  if (!ok) std::abort();
}

struct Ev {
  std::string event, data, id;
  bool operator==(const Ev&) const = default;
};

struct Outcome {
  std::vector<Ev> events;
  std::size_t comments = 0;
  long retry_ms = -1;
  bool overflow = false, partial = false;
  bool operator==(const Outcome&) const = default;
};

struct Collect : SseSink {
  std::vector<Ev>* out;
  std::size_t max_event, max_line;
  const SseParser* parser;
  void on_event(const SseEvent& e) override {
    check(!parser->overflow());
    check(e.data.size() <= max_event);
    check(e.event.size() <= max_line && e.id.size() <= max_line);
    out->push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
  }
};

Outcome run(SseParser& p, std::string_view s, const std::vector<std::size_t>& pieces, std::size_t max_event,
            std::size_t max_line) {
  Outcome o;
  Collect c;
  c.out = &o.events;
  c.max_event = max_event;
  c.max_line = max_line;
  c.parser = &p;
  std::size_t at = 0, i = 0;
  // Each piece from one reused buffer, scribbled over after its feed, as the transport's shared
  // read buffer is: nothing may be read from a piece after feed() returns.
  std::string buf;
  while (at < s.size()) {
    const std::size_t n = pieces.empty() ? s.size() : pieces[i++ % pieces.size()];
    buf.assign(s.substr(at, n));
    p.feed(buf, c);
    buf.assign(buf.size(), '\xA5');
    at += n;
  }
  check(p.events() == o.events.size());
  o.comments = p.comments();
  o.retry_ms = p.retry_ms();
  o.overflow = p.overflow();
  o.partial = p.finish();
  return o;
}

// The WHATWG algorithm read literally, on the whole stream, without limits.
Outcome reference(std::string_view s) {
  Outcome o;
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  std::string data, event, id;
  bool has_data = false;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t e = s.find_first_of("\r\n", pos);
    if (e == std::string_view::npos) {
      o.partial = pos < s.size() || has_data || !event.empty();
      break;
    }
    const std::string_view line = s.substr(pos, e - pos);
    pos = e + 1;
    if (s[e] == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    if (line.empty()) {
      if (has_data) {
        data.pop_back();  // the trailing LF
        o.events.push_back({event, data, id});
      }
      data.clear();
      event.clear();
      has_data = false;
      continue;
    }
    if (line[0] == ':') {
      ++o.comments;
      continue;
    }
    std::string_view field = line, value;
    if (const auto colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      data.append(value);
      data.push_back('\n');
      has_data = true;
    } else if (field == "event") {
      event = value;
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) id = value;
    } else if (field == "retry") {
      bool digits = !value.empty();
      for (char ch : value) digits = digits && ch >= '0' && ch <= '9';
      long ms = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (digits && r.ec == std::errc()) o.retry_ms = ms;  // all digits and fits a long
    }
  }
  return o;
}

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p;
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) n = 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else return false;
    if (static_cast<std::size_t>(end - p) < n) return false;
    for (std::size_t i = 1; i < n; ++i) {
      const unsigned b = p[i];
      if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return false;
    }
    p += n;
  }
  return true;
}

bool one_line(std::string_view s) {
  if (s.size() > 300 || !valid_utf8(s)) return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
  return true;
}

void same(const Result<ChunkInfo>& a, const Result<ChunkInfo>& b) {
  check(a.has_value() == b.has_value());
  if (!a) {
    check(a.error().message == b.error().message);
    check(a.error().message.find('\n') == std::string::npos);
    return;
  }
  check(a->done == b->done && a->has_content == b->has_content && a->content == b->content);
  check(a->finish_reason == b->finish_reason && a->id == b->id);
  check(a->is_error == b->is_error && a->error_message == b->error_message && a->error_type == b->error_type &&
        a->error_code == b->error_code);
  const Usage &u = a->usage, &v = b->usage;
  check(u.present == v.present && u.prompt_tokens == v.prompt_tokens && u.completion_tokens == v.completion_tokens &&
        u.cached_tokens == v.cached_tokens && u.cache_creation_tokens == v.cache_creation_tokens &&
        u.cache_source == v.cache_source);
}

void check_info(const Result<ChunkInfo>& r, bool want_text) {
  if (!r) return;
  if (!want_text) check(r->content.empty());
  if (want_text) check(r->has_content == !r->content.empty());
  check(valid_utf8(r->content) && valid_utf8(r->id) && valid_utf8(r->finish_reason));
  if (r->is_error) check(one_line(r->error_message) && one_line(r->error_type) && one_line(r->error_code));
  constexpr std::uint64_t kMax = std::uint64_t{1} << 53;
  const Usage& u = r->usage;
  check(u.prompt_tokens <= kMax && u.completion_tokens <= kMax && u.cached_tokens <= kMax &&
        u.cache_creation_tokens <= kMax);
  if (!u.present) check(u.prompt_tokens == 0 && u.cache_source == CacheSource::kNone);
}

void chunks(std::string_view text) {
  for (bool want_text : {false, true}) {
    const auto fast = parse_stream_data(text, want_text);
    check_info(fast, want_text);
    if (!(fast && fast->done)) same(fast, detail::parse_json_nlohmann(text, detail::JsonDoc::kStream, want_text));
    const auto body = parse_completion_body(text, want_text);
    check_info(body, want_text);
    same(body, detail::parse_json_nlohmann(text, detail::JsonDoc::kBody, want_text));
  }
  check(one_line(error_body_message(text)));
}

void messages(const std::vector<Ev>& events, std::string_view raw) {
  for (bool want_text : {false, true}) {
    MessagesUsage acc;
    for (const Ev& e : events) {
      MessagesUsage dom_acc = acc;
      const auto r = parse_messages_event(e.event, e.data, want_text, acc);
      // The fast path for content_block_delta reads exactly what the DOM reader does.
      same(r, detail::parse_messages_event_dom(e.event, e.data, want_text, dom_acc));
      check(acc.input == dom_acc.input && acc.cache_read == dom_acc.cache_read &&
            acc.cache_creation == dom_acc.cache_creation && acc.output == dom_acc.output);
      if (!r) {
        check(r.error().message.find('\n') == std::string::npos && valid_utf8(r.error().message));
        continue;
      }
      check_info(r, want_text);
      const Usage& u = r->usage;
      if (u.present) check(u.prompt_tokens >= u.cached_tokens + u.cache_creation_tokens);
    }
    const auto body = parse_messages_body(raw, want_text);
    if (body) check_info(body, want_text);
    else check(body.error().message.find('\n') == std::string::npos && valid_utf8(body.error().message));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t k = data[0] & 7;
  const std::size_t small = 8 + (data[0] >> 3) * 8;
  std::vector<std::size_t> pieces;
  std::size_t at = 1;
  for (; at < size && pieces.size() < k; ++at) pieces.push_back(1 + data[at]);
  if (pieces.empty()) pieces.push_back(1);
  const std::string_view s(reinterpret_cast<const char*>(data + at), size - at);

  constexpr std::size_t kBig = std::size_t{16} << 20;
  SseParser big;
  const Outcome whole = run(big, s, {}, kBig, kBig);
  check(!whole.overflow);  // inputs are far below 16 MiB
  check(whole == reference(s));
  big.reset();
  check(run(big, s, pieces, kBig, kBig) == whole);

  SseParser limited(small, small);
  const Outcome lw = run(limited, s, {}, small, small);
  limited.reset();
  check(run(limited, s, pieces, small, small) == lw);
  if (!lw.overflow) check(lw == whole);
  if (lw.overflow) {
    // What came before the overflow, exactly; nothing after it.
    check(lw.events.size() <= whole.events.size() && !lw.partial);
    for (std::size_t i = 0; i < lw.events.size(); ++i) check(lw.events[i] == whole.events[i]);
  }

  for (const Ev& e : whole.events) chunks(e.data);
  chunks(s);
  messages(whole.events, s);
  return 0;
}
