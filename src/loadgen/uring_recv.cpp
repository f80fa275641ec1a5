#include "loadgen/uring_recv.h"

#include <liburing.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cmax::loadgen::detail {
namespace {

constexpr std::uint64_t kCancelTag = 1;  // the cancel requests' own (failure-only) completions
constexpr unsigned kGroup = 1;           // the provided-buffer group

}  // namespace

Result<std::unique_ptr<UringRecv>> UringRecv::open(unsigned buffers, unsigned buffer_bytes) {
  if (buffers == 0 || (buffers & (buffers - 1)) != 0 || buffers > 32768)
    return fail("set up io_uring: {} buffers is not a power of two up to 32768", buffers);
  std::unique_ptr<UringRecv> u(new UringRecv);
  u->ring_ = std::make_unique<io_uring>();
  io_uring_params p{};
  // DEFER_TASKRUN: receives the kernel owes us run only inside our io_uring_enter, all together,
  // instead of interrupting this thread per segment. CQSIZE: room for a wake-up's completions.
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
  p.cq_entries = 8192;
  if (int rc = io_uring_queue_init_params(1024, u->ring_.get(), &p); rc < 0)
    return fail("set up io_uring (SINGLE_ISSUER, DEFER_TASKRUN: Linux 6.1 or later): {}", std::strerror(-rc));
  u->ring_ready_ = true;
  u->buffers_ = buffers;
  u->buffer_bytes_ = buffer_bytes;
  u->br_bytes_ = buffers * sizeof(io_uring_buf);
  void* mem = nullptr;
  if (::posix_memalign(&mem, 4096, u->br_bytes_) != 0) return fail("set up io_uring: no memory for the buffer ring");
  std::memset(mem, 0, u->br_bytes_);
  u->br_ = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_ring_init(u->br_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<unsigned long>(u->br_);
  reg.ring_entries = buffers;
  reg.bgid = kGroup;
  if (int rc = io_uring_register_buf_ring(u->ring_.get(), &reg, 0); rc < 0)
    return fail("set up io_uring: register the provided buffers (Linux 5.19 or later): {}", std::strerror(-rc));
  u->slab_ = std::make_unique<char[]>(static_cast<std::size_t>(buffers) * buffer_bytes);
  for (unsigned b = 0; b < buffers; ++b)
    io_uring_buf_ring_add(u->br_, u->slab_.get() + static_cast<std::size_t>(b) * buffer_bytes, buffer_bytes,
                          static_cast<unsigned short>(b), io_uring_buf_ring_mask(buffers), static_cast<int>(b));
  io_uring_buf_ring_advance(u->br_, static_cast<int>(buffers));
  return u;
}

UringRecv::~UringRecv() {
  if (ring_ready_) io_uring_queue_exit(ring_.get());  // cancels what is armed; unregisters the buffers
  std::free(br_);
}

namespace {
io_uring_sqe* get_sqe(io_uring* ring) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) {  // the submission queue is full: hand it to the kernel and take a fresh slot
    io_uring_submit(ring);
    sqe = io_uring_get_sqe(ring);
  }
  return sqe;
}
}  // namespace

void UringRecv::arm(int fd, std::uint64_t tag) {
  io_uring_sqe* sqe = get_sqe(ring_.get());
  io_uring_prep_recv_multishot(sqe, fd, nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kGroup;
  io_uring_sqe_set_data64(sqe, tag);
}

void UringRecv::poll(int fd, std::uint64_t tag) {
  io_uring_sqe* sqe = get_sqe(ring_.get());
  io_uring_prep_poll_multishot(sqe, fd, POLLIN);
  io_uring_sqe_set_data64(sqe, tag);
}

void UringRecv::cancel(std::uint64_t tag) {
  io_uring_sqe* sqe = get_sqe(ring_.get());
  io_uring_prep_cancel64(sqe, tag, 0);
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  io_uring_sqe_set_data64(sqe, kCancelTag);
}

void UringRecv::give_back() {
  if (returned_ > 0) {
    io_uring_buf_ring_advance(br_, returned_);
    returned_ = 0;
  }
}

std::size_t UringRecv::take(std::vector<RecvEvent>& out) {
  io_uring* ring = ring_.get();
  unsigned head = 0, n = 0;
  std::size_t taken = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(ring, head, cqe) {
    ++n;
    if (cqe->user_data == kCancelTag) continue;
    RecvEvent e;
    e.tag = cqe->user_data;
    e.res = cqe->res;
    e.more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    if ((cqe->flags & IORING_CQE_F_BUFFER) != 0) e.buffer = static_cast<int>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    out.push_back(e);
    ++taken;
  }
  io_uring_cq_advance(ring, n);
  return n > 0 ? std::max<std::size_t>(taken, 1) : 0;
}

void UringRecv::wait(int timeout_ms, std::vector<RecvEvent>& out) {
  io_uring* ring = ring_.get();
  give_back();
  __kernel_timespec ts{};
  ts.tv_sec = timeout_ms / 1000;
  ts.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1'000'000;
  io_uring_cqe* first = nullptr;
  io_uring_submit_and_wait_timeout(ring, &first, 1, &ts, nullptr);
  take(out);
}

std::size_t UringRecv::more(std::vector<RecvEvent>& out) {
  give_back();
  io_uring_submit(ring_.get());  // re-arms queued while the last completions were consumed
  io_uring_get_events(ring_.get());
  return take(out);
}

std::string_view UringRecv::bytes(const RecvEvent& e) const {
  if (e.buffer < 0 || e.res <= 0) return {};
  return {slab_.get() + static_cast<std::size_t>(e.buffer) * buffer_bytes_, static_cast<std::size_t>(e.res)};
}

void UringRecv::recycle(int buffer) {
  if (buffer < 0) return;
  io_uring_buf_ring_add(br_, slab_.get() + static_cast<std::size_t>(buffer) * buffer_bytes_, buffer_bytes_,
                        static_cast<unsigned short>(buffer), io_uring_buf_ring_mask(buffers_), returned_++);
}

}  // namespace cmax::loadgen::detail
