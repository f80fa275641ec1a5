// sched::KubeClient's kept-alive connection and its watch, against a local HTTP server (cpp-httplib):
// the requests of one client share one connection; a connection the server dropped while idle is
// replaced without an error; a watch hands over each event line as it arrives and ends at once on a
// stop, even while the server sends nothing.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "sched/kube_client.h"

namespace cmax::sched {
namespace {

using namespace std::chrono_literals;

KubernetesOptions local(int port) {
  KubernetesOptions o;
  o.api_url = "http://127.0.0.1:" + std::to_string(port);
  o.token_path.clear();
  o.token = "t";
  o.timeout = 2s;
  return o;
}

TEST(KubeClientConnection, KeptAliveRequestsShareOneConnectionAndSurviveItsClose) {
  std::mutex mu;
  std::set<int> ports;
  std::atomic<int> served{0};
  httplib::Server server;
  server.Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard l(mu);
      ports.insert(req.remote_port);
    }
    ++served;
    res.set_content("{}", "application/json");
  });
  server.set_keep_alive_timeout(1);  // seconds: the server drops the idle connection
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  KubeClient kept(local(port), true);
  for (int i = 0; i < 5; ++i) {
    auto r = kept.send("GET", "/x");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
  }
  {
    std::lock_guard l(mu);
    EXPECT_EQ(ports.size(), 1u) << "five requests, one connection";
  }
  std::this_thread::sleep_for(1600ms);  // closed by the server meanwhile
  auto after = kept.send("GET", "/x");
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->status, 200);
  KubeClient plain(local(port));
  ASSERT_TRUE(plain.send("GET", "/x"));
  ASSERT_TRUE(plain.send("GET", "/x"));
  server.stop();
  t.join();
  std::lock_guard l(mu);
  EXPECT_EQ(served.load(), 8);
  EXPECT_EQ(ports.size(), 4u) << "a new connection after the close; one each without keep-alive";
}

TEST(KubeClientWatch, HandsOverEachLineAndEndsAtOnceOnAStop) {
  httplib::Server server;
  std::atomic<bool> done{false};
  server.Get("/w", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      const std::string a = R"({"type":"ADDED","object":{}})" "\n" R"({"type":"MODI)";
      const std::string b = R"(FIED","object":{}})" "\n";
      sink.write(a.data(), a.size());
      std::this_thread::sleep_for(50ms);
      sink.write(b.data(), b.size());
      while (!done) std::this_thread::sleep_for(10ms);  // then nothing, as a quiet watch
      sink.done();
      return true;
    });
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  KubeClient client(local(port));
  std::vector<std::string> lines;
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(400ms);
    stop.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto end = client.watch("/w", [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  }, stop.get_token(), 30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  stopper.join();
  done = true;
  server.stop();
  t.join();
  ASSERT_TRUE(end) << end.error().message;
  EXPECT_TRUE(end->stopped);
  ASSERT_EQ(lines.size(), 2u) << "a line split across two writes is one line";
  EXPECT_EQ(lines[1], R"({"type":"MODIFIED","object":{}})");
  EXPECT_LT(took, 2s) << "the stop closed the socket; the 30 s idle timeout did not run";
}

}  // namespace
}  // namespace cmax::sched
