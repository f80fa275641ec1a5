#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/sse.h"

using namespace cmax::loadgen;
using namespace std::string_literals;

// Counts operator new calls while g_count_allocations is set, for AllocationFreeOnceWarm.
// (Replacing the global operator new is allowed once per program: no other file of unit_loadgen
// may do it too.)
thread_local bool g_count_allocations = false;
thread_local std::size_t g_allocations = 0;

void* operator new(std::size_t n) {
  if (g_count_allocations) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

namespace {

struct Ev {
  std::string event, data, id;
  bool operator==(const Ev&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{event=" << testing::PrintToString(e.event) << " data=" << testing::PrintToString(e.data)
            << " id=" << testing::PrintToString(e.id) << "}";
}

struct Collect : SseSink {
  std::vector<Ev> events;
  void on_event(const SseEvent& e) override {
    events.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
  }
};

// Everything one parse of a stream yields, for comparing splits.
struct Outcome {
  std::vector<Ev> events;
  std::size_t comments = 0;
  long retry_ms = -1;
  bool overflow = false;
  bool partial = false;
  bool operator==(const Outcome&) const = default;
};

Outcome run(std::string_view stream, const std::vector<std::size_t>& cuts, std::size_t max_event = 16 << 20,
            std::size_t max_line = 16 << 20) {
  SseParser p(max_event, max_line);
  Collect c;
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    p.feed(stream.substr(at, cut - at), c);
    at = cut;
  }
  p.feed(stream.substr(at), c);
  Outcome o;
  o.events = c.events;
  o.comments = p.comments();
  o.retry_ms = p.retry_ms();
  o.overflow = p.overflow();
  o.partial = p.finish();
  EXPECT_EQ(p.events(), o.events.size());
  return o;
}

Outcome whole(std::string_view stream) { return run(stream, {}); }

// Every single split point and every pair of split points, and byte by byte.
void expect_split_invariant(std::string_view stream, std::size_t max_event = 16 << 20,
                            std::size_t max_line = 16 << 20) {
  const Outcome ref = run(stream, {}, max_event, max_line);
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    ASSERT_EQ(run(stream, {i}, max_event, max_line), ref) << "split at " << i;
    for (std::size_t j = i; j <= stream.size(); ++j)
      ASSERT_EQ(run(stream, {i, j}, max_event, max_line), ref) << "split at " << i << "," << j;
  }
  std::vector<std::size_t> bytes;
  for (std::size_t i = 1; i < stream.size(); ++i) bytes.push_back(i);
  ASSERT_EQ(run(stream, bytes, max_event, max_line), ref) << "byte by byte";
}

constexpr std::string_view kMulti =
    "\xEF\xBB\xBF: keep-alive\r\n"
    "retry: 1500\r"
    "id: 7\n"
    "event: delta\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "data:first\r"
    "data: second\n"
    "data\r\n"
    "\n"
    ":\n"
    "event: only-event\n"
    "\n"
    "id\n"
    "data: x\r\r"
    "data: [DONE]\n\n";

TEST(SseParser, ParsesAMultiEventStream) {
  const Outcome o = whole(kMulti);
  ASSERT_EQ(o.events.size(), 4U);
  EXPECT_EQ(o.events[0], (Ev{"delta", "{\"a\":1}", "7"}));
  EXPECT_EQ(o.events[1], (Ev{"", "first\nsecond\n", "7"}));
  EXPECT_EQ(o.events[2], (Ev{"", "x", ""}));  // "id" without a colon resets the last event ID
  EXPECT_EQ(o.events[3], (Ev{"", "[DONE]", ""}));
  EXPECT_EQ(o.comments, 2U);
  EXPECT_EQ(o.retry_ms, 1500);
  EXPECT_FALSE(o.partial);
  EXPECT_FALSE(o.overflow);
}

TEST(SseParser, EverySplitGivesTheSameEvents) { expect_split_invariant(kMulti); }

TEST(SseParser, EverySplitOfACutStreamGivesTheSameEvents) {
  expect_split_invariant("data: a\n\ndata: b\r\ndata: c");
  expect_split_invariant("data: a\r\n\r\ndata: b\r");
  expect_split_invariant("\xEF\xBB");
  expect_split_invariant("\xEF\xBB" "data: a\n\n");
}

TEST(SseParser, LineEnds) {
  for (std::string_view eol : {"\n", "\r", "\r\n"}) {
    std::string s = "data: a";
    s += eol;
    s += "data: b";
    s += eol;
    s += eol;
    const Outcome o = whole(s);
    ASSERT_EQ(o.events.size(), 1U) << testing::PrintToString(std::string(eol));
    EXPECT_EQ(o.events[0].data, "a\nb");
  }
  // "\r\n" is one line end, "\n\r" two: the second ends the event.
  EXPECT_EQ(whole("data: a\n\rdata: b\n\n").events.size(), 2U);
  EXPECT_EQ(whole("data: a\r\ndata: b\r\n\r\n").events.size(), 1U);
}

TEST(SseParser, CrLfSplitAcrossFeeds) {
  SseParser p;
  Collect c;
  p.feed("data: a\r", c);
  p.feed("\n", c);  // not a blank line: it completes "\r\n"
  EXPECT_TRUE(c.events.empty());
  p.feed("\r", c);
  ASSERT_EQ(c.events.size(), 1U);
  p.feed("\n", c);  // the "\n" of that "\r\n"
  p.feed("data: b\n\n", c);
  ASSERT_EQ(c.events.size(), 2U);
  EXPECT_EQ(c.events[1].data, "b");
  EXPECT_FALSE(p.finish());
}

TEST(SseParser, Bom) {
  EXPECT_EQ(whole("\xEF\xBB\xBF" "data: a\n\n").events.at(0).data, "a");
  // Only one BOM, and only at the start: a second is part of the field name (unknown, ignored).
  EXPECT_TRUE(whole("\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n").events.empty());
  EXPECT_TRUE(whole("data: a\n\n\xEF\xBB\xBF" "data: b\n\n").events.size() == 1);
  // A BOM split over three feeds.
  SseParser p;
  Collect c;
  for (std::string_view b : {"\xEF", "\xBB", "\xBF", "data: a\n\n"}) p.feed(b, c);
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0].data, "a");
  // Not quite a BOM: the bytes belong to the first line.
  const Outcome o = whole("\xEF\xBB:x\ndata: a\n\n");
  EXPECT_EQ(o.events.size(), 1U);
  EXPECT_EQ(o.comments, 0U);
}

TEST(SseParser, CommentsAreCounted) {
  const Outcome o = whole(": ping\n\n:\n: ping - 2024-01-01 00:00:00\r\ndata: a\n\n");
  EXPECT_EQ(o.comments, 3U);
  EXPECT_EQ(o.events.size(), 1U);
}

TEST(SseParser, FieldParsing) {
  // One leading space is removed, not two; no space is fine; a field with no colon has "" as value.
  EXPECT_EQ(whole("data:  two\n\n").events.at(0).data, " two");
  EXPECT_EQ(whole("data:none\n\n").events.at(0).data, "none");
  EXPECT_EQ(whole("data\n\n").events.at(0).data, "");
  EXPECT_EQ(whole("data\ndata\n\n").events.at(0).data, "\n");
  EXPECT_EQ(whole("data: a:b: c\n\n").events.at(0).data, "a:b: c");
  // Unknown fields and case variants are ignored.
  EXPECT_TRUE(whole("Data: a\n\n").events.empty());
  EXPECT_EQ(whole("foo: bar\ndata: a\n\n").events.at(0), (Ev{"", "a", ""}));
  // The last event: wins and does not stick.
  const Outcome o = whole("event: a\nevent: b\ndata: 1\n\ndata: 2\n\n");
  EXPECT_EQ(o.events.at(0).event, "b");
  EXPECT_EQ(o.events.at(1).event, "");
}

TEST(SseParser, EventWithoutDataIsNotDispatched) {
  const Outcome o = whole("event: ping\n\nid: 3\n\nretry: 10\n\ndata: a\n\n");
  ASSERT_EQ(o.events.size(), 1U);
  EXPECT_EQ(o.events[0], (Ev{"", "a", "3"}));  // the event type was reset, the id kept
  EXPECT_EQ(o.retry_ms, 10);
}

TEST(SseParser, IdIsSticky) {
  const Outcome o = whole("id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\nid:\ndata: d\n\n");
  ASSERT_EQ(o.events.size(), 4U);
  EXPECT_EQ(o.events[0].id, "1");
  EXPECT_EQ(o.events[1].id, "1");
  EXPECT_EQ(o.events[2].id, "2");
  EXPECT_EQ(o.events[3].id, "");
  // An id holding NUL is ignored (the spec).
  EXPECT_EQ(whole("id: 5\nid: a\0b\ndata: x\n\n"s).events.at(0).id, "5");
}

TEST(SseParser, Retry) {
  EXPECT_EQ(whole("retry: 3000\n").retry_ms, 3000);
  EXPECT_EQ(whole("retry:0\n").retry_ms, 0);
  EXPECT_EQ(whole("retry: 10\nretry: 1.5\nretry: -1\nretry: x\nretry:\nretry:  20\n").retry_ms, 10);
  EXPECT_EQ(whole("retry: 99999999999999999999999\n").retry_ms, -1);
  EXPECT_EQ(whole("data: a\n\n").retry_ms, -1);
}

TEST(SseParser, LineOverflow) {
  const std::string ok = "data: " + std::string(10, 'x') + "\n\n";  // a 16-byte line
  EXPECT_FALSE(run(ok, {}, 1 << 20, 16).overflow);
  EXPECT_EQ(run(ok, {}, 1 << 20, 16).events.size(), 1U);
  const std::string big = "data: a\n\ndata: " + std::string(11, 'x') + "\n\ndata: b\n\n";
  for (std::size_t cut = 0; cut <= big.size(); ++cut) {
    const Outcome o = run(big, {cut}, 1 << 20, 16);
    EXPECT_TRUE(o.overflow) << cut;
    ASSERT_EQ(o.events.size(), 1U) << cut;  // the event before; nothing after
    EXPECT_FALSE(o.partial);
  }
  // An unterminated long line overflows as it grows.
  SseParser p(1 << 20, 16);
  Collect c;
  for (int i = 0; i < 5; ++i) p.feed("xxxx", c);
  EXPECT_TRUE(p.overflow());
  p.feed("\n\ndata: a\n\n", c);
  EXPECT_TRUE(c.events.empty());
  EXPECT_EQ(p.events(), 0U);
}

TEST(SseParser, EventOverflow) {
  // Data lines joined: "aaaa\nbbbb" is 9 bytes.
  EXPECT_FALSE(run("data: aaaa\ndata: bbbb\n\n", {}, 9).overflow);
  const Outcome o = run("data: aaaa\ndata: bbbb\ndata: c\n\ndata: d\n\n", {}, 9);
  EXPECT_TRUE(o.overflow);
  EXPECT_TRUE(o.events.empty());
  expect_split_invariant("data: 1\n\ndata: aaaa\ndata: bbbb\n\ndata: aaaa\ndata: bbbbb\n\n", 9);
  expect_split_invariant("data: 1\n\ndata: 12345678901\n\ndata: 2\n\n", 1 << 20, 16);
}

TEST(SseParser, FinishWithAPartialEvent) {
  EXPECT_TRUE(whole("data: a\n\ndata: {\"cho").partial);   // a partial line
  EXPECT_TRUE(whole("data: a\n\ndata: b\n").partial);       // a complete line, no blank line
  EXPECT_TRUE(whole("data: a\n\ndata: b\r").partial);
  EXPECT_TRUE(whole("event: error\n").partial);
  EXPECT_FALSE(whole("data: a\n\n").partial);
  EXPECT_FALSE(whole("data: a\r\r").partial);
  EXPECT_FALSE(whole("").partial);
  EXPECT_FALSE(whole(": ping\n").partial);
  EXPECT_FALSE(whole("id: 4\n").partial);
  // The partial event is dropped, not dispatched.
  SseParser p;
  Collect c;
  p.feed("data: a\n", c);
  EXPECT_TRUE(p.finish());
  EXPECT_FALSE(p.finish());
  p.feed("\n", c);
  EXPECT_TRUE(c.events.empty());
}

TEST(SseParser, Reset) {
  SseParser p(1 << 20, 8);
  Collect c;
  p.feed("\xEF\xBB\xBFid: 9\nretry: 5\n: c\ndata: a\n\ndata: partial", c);
  EXPECT_TRUE(p.overflow() || p.events() == 1U);
  p.feed("0123456789", c);
  EXPECT_TRUE(p.overflow());
  p.reset();
  EXPECT_EQ(p.events(), 0U);
  EXPECT_EQ(p.comments(), 0U);
  EXPECT_EQ(p.retry_ms(), -1);
  EXPECT_FALSE(p.overflow());
  c.events.clear();
  p.feed("\xEF\xBB\xBF" "data: b\n\n", c);  // a BOM is skipped again after reset()
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0], (Ev{"", "b", ""}));  // the id was forgotten
  EXPECT_FALSE(p.finish());
}

TEST(SseParser, ViewsAreValidDuringTheCall) {
  // The sink sees the data even when the event's bytes came in several feeds and were freed.
  SseParser p;
  Collect c;
  for (char ch : std::string("data: {\"x\": \"hello\"}\n\n")) {
    std::string one(1, ch);
    p.feed(one, c);
  }
  ASSERT_EQ(c.events.size(), 1U);
  EXPECT_EQ(c.events[0].data, "{\"x\": \"hello\"}");
}

TEST(SseParser, NothingIsReadFromAFeedsBytesAfterItReturns) {
  // The transport hands every read over from one shared buffer that the next read overwrites.
  // An event whose data line came in one feed and its blank line in a later one must still carry
  // that line's bytes: feed each piece from a reused buffer, scribbled over after each feed.
  const std::string stream = std::string(kMulti) + "data: one\ndata: two\n\ndata: {\"k\":\"v\"}\n\n";
  const Outcome ref = whole(stream);
  ASSERT_GE(ref.events.size(), 3U);
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    SseParser p;
    Collect c;
    std::string buf;
    for (std::string_view piece : {std::string_view(stream).substr(0, i), std::string_view(stream).substr(i)}) {
      buf.assign(piece);
      p.feed(buf, c);
      buf.assign(buf.size(), '#');
    }
    EXPECT_EQ(c.events, ref.events) << "split at " << i;
  }
}

TEST(SseParser, AllocationFreeOnceWarm) {
  SseParser p;
  struct Count : SseSink {
    std::size_t n = 0, bytes = 0;
    void on_event(const SseEvent& e) override {
      ++n;
      bytes += e.data.size();
    }
  } sink;
  std::string s = ": ping\r\nretry: 1000\r\n";
  for (int i = 0; i < 1000; ++i) {
    const std::string payload = R"({"choices":[{"delta":{"content":"tok)" + std::to_string(i % 10) + R"("}}]})";
    s += "id: " + std::to_string(i % 7) + "\nevent: delta\r\ndata: " + payload + (i % 3 ? "\n\n" : "\r\n\r\n");
  }
  // Warm up: the buffers grow to the longest line and event seen.
  for (std::size_t at = 0; at < s.size(); at += 97) p.feed(std::string_view(s).substr(at, 97), sink);
  EXPECT_FALSE(p.finish());
  p.reset();
  sink.n = sink.bytes = 0;
  const std::size_t before = g_allocations;
  g_count_allocations = true;
  for (std::size_t piece : {61U, 1U, 4096U}) {
    for (std::size_t at = 0; at < s.size(); at += piece) p.feed(std::string_view(s).substr(at, piece), sink);
    p.reset();
  }
  g_count_allocations = false;
  EXPECT_EQ(g_allocations - before, 0U);
  EXPECT_EQ(sink.n, 3000U);
}

}  // namespace
