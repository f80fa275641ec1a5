#pragma once
// /proc/driver/nvidia/version. Two real shapes:
//   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024
//   NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024
//   GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)
// Pure.

#include <optional>
#include <string>
#include <string_view>

namespace cmax::audit {

struct NvidiaDriverInfo {
  std::string version;  ///< "550.54.14"
  bool open_module = false;
  std::string arch;     ///< "x86_64", "aarch64"
  std::string gcc;      ///< compiler line, if present
};

/// nullopt when there is no NVRM version line or no version on it.
std::optional<NvidiaDriverInfo> parse_nvidia_version(std::string_view text);

}  // namespace cmax::audit
