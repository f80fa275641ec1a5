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

/// dpkg's ordering of whole package versions ([epoch:]upstream[-revision]), exactly as
/// `dpkg --compare-versions` does it. <0, 0 or >0.
int dpkg_compare(std::string_view a, std::string_view b);

/// The first version-looking token in command output ("runc version 1.1.12" -> "1.1.12"),
/// searched after `after_word` when given and found. A token starts with a digit (or v+digit)
/// and holds a dot. Returns a view into `text`.
std::optional<std::string_view> find_version_token(std::string_view text,
                                                   std::string_view after_word = {});

}  // namespace cmax::core
