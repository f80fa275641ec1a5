#pragma once
// Follows the kernel ring buffer live through /dev/kmsg: one record per read(), a poll() with a
// deadline between them, so the caller's loop never blocks longer than it asked. Resumes after a
// sequence number (records up to it are skipped), and counts records lost to an overrun from the
// gaps in the sequence numbers (read() fails with EPIPE once when the reader fell behind).
// A named pipe (FIFO) carrying records in /dev/kmsg's read format, one or more per write, is
// followed the same way: what a replay, a relay from another host's log, or a test feeds an agent
// whose kernel is not the one to watch (many simulated nodes on one machine).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cmax::agent {

/// One /dev/kmsg record: "prio,seq,usec,flags;message" with its continuation lines dropped.
struct KmsgRecord {
  std::uint64_t seq = 0;
  int prio = 0;               ///< facility << 3 | level; facility 0 is the kernel, 1 is userspace
  std::uint64_t usec = 0;     ///< monotonic microseconds since boot
  std::string line;           ///< "prio,seq,usec,flags;message", as the scanner reads kmsg lines
  bool from_kernel() const { return (prio >> 3) == 0; }
};

/// Parses one record as read() returns it. nullopt for anything that is not a record.
std::optional<KmsgRecord> parse_kmsg_record(std::string_view raw);

class KmsgFollower {
 public:
  /// Opens `path` (normally /dev/kmsg, or a FIFO of records); records with seq <= `resume_after`
  /// are skipped. A FIFO is opened for reading and writing, so that it never reads as ended while
  /// no writer has it open.
  static Result<KmsgFollower> open(const std::string& path, std::optional<std::uint64_t> resume_after);

  /// The next record, or nullopt when none arrived within `wait`. Errors name the device.
  Result<std::optional<KmsgRecord>> next(std::chrono::milliseconds wait);

  /// Skips every record in the buffer now: the next one returned is the next one written.
  Result<void> skip_to_end();

  /// Records that were overwritten before they could be read (seq gaps), since open.
  std::uint64_t lost() const { return lost_; }
  /// The seq of the last record returned or skipped; nullopt before the first.
  std::optional<std::uint64_t> last_seq() const { return last_seq_; }
  int fd() const { return fd_.get(); }
  bool is_fifo() const { return fifo_; }

 private:
  KmsgFollower(core::UniqueFd fd, std::string path, std::optional<std::uint64_t> resume, bool fifo)
      : fd_(std::move(fd)), path_(std::move(path)), resume_after_(resume), fifo_(fifo) {}
  // A FIFO's next whole record from pending_ (a line and its " KEY=VALUE" continuation lines).
  std::optional<std::string> take_pending_record();
  core::UniqueFd fd_;
  std::string path_;
  std::optional<std::uint64_t> resume_after_;
  std::optional<std::uint64_t> last_seq_;
  std::uint64_t lost_ = 0;
  bool fifo_ = false;
  std::string pending_;  ///< a FIFO's bytes read and not yet returned as records
};

}  // namespace cmax::agent
