#pragma once
// The scan loop: bytes from a source, in bounded chunks of whole lines, through the prefilter;
// candidate lines through the prefix parser and the classifier; signals into the correlator.
// Memory is the chunk buffer (512 KiB) plus the incidents, whatever the input size.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "signals/classify.h"
#include "signals/correlate.h"
#include "signals/drill_marker.h"
#include "signals/prefilter.h"
#include "signals/source.h"

namespace cmax::signals {

struct ScanStats {
  std::uint64_t bytes = 0;
  std::uint64_t candidate_lines = 0;  ///< lines holding an anchor literal
  std::uint64_t signals = 0;          ///< candidates that classified as a signal
  std::uint64_t skipped_long = 0;     ///< candidate lines longer than the line limit (not parsed)
  std::uint64_t overlong_lines = 0;   ///< lines longer than the chunk, skipped unread
  std::uint64_t lost_records = 0;     ///< kmsg records overwritten before they were read
  std::uint64_t ignored = 0;          ///< dropped by the config's ignore lists
  std::uint64_t userspace_dropped = 0;  ///< kmsg records from userspace dropped by kernel_origin_only
  std::uint64_t drill_markers = 0;     ///< cmax drill markers read (drill_marker.h)
  std::uint64_t drill_lines = 0;       ///< signal lines a drill wrote: to the drill correlator, never counted
};

struct ScanOptions {
  /// The read buffer. Small enough to stay in the L2 cache while the prefilter reads it back:
  /// read() into it runs at ~10 GB/s here, where mapping the file costs a page fault per 64 KiB
  /// (docs/PERFORMANCE.md). Lines longer than this are skipped unread and counted.
  std::size_t chunk_bytes = 512u << 10;
  std::size_t max_line_bytes = 64u << 10;  ///< candidate lines longer than this are skipped
  int assumed_year = 1970;                 ///< for syslog stamps without a year
  bool kernel_origin_only = false;         ///< drop /dev/kmsg records written from userspace
  Isa isa = best_isa();                    ///< the prefilter's instruction set (clamped to the CPU's)
  /// The NVIDIA driver branch of every node scanned (picks the Xid 144-150 decode); -1 unknown
  /// (both generations of the sheet are tried).
  int driver_branch = -1;
  /// Where the log is this host's own (the live /dev/kmsg, the journal): its sysfs root, to map
  /// RDMA device names in NIC lines to their PCI addresses. Empty: no mapping (files from anywhere).
  std::string live_sys_root;
};

class Scanner {
 public:
  static Result<Scanner> create(Correlator& correlator, ScanOptions options = {});

  /// Scans one source. `node` names lines that carry no host field of their own. An error ends
  /// this source; what was read before it stays in the correlator and the stats.
  Result<void> scan(ByteSource& source, const std::string& node);
  /// Scans a file (plain, gzip or zstd, by its first bytes; see open_file_source).
  /// Returns what the file was ("path", "path (gzip)").
  Result<std::string> scan_path(const std::string& path, const std::string& node);
  /// Scans text already in memory (tests, small inputs).
  Result<void> scan_text(std::string_view text, const std::string& node);
  const ScanStats& stats() const { return stats_; }
  /// The instruction set the prefilter runs with.
  Isa isa() const { return prefilter_.isa(); }
  /// Where drill lines go (drill_marker.h): their incidents carry the drill id. Without one they
  /// are counted in stats().drill_lines and dropped. Never into the main correlator: a drill's
  /// lines are not the node's faults. `drills` must outlive the scanner.
  void set_drill_correlator(Correlator& drills) { drills_ = &drills; }
  /// The drills whose markers this scan read, in order.
  const std::vector<std::string>& drills_seen() const { return drill_tracker_.seen(); }

 private:
  Scanner(Correlator& c, Prefilter p, ScanOptions o) : correlator_(&c), prefilter_(std::move(p)), options_(o) {}
  Result<void> scan_lines(std::string_view text, const std::string& node);
  void handle_line(std::string_view line, AnchorSet anchors, const std::string& node);

  Correlator* correlator_;
  Correlator* drills_ = nullptr;
  DrillTracker drill_tracker_;
  Prefilter prefilter_;
  ScanOptions options_;
  ScanStats stats_;
  std::string rank_node_;  // scratch for "<node>/task<N>" names
  // Per node: the address the last "NVRM: The NVIDIA GPU X" line named (the fallen-off-the-bus
  // message's head, for its last line).
  std::unordered_map<std::string, std::string> off_bus_head_;
  // The last candidate line's host and time, for the continuation lines after it.
  std::string last_host_, last_stamp_;
  bool last_has_time_ = false, last_wall_ = false;
  double last_time_ = 0;
  std::vector<Candidate> candidates_;  // scratch: the candidate lines of one chunk
};

/// Node name from a log file path: "logs/gpu-07.kern.log.gz" -> "gpu-07"; generic names
/// (kern.log, syslog, messages, dmesg, journal) take their directory's name.
std::string node_from_path(std::string_view path);

}  // namespace cmax::signals
