// Load generator for cmax endpoint serve: opens N concurrent streaming chat requests (one thread
// and one connection each, all released at once), reads every stream to its end and reports how
// many completed correctly (max_tokens content chunks, or fewer ending "stop"; then [DONE]) and the client-side TTFT
// (connect -> first content token) percentiles, as one JSON line on stdout.
// Usage: endpoint_serve_load PORT [STREAMS=1000] [MAX_TOKENS=32]
// Raw sockets, not an HTTP library: the point is what the server does, and a thin client keeps
// 1,000 of them cheap on a small machine.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  bool ok = false;
  double ttft_ms = -1;
  double e2e_ms = -1;
  std::string why;
  std::size_t tokens = 0;
};

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
  return n;
}

Outcome one_stream(int port, int max_tokens, int id, std::barrier<>& start) {
  Outcome o;
  const std::string body = fmt::format(
      R"({{"model":"cmax-sim","stream":true,"max_tokens":{},"messages":[{{"role":"system","content":"You are a load test. Keep it short."}},{{"role":"user","content":"Stream number {} says hello."}}]}})",
      max_tokens, id);
  const std::string req = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  start.arrive_and_wait();
  const auto t0 = Clock::now();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {false, -1, -1, "socket", 0};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {false, -1, -1, "connect", 0};
  }
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return {false, -1, -1, "send", 0};
  }
  std::string got;
  char buf[8192];
  const std::string first_token = "\"content\":\" ";
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
    if (o.ttft_ms < 0 && got.find(first_token) != std::string::npos)
      o.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  ::close(fd);
  o.e2e_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const auto tokens = count(got, first_token);
  o.tokens = tokens;
  // All max_tokens tokens, or fewer when the model's natural answer ended first ("stop").
  o.ok = got.starts_with("HTTP/1.1 200") && got.find("data: [DONE]") != std::string::npos &&
         (tokens == static_cast<std::size_t>(max_tokens) ||
          (tokens > 0 && got.find("\"finish_reason\":\"stop\"") != std::string::npos));
  if (!o.ok) o.why = fmt::format("status/size: {} tokens, {} bytes", tokens, got.size());
  return o;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: endpoint_serve_load PORT [STREAMS=1000] [MAX_TOKENS=32]\n");
    return 3;
  }
  const int port = std::atoi(argv[1]);
  const int streams = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int max_tokens = argc > 3 ? std::atoi(argv[3]) : 32;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::vector<Outcome> out(static_cast<std::size_t>(streams));
  std::barrier start(streams + 1);
  std::vector<std::thread> threads;
  threads.reserve(out.size());
  for (int i = 0; i < streams; ++i)
    threads.emplace_back([&, i] { out[static_cast<std::size_t>(i)] = one_stream(port, max_tokens, i, start); });
  const auto t0 = Clock::now();
  start.arrive_and_wait();
  for (auto& t : threads) t.join();
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> ttft, e2e;
  int ok = 0;
  std::size_t tokens = 0;
  std::string first_failure;
  for (const auto& o : out) {
    tokens += o.tokens;
    if (o.ok) {
      ++ok;
      ttft.push_back(o.ttft_ms);
      e2e.push_back(o.e2e_ms);
    } else if (first_failure.empty()) {
      first_failure = o.why;
    }
  }
  fmt::print(
      R"({{"streams":{},"completed_ok":{},"max_tokens":{},"tokens_received":{},"wall_s":{:.2f},"ttft_ms":{{"p50":{:.1f},"p99":{:.1f},"max":{:.1f}}},"e2e_ms":{{"p50":{:.1f},"p99":{:.1f}}},"first_failure":"{}"}})"
      "\n",
      streams, ok, max_tokens, tokens, wall_s, pct(ttft, 0.5), pct(ttft, 0.99), pct(ttft, 1.0), pct(e2e, 0.5), pct(e2e, 0.99),
      first_failure);
  return ok == streams ? 0 : 1;
}
