#pragma once
// /etc/os-release (os-release(5)): KEY=value lines, values optionally quoted. Pure.

#include <map>
#include <string>
#include <string_view>

namespace cmax::audit {

std::map<std::string, std::string, std::less<>> parse_os_release(std::string_view text);

/// The Debian package version of the running kernel from /proc/version
/// ("... #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)" -> "6.1.76-1"), or from
/// /proc/version_signature on Ubuntu ("Ubuntu 5.15.0-97.107-generic 5.15.131" -> "5.15.0-97.107").
std::string kernel_package_version(std::string_view proc_version, std::string_view version_signature);

/// The upstream kernel version a distro kernel is built from, which its release string hides
/// ("5.15.0-101-generic" is 5.15.143): the last field of Ubuntu's /proc/version_signature, else the
/// upstream part of a Debian package version ("6.1.76-1" -> "6.1.76"). Empty when neither says.
std::string kernel_upstream_version(std::string_view package_version, std::string_view version_signature);

}  // namespace cmax::audit
