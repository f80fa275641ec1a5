// iso_http_server LOG ADDR:PORT:MODE...
// Listens on every ADDR:PORT and answers each connection once as MODE says,
// then closes it:
//   grafana-open    GET /api/search -> 200 with two dashboards     grafana-auth
//   -> 401 jupyter-auth    -> 403 ray-open       -> 200 {"ray_version":...}
//   metadata-token  -> 401 without X-aws-ec2-metadata-token (IMDSv2-style),
//   never a listing accept          accepts and closes without a word (a Slurm
//   daemon to a connect-only probe)
// Appends "ADDR:PORT <request line>" for every request to LOG, and "ready" once
// all listen. Single-threaded; runs until killed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Listener {
  int fd = -1;
  std::string where;
  std::string mode;
};

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
  if (mode == "metadata-token") {
    if (request.find("X-aws-ec2-metadata-token:") == std::string::npos)
      return reply("401 Unauthorized", "");
    return reply("200 OK", "ami-id\nhostname\n");
  }
  return {};
}

void serve_one(const Listener &l, FILE *log) {
  int c = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return;
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
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 ||
        ::listen(fd, 128) != 0) {
      std::fprintf(stderr, "listen %s: %s\n", argv[i], std::strerror(errno));
      return 1;
    }
    listeners.push_back({fd, spec.substr(0, c2), spec.substr(c2 + 1)});
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
