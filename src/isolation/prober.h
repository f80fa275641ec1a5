#pragma once
// The prober: many TCP connects at once on one epoll loop, bounded in
// concurrency, rate, per-probe time and total time, then at most one request
// and one bounded read per open port: in clear, over TLS (OpenSSL, no
// certificate check: the question is whether the service answers without
// credentials, and none are sent), or one UDP datagram and its answer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "isolation/scope.h"

namespace cmax::isolation {

/// How a probe talks to its port.
enum class Wire : std::uint8_t {
  tcp,  ///< TCP; the request (if any) in clear
  tls,  ///< TCP, then a TLS handshake, then the request inside it
  udp,  ///< one datagram, then at most one datagram back
};

/// One address and port, and the bytes to send once connected (empty: connect
/// only; a UDP target always sends).
struct ProbeTarget {
  Ipv4 addr = 0;
  std::uint16_t port = 0;
  std::string request;
  Wire wire = Wire::tcp;
};

/// How a connect ended.
enum class Reach : std::uint8_t {
  open,         ///< connected (the answer, if any, is in ProbeResult::answer); UDP: answered
  closed,       ///< refused (RST; UDP: ICMP port unreachable): nothing listens, or a firewall
                ///< rejects
  filtered,     ///< no answer before the connect timeout (UDP: the answer timeout): dropped on
                ///< the way, or (UDP) nothing listens and no ICMP came back
  unreachable,  ///< a router or this host's ARP said the host cannot be reached
  error,        ///< the probe could not run here (no route, permission, out of
                ///< sockets)
  skipped,      ///< not probed: the global deadline passed first
};

/// "open", "closed", ...
std::string_view to_string(Reach r);

/// What one probe saw.
struct ProbeResult {
  Reach reach = Reach::skipped;
  std::string detail;             ///< errno text or why, for closed/unreachable/error/skipped
  int error_number = 0;           ///< the errno behind closed/unreachable/error, else 0
  std::string answer;             ///< bytes read after the request, at most max_answer_bytes
  bool answer_closed = false;     ///< the peer closed the connection after `answer`
  bool answer_timed_out = false;  ///< the answer did not complete within io_timeout
  std::chrono::microseconds connect_time{0};
  std::string tls_peer;   ///< TLS: the server certificate's subject ("CN=kube-apiserver")
  std::string tls_error;  ///< TLS: why the handshake failed (then `answer` is empty)
};

/// Bounds of one run. Every probe ends by connect_timeout + io_timeout; the run
/// by deadline.
struct ProberOptions {
  int concurrency = 256;  ///< sockets in flight at most
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds io_timeout{1000};  ///< to send the request and read the answer
  std::chrono::milliseconds deadline{120000};  ///< the whole run
  double rate_per_s = 4000;                    ///< connects started per second at most
  std::size_t max_answer_bytes = 64 * 1024;
};

/// The results, index for index with the targets.
struct ProbeRun {
  std::vector<ProbeResult> results;
  std::chrono::microseconds wall{0};
  bool deadline_hit = false;
};

/// Probes every target within the bounds. Fails only when the event loop cannot
/// be set up; every problem with a target is in its result. Blocks the calling
/// thread; uses no other thread.
Result<ProbeRun> probe_all(const std::vector<ProbeTarget> &targets, const ProberOptions &options);

}  // namespace cmax::isolation
