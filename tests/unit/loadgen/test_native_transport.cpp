// The native HTTP/1.1 transport against a raw socket server in this process that writes responses
// in pieces, keeps connections alive, closes idle ones and drops a stream.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "loadgen/http_client.h"

namespace {

using namespace std::chrono_literals;
using cmax::loadgen::ClientConfig;
using cmax::loadgen::ErrorClass;
using cmax::loadgen::HttpEngine;
using cmax::loadgen::TransferResult;

// What the server does with each request, by the path's last character.
//  /stream: a chunked body of 20 pieces, one write each, 2 ms apart; keeps the connection alive,
//           and closes it once it has been idle 300 ms.
//  /drop:   the response head and two pieces, then the connection is closed mid-stream.
class PieceServer {
 public:
  PieceServer() {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(lfd_, 64);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(lfd_, nullptr, nullptr);
        if (fd < 0) return;
        ++accepted_;
        workers_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~PieceServer() {
    ::shutdown(lfd_, SHUT_RDWR);
    ::close(lfd_);
    acceptor_.join();
    for (auto& t : workers_) t.join();
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  void serve(int fd) {
    timeval idle{0, 300'000};  // an idle keep-alive connection is closed after 300 ms
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
    std::string in;
    char buf[4096];
    for (;;) {
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) break;  // the client closed, or 300 ms idle
        in.append(buf, static_cast<std::size_t>(r));
        continue;
      }
      const std::string head = in.substr(0, end);
      in.erase(0, end + 4);
      const auto cl = head.find("Content-Length: ");
      const std::size_t body = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
      while (in.size() < body) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        in.append(buf, static_cast<std::size_t>(r));
      }
      in.erase(0, std::min(body, in.size()));
      const bool drop = head.find("/drop HTTP/1.1") != std::string::npos;
      std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (int i = 0; i < 20; ++i) {
        const std::string piece = fmt::format("data: piece {}\n\n", i);
        out += fmt::format("{:x}\r\n{}\r\n", piece.size(), piece);
        ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
        out.clear();
        if (drop && i == 1) {
          ::close(fd);
          return;
        }
        std::this_thread::sleep_for(2ms);
      }
      ::send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
    }
    ::close(fd);
  }

  int lfd_ = -1, port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;  // joined at the end: the acceptor is the only writer until then
};

struct Collect final : cmax::loadgen::ExchangeHandler {
  std::string body;
  TransferResult result;
  bool done = false;
  bool on_body(std::string_view bytes, int) override {
    body.append(bytes);
    return true;
  }
  void on_done(const TransferResult& r) override {
    result = r;
    done = true;
  }
};

std::string whole_stream() {
  std::string s;
  for (int i = 0; i < 20; ++i) s += fmt::format("data: piece {}\n\n", i);
  return s;
}

std::unique_ptr<HttpEngine> engine(int port) {
  ClientConfig cc;
  cc.transport = cmax::loadgen::TransportKind::kNative;
  cc.base_url = fmt::format("http://127.0.0.1:{}/v1", port);
  cc.wake_interval = std::chrono::microseconds(0);
  auto e = HttpEngine::create(cc);
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

void run(HttpEngine& e, const std::vector<Collect*>& all) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  auto done = [&] {
    for (auto* c : all)
      if (!c->done) return false;
    return true;
  };
  while (!done() && std::chrono::steady_clock::now() < until) e.poll(50ms);
  ASSERT_TRUE(done()) << "exchanges still running after 10 s";
}

// Eight /stream exchanges at once, run to their end.
std::vector<Collect> eight_streams(HttpEngine& e, const std::string& body) {
  std::vector<Collect> out(8);
  std::vector<Collect*> all;
  for (auto& c : out) {
    e.post("/stream", body, true, &c);
    all.push_back(&c);
  }
  run(e, all);
  return out;
}

TEST(NativeTransport, StreamsArriveWholeAndAClosedIdleConnectionIsReplacedTransparently) {
  PieceServer server;
  auto e = engine(server.port());
  ASSERT_TRUE(e);
  const std::string body = R"({"x":1})";
  // Eight streams at once, each in 21 writes.
  const auto first = eight_streams(*e, body);
  for (const auto& c : first) {
    EXPECT_EQ(c.result.transport, ErrorClass::kNone) << c.result.detail;
    EXPECT_EQ(c.result.http_status, 200);
    EXPECT_EQ(c.body, whole_stream());
  }
  EXPECT_EQ(server.accepted(), 8);
  // Reused at once: the same eight connections.
  for (const auto& c : eight_streams(*e, body)) EXPECT_EQ(c.body, whole_stream()) << c.result.detail;
  EXPECT_EQ(server.accepted(), 8) << "keep-alive connections are reused";
  // The server closes them after 300 ms idle: the client notices (or replays the request once on a
  // fresh connection) and every exchange still succeeds.
  std::this_thread::sleep_for(600ms);
  e->poll(0ms);
  for (const auto& c : eight_streams(*e, body)) {
    EXPECT_EQ(c.result.transport, ErrorClass::kNone) << c.result.detail;
    EXPECT_EQ(c.body, whole_stream());
  }
  EXPECT_EQ(server.accepted(), 16);
}

TEST(NativeTransport, ADroppedStreamIsDroppedAndACanceledOneIsCanceled) {
  PieceServer server;
  auto e = engine(server.port());
  ASSERT_TRUE(e);
  const std::string body = "{}";
  Collect dropped;
  e->post("/drop", body, true, &dropped);
  run(*e, {&dropped});
  EXPECT_EQ(dropped.result.transport, ErrorClass::kDropped) << dropped.result.detail;
  EXPECT_EQ(dropped.body, "data: piece 0\n\ndata: piece 1\n\n");
  // Canceled mid-stream: every exchange ends canceled, and the engine is destroyed after.
  std::vector<Collect> streams(4);
  for (auto& c : streams) e->post("/stream", body, true, &c);
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (streams[0].body.empty() && std::chrono::steady_clock::now() < until) e->poll(20ms);
  ASSERT_FALSE(streams[0].body.empty());
  e->cancel_all();
  for (const auto& c : streams) {
    EXPECT_TRUE(c.done);
    EXPECT_EQ(c.result.transport, ErrorClass::kCanceled);
  }
  e->poll(0ms);
  e.reset();
}

TEST(NativeTransport, AServerThatIsNotThereFailsAsAConnectError) {
  int port = 0;
  {
    PieceServer gone;
    port = gone.port();
  }
  auto e = engine(port);
  ASSERT_TRUE(e);
  Collect c;
  e->post("/stream", "{}", true, &c);
  run(*e, {&c});
  EXPECT_EQ(c.result.transport, ErrorClass::kConnect) << c.result.detail;
}

}  // namespace
