#include "core/strings.h"

#include <algorithm>
#include <charconv>

namespace cmax::core {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> split_any(std::string_view text, std::string_view seps) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find_first_of(seps, i);
    if (j == std::string_view::npos) j = text.size();
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::optional<KeyValue> parse_key_value(std::string_view line, char sep) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return std::nullopt;
  std::size_t at = sep == ' ' ? line.find_first_of(" \t") : line.find(sep);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  KeyValue kv{trim(line.substr(0, at)), trim(line.substr(at + 1))};
  if (kv.key.empty()) return std::nullopt;
  return kv;
}

std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; });
  return out;
}

bool contains_icase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto lower = [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                        [&](char a, char b) { return lower(a) == lower(b); });
  return it != hay.end();
}

std::optional<unsigned long long> parse_uint(std::string_view s, int base) {
  s = trim(s);
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  unsigned long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<long long> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string clip(std::string_view s, std::size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  return std::string(s.substr(0, max_chars)) + "...";
}

std::string one_line(std::string_view s, std::size_t max_chars) {
  std::string out;
  for (char c : s) out += (c == '\r' || c == '\n' || c == '\t') ? ' ' : c;
  return clip(out, max_chars);
}

std::string_view url_origin(std::string_view url) {
  const auto scheme = url.find("://");
  const auto start = scheme == std::string_view::npos ? 0 : scheme + 3;
  return url.substr(0, url.find('/', start));
}

}  // namespace cmax::core
