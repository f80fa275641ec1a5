#include "isolation/prober.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/unique_fd.h"
#include "isolation/http_answer.h"

namespace cmax::isolation {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

enum class Phase : std::uint8_t { free, connecting, sending, reading };

struct Slot {
  Phase phase = Phase::free;
  std::size_t index = 0;
  core::UniqueFd fd;
  Clock::time_point started;
  Clock::time_point deadline;
  std::size_t sent = 0;
};

std::string errno_text(int err) { return std::strerror(err); }

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
  void start(std::size_t index, Clock::time_point now) {
    auto &r = run_.results[index];
    const auto &t = targets_[index];
    core::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
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
    if (rc != 0 && errno != EINPROGRESS) {
      classify_sync_error(errno, r);
      return;
    }
    std::size_t slot = free_slot();
    auto &s = slots_[slot];
    s.fd = std::move(fd);
    s.index = index;
    s.started = now;
    s.deadline = now + o_.connect_timeout;
    s.sent = 0;
    s.phase = Phase::connecting;
    ++in_flight_;
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.u64 = slot;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, s.fd.get(), &ev) != 0) {
      r.reach = Reach::error;
      r.detail = fmt::format("epoll_ctl: {}", errno_text(errno));
      release(slot);
      return;
    }
    if (rc == 0) connected(slot, now);
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
    s.phase = Phase::sending;
    s.deadline = now + o_.io_timeout;
    send_some(slot);
  }

  void send_some(std::size_t slot) {
    auto &s = slots_[slot];
    const auto &req = targets_[s.index].request;
    while (s.sent < req.size()) {
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
    } else if (s.phase == Phase::sending) {
      send_some(slot);
    } else if (s.phase == Phase::reading) {
      read_some(slot);
    }
  }

  void expire(std::size_t slot, Clock::time_point /*now*/) {
    auto &s = slots_[slot];
    auto &r = run_.results[s.index];
    if (s.phase == Phase::connecting) {
      r.reach = Reach::filtered;
      r.detail = fmt::format("no answer within {} ms", o_.connect_timeout.count());
    } else {
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
