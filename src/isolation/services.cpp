#include "isolation/services.h"

#include <fmt/format.h>

#include <array>

#include "core/strings.h"
#include "isolation/ipmi.h"

namespace cmax::isolation {
namespace {

using audit::Outcome;

std::string status_text(const HttpAnswer &a) {
  return a.reason.empty() ? fmt::format("HTTP {}", a.status)
                          : fmt::format("HTTP {} {}", a.status, a.reason);
}

bool refused(const HttpAnswer &a) { return a.status == 401 || a.status == 403; }

bool login_redirect(const HttpAnswer &a) {
  return a.status >= 300 && a.status < 400 && core::contains_icase(a.location, "login");
}

Verdict unrecognised(const HttpAnswer &a, std::string_view what) {
  return {Outcome::warn,
          fmt::format("reachable; answered {}, not recognised as {}", status_text(a), what)};
}

// The string value of "key": "value" in a JSON text, without a JSON library
// (one flat key).
std::string json_string_field(std::string_view body, std::string_view key) {
  auto k = body.find(fmt::format("\"{}\"", key));
  if (k == std::string_view::npos) return {};
  auto colon = body.find(':', k);
  if (colon == std::string_view::npos) return {};
  auto open = body.find('"', colon);
  if (open == std::string_view::npos) return {};
  auto close = body.find('"', open + 1);
  if (close == std::string_view::npos || close - open > 64) return {};
  return std::string(body.substr(open + 1, close - open - 1));
}

Verdict grafana(const HttpAnswer &a) {
  if (refused(a) || login_redirect(a))
    return {Outcome::pass, fmt::format("login required ({})", status_text(a))};
  if (a.status == 200) {
    if (auto n = json_array_length(a.body)) {
      if (*n == 0)
        return {Outcome::warn, "anonymous API access allowed; the search lists no dashboards"};
      return {Outcome::fail, fmt::format("dashboards listable without a login: {} entries", *n)};
    }
  }
  return unrecognised(a, "Grafana's search API");
}

Verdict prometheus(const HttpAnswer &a) {
  if (refused(a) || login_redirect(a))
    return {Outcome::pass, fmt::format("authentication required ({})", status_text(a))};
  if (a.status == 200 && core::contains_icase(a.body, "\"success\"")) {
    std::string version = json_string_field(a.body, "version");
    return {Outcome::fail, fmt::format("Prometheus API answers without authentication (version {})",
                                       version.empty() ? "unknown" : version)};
  }
  return unrecognised(a, "Prometheus's buildinfo API");
}

Verdict metrics(const HttpAnswer &a, std::string_view marker, std::string_view what) {
  if (refused(a))
    return {Outcome::pass, fmt::format("authentication required ({})", status_text(a))};
  if (a.status == 200 && a.body.find(marker) != std::string::npos)
    return {Outcome::warn, fmt::format("{} readable without authentication", what)};
  if (a.status == 200) return {Outcome::warn, "metrics endpoint readable without authentication"};
  return unrecognised(a, "a metrics exporter");
}

Verdict node_exporter(const HttpAnswer &a) { return metrics(a, "node_", "node exporter metrics"); }
Verdict dcgm_exporter(const HttpAnswer &a) { return metrics(a, "DCGM_", "GPU (DCGM) metrics"); }

Verdict jupyter(const HttpAnswer &a) {
  if (refused(a) || login_redirect(a))
    return {Outcome::pass, fmt::format("token required ({})", status_text(a))};
  if (a.status == 200 && json_array_length(a.body))
    return {Outcome::fail,
            "kernels listable without a token: anyone here can "
            "run code in this Jupyter server"};
  return unrecognised(a, "Jupyter's kernels API");
}

Verdict ray(const HttpAnswer &a) {
  if (refused(a) || login_redirect(a))
    return {Outcome::pass, fmt::format("authentication required ({})", status_text(a))};
  if (a.status == 200) {
    std::string version = json_string_field(a.body, "ray_version");
    return {Outcome::fail, fmt::format("Ray dashboard API answers without authentication (Ray "
                                       "{}); its job API "
                                       "runs code",
                                       version.empty() ? "version unknown" : version)};
  }
  return unrecognised(a, "Ray's dashboard API");
}

Verdict etcd(const HttpAnswer &a) {
  if (refused(a))
    return {Outcome::pass, fmt::format("authentication required ({})", status_text(a))};
  if (a.status == 200 && core::contains_icase(a.body, "etcdserver")) {
    std::string version = json_string_field(a.body, "etcdserver");
    return {Outcome::fail, fmt::format("etcd answers over plain HTTP without a "
                                       "client certificate (version {})",
                                       version.empty() ? "unknown" : version)};
  }
  return unrecognised(a, "etcd's version endpoint");
}

Verdict kubelet_readonly(const HttpAnswer &a) {
  if (refused(a))
    return {Outcome::pass, fmt::format("authentication required ({})", status_text(a))};
  if (a.status == 200 && core::contains_icase(a.body, "PodList"))
    return {Outcome::fail,
            "the kubelet's read-only port lists this node's "
            "pods without authentication"};
  return unrecognised(a, "the kubelet's read-only API");
}

Verdict kubelet(const HttpAnswer &a) {
  if (a.status == 401)
    return {Outcome::pass, "anonymous requests refused (HTTP 401: anonymous authentication is off)"};
  if (a.status == 403)
    return {Outcome::pass,
            "anonymous requests are authenticated as system:anonymous and denied (HTTP 403); "
            "authentication.anonymous.enabled=false would refuse them before authorization"};
  if (a.status == 200 && core::contains_icase(a.body, "PodList"))
    return {Outcome::fail,
            "the kubelet API lists this node's pods without credentials: anonymous "
            "authentication with AlwaysAllow authorization, so exec into every pod works too"};
  return unrecognised(a, "the kubelet's HTTPS API");
}

Verdict kube_apiserver(const HttpAnswer &a) {
  if (a.status == 401)
    return {Outcome::pass, "anonymous requests refused (HTTP 401: --anonymous-auth=false)"};
  if (a.status == 403)
    return {Outcome::pass,
            "anonymous requests reach authorization and are denied (HTTP 403): system:anonymous "
            "holds no rights on namespaces"};
  if (a.status == 200 && core::contains_icase(a.body, "NamespaceList"))
    return {Outcome::fail,
            "anonymous requests list the cluster's namespaces: system:anonymous (or "
            "system:unauthenticated) is bound to a role that can read the cluster"};
  return unrecognised(a, "the Kubernetes API");
}

Verdict redfish(const HttpAnswer &a) {
  if (a.status == 200 && (core::contains_icase(a.body, "\"Members\"") || core::contains_icase(a.body, "@odata")))
    return {Outcome::fail,
            "a BMC lists its systems without credentials (Redfish /redfish/v1/Systems answered 200)"};
  if (refused(a))
    return {Outcome::fail,
            fmt::format("a BMC's Redfish service is reachable from here (login required, {}): a "
                        "tenant network must not reach BMCs at all",
                        status_text(a))};
  return unrecognised(a, "a Redfish service");
}

Verdict ipmi(std::string_view datagram) {
  auto caps = parse_ipmi_auth_caps(datagram);
  if (!caps)
    return {Outcome::warn, fmt::format("UDP 623 answered {} bytes that are not an IPMI answer",
                                       datagram.size())};
  std::string what = describe(*caps);
  if (caps->anonymous_login || caps->null_usernames)
    return {Outcome::fail, fmt::format("a BMC answers IPMI over LAN from here and admits logins "
                                       "without a user name: {}",
                                       what)};
  return {Outcome::fail, fmt::format("a BMC answers IPMI over LAN from here: {}; a tenant network "
                                     "must not reach BMCs (IPMI 2.0's RAKP exchange gives away "
                                     "password hashes to anyone who asks)",
                                     what)};
}

Verdict metadata(const HttpAnswer &a) {
  if (a.status == 401)
    return {Outcome::pass, "reachable; a session token is required (IMDSv2-style, HTTP 401)"};
  if (a.status == 403 || a.status == 400)
    return {Outcome::pass,
            fmt::format("reachable; the request without a token or header was refused ({})",
                        status_text(a))};
  if (a.status == 200)
    return {Outcome::fail,
            "the metadata listing answers without a token "
            "(IMDSv1-style): any process here can read "
            "the instance's metadata, credentials included"};
  return {Outcome::warn, fmt::format("metadata address reachable; answered {} "
                                     "to the listing, could not tell "
                                     "whether a token is required",
                                     status_text(a))};
}

constexpr std::string_view kFirewall =
    "Keep the port off the tenant network: a network policy or firewall rule "
    "that admits only the hosts that "
    "need it, and authentication on the service itself.";

const std::array kServices = {
    Service{"kubelet", "anonymous", 10250, "Kubelet API answers anonymous requests",
            Request::https_get, "/pods", kubelet, Outcome::unverified, false, true,
            "The kubelet's HTTPS API (10250) runs commands in pods when anonymous "
            "authentication is on and authorization is AlwaysAllow. One anonymous "
            "GET /pods over TLS tells which.",
            "Set the kubelet's authentication.anonymous.enabled=false and "
            "authorization.mode=Webhook; firewall "
            "10250 from tenant networks.",
            ""},
    Service{"kubelet_readonly", "open", 10255,
            "Kubelet read-only port lists pods without authentication", Request::http_get, "/pods",
            kubelet_readonly, Outcome::unverified, false, true,
            "The kubelet's read-only port (10255) has no authentication: it "
            "lists every pod on the node with its "
            "environment and mounts.",
            "Set readOnlyPort: 0 in the kubelet configuration.", ""},
    Service{"etcd", "open", 2379, "etcd answers without a client certificate", Request::http_get,
            "/version", etcd, Outcome::unverified, false, true,
            "etcd holds every Kubernetes object, secrets included. Answering "
            "plain HTTP without a client "
            "certificate means anyone who reaches it can read the cluster.",
            "Serve etcd with --client-cert-auth and TLS only, and firewall "
            "2379 to the API servers.",
            ""},
    Service{"kube_apiserver", "anonymous", 6443, "Kubernetes API answers anonymous requests",
            Request::https_get, "/api/v1/namespaces?limit=1", kube_apiserver, Outcome::unverified,
            false, true,
            "The Kubernetes API (6443). One anonymous GET of the namespace list over TLS "
            "tells whether anonymous requests are refused (401), denied (403) or served.",
            "Run the API server with --anonymous-auth=false or bind anonymous "
            "to nothing; restrict who reaches "
            "6443.",
            ""},
    Service{"grafana", "anonymous", 3000, "Grafana lists dashboards without a login",
            Request::http_get, "/api/search", grafana, Outcome::unverified, false, true,
            "A Grafana that lists dashboards anonymously shows a tenant the "
            "cluster's (and its neighbours') "
            "monitoring.",
            "Set [auth.anonymous] enabled = false in grafana.ini, and keep "
            "Grafana off tenant networks.",
            "CVE-2021-43798"},
    Service{"prometheus", "open", 9090, "Prometheus API answers without authentication",
            Request::http_get, "/api/v1/status/buildinfo", prometheus, Outcome::unverified, false,
            true,
            "An open Prometheus API lets a tenant query every metric the "
            "cluster collects: other tenants' job "
            "names, hosts and usage.",
            "Put Prometheus behind authentication (a reverse proxy or "
            "web.config basic auth) and off tenant "
            "networks.",
            ""},
    Service{"dcgm_exporter", "open", 9400, "DCGM exporter metrics readable", Request::http_get,
            "/metrics", dcgm_exporter, Outcome::unverified, false, true,
            "GPU metrics of other nodes (utilisation, memory, processes) "
            "readable from a tenant.",
            kFirewall, ""},
    Service{"node_exporter", "open", 9100, "Node exporter metrics readable", Request::http_get,
            "/metrics", node_exporter, Outcome::unverified, false, true,
            "Host metrics of other nodes (mounts, interfaces, load) readable "
            "from a tenant.",
            kFirewall, ""},
    Service{"jupyter", "anonymous", 8888, "Jupyter server runs code without a token",
            Request::http_get, "/api/kernels", jupyter, Outcome::unverified, false, true,
            "A Jupyter server that lists kernels without a token runs anyone's "
            "code as its owner.",
            "Start Jupyter with a token or password (the default), bind it to "
            "localhost, reach it through SSH.",
            ""},
    Service{"ray", "dashboard", 8265, "Ray dashboard reachable without authentication",
            Request::http_get, "/api/version", ray, Outcome::unverified, false, true,
            "The Ray dashboard's job API runs arbitrary code and has no "
            "authentication (CVE-2023-48022, "
            "disputed, not fixed): it must not be reachable.",
            "Bind the dashboard to localhost (--dashboard-host=127.0.0.1) and "
            "firewall 8265.",
            "CVE-2023-48022"},
    Service{"slurmctld", "reachable", 6817, "slurmctld port reachable", Request::connect_only, "",
            nullptr, Outcome::warn, false, true,
            "slurmctld (6817) reachable. Compute and login nodes need it; "
            "other tenants' networks should not "
            "reach it. Connect only: nothing is sent.",
            "Firewall 6817 to the cluster's own nodes; keep Slurm at a fixed "
            "release (CVE-2023-49933..49938, "
            "CVE-2025-43904).",
            ""},
    Service{"slurmd", "reachable", 6818, "slurmd port reachable", Request::connect_only, "",
            nullptr, Outcome::warn, false, true,
            "slurmd (6818) reachable. Connect only: nothing is sent.",
            "Firewall 6818 to slurmctld and the cluster's own nodes.", ""},
    Service{"slurmdbd", "reachable", 6819, "slurmdbd port reachable", Request::connect_only, "",
            nullptr, Outcome::warn, false, true,
            "slurmdbd (6819) reachable; only slurmctld needs it. Connect only: "
            "nothing is sent.",
            "Firewall 6819 to the slurmctld hosts.", ""},
    Service{"redfish", "reachable", 443, "BMC Redfish reachable", Request::https_get,
            "/redfish/v1/Systems", redfish, Outcome::unverified, false, false,
            "Redfish (HTTPS 443) on BMC ranges: opt-in with --ports redfish when a "
            "scope is a BMC network. One anonymous GET /redfish/v1/Systems over TLS; a "
            "BMC that answers at all is reachable from the tenant, one that lists its "
            "systems needs no credentials.",
            "Keep BMC networks unreachable from tenant networks.", ""},
    Service{"ipmi", "reachable", 623, "BMC answers IPMI over LAN", Request::udp, "", nullptr,
            Outcome::unverified, false, false,
            "IPMI over LAN (UDP 623) on BMC ranges: opt-in with --ports ipmi. One "
            "session-less Get Channel Authentication Capabilities request, the one a BMC "
            "answers before any login; it tells IPMI 1.5/2.0 and whether anonymous or "
            "null-user logins are admitted. Nothing logs in.",
            "Keep BMC networks unreachable from tenant networks; disable IPMI over LAN "
            "where Redfish is used, and anonymous and null users everywhere.",
            "", ipmi, ipmi_auth_caps_request},
    Service{"metadata", "imds", 80, "Cloud metadata answers without a token", Request::http_get,
            "/latest/meta-data/", metadata, Outcome::unverified, true, true,
            "The link-local metadata service (169.254.169.254). Only the "
            "listing is requested, never a "
            "credential path; a listing without a token means workloads can "
            "read instance credentials.",
            "Require session tokens (IMDSv2, hop limit 1) or block "
            "169.254.169.254 from tenant workloads.",
            ""},
};

}  // namespace

std::span<const Service> all_services() { return kServices; }

const Service *find_service(std::string_view key_or_port) {
  auto port = core::parse_uint(key_or_port);
  for (const auto &s : kServices) {
    if (s.key == key_or_port) return &s;
    if (port && *port == s.port && !s.metadata_only) return &s;
  }
  return nullptr;
}

std::string service_check_id(const Service &s) {
  return fmt::format("isolation.{}.{}", s.key, s.check);
}

Wire wire_of(const Service &s) {
  switch (s.request) {
    case Request::https_get:
      return Wire::tls;
    case Request::udp:
      return Wire::udp;
    case Request::connect_only:
    case Request::http_get:
      break;
  }
  return Wire::tcp;
}

std::string_view protocol_name(const Service &s) { return s.request == Request::udp ? "udp" : "tcp"; }

std::string build_request(const Service &s, std::string_view host) {
  if (s.request == Request::udp) return s.datagram ? s.datagram() : std::string();
  if (s.request != Request::http_get && s.request != Request::https_get) return {};
  return fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: "
      "cmax-audit-isolation\r\nAccept: */*\r\nConnection: close\r\n\r\n",
      s.path, host);
}

std::string describe_request(const Service &s) {
  switch (s.request) {
    case Request::connect_only:
      return "TCP connect only";
    case Request::http_get:
      return fmt::format("GET {}", s.path);
    case Request::https_get:
      return fmt::format("TLS, then GET {}", s.path);
    case Request::udp:
      return "UDP: IPMI Get Channel Authentication Capabilities (no login)";
  }
  return {};
}

std::optional<int> json_array_length(std::string_view body) {
  body = core::trim(body);
  if (body.empty() || body.front() != '[') return std::nullopt;
  int depth = 0;
  int count = 0;
  bool in_string = false;
  bool escaped = false;
  bool element = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
      if (depth == 0) break;
    } else if (c == ',' && depth == 1) {
      ++count;
      element = false;
      continue;
    }
    if (depth >= 1 &&
        !(depth == 1 && (c == '[' || c == ' ' || c == '\n' || c == '\r' || c == '\t')))
      element = true;
  }
  return count + (element ? 1 : 0);
}

}  // namespace cmax::isolation
