#pragma once
// Small parsers for sysfs and procfs text: PCI ids and classes, /proc/modules, /proc/mounts,
// /proc/self/limits, IB port state ("4: ACTIVE"). Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// Loaded module names from /proc/modules ("nvidia 12345 2 nvidia_uvm, Live 0x0").
std::vector<std::string> parse_proc_modules(std::string_view text);

struct Mount {
  std::string device;
  std::string mount_point;
  std::string fs_type;
  std::string options;
};
/// /proc/mounts or /proc/self/mounts; octal escapes (\040) in paths are decoded.
std::vector<Mount> parse_proc_mounts(std::string_view text);

/// "Max locked memory  unlimited  unlimited  bytes" -> soft limit text ("unlimited" or bytes).
std::optional<std::string> parse_limits_memlock(std::string_view proc_limits);

/// "4: ACTIVE" -> {4, "ACTIVE"}.
struct SysfsState {
  int code = -1;
  std::string name;
};
std::optional<SysfsState> parse_sysfs_state(std::string_view text);

}  // namespace cmax::audit
