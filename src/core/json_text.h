#pragma once
// JSON text for writers that stream many small records (scan incidents, agent events) and cannot
// afford a document tree per record. Strings are escaped per RFC 8259; bytes that are not valid
// UTF-8 become U+FFFD, so the output is always valid JSON whatever a log line held.

#include <cstddef>
#include <string>
#include <string_view>

namespace cmax::core {

/// Appends `s` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);

/// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one (overlong
/// forms, surrogates, code points past U+10FFFF, cut-off sequences). `i` < s.size().
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

}  // namespace cmax::core
