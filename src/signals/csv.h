#pragma once
// A pure RFC 4180 CSV parser: quoted fields may hold commas, doubled quotes ("") and line breaks;
// records end at LF or CRLF; the last record needs no terminator; bytes (UTF-8) pass through.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::signals {

/// One record and the 1-based line of the text it starts on (quoted line breaks make them differ).
struct CsvRecord {
  std::size_t line = 0;
  std::vector<std::string> fields;
};

/// Parses `text` into records. Blank lines are skipped and a leading UTF-8 byte-order mark is
/// dropped. Errors name the line: a quoted field that is never closed (the line it opened on), or
/// text between a closing quote and the next comma. Pure; no I/O.
Result<std::vector<CsvRecord>> parse_csv(std::string_view text);

}  // namespace cmax::signals
