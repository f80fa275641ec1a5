#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "core/unique_fd.h"
#include "isolation/isolation.h"
#include "isolation/prober.h"

using namespace cmax::isolation;
using cmax::core::UniqueFd;
using namespace std::chrono_literals;

namespace {

constexpr Ipv4 kLoopback = 0x7F000001u;

// A listener on 127.0.0.1 with an ephemeral port. `answer` empty: accept and
// stay silent.
class TinyServer {
 public:
  explicit TinyServer(std::string answer, int backlog = 64) : answer_(std::move(answer)) {
    fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(kLoopback);
    EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr *>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    EXPECT_EQ(::listen(fd_.get(), backlog), 0);
  }
  ~TinyServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  /// Every request received so far, joined.
  std::string requests_seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

  void serve() {
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        UniqueFd c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) continue;
        std::string req;
        char buf[4096];
        while (req.find("\r\n\r\n") == std::string::npos) {
          pollfd q{c.get(), POLLIN, 0};
          if (::poll(&q, 1, 1000) <= 0) break;
          ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
          if (n <= 0) break;
          req.append(buf, static_cast<std::size_t>(n));
        }
        ++requests_;
        {
          std::lock_guard lock(mu_);
          seen_ += req;
        }
        if (answer_.empty()) {
          silent_.push_back(std::move(c));  // keep it open and say nothing
          continue;
        }
        ::send(c.get(), answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
    });
  }

 private:
  std::string answer_;
  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::string seen_;
  std::vector<UniqueFd> silent_;
};

// A port nothing listens on: bound, then closed.
std::uint16_t closed_port() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(kLoopback);
  ::bind(fd.get(), reinterpret_cast<sockaddr *>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&sa), &len);
  return ntohs(sa.sin_port);
}

const std::string kGrafanaOpen =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    "45\r\n\r\n"
    R"([{"id":1,"uid":"x","title":"B","type":"dash"}])";

}  // namespace

TEST(IsolationProber, OpenClosedAndSilentPortsOnLoopback) {
  TinyServer grafana(kGrafanaOpen);
  grafana.serve();
  TinyServer silent("");
  silent.serve();
  std::uint16_t closed = closed_port();
  std::string get = "GET /api/search HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::vector<ProbeTarget> targets = {{kLoopback, grafana.port(), get},
                                      {kLoopback, closed, get},
                                      {kLoopback, silent.port(), get},
                                      {kLoopback, grafana.port(), ""}};
  ProberOptions o;
  o.connect_timeout = 500ms;
  o.io_timeout = 300ms;
  auto run = probe_all(targets, o);
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_EQ(run->results.size(), 4u);
  const auto &open = run->results[0];
  EXPECT_EQ(open.reach, Reach::open);
  EXPECT_EQ(open.answer, kGrafanaOpen);
  EXPECT_FALSE(open.answer_timed_out);
  EXPECT_EQ(run->results[1].reach, Reach::closed);
  EXPECT_EQ(run->results[1].error_number, ECONNREFUSED);
  EXPECT_EQ(run->results[2].reach, Reach::open);
  EXPECT_TRUE(run->results[2].answer.empty());
  EXPECT_TRUE(run->results[2].answer_timed_out);
  EXPECT_EQ(run->results[3].reach, Reach::open);  // connect only: nothing sent
  EXPECT_TRUE(run->results[3].answer.empty());
  EXPECT_FALSE(run->deadline_hit);
  EXPECT_LT(run->wall, 1500ms);
  EXPECT_NE(grafana.requests_seen().find("GET /api/search"), std::string::npos);
}

TEST(IsolationProber, AnswersAreReadOnlyUpToTheBound) {
  std::string big = "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" + std::string(200000, 'x');
  TinyServer server(big);
  server.serve();
  ProberOptions o;
  o.max_answer_bytes = 1000;
  auto run = probe_all({{kLoopback, server.port(), "GET / HTTP/1.1\r\n\r\n"}}, o);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->results[0].answer.size(), 1000u);
}

TEST(IsolationProber, ManyProbesFinishQuicklyWithBoundedConcurrency) {
  TinyServer server("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
  server.serve();
  std::uint16_t closed = closed_port();
  std::vector<ProbeTarget> targets;
  for (int i = 0; i < 3000; ++i)
    targets.push_back({kLoopback + static_cast<Ipv4>(i % 200), closed, "GET /"});
  for (int i = 0; i < 20; ++i)
    targets.push_back({kLoopback, server.port(), "GET / HTTP/1.1\r\n\r\n"});
  ProberOptions o;
  o.concurrency = 64;
  o.rate_per_s = 100000;
  auto t0 = std::chrono::steady_clock::now();
  auto run = probe_all(targets, o);
  auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(run);
  int closed_count = 0, open_count = 0;
  for (const auto &r : run->results) {
    closed_count += r.reach == Reach::closed;
    open_count += r.reach == Reach::open;
  }
  EXPECT_EQ(closed_count, 3000);
  EXPECT_EQ(open_count, 20);
  EXPECT_LT(wall, 3s);
  std::printf("[ measure  ] 3020 loopback probes, 64 in flight: %.0f ms\n",
              std::chrono::duration<double, std::milli>(wall).count());
}

TEST(IsolationProber, RateLimitSpacesTheConnects) {
  std::uint16_t closed = closed_port();
  std::vector<ProbeTarget> targets(21, ProbeTarget{kLoopback, closed, ""});
  ProberOptions o;
  o.rate_per_s = 100;  // 21 connects: the last starts 200 ms after the first
  auto run = probe_all(targets, o);
  ASSERT_TRUE(run);
  EXPECT_GE(run->wall, 190ms);
  EXPECT_LT(run->wall, 1000ms);
}

TEST(IsolationProber, GlobalDeadlineLeavesTheRestSkipped) {
  TinyServer silent("");
  silent.serve();
  std::uint16_t closed = closed_port();
  std::vector<ProbeTarget> targets = {{kLoopback, silent.port(), "GET / HTTP/1.1\r\n\r\n"}};
  for (int i = 0; i < 10; ++i) targets.push_back({kLoopback, closed, ""});
  ProberOptions o;
  o.concurrency = 1;
  o.io_timeout = 5000ms;
  o.deadline = 200ms;
  auto run = probe_all(targets, o);
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->deadline_hit);
  EXPECT_LT(run->wall, 1000ms);
  EXPECT_EQ(run->results[0].reach, Reach::open);
  EXPECT_TRUE(run->results[0].answer_timed_out);
  EXPECT_EQ(run->results[5].reach, Reach::skipped);
}

TEST(IsolationRun, JudgesRealLoopbackServicesEndToEnd) {
  // The plan's fixed ports are replaced by the test servers' ports through a
  // plan built by hand.
  TinyServer grafana(kGrafanaOpen);
  grafana.serve();
  TinyServer metadata("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
  metadata.serve();
  Plan plan;
  plan.hosts = {kLoopback};
  plan.services = {find_service("grafana"), find_service("prometheus")};
  plan.metadata = nullptr;
  for (const auto &s : all_services())
    if (s.metadata_only) plan.metadata = &s;
  plan.metadata_address = kLoopback;
  plan.probes = {{find_service("grafana"), kLoopback},
                 {find_service("prometheus"), kLoopback},
                 {plan.metadata, kLoopback}};
  plan.targets = {
      {kLoopback, grafana.port(), build_request(*find_service("grafana"), "127.0.0.1")},
      {kLoopback, closed_port(), build_request(*find_service("prometheus"), "127.0.0.1")},
      {kLoopback, metadata.port(), build_request(*plan.metadata, "169.254.169.254")}};
  ProberOptions o;
  auto run = probe_all(plan.targets, o);
  ASSERT_TRUE(run);
  auto findings = judge(plan, *run, o);
  auto find = [&](std::string_view id) -> const cmax::audit::Finding * {
    for (const auto &f : findings)
      if (f.check_id == id) return &f;
    return nullptr;
  };
  auto *g = find("isolation.grafana.anonymous@127.0.0.1:3000");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->outcome, cmax::audit::Outcome::fail);
  EXPECT_EQ(find("isolation.grafana.anonymous")->outcome, cmax::audit::Outcome::fail);
  EXPECT_EQ(find("isolation.prometheus.open")->outcome, cmax::audit::Outcome::pass);
  EXPECT_EQ(find("isolation.metadata.imds")->outcome, cmax::audit::Outcome::pass);
  EXPECT_EQ(find("isolation.jupyter.anonymous")->outcome, cmax::audit::Outcome::not_applicable);
  EXPECT_NE(metadata.requests_seen().find("GET /latest/meta-data/ "), std::string::npos);
}
