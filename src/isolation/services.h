#pragma once
// The service table of `cmax audit isolation`: which port, which single
// read-only request, and a pure classifier that turns the answer into an
// outcome. Adding a service is adding a row.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "audit/model.h"
#include "isolation/http_answer.h"
#include "isolation/prober.h"
#include "isolation/scope.h"

namespace cmax::isolation {

/// The link-local cloud metadata address, probed unless --no-metadata.
inline constexpr Ipv4 kMetadataAddress = 0xA9FEA9FEu;  // 169.254.169.254

/// What a probe sends once the TCP connection is up.
enum class Request : std::uint8_t {
  connect_only,  ///< nothing: an open port is the finding (Slurm daemons)
  http_get,      ///< one plain-HTTP GET of `path`, no credentials, no redirects
                 ///< followed
  https_get,     ///< the same GET inside TLS (no certificate check: nothing secret is sent)
  udp,           ///< one UDP datagram (build_request), its one answer judged by classify_bytes
};

/// A classifier's conclusion about one answer.
struct Verdict {
  audit::Outcome outcome = audit::Outcome::unverified;
  std::string observed;  ///< what the answer showed, in words ("dashboards
                         ///< listable: 3 entries")
};

/// Pure: the answer to the service's GET -> verdict.
using Classifier = Verdict (*)(const HttpAnswer &answer);
/// Pure: the datagram a UDP service sent back -> verdict.
using BytesClassifier = Verdict (*)(std::string_view answer);

/// One probed service.
struct Service {
  std::string_view key;    ///< "grafana": --ports name and finding id part
  std::string_view check;  ///< "anonymous": what the finding asks
  std::uint16_t port;
  std::string_view title;
  Request request;
  std::string_view path;         ///< the GET path for http_get
  Classifier classify;           ///< for http_get and https_get; nullptr otherwise
  audit::Outcome when_open;      ///< connect_only: the outcome for an open port
  bool metadata_only;            ///< probed on kMetadataAddress, never on the scopes
  bool by_default;               ///< probed without --ports (Redfish and IPMI are opt-in: BMC
                                 ///< ranges only)
  std::string_view description;  ///< what it checks and why it matters
  std::string_view remediation;
  std::string_view cve;  ///< a CVE the finding relates to, or empty
  BytesClassifier classify_bytes = nullptr;  ///< for udp
  std::string (*datagram)() = nullptr;       ///< for udp: the bytes of its one request
};

/// Every service, in report order.
std::span<const Service> all_services();

/// The service with this key ("grafana") or port ("3000"), or nullptr.
const Service *find_service(std::string_view key_or_port);

/// "isolation.grafana.anonymous": the id of the service's summary finding.
std::string service_check_id(const Service &service);

/// The bytes of the service's one request to `host` (empty for connect_only).
std::string build_request(const Service &service, std::string_view host);

/// How the prober carries the service's request (tcp, tls, udp).
Wire wire_of(const Service &service);

/// "GET /api/search", "TLS, then GET /pods", "TCP connect only", "UDP: IPMI Get Channel
/// Authentication Capabilities": for plans and evidence.
std::string describe_request(const Service &service);

/// "udp" for UDP services, "tcp" otherwise.
std::string_view protocol_name(const Service &service);

/// The number of top-level elements of a JSON array text ("[{..},{..}]" -> 2),
/// or nullopt when `body` is not an array. Pure; tolerant of truncation (counts
/// what arrived).
std::optional<int> json_array_length(std::string_view body);

}  // namespace cmax::isolation
