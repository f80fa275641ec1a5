#include "isolation/prober.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "core/unique_fd.h"
#include "isolation/http_answer.h"

namespace cmax::isolation {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

enum class Phase : std::uint8_t { free, connecting, handshaking, sending, reading };

struct SslFree {
  void operator()(SSL *s) const { SSL_free(s); }
  void operator()(SSL_CTX *c) const { SSL_CTX_free(c); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslFree>;

struct Slot {
  Phase phase = Phase::free;
  std::size_t index = 0;
  core::UniqueFd fd;
  SslPtr ssl;  // TLS targets, from the handshake on
  Clock::time_point started;
  Clock::time_point deadline;
  std::size_t sent = 0;
};

std::string errno_text(int err) { return std::strerror(err); }

// The first queued OpenSSL error as text ("wrong version number"), or `fallback`.
std::string ssl_error_text(std::string_view fallback) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return std::string(fallback);
  const char *reason = ERR_reason_error_string(e);
  return reason ? std::string(reason) : fmt::format("OpenSSL error 0x{:x}", e);
}

// A client context for probing: any certificate (none is checked: nothing secret is sent and
// the question is only whether the service answers anonymously), any protocol version a BMC
// may still speak.
SslCtxPtr make_probe_ctx() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return ctx;
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_security_level(ctx.get(), 0);
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE);
  return ctx;
}

std::string peer_subject(SSL *ssl) {
  X509 *cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return {};
  std::string out;
  if (char *line = X509_NAME_oneline(X509_get_subject_name(cert), nullptr, 0)) {
    out = line;
    OPENSSL_free(line);
  }
  X509_free(cert);
  if (out.starts_with('/')) out.erase(0, 1);
  return out;
}

// A connect error reported by the kernel after the SYN went out (SO_ERROR).
void classify_async_error(int err, ProbeResult &r) {
  r.error_number = err;
  r.detail = errno_text(err);
  switch (err) {
    case ECONNREFUSED:
      r.reach = Reach::closed;
      break;
    case ETIMEDOUT:
      r.reach = Reach::filtered;
      break;
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
      r.reach = Reach::unreachable;
      break;
    default:
      r.reach = Reach::error;
  }
}

// A connect error returned at once, before any packet: this host could not even
// try.
void classify_sync_error(int err, ProbeResult &r) {
  r.error_number = err;
  if (err == ECONNREFUSED) {
    r.reach = Reach::closed;
    r.detail = errno_text(err);
    return;
  }
  r.reach = Reach::error;
  switch (err) {
    case ENETUNREACH:
      r.detail = "no route to this address from here (Network is unreachable)";
      break;
    case EACCES:
    case EPERM:
      r.detail = fmt::format("connect not permitted here ({}): a local firewall or sandbox",
                             errno_text(err));
      break;
    default:
      r.detail = errno_text(err);
  }
}

class Loop {
 public:
  Loop(const std::vector<ProbeTarget> &targets, const ProberOptions &o, core::UniqueFd epoll)
      : targets_(targets),
        o_(o),
        epoll_(std::move(epoll)),
        slots_(static_cast<std::size_t>(o.concurrency)) {
    run_.results.resize(targets.size());
    if (std::any_of(targets.begin(), targets.end(), [](const ProbeTarget &t) { return t.wire == Wire::tls; }))
      ctx_ = make_probe_ctx();
  }

  ProbeRun run() {
    auto t0 = Clock::now();
    auto end = t0 + o_.deadline;
    auto next_start = t0;
    auto interval =
        o_.rate_per_s > 0
            ? duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / o_.rate_per_s))
            : Clock::duration::zero();
    std::vector<epoll_event> events(slots_.size());
    while (next_ < targets_.size() || in_flight_ > 0) {
      auto now = Clock::now();
      if (now >= end) {
        run_.deadline_hit = true;
        break;
      }
      while (next_ < targets_.size() && in_flight_ < slots_.size() && now >= next_start) {
        start(next_++, now);
        next_start += interval;
        if (next_start < now - interval * 4) next_start = now;  // no burst after a stall
      }
      auto wake = end;
      if (next_ < targets_.size() && in_flight_ < slots_.size()) wake = std::min(wake, next_start);
      for (const auto &s : slots_)
        if (s.phase != Phase::free) wake = std::min(wake, s.deadline);
      auto wait = duration_cast<milliseconds>(wake - now);
      int timeout_ms = static_cast<int>(std::clamp<long long>(wait.count() + 1, 0, 1000));
      if (wake <= now) timeout_ms = 0;
      int n =
          ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
      if (n < 0 && errno != EINTR) break;
      now = Clock::now();
      for (int i = 0; i < n; ++i) handle(events[static_cast<std::size_t>(i)].data.u64, now);
      for (std::size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].phase != Phase::free && now >= slots_[i].deadline) expire(i, now);
    }
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].phase != Phase::free) {
        auto &r = run_.results[slots_[i].index];
        if (slots_[i].phase == Phase::connecting) {
          r.reach = Reach::skipped;
          r.detail = "the global deadline passed while connecting";
        } else if (targets_[slots_[i].index].wire == Wire::udp) {
          r.detail = "the global deadline passed while waiting for the answer";
        } else {
          r.answer_timed_out = true;
        }
        release(i);
      }
    for (std::size_t i = next_; i < targets_.size(); ++i)
      run_.results[i].detail = "not probed: the global deadline passed first";
    run_.wall = duration_cast<microseconds>(Clock::now() - t0);
    return std::move(run_);
  }

 private:
  // TCP: a non-blocking connect, watched for EPOLLOUT. UDP: connect (this only sets the peer and
  // finds a route), send the one datagram, wait for one back; an ICMP port unreachable arrives
  // as ECONNREFUSED on the next read.
  void start(std::size_t index, Clock::time_point now) {
    auto &r = run_.results[index];
    const auto &t = targets_[index];
    const bool udp = t.wire == Wire::udp;
    core::UniqueFd fd(::socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      r.reach = Reach::error;
      r.detail = fmt::format("socket: {} (raise the open-file limit or lower --concurrency)",
                             errno_text(errno));
      return;
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(t.port);
    sa.sin_addr.s_addr = htonl(t.addr);
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr *>(&sa), sizeof sa);
    if (udp && rc == 0 && ::send(fd.get(), t.request.data(), t.request.size(), MSG_NOSIGNAL) < 0) rc = -1;
    if (rc != 0 && (udp || errno != EINPROGRESS)) {
      classify_sync_error(errno, r);
      return;
    }
    std::size_t slot = free_slot();
    auto &s = slots_[slot];
    s.fd = std::move(fd);
    s.index = index;
    s.started = now;
    s.deadline = now + (udp ? o_.io_timeout : o_.connect_timeout);
    s.sent = udp ? t.request.size() : 0;
    s.phase = udp ? Phase::reading : Phase::connecting;
    ++in_flight_;
    epoll_event ev{};
    ev.events = udp ? EPOLLIN : EPOLLOUT;
    ev.data.u64 = slot;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, s.fd.get(), &ev) != 0) {
      r.reach = Reach::error;
      r.detail = fmt::format("epoll_ctl: {}", errno_text(errno));
      release(slot);
      return;
    }
    if (!udp && rc == 0) connected(slot, now);
  }

  void read_datagram(std::size_t slot, Clock::time_point now) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    char buf[2048];
    ssize_t n = ::recv(s.fd.get(), buf, std::min(sizeof buf, o_.max_answer_bytes), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n >= 0) {
      r.reach = Reach::open;
      r.connect_time = duration_cast<microseconds>(now - s.started);
      r.answer.assign(buf, static_cast<std::size_t>(n));
      r.answer_closed = true;
    } else if (errno == ECONNREFUSED) {
      r.reach = Reach::closed;
      r.error_number = errno;
      r.detail = "ICMP port unreachable (Connection refused)";
    } else {
      classify_async_error(errno, r);
    }
    release(slot);
  }

  std::size_t free_slot() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      std::size_t j = (hint_ + i) % slots_.size();
      if (slots_[j].phase == Phase::free) {
        hint_ = (j + 1) % slots_.size();
        return j;
      }
    }
    return 0;  // not reached: start() runs only below the concurrency bound
  }

  void release(std::size_t slot) {
    auto &s = slots_[slot];
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s.fd.get(), nullptr);
    s.ssl.reset();  // no close_notify: the connection just ends
    s.fd.reset();
    s.phase = Phase::free;
    --in_flight_;
  }

  void set_events(std::size_t slot, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = slot;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, slots_[slot].fd.get(), &ev);
  }

  void connected(std::size_t slot, Clock::time_point now) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    r.reach = Reach::open;
    r.connect_time = duration_cast<microseconds>(now - s.started);
    if (targets_[s.index].request.empty()) {
      release(slot);
      return;
    }
    s.deadline = now + o_.io_timeout;
    if (targets_[s.index].wire == Wire::tls) {
      if (!ctx_ || !(s.ssl = SslPtr(SSL_new(ctx_.get()))) || SSL_set_fd(s.ssl.get(), s.fd.get()) != 1) {
        r.tls_error = ssl_error_text("cannot set up TLS");
        release(slot);
        return;
      }
      SSL_set_connect_state(s.ssl.get());
      s.phase = Phase::handshaking;
      handshake(slot);
      return;
    }
    s.phase = Phase::sending;
    send_some(slot);
  }

  // What an SSL call that returned `rc` wants: true to wait (events set), false on failure.
  bool ssl_wait(std::size_t slot, int rc) {
    int err = SSL_get_error(slots_[slot].ssl.get(), rc);
    if (err == SSL_ERROR_WANT_READ) {
      set_events(slot, EPOLLIN | EPOLLRDHUP);
      return true;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
      set_events(slot, EPOLLOUT);
      return true;
    }
    return false;
  }

  void handshake(std::size_t slot) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    ERR_clear_error();
    int rc = SSL_do_handshake(s.ssl.get());
    if (rc == 1) {
      r.tls_peer = peer_subject(s.ssl.get());
      s.phase = Phase::sending;
      send_some(slot);
      return;
    }
    if (ssl_wait(slot, rc)) return;
    int err = SSL_get_error(s.ssl.get(), rc);
    r.tls_error = err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                      ? (errno != 0 ? fmt::format("connection lost in the handshake: {}", errno_text(errno))
                                    : std::string("the peer closed the connection in the handshake"))
                      : ssl_error_text("handshake failed");
    r.answer_closed = true;
    release(slot);
  }

  void send_some(std::size_t slot) {
    auto &s = slots_[slot];
    const auto &req = targets_[s.index].request;
    while (s.sent < req.size()) {
      if (s.ssl) {
        ERR_clear_error();
        int n = SSL_write(s.ssl.get(), req.data() + s.sent, static_cast<int>(req.size() - s.sent));
        if (n > 0) {
          s.sent += static_cast<std::size_t>(n);
          continue;
        }
        if (ssl_wait(slot, n)) return;
        auto &r = run_.results[s.index];
        r.detail = fmt::format("send the request over TLS: {}", ssl_error_text("write failed"));
        r.answer_closed = true;
        release(slot);
        return;
      }
      ssize_t n = ::send(s.fd.get(), req.data() + s.sent, req.size() - s.sent, MSG_NOSIGNAL);
      if (n > 0) {
        s.sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        set_events(slot, EPOLLOUT);
        return;
      }
      auto &r = run_.results[s.index];
      r.detail = fmt::format("send the request: {}", errno_text(errno));
      r.answer_closed = true;
      release(slot);
      return;
    }
    s.phase = Phase::reading;
    set_events(slot, EPOLLIN | EPOLLRDHUP);
  }

  void read_some(std::size_t slot) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    char buf[8192];
    for (;;) {
      std::size_t room = o_.max_answer_bytes - std::min(o_.max_answer_bytes, r.answer.size());
      if (room == 0) {
        release(slot);  // bounded: the rest of the answer is not read
        return;
      }
      if (s.ssl) {
        ERR_clear_error();
        int n = SSL_read(s.ssl.get(), buf, static_cast<int>(std::min(room, sizeof buf)));
        if (n > 0) {
          r.answer.append(buf, static_cast<std::size_t>(n));
          continue;
        }
        if (ssl_wait(slot, n)) break;
        // A close_notify, or (as many HTTPS servers do after Connection: close) a plain close.
        int err = SSL_get_error(s.ssl.get(), n);
        r.answer_closed = true;
        if (r.answer.empty() && err != SSL_ERROR_ZERO_RETURN && !(err == SSL_ERROR_SYSCALL && errno == 0))
          r.detail = fmt::format("read the answer over TLS: {}", ssl_error_text("read failed"));
        release(slot);
        return;
      }
      ssize_t n = ::recv(s.fd.get(), buf, std::min(room, sizeof buf), 0);
      if (n > 0) {
        r.answer.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) {
        r.answer_closed = true;
        release(slot);
        return;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      r.answer_closed = true;
      if (r.answer.empty()) r.detail = fmt::format("read the answer: {}", errno_text(errno));
      release(slot);
      return;
    }
    if (http_answer_complete(r.answer)) release(slot);
  }

  void handle(std::uint64_t slot_id, Clock::time_point now) {
    auto slot = static_cast<std::size_t>(slot_id);
    auto &s = slots_[slot];
    if (s.phase == Phase::connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        classify_async_error(err, run_.results[s.index]);
        release(slot);
        return;
      }
      connected(slot, now);
    } else if (s.phase == Phase::handshaking) {
      handshake(slot);
    } else if (s.phase == Phase::sending) {
      send_some(slot);
    } else if (s.phase == Phase::reading) {
      if (targets_[s.index].wire == Wire::udp)
        read_datagram(slot, now);
      else
        read_some(slot);
    }
  }

  void expire(std::size_t slot, Clock::time_point /*now*/) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    if (s.phase == Phase::connecting) {
      r.reach = Reach::filtered;
      r.detail = fmt::format("no answer within {} ms", o_.connect_timeout.count());
    } else if (targets_[s.index].wire == Wire::udp) {
      r.reach = Reach::filtered;
      r.detail = fmt::format("no datagram back within {} ms", o_.io_timeout.count());
    } else {
      if (s.phase == Phase::handshaking) r.tls_error = fmt::format("no TLS handshake within {} ms", o_.io_timeout.count());
      r.answer_timed_out = true;
    }
    release(slot);
  }

  const std::vector<ProbeTarget> &targets_;
  const ProberOptions &o_;
  core::UniqueFd epoll_;
  std::vector<Slot> slots_;
  std::size_t in_flight_ = 0;
  std::size_t next_ = 0;
  std::size_t hint_ = 0;
  ProbeRun run_;
  SslCtxPtr ctx_;
};

}  // namespace

std::string_view to_string(Reach r) {
  switch (r) {
    case Reach::open:
      return "open";
    case Reach::closed:
      return "closed";
    case Reach::filtered:
      return "filtered";
    case Reach::unreachable:
      return "unreachable";
    case Reach::error:
      return "error";
    case Reach::skipped:
      return "skipped";
  }
  return "?";
}

Result<ProbeRun> probe_all(const std::vector<ProbeTarget> &targets, const ProberOptions &options) {
  if (options.concurrency < 1) return fail("probe: concurrency must be at least 1 (--concurrency)");
  core::UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll)
    return fail("probe: epoll_create1: {}; raise the open-file limit", std::strerror(errno));
  Loop loop(targets, options, std::move(epoll));
  return loop.run();
}

}  // namespace cmax::isolation
