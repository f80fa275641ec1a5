#include "campaign/budget_text.h"

#include <charconv>

namespace cmax::campaign {

std::optional<int> parse_budget(std::string_view s) {
  if (s.empty()) return std::nullopt;
  long long total = 0;
  while (!s.empty()) {
    long long n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || n < 0) return std::nullopt;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()));
    long long unit = 1;
    if (!s.empty()) {
      if (s[0] == 'h') unit = 3600;
      else if (s[0] == 'm') unit = 60;
      else if (s[0] != 's') return std::nullopt;
      s.remove_prefix(1);
    }
    total += n * unit;
    if (total > 30LL * 24 * 3600) return std::nullopt;
  }
  return total > 0 ? std::optional<int>(static_cast<int>(total)) : std::nullopt;
}

}  // namespace cmax::campaign
