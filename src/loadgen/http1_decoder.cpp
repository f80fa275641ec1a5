#include "loadgen/http1_decoder.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace cmax::loadgen {
namespace {

constexpr std::size_t kMaxHead = 64 * 1024;
constexpr std::size_t kMaxChunkLine = 1024;

// Whether a line (or head) ending in a `terminator_len`-byte terminator is over `max` bytes: when
// the terminator was found at `at`, by where; when not, only once the bytes at hand could no longer
// end within `max`. So the verdict is the same however the bytes were split into reads.
bool over_limit(std::size_t at, std::size_t available, std::size_t max, std::size_t terminator_len) {
  return at != std::string_view::npos ? at > max : available > max + terminator_len - 1;
}

bool iequals_prefix(std::string_view s, std::string_view lower) {
  if (s.size() < lower.size()) return false;
  for (std::size_t i = 0; i < lower.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != lower[i]) return false;
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

// Printable, for an error message quoting the peer's bytes.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

}  // namespace

double retry_after_header(std::string_view line) {
  constexpr std::string_view kName = "retry-after:";
  if (!iequals_prefix(line, kName)) return -1;
  std::string_view value = trim(line.substr(kName.size()));
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.remove_suffix(1);
  double secs = -1;
  auto [q, ec] = std::from_chars(value.data(), value.data() + value.size(), secs);
  return ec == std::errc() && secs >= 0 && secs < 1e9 ? secs : -1;
}

void Http1Decoder::reset() { *this = Http1Decoder(); }

void Http1Decoder::fail(std::string why) {
  state_ = State::kError;
  error_ = std::move(why);
}

bool Http1Decoder::parse_head(std::string_view head) {
  const auto eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.1 200 OK": "HTTP/1.", a digit, a space, three digits.
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ') {
    fail(fmt::format("not an HTTP/1.x response: '{}'", printable(status_line)));
    return false;
  }
  int status = 0;
  auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || p != status_line.data() + 12 || status < 100) {
    fail(fmt::format("bad status line '{}'", printable(status_line)));
    return false;
  }
  Http1Head h;
  h.status = status;
  h.close = status_line[7] == '0';  // HTTP/1.0 closes unless it says keep-alive
  Mode mode = Mode::kClose;
  std::uint64_t length = 0;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    const auto e = rest.find("\r\n");
    const std::string_view line = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals_prefix(line, "transfer-encoding:")) {
      std::string lower(value);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.find("chunked") != std::string::npos) mode = Mode::kChunked;
    } else if (iequals_prefix(line, "content-length:")) {
      std::uint64_t n = 0;
      auto [q, ec2] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec2 != std::errc() || q != value.data() + value.size() || value.empty()) {
        fail(fmt::format("malformed Content-Length '{}'", printable(value)));
        return false;
      }
      if (mode != Mode::kChunked) {  // chunked wins (RFC 9112 6.3)
        mode = Mode::kLength;
        length = n;
      }
    } else if (iequals_prefix(line, "connection:")) {
      if (iequals_prefix(value, "close")) h.close = true;
      else if (iequals_prefix(value, "keep-alive")) h.close = false;
    } else if (const double secs = retry_after_header(line); secs >= 0) {
      h.retry_after_s = secs;
    }
  }
  if (status == 204 || status == 304) {
    mode = Mode::kLength;
    length = 0;
  }
  if (status < 200) return true;  // 1xx: an interim head, the real one follows
  head_ = h;
  mode_ = mode;
  left_ = mode == Mode::kLength ? length : 0;
  chunk_ = Chunk::kSize;
  state_ = State::kBody;
  return true;
}

std::size_t Http1Decoder::feed(std::string_view in, Http1Sink& sink) {
  std::size_t used = 0;
  if (!in.empty()) started_ = true;
  while (state_ == State::kHead) {
    const std::string_view all = in.substr(used);
    const auto end = all.find("\r\n\r\n");
    if (over_limit(end, all.size(), kMaxHead, 4)) {
      fail("response head over 64 KiB");
      return used;
    }
    if (end == std::string_view::npos) return used;
    if (!parse_head(all.substr(0, end))) return used;
    used += end + 4;
    if (state_ == State::kBody) {
      if (!sink.on_head(head_)) {
        state_ = State::kAborted;
        return used;
      }
      if (mode_ == Mode::kLength && left_ == 0) {
        state_ = State::kDone;
        return used;
      }
    }
  }
  while (state_ == State::kBody && used < in.size()) {
    const std::string_view rest = in.substr(used);
    if (mode_ != Mode::kChunked) {
      const std::size_t n = mode_ == Mode::kLength ? static_cast<std::size_t>(std::min<std::uint64_t>(left_, rest.size())) : rest.size();
      used += n;
      if (mode_ == Mode::kLength) left_ -= n;
      if (!sink.on_body(rest.substr(0, n))) {
        state_ = State::kAborted;
        return used;
      }
      if (mode_ == Mode::kLength && left_ == 0) state_ = State::kDone;
      continue;
    }
    switch (chunk_) {
      case Chunk::kSize: {
        const auto eol = rest.find("\r\n");
        if (over_limit(eol, rest.size(), kMaxChunkLine, 2)) {
          fail("chunk size line over 1 KiB");
          return used;
        }
        if (eol == std::string_view::npos) return used;
        std::string_view line = rest.substr(0, eol);
        if (const auto semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
        line = trim(line);
        std::uint64_t size = 0;
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
        if (line.empty() || ec != std::errc() || p != line.data() + line.size()) {
          fail(fmt::format("malformed chunk size '{}'", printable(line)));
          return used;
        }
        used += eol + 2;
        left_ = size;
        chunk_ = size == 0 ? Chunk::kTrailer : Chunk::kData;
        break;
      }
      case Chunk::kData: {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left_, rest.size()));
        used += n;
        left_ -= n;
        if (left_ == 0) chunk_ = Chunk::kDataEnd;
        if (!sink.on_body(rest.substr(0, n))) {
          state_ = State::kAborted;
          return used;
        }
        break;
      }
      case Chunk::kDataEnd:
        if (rest.size() < 2) return used;
        if (rest[0] != '\r' || rest[1] != '\n') {
          fail("a chunk not followed by CRLF");
          return used;
        }
        used += 2;
        chunk_ = Chunk::kSize;
        break;
      case Chunk::kTrailer: {
        const auto eol = rest.find("\r\n");
        if (over_limit(eol, rest.size(), kMaxHead, 2)) {
          fail("trailer over 64 KiB");
          return used;
        }
        if (eol == std::string_view::npos) return used;
        used += eol + 2;
        if (eol == 0) state_ = State::kDone;  // the blank line: the response is whole
        break;
      }
    }
  }
  return used;
}

void Http1Decoder::eof() {
  if (state_ == State::kBody && mode_ == Mode::kClose) {
    state_ = State::kDone;
    return;
  }
  if (state_ == State::kHead || state_ == State::kBody)
    fail(started_ ? "the server closed the connection mid-response" : "the server closed the connection");
}

}  // namespace cmax::loadgen
