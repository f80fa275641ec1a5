#include "agent/kmsg_follow.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "signals/prefix.h"

namespace cmax::agent {

std::optional<KmsgRecord> parse_kmsg_record(std::string_view raw) {
  auto nl = raw.find('\n');  // continuation lines (" KEY=VALUE") follow the first newline
  std::string_view first = raw.substr(0, nl);
  auto info = signals::parse_line_prefix(first, 1970);
  if (info.kmsg_prio < 0) return std::nullopt;
  KmsgRecord r;
  r.seq = info.kmsg_seq;
  r.prio = info.kmsg_prio;
  r.usec = static_cast<std::uint64_t>(info.time * 1e6 + 0.5);
  r.line = std::string(first);
  return r;
}

Result<KmsgFollower> KmsgFollower::open(const std::string& path, std::optional<std::uint64_t> resume_after) {
  struct stat st {};
  const bool fifo = ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  core::UniqueFd fd(::open(path.c_str(), (fifo ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (fifo) return fail("open FIFO {}: {}", path, std::strerror(errno));
    return fail("open {}: {}; run cmaxd as root (or with CAP_SYSLOG)", path, std::strerror(errno));
  }
  return KmsgFollower(std::move(fd), path, resume_after, fifo);
}

std::optional<std::string> KmsgFollower::take_pending_record() {
  std::size_t end = pending_.find('\n');
  if (end == std::string::npos) return std::nullopt;
  // Continuation lines (" KEY=VALUE") belong to the record; one not yet read whole waits.
  while (end + 1 < pending_.size() && pending_[end + 1] == ' ') {
    auto next = pending_.find('\n', end + 1);
    if (next == std::string::npos) return std::nullopt;
    end = next;
  }
  std::string rec = pending_.substr(0, end + 1);
  pending_.erase(0, end + 1);
  return rec;
}

Result<void> KmsgFollower::skip_to_end() {
  if (fifo_) {  // what the pipe holds now is the past
    char buf[8192];
    while (::read(fd_.get(), buf, sizeof buf) > 0) {
    }
    pending_.clear();
    resume_after_.reset();
    return ok();
  }
  if (::lseek(fd_.get(), 0, SEEK_END) < 0) return fail("seek to the end of {}: {}", path_, std::strerror(errno));
  resume_after_.reset();
  return ok();
}

Result<std::optional<KmsgRecord>> KmsgFollower::next(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  char buf[8192];
  for (;;) {
    std::optional<std::string> piped;
    ssize_t n = 0;
    if (fifo_ && (piped = take_pending_record())) {
      n = static_cast<ssize_t>(piped->size());
    } else {
      n = ::read(fd_.get(), buf, sizeof buf);
      if (fifo_ && n > 0) {
        if (pending_.size() + static_cast<std::size_t>(n) > (1u << 20)) pending_.clear();  // no newline in 1 MiB: not records
        pending_.append(buf, static_cast<std::size_t>(n));
        continue;
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) continue;  // overrun: the next read returns the oldest record left; the seq gap counts it
      if (errno != EAGAIN) return fail("read {}: {}", path_, std::strerror(errno));
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::optional<KmsgRecord>{};
      pollfd p{fd_.get(), POLLIN, 0};
      int rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno != EINTR) return fail("poll {}: {}", path_, std::strerror(errno));
      continue;
    }
    if (n == 0) return std::optional<KmsgRecord>{};
    auto rec = parse_kmsg_record(piped ? std::string_view(*piped) : std::string_view(buf, static_cast<std::size_t>(n)));
    if (!rec) continue;  // not a record: nothing to follow
    // Records overwritten before we read them show as a gap: count them, whether before the resume
    // point is reached (lost while cmaxd was down) or after (an overrun while running).
    const std::uint64_t expected = last_seq_ ? *last_seq_ + 1 : resume_after_ ? *resume_after_ + 1 : rec->seq;
    if (rec->seq > expected) lost_ += rec->seq - expected;
    if (last_seq_ && rec->seq <= *last_seq_) continue;  // never go backwards
    last_seq_ = rec->seq;
    if (resume_after_ && rec->seq <= *resume_after_) continue;
    return std::optional<KmsgRecord>{std::move(*rec)};
  }
}

}  // namespace cmax::agent
