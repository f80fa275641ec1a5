#pragma once
// The opt-in egress canary of `cmax audit isolation --egress-canary URL`: one GET to a URL the
// user owns, to learn whether a tenant here reaches the internet. No credentials, no cookies, no
// .netrc, no redirects followed; the proxy settings of the environment are honoured, since a
// tenant's own programs would use them.

#include <chrono>
#include <string>
#include <string_view>

#include "audit/model.h"
#include "core/result.h"

namespace cmax::isolation {

/// How the one request ended.
struct EgressResult {
  bool ran = false;        ///< false: the request could not even be set up (then `detail` says why)
  bool reached = false;    ///< a TCP connection to the URL's host (or the proxy) came up
  int http_status = 0;     ///< 0 when no HTTP answer arrived
  bool resolve_failed = false;  ///< the host name did not resolve
  std::string detail;      ///< libcurl's message for a failure
  std::string remote_ip;   ///< where the connection went (the proxy, when one is used)
  bool via_proxy = false;  ///< an http(s)_proxy / all_proxy variable applied
  std::chrono::milliseconds elapsed{0};
};

/// Accepts http:// and https:// URLs without user:password@; the error says what to pass.
Result<void> check_canary_url(std::string_view url);

/// Sends the one GET, bounded by `timeout` in all; blocks the calling thread.
EgressResult probe_egress(const std::string& url, std::chrono::milliseconds timeout);

/// Pure: the finding isolation.egress.canary. An empty `url` means not asked (not_applicable).
audit::Finding judge_egress(std::string_view url, const EgressResult& result);

}  // namespace cmax::isolation
