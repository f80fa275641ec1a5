// iso_http_server LOG ADDR:PORT:MODE...
// Listens on every ADDR:PORT and answers each connection once as MODE says,
// then closes it:
//   grafana-open     GET /api/search -> 200 with two dashboards
//   grafana-auth     -> 401
//   jupyter-auth     -> 403
//   ray-open         -> 200 {"ray_version":...}
//   metadata-token   -> 401 without X-aws-ec2-metadata-token (IMDSv2-style), never a listing
//   accept           accepts and closes without a word (a Slurm daemon to a connect-only probe)
//   canary           -> 200 "ok" (an egress canary's server)
//   kubelet-open     -> 200 PodList (anonymous kubelet API)
//   apiserver-denied -> 403 Status for system:anonymous
//   redfish-auth     -> 401 (a BMC's Redfish asking for a login)
// A mode prefixed "tls-" speaks TLS first (a fresh self-signed certificate, CN=the mode).
//   udp-ipmi-anon    UDP: answers an IPMI Get Channel Authentication Capabilities datagram as
//                    a BMC with anonymous login enabled
// Appends "ADDR:PORT <request line>" for every request to LOG ("ADDR:PORT udp N bytes" for
// datagrams), and "ready" once all listen. Single-threaded; runs until killed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/tls_server_ctx.h"

namespace {

struct Listener {
  int fd = -1;
  std::string where;
  std::string mode;  // without the tls-/udp- prefix
  SSL_CTX *tls = nullptr;
  bool udp = false;
};

// An IPMI v1.5 answer to Get Channel Authentication Capabilities: channel 1, IPMI 2.0 extended
// data, auth types none/MD5, anonymous login and null user names enabled, IPMI 1.5 and 2.0.
std::string ipmi_anonymous_answer() {
  std::string m = {'\x81', '\x1c', '\x63', '\x20', '\x00', '\x38', '\x00',
                   '\x01', '\x85', '\x03', '\x03', '\x00', '\x00', '\x00', '\x00'};
  unsigned char sum = 0;
  for (std::size_t i = 3; i < m.size(); ++i) sum = static_cast<unsigned char>(sum + static_cast<unsigned char>(m[i]));
  m.push_back(static_cast<char>(-sum));
  std::string d = {'\x06', '\x00', '\xff', '\x07', '\x00', '\x00', '\x00',
                   '\x00', '\x00', '\x00', '\x00', '\x00', '\x00'};
  d.push_back(static_cast<char>(m.size()));
  return d + m;
}

std::string answer_for(const std::string &mode, const std::string &request) {
  auto reply = [](const char *status, const std::string &body) {
    return std::string("HTTP/1.1 ") + status +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  };
  if (mode == "grafana-open") {
    if (request.rfind("GET /api/search ", 0) == 0)
      return reply("200 OK", R"([{"id":1,"uid":"gpu","title":"Tenant B GPUs","type":"dash-db"},)"
                             R"({"id":2,"uid":"fab","title":"Fabric","type":"dash-db"}])");
    return reply("404 Not Found", R"({"message":"Not found"})");
  }
  if (mode == "grafana-auth") return reply("401 Unauthorized", R"({"message":"Unauthorized"})");
  if (mode == "jupyter-auth") return reply("403 Forbidden", R"({"message":"Forbidden"})");
  if (mode == "ray-open")
    return reply("200 OK", R"({"version":"4","ray_version":"2.9.0","ray_commit":"x"})");
  if (mode == "canary") return reply("200 OK", "ok");
  if (mode == "kubelet-open")
    return reply("200 OK", R"({"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"tenant-b-train"}}]})");
  if (mode == "apiserver-denied")
    return reply("403 Forbidden",
                 R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"namespaces is forbidden: )"
                 R"(User \"system:anonymous\" cannot list resource \"namespaces\"","reason":"Forbidden","code":403})");
  if (mode == "redfish-auth") return reply("401 Unauthorized", R"({"error":{"code":"Base.1.8.GeneralError"}})");
  if (mode == "metadata-token") {
    if (request.find("X-aws-ec2-metadata-token:") == std::string::npos)
      return reply("401 Unauthorized", "");
    return reply("200 OK", "ami-id\nhostname\n");
  }
  return {};
}

void serve_datagram(const Listener &l, FILE *log) {
  char buf[2048];
  sockaddr_in from{};
  socklen_t len = sizeof from;
  ssize_t n = ::recvfrom(l.fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr *>(&from), &len);
  if (n <= 0) return;
  std::fprintf(log, "%s udp %zd bytes\n", l.where.c_str(), n);
  std::fflush(log);
  if (l.mode == "ipmi-anon") {
    std::string answer = ipmi_anonymous_answer();
    ::sendto(l.fd, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr *>(&from), len);
  }
}

// One TLS connection: handshake, the request to its blank line, the answer.
void serve_tls(const Listener &l, int c, FILE *log) {
  timeval tv{1, 0};
  ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  SSL *ssl = SSL_new(l.tls);
  SSL_set_fd(ssl, c);
  std::string request;
  if (SSL_accept(ssl) == 1) {
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
    std::string answer = answer_for(l.mode, request);
    if (!answer.empty()) SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
    SSL_shutdown(ssl);
  }
  std::fprintf(log, "%s tls %s\n", l.where.c_str(), request.substr(0, request.find("\r\n")).c_str());
  std::fflush(log);
  SSL_free(ssl);
  ::close(c);
}

void serve_one(const Listener &l, FILE *log) {
  if (l.udp) {
    serve_datagram(l, log);
    return;
  }
  int c = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return;
  if (l.tls) {
    serve_tls(l, c, log);
    return;
  }
  std::string request;
  if (l.mode != "accept") {
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) break;
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::fprintf(log, "%s %s\n", l.where.c_str(), request.substr(0, request.find("\r\n")).c_str());
  std::fflush(log);
  std::string answer = answer_for(l.mode, request);
  if (!answer.empty()) ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
  ::close(c);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: iso_http_server LOG ADDR:PORT:MODE...\n");
    return 2;
  }
  FILE *log = std::fopen(argv[1], "a");
  if (!log) {
    std::perror(argv[1]);
    return 1;
  }
  std::vector<Listener> listeners;
  for (int i = 2; i < argc; ++i) {
    std::string spec = argv[i];
    auto c1 = spec.find(':');
    auto c2 = spec.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) {
      std::fprintf(stderr, "bad listener %s: want ADDR:PORT:MODE\n", argv[i]);
      return 2;
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(std::stoi(spec.substr(c1 + 1, c2 - c1 - 1))));
    if (::inet_pton(AF_INET, spec.substr(0, c1).c_str(), &sa.sin_addr) != 1) {
      std::fprintf(stderr, "bad address in %s\n", argv[i]);
      return 2;
    }
    Listener l{-1, spec.substr(0, c2), spec.substr(c2 + 1)};
    if (l.mode.rfind("udp-", 0) == 0) {
      l.udp = true;
      l.mode.erase(0, 4);
    } else if (l.mode.rfind("tls-", 0) == 0) {
      l.mode.erase(0, 4);
      l.tls = cmax::test::make_self_signed_server_ctx(l.mode);
      if (!l.tls) {
        std::fprintf(stderr, "TLS context for %s: OpenSSL failed\n", argv[i]);
        return 1;
      }
    }
    int fd = ::socket(AF_INET, (l.udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 ||
        (!l.udp && ::listen(fd, 128) != 0)) {
      std::fprintf(stderr, "listen %s: %s\n", argv[i], std::strerror(errno));
      return 1;
    }
    l.fd = fd;
    listeners.push_back(l);
  }
  std::fprintf(log, "ready\n");
  std::fflush(log);
  std::vector<pollfd> polls;
  for (const auto &l : listeners) polls.push_back({l.fd, POLLIN, 0});
  for (;;) {
    if (::poll(polls.data(), polls.size(), -1) < 0) continue;
    for (std::size_t i = 0; i < polls.size(); ++i)
      if (polls[i].revents & POLLIN) serve_one(listeners[i], log);
  }
}
