// Http1Decoder: the native transport's response decoder. Each case is also fed in every split.

#include <gtest/gtest.h>

#include <string>

#include "loadgen/http1_decoder.h"

namespace {

using cmax::loadgen::Http1Decoder;
using cmax::loadgen::Http1Head;
using cmax::loadgen::Http1Sink;
using State = Http1Decoder::State;

struct Collect final : Http1Sink {
  std::string body;
  int heads = 0;
  bool stop_at_body = false;
  bool on_head(const Http1Head&) override {
    ++heads;
    return true;
  }
  bool on_body(std::string_view b) override {
    body.append(b);
    return !stop_at_body;
  }
};

struct Outcome {
  State state;
  std::string body;
  std::size_t left;  // unconsumed bytes
  Http1Decoder dec;
};

// Feeds `in` as a connection would: whatever is unconsumed is kept and passed again with more.
Outcome run(const std::string& in, std::size_t piece, bool eof = false) {
  Outcome o{State::kHead, "", 0, {}};
  Collect sink;
  std::string pending;
  for (std::size_t at = 0; at < in.size(); at += piece) {
    pending += in.substr(at, piece);
    pending.erase(0, o.dec.feed(pending, sink));
    if (o.dec.state() != State::kHead && o.dec.state() != State::kBody) break;
  }
  if (eof) o.dec.eof();
  o.state = o.dec.state();
  o.body = sink.body;
  o.left = pending.size();
  return o;
}

void every_split(const std::string& in, State want, const std::string& body, bool eof = false) {
  for (std::size_t piece = 1; piece <= in.size(); ++piece) {
    auto o = run(in, piece, eof);
    ASSERT_EQ(o.state, want) << "piece " << piece << ": " << o.dec.error();
    EXPECT_EQ(o.body, body) << "piece " << piece;
  }
}

TEST(Http1Decoder, ContentLength) {
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello";
  every_split(r, State::kDone, "hello");
  auto o = run(r + "HTTP/1.1", r.size() + 8);
  EXPECT_EQ(o.left, 8u) << "bytes after the response stay unconsumed";
  EXPECT_TRUE(o.dec.reusable());
  EXPECT_EQ(o.dec.head().status, 200);
}

TEST(Http1Decoder, ChunkedWithExtensionsAndTrailer) {
  const std::string r =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\ndata: \r\n15;ext=1\r\n{\"x\":1}\n\nmore bytes h\r\n0\r\nX-Trailer: y\r\n\r\n";
  every_split(r, State::kDone, "data: {\"x\":1}\n\nmore bytes h");
  EXPECT_TRUE(run(r, r.size()).dec.reusable());
}

TEST(Http1Decoder, ChunkedWinsOverContentLength) {
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  every_split(r, State::kDone, "abc");
}

TEST(Http1Decoder, CloseDelimitedEndsAtEof) {
  const std::string r = "HTTP/1.0 200 OK\r\n\r\nuntil the end";
  every_split(r, State::kDone, "until the end", /*eof=*/true);
  auto o = run(r, 3, true);
  EXPECT_FALSE(o.dec.reusable());
  EXPECT_TRUE(o.dec.head().close);
}

TEST(Http1Decoder, EofMidResponseIsAnError) {
  auto o = run("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 4, true);
  EXPECT_EQ(o.state, State::kError);
  EXPECT_NE(o.dec.error().find("mid-response"), std::string::npos);
  EXPECT_TRUE(o.dec.started());
  Http1Decoder fresh;
  fresh.eof();
  EXPECT_EQ(fresh.state(), State::kError);
  EXPECT_FALSE(fresh.started()) << "a pooled connection closed before any byte may be retried";
}

TEST(Http1Decoder, InterimHeadsAreSkipped) {
  every_split("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length: 2\r\n\r\n{}",
              State::kDone, "{}");
  auto o = run("HTTP/1.1 429 Too Many Requests\r\nretry-after:  1.5\r\nContent-Length: 0\r\n\r\n", 100);
  EXPECT_EQ(o.dec.head().status, 429);
  EXPECT_DOUBLE_EQ(o.dec.head().retry_after_s, 1.5);
}

TEST(Http1Decoder, NoBodyStatusesAndConnectionClose) {
  every_split("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", State::kDone, "");
  auto o = run("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 64);
  EXPECT_EQ(o.state, State::kDone);
  EXPECT_FALSE(o.dec.reusable());
  auto k = run("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", 64);
  EXPECT_TRUE(k.dec.reusable());
}

TEST(Http1Decoder, MalformedInputIsAnErrorNamingIt) {
  struct Case {
    std::string in, says;
  };
  for (const auto& c : std::initializer_list<Case>{
           {"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x response"},
           {"HTTP/1.1 2x0 OK\r\n\r\n", "bad status line"},
           {"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "malformed Content-Length"},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", "not followed by CRLF"},
       }) {
    auto o = run(c.in, c.in.size());
    EXPECT_EQ(o.state, State::kError) << c.in;
    EXPECT_NE(o.dec.error().find(c.says), std::string::npos) << o.dec.error();
  }
  auto big = run("HTTP/1.1 200 OK\r\nX: " + std::string(70 * 1024, 'a'), 4096);
  EXPECT_EQ(big.state, State::kError);
  EXPECT_NE(big.dec.error().find("64 KiB"), std::string::npos);
}

TEST(Http1Decoder, TheSinkCanStopIt) {
  Http1Decoder d;
  Collect sink;
  sink.stop_at_body = true;
  d.feed("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", sink);
  EXPECT_EQ(d.state(), State::kAborted);
  d.reset();
  EXPECT_EQ(d.state(), State::kHead);
  EXPECT_FALSE(d.started());
}

}  // namespace

namespace {

TEST(Http1Decoder, RetryAfterHeaderLinesAsBothTransportsReadThem) {
  using cmax::loadgen::retry_after_header;
  EXPECT_DOUBLE_EQ(retry_after_header("Retry-After: 2\r\n"), 2);  // libcurl hands lines with CRLF
  EXPECT_DOUBLE_EQ(retry_after_header("retry-after:0.5"), 0.5);
  EXPECT_EQ(retry_after_header("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT"), -1);
  EXPECT_EQ(retry_after_header("Retry-After: -3"), -1);
  EXPECT_EQ(retry_after_header("Content-Length: 2"), -1);
}

}  // namespace

namespace {
// The limits on a chunk-size line (1 KiB) and a head (64 KiB) give the same verdict however the
// bytes arrive (fuzz_http1 found a line over the limit called "malformed" when read whole and
// "over 1 KiB" when read in pieces): exactly at the limit passes, one byte over fails, either way.
TEST(Http1Decoder, LineLimitsHoldTheSameWhateverTheReads) {
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string at_limit = head + "1;" + std::string(1024 - 2, 'x') + "\r\na\r\n0\r\n\r\n";
  const std::string over = head + "1;" + std::string(1024 - 1, 'x') + "\r\na\r\n0\r\n\r\n";
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, at_limit.size()}) {
    auto ok = run(at_limit, piece);
    EXPECT_EQ(ok.state, State::kDone) << "piece " << piece << ": " << ok.dec.error();
    EXPECT_EQ(ok.body, "a");
    auto bad = run(over, piece);
    EXPECT_EQ(bad.state, State::kError) << "piece " << piece;
    EXPECT_EQ(bad.dec.error(), "chunk size line over 1 KiB") << "piece " << piece;
  }
  const std::string big_head = "HTTP/1.1 200 OK\r\nX: " + std::string(64 * 1024, 'h') + "\r\nContent-Length: 0\r\n\r\n";
  for (std::size_t piece : {std::size_t{4096}, big_head.size()}) {
    auto o = run(big_head, piece);
    EXPECT_EQ(o.state, State::kError) << "piece " << piece;
    EXPECT_EQ(o.dec.error(), "response head over 64 KiB") << "piece " << piece;
  }
}
}  // namespace
