#pragma once
// The --budget of `cmax run` as a person writes it.

#include <optional>
#include <string_view>

namespace cmax::campaign {

/// "90m", "2h", "1h30m", "3600", "45s" -> seconds; nullopt for anything else, for 0 and for more
/// than 30 days. Pure.
std::optional<int> parse_budget(std::string_view s);

}  // namespace cmax::campaign
