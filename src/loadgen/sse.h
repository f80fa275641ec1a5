#pragma once
// An incremental server-sent-events parser (WHATWG HTML "server-sent events", section 9.2.6):
// bytes arrive in any split; complete events come out. Pure: no I/O, no clock.

#include <cstddef>
#include <string>
#include <string_view>

namespace cmax::loadgen {

/// One dispatched event. `data` is the data lines joined with "\n" (no trailing newline).
struct SseEvent {
  std::string_view event;  ///< the `event:` field; "" = "message"
  std::string_view data;
  std::string_view id;     ///< the last `id:` seen (sticky, as the spec says)
};

/// Receives events; the views are valid only during the call.
class SseSink {
 public:
  virtual ~SseSink() = default;
  virtual void on_event(const SseEvent& event) = 0;
};

/// Feed it bytes; it calls the sink once per complete event (dispatched at a blank line).
/// Handles "\n", "\r\n" and "\r" line ends (also split between feeds), a UTF-8 BOM at the start,
/// comments (":" lines: keep-alives, counted), fields without a colon, one leading space after the
/// colon, several data lines, `retry:` (kept), unknown fields (ignored), and an event with no data
/// lines (not dispatched, per spec). A line longer than `max_line_bytes` or an event whose data grows
/// past `max_event_bytes` sets overflow() and the parser ignores everything after (the caller fails
/// the response as a protocol error). Allocation-free once its buffers have grown.
class SseParser {
 public:
  explicit SseParser(std::size_t max_event_bytes = std::size_t{16} << 20,
                     std::size_t max_line_bytes = std::size_t{16} << 20);
  void feed(std::string_view bytes, SseSink& sink);
  /// End of stream. Returns true when a partial event or line was pending (it is discarded, as the
  /// spec says): a stream cut mid-event.
  bool finish();
  /// Back to the initial state (buffers keep their capacity), for the next response.
  void reset();

  std::size_t events() const { return events_; }      ///< dispatched so far
  std::size_t comments() const { return comments_; }  ///< comment lines (keep-alives)
  long retry_ms() const { return retry_ms_; }         ///< last valid `retry:`, -1 none
  bool overflow() const { return overflow_; }

 private:
  void feed_lines(std::string_view bytes, SseSink& sink);
  /// `in_bytes`: l points into the bytes of this feed() (not into pending_), so a view may be kept.
  void line(std::string_view l, bool in_bytes, SseSink& sink);
  std::size_t max_event_bytes_, max_line_bytes_;
  std::string pending_;  ///< an unterminated line carried between feeds
  std::string data_, event_, id_;
  std::string_view data_view_;  ///< the event's one data line, in the bytes being fed, when data_viewed_
  bool data_viewed_ = false;
  bool has_data_ = false, started_ = false, after_cr_ = false, overflow_ = false;
  std::size_t events_ = 0, comments_ = 0;
  long retry_ms_ = -1;
};

}  // namespace cmax::loadgen
