#pragma once
// JSON text for writers that stream many small records (scan incidents, agent events) and cannot
// afford a document tree per record. Strings are escaped per RFC 8259; bytes that are not valid
// UTF-8 become U+FFFD, so the output is always valid JSON whatever a log line held.

#include <string>
#include <string_view>

namespace cmax::core {

/// Appends `s` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);

}  // namespace cmax::core
