// The prober's TLS and UDP wires against real loopback peers (an OpenSSL server with a
// self-signed certificate, UDP sockets), the IPMI request and answer parser, the HTTPS and IPMI
// classifiers, and the egress canary against a loopback HTTP server.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/unique_fd.h"
#include "isolation/egress.h"
#include "isolation/ipmi.h"
#include "isolation/prober.h"
#include "isolation/services.h"
#include "support/tls_server_ctx.h"

using namespace cmax::isolation;
using cmax::audit::Outcome;
using cmax::core::UniqueFd;
using namespace std::chrono_literals;

namespace {

constexpr Ipv4 kLoopback = 0x7F000001u;

std::uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len);
  return ntohs(sa.sin_port);
}

UniqueFd bind_loopback(int type) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(kLoopback);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  return fd;
}

// A TLS listener on 127.0.0.1: each connection gets the handshake, the request is read to its
// blank line, `answer` is written and the connection closed. `handshake = false`: accept and say
// nothing (a TLS port that hangs).
class TlsServer {
 public:
  TlsServer(std::string answer, bool handshake = true)
      : answer_(std::move(answer)), handshake_(handshake),
        ctx_(cmax::test::make_self_signed_server_ctx("cmax-test-kubelet")) {
    fd_ = bind_loopback(SOCK_STREAM);
    port_ = bound_port(fd_.get());
    EXPECT_EQ(::listen(fd_.get(), 16), 0);
    thread_ = std::thread([this] { loop(); });
  }
  ~TlsServer() {
    stop_ = true;
    thread_.join();
    SSL_CTX_free(ctx_);
  }
  std::uint16_t port() const { return port_; }
  std::string request() const { return request_; }

 private:
  void loop() {
    std::vector<UniqueFd> held;
    while (!stop_) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      UniqueFd c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) continue;
      if (!handshake_) {
        held.push_back(std::move(c));
        continue;
      }
      timeval tv{2, 0};
      ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL *ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c.get());
      if (SSL_accept(ssl) == 1) {
        std::string req;
        char buf[4096];
        while (req.find("\r\n\r\n") == std::string::npos) {
          int n = SSL_read(ssl, buf, sizeof buf);
          if (n <= 0) break;
          req.append(buf, static_cast<std::size_t>(n));
        }
        request_ = req;
        SSL_write(ssl, answer_.data(), static_cast<int>(answer_.size()));
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
    }
  }

  std::string answer_;
  bool handshake_;
  SSL_CTX *ctx_;
  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::string request_;
  std::thread thread_;
};

// A plain TCP listener that answers each request with `answer` (not TLS).
class PlainServer {
 public:
  explicit PlainServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = bind_loopback(SOCK_STREAM);
    port_ = bound_port(fd_.get());
    EXPECT_EQ(::listen(fd_.get(), 16), 0);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        UniqueFd c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) continue;
        char buf[4096];
        pollfd q{c.get(), POLLIN, 0};
        if (::poll(&q, 1, 1000) > 0) {
          ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
          if (n > 0) seen_.append(buf, static_cast<std::size_t>(n));
        }
        ::send(c.get(), answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~PlainServer() {
    stop_ = true;
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::string seen() const { return seen_; }

 private:
  std::string answer_;
  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::string seen_;
  std::thread thread_;
};

// A UDP socket on 127.0.0.1 that answers the first datagram with `answer` (empty: never answers).
class UdpServer {
 public:
  explicit UdpServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = bind_loopback(SOCK_DGRAM);
    port_ = bound_port(fd_.get());
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        char buf[2048];
        sockaddr_in from{};
        socklen_t len = sizeof from;
        ssize_t n = ::recvfrom(fd_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr *>(&from), &len);
        if (n <= 0) continue;
        received_.assign(buf, static_cast<std::size_t>(n));
        if (!answer_.empty())
          ::sendto(fd_.get(), answer_.data(), answer_.size(), 0, reinterpret_cast<sockaddr *>(&from), len);
      }
    });
  }
  ~UdpServer() {
    stop_ = true;
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::string received() const { return received_; }

 private:
  std::string answer_;
  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::string received_;
  std::thread thread_;
};

ProberOptions quick() {
  ProberOptions o;
  o.connect_timeout = 500ms;
  o.io_timeout = 500ms;
  o.deadline = 10s;
  return o;
}

// An IPMI answer to Get Channel Authentication Capabilities as a BMC sends it: RMCP, a
// session-less IPMI 1.5 header, then the response message with both checksums.
std::string ipmi_answer(std::uint8_t types, std::uint8_t status, std::uint8_t ext, std::uint8_t completion = 0) {
  std::string m = {'\x81', '\x1c', '\x63', '\x20', '\x00', '\x38', static_cast<char>(completion)};
  if (completion == 0) {
    const unsigned char data[] = {0x01, types, status, ext, 0xa2, 0x02, 0x00, 0x00};  // IANA 674 (Dell)
    m.append(reinterpret_cast<const char *>(data), sizeof data);
  }
  std::uint8_t sum = 0;
  for (std::size_t i = 3; i < m.size(); ++i) sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(m[i]));
  m.push_back(static_cast<char>(-sum));
  std::string d = {'\x06', '\x00', '\xff', '\x07', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00'};
  d.push_back(static_cast<char>(m.size()));
  return d + m;
}

Verdict classify_https(std::string_view key, std::string_view wire) {
  const Service *s = find_service(key);
  EXPECT_NE(s, nullptr) << key;
  auto a = parse_http_answer(wire, true);
  EXPECT_TRUE(a.has_value()) << wire;
  return s->classify(*a);
}

}  // namespace

TEST(IsolationIpmi, RequestIsTheSessionlessAuthCapabilitiesQuery) {
  std::string req = ipmi_auth_caps_request();
  ASSERT_EQ(req.size(), 23u);
  EXPECT_EQ(hex_bytes(req), "06 00 ff 07 00 00 00 00 00 00 00 00 00 09 20 18 c8 81 00 38 8e 04 b5");
  // Both IPMI checksums: header (rsSA, netFn, chk) and the rest sum to 0 mod 256.
  auto sum = [&](std::size_t from, std::size_t to) {
    std::uint8_t s = 0;
    for (std::size_t i = from; i <= to; ++i) s = static_cast<std::uint8_t>(s + static_cast<std::uint8_t>(req[i]));
    return s;
  };
  EXPECT_EQ(sum(14, 16), 0);
  EXPECT_EQ(sum(17, 22), 0);
}

TEST(IsolationIpmi, ParsesAnonymousAndNullUserLogins) {
  // IPMI 2.0 extended data, auth types none/MD5/password, anonymous login + null user names.
  auto caps = parse_ipmi_auth_caps(ipmi_answer(0x80 | 0x01 | 0x04 | 0x10, 0x03, 0x03));
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->completion_code, 0);
  EXPECT_EQ(caps->channel, 1);
  EXPECT_TRUE(caps->anonymous_login);
  EXPECT_TRUE(caps->null_usernames);
  EXPECT_FALSE(caps->non_null_usernames);
  EXPECT_TRUE(caps->auth_none);
  EXPECT_TRUE(caps->auth_md5);
  EXPECT_FALSE(caps->auth_md2);
  EXPECT_TRUE(caps->ipmi20);
  EXPECT_TRUE(caps->ipmi15);
  EXPECT_EQ(caps->oem_iana, 674u);
  EXPECT_EQ(describe(*caps), "IPMI 1.5 and 2.0, anonymous login enabled, null user names enabled, 1.5 auth "
                             "types none/MD5/password, vendor IANA 674");

  // Users with names only, IPMI 2.0 only.
  auto named = parse_ipmi_auth_caps(ipmi_answer(0x80 | 0x04, 0x04, 0x02));
  ASSERT_TRUE(named);
  EXPECT_FALSE(named->anonymous_login);
  EXPECT_TRUE(named->non_null_usernames);
  EXPECT_TRUE(named->ipmi20);
  EXPECT_FALSE(named->ipmi15);

  // A refused command is still an IPMI answer.
  auto refused = parse_ipmi_auth_caps(ipmi_answer(0, 0, 0, 0xcc));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->completion_code, 0xcc);
}

TEST(IsolationIpmi, RejectsWhatIsNotItsAnswer) {
  std::string good = ipmi_answer(0x84, 0x04, 0x02);
  ASSERT_TRUE(parse_ipmi_auth_caps(good));
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(parse_ipmi_auth_caps(good.substr(0, n))) << "truncated to " << n;
  std::string bad_sum = good;
  bad_sum[good.size() - 1] = static_cast<char>(bad_sum.back() + 1);
  EXPECT_FALSE(parse_ipmi_auth_caps(bad_sum));
  std::string other_cmd = good;
  other_cmd[14 + 5] = 0x01;  // Get Device ID
  EXPECT_FALSE(parse_ipmi_auth_caps(other_cmd));
  std::string not_rmcp = good;
  not_rmcp[0] = 0x05;
  EXPECT_FALSE(parse_ipmi_auth_caps(not_rmcp));
  EXPECT_FALSE(parse_ipmi_auth_caps("HTTP/1.1 400 Bad Request\r\n\r\n"));
}

TEST(IsolationClassifiers, KubeletApiServerRedfishAndIpmi) {
  EXPECT_EQ(classify_https("kubelet", "HTTP/1.1 401 Unauthorized\r\n\r\nUnauthorized").outcome, Outcome::pass);
  EXPECT_EQ(classify_https("kubelet", "HTTP/1.1 403 Forbidden\r\n\r\nForbidden (user=system:anonymous)").outcome,
            Outcome::pass);
  EXPECT_EQ(classify_https("kubelet", "HTTP/1.1 200 OK\r\n\r\n{\"kind\":\"PodList\",\"items\":[]}").outcome,
            Outcome::fail);
  EXPECT_EQ(classify_https("kubelet", "HTTP/1.1 404 Not Found\r\n\r\n").outcome, Outcome::warn);
  EXPECT_EQ(classify_https("kube_apiserver", "HTTP/1.1 401 Unauthorized\r\n\r\n{}").outcome, Outcome::pass);
  EXPECT_EQ(classify_https("kube_apiserver",
                           "HTTP/1.1 403 Forbidden\r\n\r\n{\"kind\":\"Status\",\"reason\":\"Forbidden\"}")
                .outcome,
            Outcome::pass);
  EXPECT_EQ(classify_https("kube_apiserver", "HTTP/1.1 200 OK\r\n\r\n{\"kind\":\"NamespaceList\",\"items\":[]}")
                .outcome,
            Outcome::fail);
  EXPECT_EQ(classify_https("redfish", "HTTP/1.1 200 OK\r\n\r\n{\"@odata.id\":\"/redfish/v1/Systems\","
                                      "\"Members\":[{\"@odata.id\":\"/redfish/v1/Systems/1\"}]}")
                .outcome,
            Outcome::fail);
  auto login = classify_https("redfish", "HTTP/1.1 401 Unauthorized\r\n\r\n");
  EXPECT_EQ(login.outcome, Outcome::fail);
  EXPECT_NE(login.observed.find("login required"), std::string::npos);
  EXPECT_EQ(classify_https("redfish", "HTTP/1.1 404 Not Found\r\n\r\n").outcome, Outcome::warn);

  const Service *ipmi = find_service("ipmi");
  ASSERT_NE(ipmi, nullptr);
  EXPECT_EQ(ipmi->port, 623);
  EXPECT_EQ(wire_of(*ipmi), Wire::udp);
  EXPECT_FALSE(ipmi->by_default);
  auto anon = ipmi->classify_bytes(ipmi_answer(0x81, 0x01, 0x03));
  EXPECT_EQ(anon.outcome, Outcome::fail);
  EXPECT_NE(anon.observed.find("without a user name"), std::string::npos) << anon.observed;
  EXPECT_EQ(ipmi->classify_bytes(ipmi_answer(0x84, 0x04, 0x02)).outcome, Outcome::fail);
  EXPECT_EQ(ipmi->classify_bytes("garbage").outcome, Outcome::warn);
  EXPECT_EQ(build_request(*ipmi, "h"), ipmi_auth_caps_request());
  EXPECT_EQ(wire_of(*find_service("kubelet")), Wire::tls);
  EXPECT_EQ(wire_of(*find_service("grafana")), Wire::tcp);
}

TEST(IsolationProber, TlsHandshakeThenOneGet) {
  TlsServer server("HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\nConnection: close\r\n\r\nUnauthorized");
  std::vector<ProbeTarget> targets = {
      {kLoopback, server.port(), build_request(*find_service("kubelet"), "127.0.0.1"), Wire::tls}};
  auto run = probe_all(targets, quick());
  ASSERT_TRUE(run) << run.error().message;
  const auto &r = run->results[0];
  EXPECT_EQ(r.reach, Reach::open);
  EXPECT_TRUE(r.tls_error.empty()) << r.tls_error;
  EXPECT_EQ(r.tls_peer, "CN=cmax-test-kubelet");
  EXPECT_TRUE(r.answer.starts_with("HTTP/1.1 401 Unauthorized")) << r.answer;
  EXPECT_TRUE(server.request().starts_with("GET /pods HTTP/1.1\r\n")) << server.request();
  EXPECT_EQ(server.request().find("Authorization"), std::string::npos);
}

TEST(IsolationProber, TlsToAPlainPortOrAHungHandshakeIsNoSession) {
  PlainServer plain("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
  TlsServer hung("", /*handshake=*/false);
  std::vector<ProbeTarget> targets = {{kLoopback, plain.port(), "GET / HTTP/1.1\r\n\r\n", Wire::tls},
                                      {kLoopback, hung.port(), "GET / HTTP/1.1\r\n\r\n", Wire::tls}};
  auto run = probe_all(targets, quick());
  ASSERT_TRUE(run);
  EXPECT_EQ(run->results[0].reach, Reach::open);
  EXPECT_FALSE(run->results[0].tls_error.empty());
  EXPECT_TRUE(run->results[0].answer.empty());
  EXPECT_EQ(run->results[1].reach, Reach::open);
  EXPECT_NE(run->results[1].tls_error.find("no TLS handshake within 500 ms"), std::string::npos)
      << run->results[1].tls_error;
  EXPECT_LT(run->wall, 2s);
}

TEST(IsolationProber, UdpAnsweredRefusedAndSilent) {
  UdpServer bmc(ipmi_answer(0x81, 0x01, 0x03));
  UdpServer silent("");
  std::uint16_t closed_port;
  {
    UniqueFd gone = bind_loopback(SOCK_DGRAM);
    closed_port = bound_port(gone.get());
  }
  const std::string req = ipmi_auth_caps_request();
  std::vector<ProbeTarget> targets = {{kLoopback, bmc.port(), req, Wire::udp},
                                      {kLoopback, closed_port, req, Wire::udp},
                                      {kLoopback, silent.port(), req, Wire::udp}};
  auto run = probe_all(targets, quick());
  ASSERT_TRUE(run);
  EXPECT_EQ(run->results[0].reach, Reach::open);
  EXPECT_TRUE(parse_ipmi_auth_caps(run->results[0].answer));
  EXPECT_EQ(bmc.received(), req);
  EXPECT_EQ(run->results[1].reach, Reach::closed) << run->results[1].detail;
  EXPECT_EQ(run->results[2].reach, Reach::filtered) << run->results[2].detail;
  EXPECT_NE(run->results[2].detail.find("no datagram back"), std::string::npos);
}

TEST(IsolationEgress, UrlsWithoutCredentialsOnly) {
  EXPECT_TRUE(check_canary_url("https://canary.example.org/x"));
  EXPECT_TRUE(check_canary_url("http://10.0.0.1:8080/"));
  EXPECT_FALSE(check_canary_url("ftp://example.org/"));
  EXPECT_FALSE(check_canary_url("https://user:pw@example.org/"));
  EXPECT_FALSE(check_canary_url("http:///path"));
}

TEST(IsolationEgress, JudgesEveryEnding) {
  EXPECT_EQ(judge_egress("", EgressResult{}).outcome, Outcome::not_applicable);
  EgressResult not_run;
  not_run.detail = "cannot set up libcurl";
  EXPECT_EQ(judge_egress("http://x/", not_run).outcome, Outcome::unverified);
  EgressResult answered;
  answered.ran = answered.reached = true;
  answered.http_status = 204;
  answered.remote_ip = "203.0.113.7";
  auto open = judge_egress("http://x/", answered);
  EXPECT_EQ(open.outcome, Outcome::warn);
  EXPECT_NE(open.observed.find("HTTP 204"), std::string::npos);
  EXPECT_NE(open.observed.find("203.0.113.7"), std::string::npos);
  EgressResult tls_broke;
  tls_broke.ran = tls_broke.reached = true;
  tls_broke.detail = "SSL certificate problem";
  EXPECT_EQ(judge_egress("https://x/", tls_broke).outcome, Outcome::warn);
  EgressResult dns;
  dns.ran = dns.resolve_failed = true;
  dns.detail = "Could not resolve host: x";
  EXPECT_EQ(judge_egress("http://x/", dns).outcome, Outcome::unverified);
  EgressResult blocked;
  blocked.ran = true;
  blocked.detail = "Connection timed out";
  EXPECT_EQ(judge_egress("http://x/", blocked).outcome, Outcome::pass);
}

TEST(IsolationEgress, OneGetToALoopbackCanary) {
  PlainServer canary("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  const std::string url = "http://127.0.0.1:" + std::to_string(canary.port()) + "/cmax-canary";
  auto r = probe_egress(url, 2000ms);
  EXPECT_TRUE(r.ran);
  EXPECT_TRUE(r.reached);
  EXPECT_EQ(r.http_status, 200) << r.detail;
  EXPECT_EQ(r.remote_ip, "127.0.0.1");
  EXPECT_TRUE(canary.seen().starts_with("GET /cmax-canary HTTP/1.1\r\n")) << canary.seen();
  EXPECT_EQ(canary.seen().find("Authorization"), std::string::npos);
  EXPECT_EQ(judge_egress(url, r).outcome, Outcome::warn);

  std::uint16_t closed_port;
  {
    UniqueFd gone = bind_loopback(SOCK_STREAM);
    closed_port = bound_port(gone.get());
  }
  auto refused = probe_egress("http://127.0.0.1:" + std::to_string(closed_port) + "/", 2000ms);
  EXPECT_TRUE(refused.ran);
  EXPECT_FALSE(refused.reached);
  EXPECT_EQ(judge_egress("http://127.0.0.1/", refused).outcome, Outcome::pass);
}
