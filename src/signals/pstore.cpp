#include "signals/pstore.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

namespace cmax::signals {
namespace {

std::optional<int> number(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<PstoreHeader> parse_pstore_header(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  auto hash = line.find('#');
  auto space = line.find(" Part");
  if (hash == std::string_view::npos || space == std::string_view::npos || space < hash || hash == 0 || hash > 16)
    return std::nullopt;
  PstoreHeader h;
  h.why = std::string(line.substr(0, hash));
  for (char c : h.why)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return std::nullopt;
  auto count = number(line.substr(hash + 1, space - hash - 1));
  auto part = number(line.substr(space + 5));
  if (!count || !part) return std::nullopt;
  h.count = *count;
  h.part = *part;
  return h;
}

Result<std::vector<PstoreRecord>> read_pstore(const std::string& dir, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  std::vector<PstoreRecord> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  fs::directory_iterator it(dir, ec);
  if (ec) return fail("read pstore {}: {}; run as root, or mount it (mount -t pstore pstore /sys/fs/pstore)", dir, ec.message());
  for (const auto& entry : it) {
    if (!entry.is_regular_file(ec)) continue;
    PstoreRecord r;
    r.path = entry.path().string();
    std::ifstream in(r.path, std::ios::binary);
    if (!in) return fail("read pstore record {}: cannot open it", r.path);
    std::string first;
    std::getline(in, first);
    r.header = parse_pstore_header(first);
    if (!r.header) in.seekg(0);
    // A long record keeps its newest bytes (the end of the log, where the crash is).
    const auto size = static_cast<std::size_t>(entry.file_size(ec));
    if (!ec && size > max_bytes) in.seekg(static_cast<std::streamoff>(size - max_bytes));
    r.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return fail("read pstore record {}: read error", r.path);
    out.push_back(std::move(r));
  }
  // Oldest text first: by dump, then from the last part to Part1; records without a header
  // (console, pmsg) after, by name.
  std::sort(out.begin(), out.end(), [](const PstoreRecord& a, const PstoreRecord& b) {
    auto key = [](const PstoreRecord& r) {
      return r.header ? std::make_tuple(0, r.header->count, -r.header->part, r.path) : std::make_tuple(1, 0, 0, r.path);
    };
    return key(a) < key(b);
  });
  return out;
}

}  // namespace cmax::signals
