#pragma once
// Pure timestamp parsing for event and contract times. string_view in, UTC seconds out.

#include <cstdint>
#include <optional>
#include <string_view>

#include "sla/zone.h"

namespace cmax::sla {

/// UTC seconds of `text`: Unix seconds ("1767225600", a fraction is truncated), or ISO 8601
/// "YYYY-MM-DD[T| ]HH:MM[:SS[.fff]]" with "Z" or "+HH:MM"/"-HHMM", or a bare "YYYY-MM-DD" (midnight).
/// Without an offset the time is local to `zone`. nullopt for anything else (surrounding spaces
/// are fine; a month 13, a 25th hour or a 31 February are not).
std::optional<std::int64_t> parse_timestamp(std::string_view text, const Zone& zone);

/// A month given as "YYYY-MM" or "YYYY-MM-DD" (the month that holds the day): year and month.
struct YearMonth {
  int year = 0, month = 0;
  friend bool operator==(const YearMonth&, const YearMonth&) = default;
};
std::optional<YearMonth> parse_year_month(std::string_view text);

}  // namespace cmax::sla
