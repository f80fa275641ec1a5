#pragma once
// Version strings as the field prints them: semver with -rcN / -rc.N / ~rcN, Debian and Ubuntu
// package versions with epochs and revisions, NVIDIA driver branches (550.144.03, R550), kernel
// releases (6.1.0-28-amd64), build tags (+security-2). Pure: no I/O.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::core {

/// Pre-release tags, lowest first: 1.0-dev < 1.0-alpha < 1.0-beta < 1.0-pre < 1.0-rc < 1.0.
enum class PreTag : std::uint8_t { dev, alpha, beta, pre, rc };

/// A parsed version. `parts` are the numeric release components; `suffix` is what follows the
/// release and any pre-release (distro revision, build tag) and is ordered with dpkg's rules.
struct Version {
  std::uint64_t epoch = 0;
  std::vector<std::uint64_t> parts;
  std::optional<PreTag> pre_tag;
  std::uint64_t pre_number = 0;
  std::string suffix;
  std::string text;  ///< the input, trimmed

  /// The leading component (NVIDIA driver branch, kernel major, ...).
  std::uint64_t major() const { return parts.empty() ? 0 : parts[0]; }
};

/// Parses a version; an error says what is wrong with the text ("not a version: ...").
Result<Version> parse_version(std::string_view text);

/// Total order: epoch, release parts (missing parts are 0), pre-release (none sorts last),
/// then suffix by dpkg rules ("~" sorts before the end, "+deb12u1" after it).
int compare_versions(const Version& a, const Version& b);

/// True when `train`'s parts are a prefix of `v`'s parts: train "550" holds 550.144.03,
/// train "1.17" holds 1.17.3 but not 1.1.7.
bool in_train(const Version& v, const Version& train);

/// A distro package version as dpkg and rpm split it: [epoch:]upstream[-revision]. The epoch and
/// the revision belong to the packager; the upstream part is the release the package carries.
struct PackageVersion {
  std::uint64_t epoch = 0;
  std::string upstream;  ///< "24.0.7" of "5:24.0.7-1~ubuntu.22.04~jammy"
  std::string revision;  ///< "1~ubuntu.22.04~jammy"; empty when none
};

/// Splits a package version at its epoch colon and its last hyphen. A last segment that is a
/// pre-release ("1.4.0-rc.3", "2.0-beta1") belongs to the upstream version, not the revision.
PackageVersion split_package_version(std::string_view text);

/// The upstream release a distro package carries, parsed: "5:24.0.7-1~ubuntu.22.04~jammy" ->
/// 24.0.7, "1.1.5+ds1-1+deb12u1" -> 1.1.5+ds1, "1:1.17.8~rc1-1" -> 1.17.8~rc1. What an upstream
/// version floor is compared with: the packager's epoch would otherwise outrank every release.
Result<Version> parse_package_upstream(std::string_view text);

/// dpkg's ordering of whole package versions ([epoch:]upstream[-revision]), exactly as
/// `dpkg --compare-versions` does it. <0, 0 or >0.
int dpkg_compare(std::string_view a, std::string_view b);

/// The first version-looking token in command output ("runc version 1.1.12" -> "1.1.12"),
/// searched after `after_word` when given and found. A token starts with a digit (or v+digit)
/// and holds a dot. Returns a view into `text`.
std::optional<std::string_view> find_version_token(std::string_view text,
                                                   std::string_view after_word = {});

}  // namespace cmax::core
