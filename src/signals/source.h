#pragma once
// Byte sources for the scanner: plain files, gzip and zstd files (detected by their magic
// bytes, not their names), the live /dev/kmsg, and a child process's stdout (journalctl).
// Each owns its handle (RAII) and reads in caller-sized pieces, so memory stays bounded.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace cmax::signals {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Fills up to `cap` bytes; 0 at the end. Errors name the source.
  virtual Result<std::size_t> read(char* buf, std::size_t cap) = 0;
  /// What the source is, for stats and errors ("gpu-07.log.gz (gzip)").
  virtual std::string describe() const = 0;
  /// Records lost inside the source (kmsg overruns); 0 for files.
  virtual std::uint64_t lost() const { return 0; }
};

/// Opens a file, choosing plain, gzip or zstd from its first bytes.
Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path);

/// Every record now in the kernel ring buffer, then the end (non-blocking). Records become
/// "prio,seq,usec,flags;message" lines; continuation lines are dropped.
Result<std::unique_ptr<ByteSource>> open_kmsg_source(const std::string& path = "/dev/kmsg");

/// The stdout of `argv` (no shell), killed when the source is destroyed or `timeout` passes.
Result<std::unique_ptr<ByteSource>> open_process_source(std::vector<std::string> argv,
                                                        std::chrono::milliseconds timeout);

}  // namespace cmax::signals
