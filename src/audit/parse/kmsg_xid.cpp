#include "audit/parse/kmsg_xid.h"

#include <charconv>

namespace cmax::audit {
namespace {

template <class T>
bool read_number(std::string_view& s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

bool eat(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  KmsgRecord r;
  std::string_view s = record;
  if (!read_number(s, r.prio) || !eat(s, ',')) return std::nullopt;
  if (!read_number(s, r.seq) || !eat(s, ',')) return std::nullopt;
  if (!read_number(s, r.usec) || !eat(s, ',')) return std::nullopt;
  auto semi = s.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  s.remove_prefix(semi + 1);
  auto nl = s.find('\n');
  r.message = s.substr(0, nl);
  return r;
}

std::optional<XidEvent> parse_xid(std::string_view line) {
  constexpr std::string_view kTag = "NVRM: Xid (";
  auto at = line.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view s = line.substr(at + kTag.size());
  auto close = s.find("):");
  if (close == std::string_view::npos || close > 96) return std::nullopt;
  std::string_view inside = s.substr(0, close);
  if (inside.starts_with("PCI:")) inside.remove_prefix(4);
  XidEvent ev;
  ev.pci = inside.substr(0, inside.find(' '));
  s.remove_prefix(close + 2);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (!read_number(s, ev.code)) return std::nullopt;
  if (!s.empty() && s.front() != ',' && s.front() != ' ') return std::nullopt;
  return ev;
}

}  // namespace cmax::audit
