#pragma once
// Private to the native transport: receives on many TCP sockets through one io_uring, with a
// multishot receive per socket and a ring of provided buffers. Against epoll + recv this saves the
// system call per segment (about 1 us in a VM): the kernel runs the receives of every socket that
// got data in one io_uring_enter, and the wake-up cadence stays the caller's (DEFER_TASKRUN: no
// receive runs until the caller asks, and then all of them do, so a segment is read at the same
// wake-up that epoll would have read it at).

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/result.h"

struct io_uring;
struct io_uring_buf_ring;

namespace cmax::loadgen::detail {

/// One completion, copied out of the ring: `tag` is what arm() was given.
struct RecvEvent {
  std::uint64_t tag = 0;
  int res = 0;          ///< bytes (> 0), 0 = EOF, or -errno (-ENOBUFS: no buffer was free; re-arm)
  bool more = false;    ///< the multishot receive is still armed
  int buffer = -1;      ///< the provided buffer holding the bytes, -1 none
};

class UringRecv {
 public:
  /// A ring with SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1+) and `buffers` provided buffers of
  /// `buffer_bytes` each. Fails where the kernel lacks these or io_uring is disabled
  /// (kernel.io_uring_disabled, a container's seccomp filter); the caller then uses epoll.
  /// Must be called on the thread that will use it.
  static Result<std::unique_ptr<UringRecv>> open(unsigned buffers = 4096, unsigned buffer_bytes = 2048);
  ~UringRecv();
  UringRecv(const UringRecv&) = delete;
  UringRecv& operator=(const UringRecv&) = delete;

  /// Starts a multishot receive on `fd`; its completions carry `tag` (never 0 or 1: reserved).
  void arm(int fd, std::uint64_t tag);
  /// A multishot poll for readability of `fd` (the epoll descriptor), completing with `tag`.
  void poll(int fd, std::uint64_t tag);
  /// Cancels what arm() started with `tag`; its last completion (-ECANCELED, more = false) follows.
  void cancel(std::uint64_t tag);
  /// Submits what is queued, waits up to `timeout_ms` for one completion, and appends what
  /// completed to `out`. The kernel runs a few dozen deferred receives per call (Linux 6.10+):
  /// call more() after consuming these until it brings nothing, so that every socket with data is
  /// read at this wake-up and the buffers go back to the kernel as they are consumed.
  void wait(int timeout_ms, std::vector<RecvEvent>& out);
  /// Runs the receives still deferred (one io_uring_enter); appends what completed; their count.
  std::size_t more(std::vector<RecvEvent>& out);
  /// The bytes of a completion's buffer.
  std::string_view bytes(const RecvEvent& e) const;
  /// Gives a buffer back to the kernel (after its bytes were consumed; at the next wait or more).
  void recycle(int buffer);

 private:
  UringRecv() = default;
  std::size_t take(std::vector<RecvEvent>& out);
  void give_back();
  std::unique_ptr<struct io_uring> ring_;
  struct io_uring_buf_ring* br_ = nullptr;
  std::size_t br_bytes_ = 0;
  std::unique_ptr<char[]> slab_;
  unsigned buffers_ = 0, buffer_bytes_ = 0;
  int returned_ = 0;  // buffers recycled since the last advance
  bool ring_ready_ = false;
};

}  // namespace cmax::loadgen::detail
