#include "audit/parse/sysfs.h"

#include "core/strings.h"

namespace cmax::audit {
namespace {

std::string decode_octal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto digits = s.substr(i + 1, 3);
      if (digits.size() == 3 && digits.find_first_not_of("01234567") == std::string_view::npos) {
        out += static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::vector<std::string> parse_proc_modules(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : core::split_lines(text)) {
    auto name = line.substr(0, line.find(' '));
    if (!name.empty()) out.emplace_back(name);
  }
  return out;
}

std::vector<Mount> parse_proc_mounts(std::string_view text) {
  std::vector<Mount> out;
  for (auto line : core::split_lines(text)) {
    auto f = core::split_any(line, " \t");
    if (f.size() < 4) continue;
    out.push_back({decode_octal(f[0]), decode_octal(f[1]), std::string(f[2]), std::string(f[3])});
  }
  return out;
}

std::optional<std::string> parse_limits_memlock(std::string_view proc_limits) {
  for (auto line : core::split_lines(proc_limits)) {
    if (!line.starts_with("Max locked memory")) continue;
    auto f = core::split_any(line.substr(17), " \t");
    if (f.empty()) return std::nullopt;
    return std::string(f[0]);
  }
  return std::nullopt;
}

std::optional<SysfsState> parse_sysfs_state(std::string_view text) {
  text = core::trim(text);
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto code = core::parse_int(text.substr(0, colon));
  if (!code) return std::nullopt;
  return SysfsState{static_cast<int>(*code), std::string(core::trim(text.substr(colon + 1)))};
}

}  // namespace cmax::audit
