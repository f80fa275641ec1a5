#include "isolation/egress.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <span>
#include <mutex>

#include "isolation/finding.h"

namespace cmax::isolation {
namespace {

using audit::Outcome;

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }

bool proxy_env_set(std::string_view url) {
  const char* names_http[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
  const char* names_https[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
  bool https = url.starts_with("https://");
  for (const char* n : https ? std::span<const char*>(names_https) : std::span<const char*>(names_http))
    if (const char* v = std::getenv(n); v && *v) return true;
  return false;
}

bool connected_error(CURLcode c) {
  switch (c) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<void> check_canary_url(std::string_view url) {
  if (!url.starts_with("http://") && !url.starts_with("https://"))
    return fail("read --egress-canary {}: want an http:// or https:// URL of a server you own", url);
  auto rest = url.substr(url.find("//") + 2);
  auto authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    return fail("read --egress-canary: the URL carries credentials (user@); cmax never sends any, "
                "give the URL without them");
  if (authority.empty()) return fail("read --egress-canary {}: no host", url);
  return {};
}

EgressResult probe_egress(const std::string& url, std::chrono::milliseconds timeout) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  EgressResult r;
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) {
    r.detail = "cannot set up libcurl";
    return r;
  }
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cmax-audit-isolation egress canary");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &discard);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(1 << 20));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  r.via_proxy = proxy_env_set(url);
  const auto t0 = std::chrono::steady_clock::now();
  CURLcode code = curl_easy_perform(c);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  r.ran = true;
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  r.http_status = static_cast<int>(status);
  if (char* ip = nullptr; curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip) r.remote_ip = ip;
  r.reached = r.http_status > 0 || code == CURLE_OK || connected_error(code);
  r.resolve_failed = code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
  if (code != CURLE_OK) r.detail = error[0] ? std::string(error) : std::string(curl_easy_strerror(code));
  return r;
}

audit::Finding judge_egress(std::string_view url, const EgressResult& r) {
  audit::Finding f = security_finding("isolation.egress.canary", "Egress from a tenant to the internet",
                                      "Security: egress from tenants restricted or alerted on");
  f.expected = "blocked, or allowed only through a proxy whose use is logged and alerted on";
  f.description =
      "One GET to a URL the user owns, sent only with --egress-canary: an AI agent or a "
      "compromised job that reaches the internet can pull tools and push data out. Whether "
      "anyone is alerted is not visible from here; the canary's own server log tells.";
  f.remediation =
      "Deny egress from tenant networks by default (a firewall or a network policy), and route "
      "what must reach out through a proxy with logging and alerts.";
  if (url.empty()) {
    f.outcome = Outcome::not_applicable;
    f.reason = "not asked: pass --egress-canary URL (one GET to a server you own) to test egress";
    return f;
  }
  f.evidence_source = fmt::format("GET {}{}", url, r.via_proxy ? " (through the environment's proxy)" : "");
  if (!r.ran) {
    f.outcome = Outcome::unverified;
    f.observed = "the request was not sent";
    f.reason = fmt::format("the canary could not run: {}", r.detail);
    return f;
  }
  const std::string where = r.remote_ip.empty() ? "" : fmt::format(" ({})", r.remote_ip);
  if (r.http_status > 0) {
    f.outcome = Outcome::warn;
    f.observed = fmt::format("reached: HTTP {} in {} ms{}{}", r.http_status, r.elapsed.count(), where,
                             r.via_proxy ? " through a proxy" : "");
    f.evidence_value = f.observed;
    f.reason = "a tenant here reaches the canary URL; check the canary's server log for this request "
               "and whether anyone was alerted";
    return f;
  }
  if (r.reached) {
    f.outcome = Outcome::warn;
    f.observed = fmt::format("reached{}, but no HTTP answer: {}", where, r.detail);
    f.evidence_value = r.detail;
    f.reason = "a connection to the canary's host came up (TLS or HTTP then failed): egress is open";
    return f;
  }
  if (r.resolve_failed) {
    f.outcome = Outcome::unverified;
    f.observed = fmt::format("not reached: {}", r.detail);
    f.evidence_value = r.detail;
    f.reason = "the canary's host name does not resolve here, which says nothing about egress to "
               "addresses; give a URL with an IP address";
    return f;
  }
  f.outcome = Outcome::pass;
  f.observed = fmt::format("not reached in {} ms: {}", r.elapsed.count(), r.detail);
  f.evidence_value = r.detail;
  f.reason = "the canary URL could not be reached from here";
  return f;
}

}  // namespace cmax::isolation
