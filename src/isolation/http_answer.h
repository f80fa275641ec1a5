#pragma once
// The one HTTP answer a probe reads: status, content type and body from raw
// bytes. Pure.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::isolation {

/// An HTTP/1.x response as far as it arrived.
struct HttpAnswer {
  int status = 0;
  std::string reason;        ///< "OK", "Unauthorized"
  std::string content_type;  ///< lower-cased, without parameters ("application/json")
  std::string location;      ///< the Location header of a redirect
  std::string body;          ///< de-chunked; as much as arrived
  bool complete = false;     ///< the whole body arrived (Content-Length, last chunk, or close)
};

/// Parses `raw`; `closed` says the peer closed the connection after it (so a
/// body without length ends there). nullopt when `raw` does not start with an
/// HTTP/1.x status line and headers.
std::optional<HttpAnswer> parse_http_answer(std::string_view raw, bool closed);

/// True when `raw` already holds a whole answer (headers, and a body whose
/// length is known and arrived), so the reader may stop before the peer closes.
bool http_answer_complete(std::string_view raw);

}  // namespace cmax::isolation
