#pragma once
// The active checks of `cmax check --active`: each measures one thing on this node and judges it
// against thresholds kept as data (data/health-thresholds.json). The table below lists them; the
// runner (runner.h) isolates each in a child process with a time limit, so a hung filesystem or a
// locked NUMA node becomes a finding instead of a hang.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "audit/model.h"
#include "core/result.h"
#include "health/gpu_checks.h"
#include "health/result.h"

namespace cmax::health {

/// Numbers the checks are judged against, by dotted key ("storage.metadata.p99_us.max").
/// Loaded from data/health-thresholds.json (built in) or a file given by the user.
class Thresholds {
 public:
  static Result<Thresholds> builtin();
  static Result<Thresholds> load_file(const std::string& path);
  static Result<Thresholds> parse(std::string_view json_text, std::string_view origin);
  /// The value at `key`, or nullopt when the table has none (the check then reports the number
  /// without a bound).
  std::optional<double> get(std::string_view key) const;
  void set(std::string key, double value) { values_[std::move(key)] = value; }
  /// Every bound by dotted key, for handing the same table to a check's child process.
  const std::map<std::string, double, std::less<>>& values() const { return values_; }
  const std::string& origin() const { return origin_; }

 private:
  std::map<std::string, double, std::less<>> values_;
  std::string origin_;
};

struct ActiveOptions {
  std::string host_root = "/";  ///< /proc, /sys and /sys/firmware/dmi are read under it
  /// A directory on the filesystem to test (a shared filesystem's scratch directory). Empty: the
  /// storage checks are not_applicable ("no --path given").
  std::string storage_path;
  std::size_t metadata_files = 2000;           ///< small files, like a Python site-packages tree
  std::uint64_t seq_bytes = 256ull << 20;      ///< sequential write and read size
  int fsync_count = 200;                       ///< 4 KiB write + fdatasync, timed each
  std::chrono::milliseconds stall_window{1000};  ///< how long each NUMA node is watched
  std::chrono::milliseconds check_timeout{60000};  ///< per check; then the child is abandoned
  GpuCheckOptions gpu;
};

using ActiveCheckFn = CheckResult (*)(const ActiveOptions&, const Thresholds&);

struct ActiveCheck {
  std::string_view id;     ///< "storage.metadata"
  std::string_view group;  ///< "storage", "memory", "cpu", "gpu": what --checks selects
  audit::Category category;
  std::string_view title;
  ActiveCheckFn run;  ///< runs in the calling process; the runner puts it in a child
};

/// Every active check except the GPU ones (run_gpu_checks runs those, in their own program).
std::span<const ActiveCheck> all_active_checks();

// The checks, one file each (storage.cpp, memory.cpp, cpu.cpp, stall.cpp).
CheckResult check_storage_metadata(const ActiveOptions& o, const Thresholds& t);
CheckResult check_storage_seq_write(const ActiveOptions& o, const Thresholds& t);
CheckResult check_storage_seq_read(const ActiveOptions& o, const Thresholds& t);
CheckResult check_storage_fsync(const ActiveOptions& o, const Thresholds& t);
CheckResult check_memory_bandwidth(const ActiveOptions& o, const Thresholds& t);
CheckResult check_cpu_throughput(const ActiveOptions& o, const Thresholds& t);
CheckResult check_cpu_stall(const ActiveOptions& o, const Thresholds& t);

}  // namespace cmax::health
