#pragma once
// HostRoot: every /proc, /sys, /etc, /var path the collectors read goes through one of these, so an
// audit can run against the live machine ("/") or a mounted image or test fixture tree.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::core {

/// Default cap on what read_file returns; larger files are an error, never a partial read.
inline constexpr std::size_t kDefaultMaxFileBytes = 4u << 20;

/// One directory entry seen through a HostRoot.
struct DirEntry {
  std::string name;
  bool is_dir = false;
  bool is_symlink = false;
};

/// A view of a filesystem tree as if it were "/". Paths given to it are absolute host paths
/// ("/proc/cmdline"); symlinks inside a non-live root are resolved inside that root (openat2
/// RESOLVE_IN_ROOT), so an image's absolute links never escape to the machine running cmax.
/// Thread-safe: holds only an immutable path.
class HostRoot {
 public:
  /// `root` is "/" for the live machine or a directory that holds a host tree.
  explicit HostRoot(std::string root = "/");

  /// True when this is the machine cmax runs on, so commands may be spawned and /dev/kmsg read.
  bool is_live() const { return live_; }
  const std::string& root() const { return root_; }

  /// The path on this machine that `host_path` names ("/etc/x" -> "<root>/etc/x").
  std::string resolve(std::string_view host_path) const;

  /// Reads a whole regular file (or /proc, /sys pseudo-file) of at most `max_bytes`.
  /// Errors name the host path: missing, not a regular file, unreadable, or too large.
  Result<std::string> read_file(std::string_view host_path,
                                std::size_t max_bytes = kDefaultMaxFileBytes) const;

  /// Reads at most `max_bytes` from the start of a file; never an error for size.
  Result<std::string> read_prefix(std::string_view host_path, std::size_t max_bytes) const;

  /// True when the path exists (following links inside the root).
  bool exists(std::string_view host_path) const;

  /// The entries of a directory, sorted by name, without "." and "..".
  Result<std::vector<DirEntry>> list_dir(std::string_view host_path) const;

  /// The target of a symlink as stored (not resolved).
  Result<std::string> read_link(std::string_view host_path) const;

 private:
  Result<int> open_in_root(std::string_view host_path, int flags) const;

  std::string root_;
  bool live_;
};

/// "a" + "/" + "b" without doubled slashes.
std::string join_path(std::string_view a, std::string_view b);

}  // namespace cmax::core
