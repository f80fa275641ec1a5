// The native transport: HTTP/1.1 over cleartext TCP on one epoll loop. Per readable socket, one
// recv into the connection's buffer; the response head is parsed once, the body (Content-Length,
// chunked, or to the close) is handed to the handler straight from that buffer. Keep-alive
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
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "loadgen/transport.h"

namespace cmax::loadgen::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadBytes = 64 * 1024;
constexpr std::size_t kMaxHead = 64 * 1024;

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

struct Exchange;

struct Conn {
  int fd = -1;
  bool connected = false;
  bool reused = false;  // served a response before
  Exchange* x = nullptr;
  std::string buf;      // unread bytes
  std::size_t off = 0;  // start of the unread part of buf
};

struct Exchange {
  ExchangeHandler* h = nullptr;
  std::string head;            // request line and headers
  const std::string* body = nullptr;
  std::size_t sent = 0;        // bytes of head + body written
  Conn* conn = nullptr;
  enum class Phase { kQueued, kConnecting, kSending, kHead, kBody } phase = Phase::kQueued;
  enum class Mode { kLength, kChunked, kClose } mode = Mode::kClose;
  enum class Chunk { kSize, kData, kDataEnd, kTrailer } chunk = Chunk::kSize;
  std::uint64_t left = 0;      // Content-Length left, or of the current chunk
  int status = 0;
  double retry_after_s = -1;
  bool close_after = false;    // Connection: close, or HTTP/1.0
  bool got_bytes = false;      // any byte of the response
  bool replayed = false;       // already moved once off a dead pooled connection
  Clock::time_point started, last_io;
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
    if (!config_.api_key.empty()) common_ += "Authorization: Bearer " + config_.api_key + "\r\n";
  }
  ~NativeTransport() override {
    cancel_all();
    for (auto* c : idle_) close_conn(c);
    if (epfd_ >= 0) ::close(epfd_);
  }
  bool ok() const { return epfd_ >= 0; }

  void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler) override {
    auto* x = new Exchange;
    x->h = handler;
    x->body = &body;
    x->head = fmt::format("POST {}{} HTTP/1.1\r\n{}Content-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\n\r\n",
                          prefix_, path, common_, stream ? "text/event-stream" : "application/json", body.size());
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
    if (config_.wake_interval.count() > 0 && active_ >= config_.coalesce_from) {
      const auto next = last_wake_ + config_.wake_interval;
      const auto now = Clock::now();
      if (now < next) std::this_thread::sleep_for(std::min<Clock::duration>(next - now, timeout));
    }
    epoll_event events[512];
    const int n = ::epoll_wait(epfd_, events, 512, static_cast<int>(std::max<long>(0, timeout.count())));
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
    x->phase = Exchange::Phase::kHead;
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
    // Into one shared buffer, then appended: a few hundred bytes copied, not 64 KiB zeroed.
    const ssize_t r = ::recv(c->fd, read_buf_.get(), kReadBytes, 0);
    if (r > 0) c->buf.append(read_buf_.get(), static_cast<std::size_t>(r));

    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      broken(c, fmt::format("recv: {}", std::strerror(errno)));
      return;
    }
    if (r == 0) {  // EOF
      if (x->phase == Exchange::Phase::kBody && x->mode == Exchange::Mode::kClose) {
        finish(x, ErrorClass::kNone, "");
        return;
      }
      broken(c, x->got_bytes ? "the server closed the connection mid-response" : "the server closed the connection");
      return;
    }
    x->got_bytes = true;
    x->last_io = Clock::now();
    consume(c);
  }

  // Parses what is buffered: the head once, then body bytes to the handler.
  void consume(Conn* c) {
    Exchange* x = c->x;
    if (x->phase == Exchange::Phase::kHead) {
      const std::string_view all(c->buf.data() + c->off, c->buf.size() - c->off);
      const auto end = all.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (all.size() > kMaxHead) finish(x, ErrorClass::kProtocol, "response head over 64 KiB");
        return;
      }
      if (!parse_head(x, all.substr(0, end))) return;
      c->off += end + 4;
      if (x->status >= 100 && x->status < 200) {  // 1xx: another head follows
        x->phase = Exchange::Phase::kHead;
        consume(c);
        return;
      }
      x->phase = Exchange::Phase::kBody;
      if (x->mode == Exchange::Mode::kLength && x->left == 0) {
        finish(x, ErrorClass::kNone, "");
        return;
      }
    }
    while (c->x == x && c->off < c->buf.size()) {
      std::string_view in(c->buf.data() + c->off, c->buf.size() - c->off);
      if (x->mode != Exchange::Mode::kChunked) {
        const std::size_t n = x->mode == Exchange::Mode::kLength ? std::min<std::uint64_t>(x->left, in.size()) : in.size();
        c->off += n;
        if (x->mode == Exchange::Mode::kLength) x->left -= n;
        if (!deliver(x, in.substr(0, n))) return;
        if (x->mode == Exchange::Mode::kLength && x->left == 0) {
          finish(x, ErrorClass::kNone, "");
          return;
        }
        continue;
      }
      switch (x->chunk) {
        case Exchange::Chunk::kSize: {
          const auto eol = in.find("\r\n");
          if (eol == std::string_view::npos) {
            if (in.size() > 1024) finish(x, ErrorClass::kProtocol, "chunk size line over 1 KiB");
            return;
          }
          std::string_view line = in.substr(0, eol);
          if (auto semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
          line = trim(line);
          std::uint64_t size = 0;
          auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
          if (ec != std::errc() || p != line.data() + line.size() || line.empty()) {
            finish(x, ErrorClass::kProtocol, "malformed chunk size");
            return;
          }
          c->off += eol + 2;
          x->left = size;
          x->chunk = size == 0 ? Exchange::Chunk::kTrailer : Exchange::Chunk::kData;
          break;
        }
        case Exchange::Chunk::kData: {
          const std::size_t n = std::min<std::uint64_t>(x->left, in.size());
          c->off += n;
          x->left -= n;
          if (x->left == 0) x->chunk = Exchange::Chunk::kDataEnd;
          if (!deliver(x, in.substr(0, n))) return;
          break;
        }
        case Exchange::Chunk::kDataEnd:
          if (in.size() < 2) return;
          if (in[0] != '\r' || in[1] != '\n') {
            finish(x, ErrorClass::kProtocol, "chunk not followed by CRLF");
            return;
          }
          c->off += 2;
          x->chunk = Exchange::Chunk::kSize;
          break;
        case Exchange::Chunk::kTrailer: {
          const auto eol = in.find("\r\n");
          if (eol == std::string_view::npos) return;
          c->off += eol + 2;
          if (eol == 0) {  // the blank line ending the trailer: the response is whole
            finish(x, ErrorClass::kNone, "");
            return;
          }
          break;
        }
      }
    }
  }

  bool parse_head(Exchange* x, std::string_view head) {
    auto eol = head.find("\r\n");
    const std::string_view status_line = head.substr(0, eol);
    // "HTTP/1.1 200 OK"
    if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) {
      finish(x, ErrorClass::kProtocol, fmt::format("not an HTTP/1.x response: '{}'", status_line.substr(0, 60)));
      return false;
    }
    int status = 0;
    auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
    if (ec != std::errc() || status < 100 || status > 999) {
      finish(x, ErrorClass::kProtocol, fmt::format("bad status line '{}'", status_line.substr(0, 60)));
      return false;
    }
    x->status = status;
    x->close_after = status_line[7] == '0';  // HTTP/1.0
    x->mode = Exchange::Mode::kClose;
    std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
    while (!rest.empty()) {
      auto e = rest.find("\r\n");
      std::string_view line = rest.substr(0, e);
      rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view value = trim(line.substr(colon + 1));
      if (iequals_prefix(line, "transfer-encoding:")) {
        if (value.find("chunked") != std::string_view::npos) x->mode = Exchange::Mode::kChunked;
      } else if (iequals_prefix(line, "content-length:") && x->mode != Exchange::Mode::kChunked) {
        std::uint64_t n = 0;
        auto [q, ec2] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec2 != std::errc()) {
          finish(x, ErrorClass::kProtocol, "malformed Content-Length");
          return false;
        }
        x->mode = Exchange::Mode::kLength;
        x->left = n;
      } else if (iequals_prefix(line, "connection:")) {
        if (iequals_prefix(value, "close")) x->close_after = true;
        if (iequals_prefix(value, "keep-alive")) x->close_after = false;
      } else if (iequals_prefix(line, "retry-after:")) {
        double secs = -1;
        auto [q, ec3] = std::from_chars(value.data(), value.data() + value.size(), secs);
        if (ec3 == std::errc() && secs >= 0) x->retry_after_s = secs;
      }
    }
    if (x->mode == Exchange::Mode::kChunked) x->left = 0;
    if (status == 204 || status == 304) {
      x->mode = Exchange::Mode::kLength;
      x->left = 0;
    }
    return true;
  }

  bool deliver(Exchange* x, std::string_view bytes) {
    if (bytes.empty()) return true;
    if (!x->h->on_body(bytes, x->status)) {
      finish(x, ErrorClass::kCanceled, "canceled by the reader");
      return false;
    }
    return true;
  }

  // The connection failed. A pooled connection that failed before any response byte is the
  // server having closed it while idle: the exchange moves to a fresh one, once.
  void broken(Conn* c, const std::string& why) {
    Exchange* x = c->x;
    if (c->reused && !x->got_bytes && !x->replayed) {
      x->replayed = true;
      detach(c);
      close_conn(c);
      x->conn = nullptr;
      x->phase = Exchange::Phase::kQueued;
      queue_.push_front(x);
      pump();
      return;
    }
    finish(x, x->got_bytes || x->phase >= Exchange::Phase::kHead ? ErrorClass::kDropped : ErrorClass::kConnect, why);
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
    r.http_status = x->status;
    r.retry_after_s = x->retry_after_s;
    r.transport = cls;
    r.detail = std::move(why);
    if (c) {
      detach(c);
      const bool reusable = cls == ErrorClass::kNone && !x->close_after && x->mode != Exchange::Mode::kClose &&
                            c->off == c->buf.size() && c->fd >= 0;
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
