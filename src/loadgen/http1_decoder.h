#pragma once
// The HTTP/1.1 response decoder of the native transport: bytes in, the status and the few headers
// a client acts on, then body bytes (Content-Length, chunked or to the close) out. Pure: no I/O,
// no clock; any split of the input gives the same result. Fuzzed (fuzz/http1_fuzz.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cmax::loadgen {

/// The seconds of a "Retry-After: N" header line (any case, trailing CRLF allowed); -1 for another
/// header, an HTTP-date or a value that is not a number of seconds. Shared with the libcurl transport.
double retry_after_header(std::string_view line);

/// What the decoder found in a response head.
struct Http1Head {
  int status = 0;
  bool close = false;         ///< Connection: close, or HTTP/1.0 without keep-alive
  double retry_after_s = -1;  ///< Retry-After in seconds; -1 none (an HTTP-date is ignored)
};

/// Receives a response's parts. Views are valid only during the call.
class Http1Sink {
 public:
  virtual ~Http1Sink() = default;
  /// The final (non-1xx) head. Return false to stop decoding (the decoder then reports kAborted).
  virtual bool on_head(const Http1Head& head) = 0;
  /// A piece of the de-chunked body. Return false to stop.
  virtual bool on_body(std::string_view bytes) = 0;
};

class Http1Decoder {
 public:
  enum class State { kHead, kBody, kDone, kError, kAborted };

  /// Decodes what it can of `in` (the unread bytes of the connection) and returns how many bytes it
  /// consumed; the caller keeps the rest and passes it again with more. Stops at kDone (bytes after
  /// the response stay unconsumed), kError or kAborted.
  std::size_t feed(std::string_view in, Http1Sink& sink);
  /// The connection reached EOF: a body delimited by the close is then done; anything else
  /// incomplete becomes kError ("closed mid-response").
  void eof();
  /// For the next response on the same connection.
  void reset();

  State state() const { return state_; }
  const std::string& error() const { return error_; }
  const Http1Head& head() const { return head_; }
  /// Whether the connection may carry another request after kDone.
  bool reusable() const { return state_ == State::kDone && !head_.close && mode_ != Mode::kClose; }
  /// Whether any byte of a response was seen (a pooled connection that died before one may be retried).
  bool started() const { return started_; }

 private:
  enum class Mode { kLength, kChunked, kClose };
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };
  bool parse_head(std::string_view head);
  void fail(std::string why);

  State state_ = State::kHead;
  Mode mode_ = Mode::kClose;
  Chunk chunk_ = Chunk::kSize;
  std::uint64_t left_ = 0;
  bool started_ = false;
  Http1Head head_;
  std::string error_;
};

}  // namespace cmax::loadgen
