// The native transport: HTTP/1.1 over cleartext TCP on one epoll loop. Per readable socket, one
// recv into a shared buffer; the response head is parsed once, the body (Content-Length, chunked,
// or to the close) is handed to the handler straight from that buffer, and only bytes left over
// (a chunk-size line cut by the read) are kept in the connection's own. Keep-alive
// connections are pooled; a pooled connection the server closed while idle is replaced once,
// transparently, when it fails before any byte of the response.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "loadgen/http1_decoder.h"
#include "loadgen/transport.h"

namespace cmax::loadgen::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadBytes = 64 * 1024;



struct Exchange;

struct Conn {
  int fd = -1;
  bool connected = false;
  bool reused = false;  // served a response before
  Exchange* x = nullptr;
  std::string buf;      // unread bytes
  std::size_t off = 0;  // start of the unread part of buf
};

struct Exchange final : Http1Sink {
  ExchangeHandler* h = nullptr;
  std::string head;            // request line and headers
  const std::string* body = nullptr;
  std::size_t sent = 0;        // bytes of head + body written
  Conn* conn = nullptr;
  enum class Phase { kQueued, kConnecting, kSending, kResponse } phase = Phase::kQueued;
  Http1Decoder decoder;
  bool replayed = false;       // already moved once off a dead pooled connection
  Clock::time_point started, last_io;

  bool on_head(const Http1Head&) override { return true; }
  bool on_body(std::string_view bytes) override {
    return bytes.empty() || h->on_body(bytes, decoder.head().status);
  }
};

class NativeTransport final : public Transport {
 public:
  NativeTransport(ClientConfig config, sockaddr_storage addr, socklen_t addr_len, std::string host_header,
                  std::string path_prefix)
      : config_(std::move(config)), addr_(addr), addr_len_(addr_len), host_(std::move(host_header)),
        prefix_(std::move(path_prefix)) {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    common_ = fmt::format("Host: {}\r\nUser-Agent: cmax-endpoint-bench\r\n", host_);
    for (const auto& h : config_.extra_headers) common_ += h + "\r\n";
    if (!config_.api_key.empty()) common_ += api_key_line(config_) + "\r\n";
  }
  ~NativeTransport() override {
    cancel_all();
    for (auto* c : idle_) close_conn(c);
    if (epfd_ >= 0) ::close(epfd_);
  }
  bool ok() const { return epfd_ >= 0; }

  void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler,
            std::string_view header) override {
    auto* x = new Exchange;
    x->h = handler;
    x->body = &body;
    x->head = fmt::format("POST {}{} HTTP/1.1\r\n{}{}{}Content-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\n\r\n",
                          prefix_, path, common_, header, header.empty() ? "" : "\r\n",
                          stream ? "text/event-stream" : "application/json", body.size());
    submit(x);
  }
  void get(std::string_view path, ExchangeHandler* handler) override {
    auto* x = new Exchange;
    x->h = handler;
    x->head = fmt::format("GET {}{} HTTP/1.1\r\n{}Accept: application/json\r\n\r\n", prefix_, path, common_);
    submit(x);
  }
  int running() const override { return active_; }

  int poll(std::chrono::milliseconds timeout) override {
    coalesce_wakeups(config_, active_, last_wake_, timeout);
    epoll_event events[512];
    const int n = ::epoll_wait(epfd_, events, 512, static_cast<int>(std::max<long>(0, timeout.count())));
    // Each event's connection, exchange and handler are cold (the server ran since the last
    // wake-up): load them all at once, a pass per pointer hop, rather than one miss after another.
    for (int i = 0; i < n; ++i) __builtin_prefetch(events[i].data.ptr);
    for (int i = 0; i < n; ++i) {
      if (const Exchange* x = static_cast<const Conn*>(events[i].data.ptr)->x) {
        __builtin_prefetch(x);
        __builtin_prefetch(reinterpret_cast<const char*>(x) + 64);
        __builtin_prefetch(reinterpret_cast<const char*>(x) + 128);
      }
    }
    for (int i = 0; i < n; ++i) {
      if (const Exchange* x = static_cast<const Conn*>(events[i].data.ptr)->x) {
        __builtin_prefetch(x->h);
        __builtin_prefetch(reinterpret_cast<const char*>(x->h) + 64);
        __builtin_prefetch(reinterpret_cast<const char*>(x->h) + 128);
      }
    }
    for (int i = 0; i < n; ++i) on_event(static_cast<Conn*>(events[i].data.ptr), events[i].events);
    const auto now = Clock::now();
    if (now - last_scan_ >= std::chrono::milliseconds(50)) {
      last_scan_ = now;
      check_timeouts(now);
    }
    last_wake_ = Clock::now();
    return active_;
  }

  void cancel_all() override {
    auto all = busy_;
    for (auto* c : all) finish(c->x, ErrorClass::kCanceled, "canceled: the run was stopped");
    while (!queue_.empty()) {
      auto* x = queue_.front();
      queue_.pop_front();
      --active_;
      TransferResult r;
      r.transport = ErrorClass::kCanceled;
      r.detail = "canceled before it was sent: the run was stopped";
      auto* h = x->h;
      delete x;
      h->on_done(r);
    }
  }

 private:
  void submit(Exchange* x) {
    ++active_;
    x->started = x->last_io = Clock::now();
    queue_.push_back(x);
    pump();
  }

  // Starts queued exchanges while connections allow.
  void pump() {
    while (!queue_.empty()) {
      Conn* c = nullptr;
      if (!idle_.empty()) {
        c = idle_.back();
        idle_.pop_back();
      } else if (static_cast<int>(busy_.size()) < std::max(config_.max_connections, 1)) {
        c = open_conn();
        if (c == nullptr) {  // socket() failed: fail this one, try the next later
          auto* x = queue_.front();
          queue_.pop_front();
          fail_unattached(x, ErrorClass::kConnect, fmt::format("socket: {}", std::strerror(errno)));
          continue;
        }
      } else {
        return;
      }
      auto* x = queue_.front();
      queue_.pop_front();
      attach(c, x);
    }
  }

  Conn* open_conn() {
    const int fd = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* c = new Conn;
    c->fd = fd;
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
    c->connected = rc == 0;
    if (rc != 0 && errno != EINPROGRESS) {
      // Reported when the exchange attaches: make the socket look failed.
      c->connected = false;
      connect_errno_ = errno;
      ::close(fd);
      c->fd = -1;
    }
    return c;
  }

  void attach(Conn* c, Exchange* x) {
    c->x = x;
    x->conn = c;
    x->sent = 0;
    busy_.push_back(c);
    if (c->fd < 0) {
      finish(x, ErrorClass::kConnect, fmt::format("connect to {}: {}", host_, std::strerror(connect_errno_)));
      return;
    }
    epoll_event ev{};
    ev.data.ptr = c;
    ev.events = EPOLLIN | EPOLLOUT;
    if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev) != 0) ::epoll_ctl(epfd_, EPOLL_CTL_ADD, c->fd, &ev);
    x->phase = c->connected ? Exchange::Phase::kSending : Exchange::Phase::kConnecting;
    if (c->connected) send_some(c);
  }

  void send_some(Conn* c) {
    Exchange* x = c->x;
    const std::size_t head = x->head.size(), total = head + (x->body ? x->body->size() : 0);
    while (x->sent < total) {
      iovec iov[2];
      int n = 0;
      if (x->sent < head) iov[n++] = {x->head.data() + x->sent, head - x->sent};
      if (x->body && !x->body->empty()) {
        const std::size_t from = x->sent > head ? x->sent - head : 0;
        iov[n++] = {const_cast<char*>(x->body->data()) + from, x->body->size() - from};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(n);
      const ssize_t w = ::sendmsg(c->fd, &msg, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // EPOLLOUT will call again
        broken(c, fmt::format("send: {}", std::strerror(errno)));
        return;
      }
      x->sent += static_cast<std::size_t>(w);
      x->last_io = Clock::now();
    }
    x->phase = Exchange::Phase::kResponse;
    epoll_event ev{};
    ev.data.ptr = c;
    ev.events = EPOLLIN;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
  }

  void on_event(Conn* c, std::uint32_t events) {
    if (c->x == nullptr) {  // an idle pooled connection: the server closed it (or sent junk)
      idle_.erase(std::remove(idle_.begin(), idle_.end(), c), idle_.end());
      close_conn(c);
      return;
    }
    Exchange* x = c->x;
    if (x->phase == Exchange::Phase::kConnecting) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) {
        finish(x, ErrorClass::kConnect, fmt::format("connect to {}: {}", host_, std::strerror(err ? err : ECONNREFUSED)));
        return;
      }
      c->connected = true;
      x->phase = Exchange::Phase::kSending;
    }
    if (x->phase == Exchange::Phase::kSending) {
      send_some(c);
      if (c->x != x || x->phase == Exchange::Phase::kSending) return;
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) return;
    // One recv; level-triggered epoll brings us back if more is waiting.
    if (c->off > 0 && c->off == c->buf.size()) {
      c->buf.clear();
      c->off = 0;
    }
    // Into one shared buffer: decoded from there when nothing was left over from the last read
    // (the usual case), else appended to what was.
    const ssize_t r = ::recv(c->fd, read_buf_.get(), kReadBytes, 0);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      broken(c, fmt::format("recv: {}", std::strerror(errno)));
      return;
    }
    if (r == 0) {  // EOF
      x->decoder.eof();
      if (x->decoder.state() == Http1Decoder::State::kDone) finish(x, ErrorClass::kNone, "");
      else broken(c, x->decoder.error());
      return;
    }
    x->last_io = Clock::now();
    const std::string_view got(read_buf_.get(), static_cast<std::size_t>(r));
    if (c->off == c->buf.size()) {
      const std::size_t used = x->decoder.feed(got, *x);
      c->buf.assign(got.substr(used));  // a partial chunk-size line, or bytes after the response
      c->off = 0;
    } else {
      c->buf.append(got);
      const std::string_view in(c->buf.data() + c->off, c->buf.size() - c->off);
      c->off += x->decoder.feed(in, *x);
    }
    settle(c);
  }

  // After a feed: ends the exchange when the decoder is done, failed or was stopped.
  void settle(Conn* c) {
    Exchange* x = c->x;
    switch (x->decoder.state()) {
      case Http1Decoder::State::kDone:
        finish(x, ErrorClass::kNone, "");
        return;
      case Http1Decoder::State::kError:
        finish(x, ErrorClass::kProtocol, x->decoder.error());
        return;
      case Http1Decoder::State::kAborted:
        finish(x, ErrorClass::kCanceled, "canceled by the reader");
        return;
      default:
        return;
    }
  }

  // The connection failed. A pooled connection that failed before any response byte is the
  // server having closed it while idle: the exchange moves to a fresh one, once.
  void broken(Conn* c, const std::string& why) {
    Exchange* x = c->x;
    if (c->reused && !x->decoder.started() && !x->replayed) {
      x->replayed = true;
      detach(c);
      close_conn(c);
      x->conn = nullptr;
      x->phase = Exchange::Phase::kQueued;
      queue_.push_front(x);
      pump();
      return;
    }
    finish(x, x->decoder.started() || x->phase == Exchange::Phase::kResponse ? ErrorClass::kDropped : ErrorClass::kConnect, why);
  }

  void detach(Conn* c) {
    busy_.erase(std::remove(busy_.begin(), busy_.end(), c), busy_.end());
    c->x = nullptr;
  }

  void close_conn(Conn* c) {
    if (c->fd >= 0) {
      ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
      ::close(c->fd);
    }
    delete c;
  }

  void fail_unattached(Exchange* x, ErrorClass cls, std::string why) {
    --active_;
    TransferResult r;
    r.transport = cls;
    r.detail = std::move(why);
    auto* h = x->h;
    delete x;
    h->on_done(r);
  }

  void finish(Exchange* x, ErrorClass cls, std::string why) {
    Conn* c = x->conn;
    TransferResult r;
    r.http_status = x->decoder.head().status;
    r.retry_after_s = x->decoder.head().retry_after_s;
    r.transport = cls;
    r.detail = std::move(why);
    if (c) {
      detach(c);
      const bool reusable = cls == ErrorClass::kNone && x->decoder.reusable() && c->off == c->buf.size() && c->fd >= 0;
      if (reusable) {
        c->buf.clear();
        c->off = 0;
        c->reused = true;
        epoll_event ev{};
        ev.data.ptr = c;
        ev.events = EPOLLIN;  // an idle connection that turns readable was closed by the server
        ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
        idle_.push_back(c);
      } else {
        close_conn(c);
      }
    }
    --active_;
    auto* h = x->h;
    delete x;
    h->on_done(r);
    pump();
  }

  void check_timeouts(Clock::time_point now) {
    std::vector<std::pair<Exchange*, std::string>> late;
    for (auto* c : busy_) {
      Exchange* x = c->x;
      if (x->phase == Exchange::Phase::kConnecting && now - x->started > config_.connect_timeout)
        late.emplace_back(x, fmt::format("connect to {}: no answer in {} ms", host_, config_.connect_timeout.count()));
      else if (now - x->started > config_.request_timeout)
        late.emplace_back(x, fmt::format("request took longer than {} s", config_.request_timeout.count() / 1000.0));
      else if (now - x->last_io > config_.stall_timeout)
        late.emplace_back(x, fmt::format("no byte for {} s (a stalled response)", config_.stall_timeout.count()));
    }
    for (auto& [x, why] : late) {
      const bool connecting = x->phase == Exchange::Phase::kConnecting;
      finish(x, connecting ? ErrorClass::kConnect : ErrorClass::kTimeout, why);
    }
  }

  ClientConfig config_;
  sockaddr_storage addr_;
  socklen_t addr_len_;
  std::string host_, prefix_, common_;
  int epfd_ = -1;
  int active_ = 0;
  int connect_errno_ = 0;
  std::deque<Exchange*> queue_;
  std::vector<Conn*> busy_, idle_;
  Clock::time_point last_wake_, last_scan_;
  std::unique_ptr<char[]> read_buf_ = std::make_unique<char[]>(kReadBytes);
};

}  // namespace

Result<std::unique_ptr<Transport>> make_native_transport(const ClientConfig& config) {
  // http://HOST[:PORT][/PREFIX]
  std::string_view rest = std::string_view(config.base_url).substr(7);
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string host;
  std::string port = "80";
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("endpoint {}: unclosed [ in the host", config.base_url);
    host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = std::string(authority.substr(close + 2));
  } else {
    const auto colon = authority.rfind(':');
    host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = std::string(authority.substr(colon + 1));
  }
  if (host.empty()) return fail("endpoint {}: no host", config.base_url);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0 || res == nullptr)
    return fail("endpoint {}: resolve {}: {}; check --base-url", config.base_url, host, ::gai_strerror(rc));
  sockaddr_storage addr{};
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  const socklen_t len = res->ai_addrlen;
  ::freeaddrinfo(res);
  auto t = std::make_unique<NativeTransport>(config, addr, len, std::string(authority), prefix);
  if (!t->ok()) return fail("set up the HTTP client: epoll_create1: {}", std::strerror(errno));
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace cmax::loadgen::detail
