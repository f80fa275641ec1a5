#pragma once
// Small pure string helpers shared by parsers. string_view in, no allocation unless returning one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::core {

/// Without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view s);

/// Lines without their terminators; a trailing newline gives no empty last line.
std::vector<std::string_view> split_lines(std::string_view text);

/// Splits on any of `seps`, dropping empty pieces.
std::vector<std::string_view> split_any(std::string_view text, std::string_view seps);

/// A `KEY=VALUE` (or `KEY VALUE` with `sep` ' ') line, trimmed; nullopt for blanks and comments (#).
struct KeyValue {
  std::string_view key;
  std::string_view value;
};
std::optional<KeyValue> parse_key_value(std::string_view line, char sep = '=');

/// The value with one layer of matching single or double quotes removed.
std::string_view unquote(std::string_view s);

/// A URL's scheme://host[:port] ("https://a.b:8443" of "https://a.b:8443/v1/x"); without a scheme,
/// everything before the first '/'.
std::string_view url_origin(std::string_view url);

/// ASCII lower-case copy.
std::string to_lower(std::string_view s);

/// True when `needle` occurs in `hay`, ignoring ASCII case.
bool contains_icase(std::string_view hay, std::string_view needle);

/// Unsigned decimal (or 0x hex when `base` is 16) from a whole trimmed string.
std::optional<unsigned long long> parse_uint(std::string_view s, int base = 10);
std::optional<long long> parse_int(std::string_view s);

/// The text cut to `max_chars` with "..." when longer; keeps evidence lines readable.
std::string clip(std::string_view s, std::size_t max_chars = 200);

/// The text on one line (CR, LF and tab become spaces), clipped as clip() does: for evidence that
/// quotes what a file or a peer said.
std::string one_line(std::string_view s, std::size_t max_chars = 200);

}  // namespace cmax::core
