#include "health/dmi.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>

#include "core/strings.h"

namespace cmax::health {

namespace {

// SMBIOS 3.x, 7.18 Memory Device (Type 17): offsets into the formatted area.
constexpr std::size_t kTotalWidth = 0x08, kDataWidth = 0x0A, kSize = 0x0C, kLocator = 0x10,
                      kBankLocator = 0x11, kMemoryType = 0x12, kSpeed = 0x15, kExtendedSize = 0x1C,
                      kConfiguredSpeed = 0x20, kExtendedSpeed = 0x54,
                      kExtendedConfiguredSpeed = 0x58;
constexpr std::size_t kMinType17Length = 0x15;  // SMBIOS 2.1: up to Type Detail
constexpr std::uint8_t kType17 = 17, kEndOfTable = 127;

std::uint16_t word(std::span<const std::uint8_t> b, std::size_t off) {
  return static_cast<std::uint16_t>(b[off] | (b[off + 1] << 8));
}
std::uint32_t dword(std::span<const std::uint8_t> b, std::size_t off) {
  return static_cast<std::uint32_t>(b[off]) | (static_cast<std::uint32_t>(b[off + 1]) << 8) |
         (static_cast<std::uint32_t>(b[off + 2]) << 16) |
         (static_cast<std::uint32_t>(b[off + 3]) << 24);
}

/// String number `index` (1-based) of the string table that starts at `from`; "" when absent.
std::string smbios_string(std::span<const std::uint8_t> b, std::size_t from, std::uint8_t index) {
  if (index == 0) return {};
  std::size_t pos = from;
  for (std::uint8_t k = 1; pos < b.size() && b[pos] != 0; ++k) {
    std::size_t end = pos;
    while (end < b.size() && b[end] != 0) ++end;
    if (k == index) {
      std::string_view s(reinterpret_cast<const char*>(b.data() + pos), end - pos);
      return std::string(core::trim(s));
    }
    pos = end + 1;
  }
  return {};
}

std::string memory_type_name(std::uint8_t t) {
  switch (t) {
    case 0x0F:
      return "SDRAM";
    case 0x12:
      return "DDR";
    case 0x13:
      return "DDR2";
    case 0x18:
      return "DDR3";
    case 0x1A:
      return "DDR4";
    case 0x1B:
      return "LPDDR";
    case 0x1C:
      return "LPDDR2";
    case 0x1D:
      return "LPDDR3";
    case 0x1E:
      return "LPDDR4";
    case 0x20:
      return "HBM";
    case 0x21:
      return "HBM2";
    case 0x22:
      return "DDR5";
    case 0x23:
      return "LPDDR5";
    case 0x24:
      return "HBM3";
    default:
      return {};
  }
}

std::uint16_t width(std::uint16_t w) { return w == 0xFFFF ? 0 : w; }

/// Where the structure starting at `off` ends (one past its double-NUL string terminator).
std::optional<std::size_t> structure_end(std::span<const std::uint8_t> b, std::size_t off) {
  if (off + 4 > b.size()) return std::nullopt;
  std::size_t pos = off + b[off + 1];
  if (b[off + 1] < 4 || pos > b.size()) return std::nullopt;
  for (; pos + 1 < b.size(); ++pos)
    if (b[pos] == 0 && b[pos + 1] == 0) return pos + 2;
  return std::nullopt;
}

}  // namespace

Result<std::optional<Dimm>> parse_type17_record(std::span<const std::uint8_t> b) {
  if (b.size() < 2) return fail("parse SMBIOS type 17 record: {} bytes, need a header", b.size());
  if (b[0] != kType17) return fail("parse SMBIOS type 17 record: structure type is {}", b[0]);
  const std::size_t len = b[1];
  if (len < kMinType17Length)
    return fail("parse SMBIOS type 17 record: length {} is below the 2.1 layout's {}", len,
                kMinType17Length);
  if (len > b.size())
    return fail("parse SMBIOS type 17 record: length {} runs past the {} bytes given", len,
                b.size());
  const std::uint16_t size_word = word(b, kSize);
  if (size_word == 0) return std::optional<Dimm>{};  // empty slot

  Dimm d;
  d.total_width_bits = width(word(b, kTotalWidth));
  d.data_width_bits = width(word(b, kDataWidth));
  if (size_word == 0x7FFF && len >= kExtendedSize + 4) {
    d.size_bytes = static_cast<std::uint64_t>(dword(b, kExtendedSize) & 0x7FFFFFFFu) << 20;
  } else if (size_word != 0xFFFF) {
    // Bit 15 set: the size is in KiB, else in MiB.
    d.size_bytes = (size_word & 0x8000) ? static_cast<std::uint64_t>(size_word & 0x7FFF) << 10
                                        : static_cast<std::uint64_t>(size_word) << 20;
  }
  d.locator = smbios_string(b, len, b[kLocator]);
  d.bank_locator = smbios_string(b, len, b[kBankLocator]);
  d.type = memory_type_name(b[kMemoryType]);
  if (len >= kSpeed + 2) {
    std::uint16_t s = word(b, kSpeed);
    d.speed_mts =
        s == 0xFFFF ? (len >= kExtendedSpeed + 4 ? dword(b, kExtendedSpeed) & 0x7FFFFFFFu : 0) : s;
  }
  if (len >= kConfiguredSpeed + 2) {
    std::uint16_t s = word(b, kConfiguredSpeed);
    d.configured_mts = s == 0xFFFF ? (len >= kExtendedConfiguredSpeed + 4
                                          ? dword(b, kExtendedConfiguredSpeed) & 0x7FFFFFFFu
                                          : 0)
                                   : s;
  }
  return std::optional<Dimm>{std::move(d)};
}

Result<std::optional<Dimm>> parse_type17_record(std::string_view raw) {
  return parse_type17_record(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
}

std::vector<Dimm> parse_smbios_table(std::string_view table) {
  std::span<const std::uint8_t> b(reinterpret_cast<const std::uint8_t*>(table.data()),
                                  table.size());
  std::vector<Dimm> out;
  std::size_t off = 0;
  while (auto end = structure_end(b, off)) {
    if (b[off] == kEndOfTable) break;
    if (b[off] == kType17) {
      auto d = parse_type17_record(b.subspan(off, *end - off));
      if (d && *d) out.push_back(std::move(**d));
    }
    off = *end;
  }
  return out;
}

namespace {

/// The leading unsigned number of "16384 MB" and the rest ("MB").
std::optional<std::pair<std::uint64_t, std::string_view>> leading_number(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return std::pair{v, core::trim(std::string_view(p, s.data() + s.size() - p))};
}

std::uint64_t text_size_bytes(std::string_view v) {
  auto n = leading_number(v);
  if (!n) return 0;
  std::string unit = core::to_lower(n->second);
  int shift = unit.starts_with("b")   ? 0
              : unit.starts_with("k") ? 10
              : unit.starts_with("m") ? 20
              : unit.starts_with("g") ? 30
              : unit.starts_with("t") ? 40
                                      : -1;
  if (shift < 0 || n->first > (~std::uint64_t{0} >> shift)) return 0;
  return n->first << shift;
}

std::uint32_t text_u32(std::string_view v) {
  auto n = leading_number(v);
  return n && n->first <= 0xFFFFFFFFu ? static_cast<std::uint32_t>(n->first) : 0;
}

}  // namespace

std::vector<Dimm> parse_dmidecode_memory(std::string_view text) {
  std::vector<Dimm> out;
  Dimm cur;  // a plain value and a flag: std::optional<Dimm> trips g++ 12's -Wmaybe-uninitialized
  bool in_record = false, empty_slot = false;
  auto flush = [&] {
    if (in_record && !empty_slot) out.push_back(std::move(cur));
    cur = Dimm{};
    in_record = empty_slot = false;
  };
  for (std::string_view raw_line : core::split_lines(text)) {
    std::string_view line = core::trim(raw_line);
    if (line == "Memory Device") {
      flush();
      in_record = true;
      continue;
    }
    if (line.starts_with("Handle ")) {
      flush();
      continue;
    }
    if (!in_record) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = core::trim(line.substr(0, colon));
    std::string_view value = core::trim(line.substr(colon + 1));
    if (key == "Size") {
      // "No Module Installed", "Not Installed" (older dmidecode) or "0 MB": an empty slot.
      empty_slot = value.starts_with("No Module") || value.starts_with("Not Installed") ||
                   (leading_number(value) && leading_number(value)->first == 0);
      cur.size_bytes = text_size_bytes(value);
    } else if (key == "Locator") {
      cur.locator = std::string(value);
    } else if (key == "Bank Locator") {
      cur.bank_locator = std::string(value);
    } else if (key == "Type") {
      if (value != "Unknown" && value != "Other") cur.type = std::string(value);
    } else if (key == "Speed") {
      cur.speed_mts = text_u32(value);
    } else if (key == "Configured Memory Speed" || key == "Configured Clock Speed" ||
               key == "Configured Memory Clock Speed") {
      cur.configured_mts = text_u32(value);
    } else if (key == "Data Width") {
      cur.data_width_bits =
          static_cast<std::uint16_t>(std::min<std::uint32_t>(text_u32(value), 0xFFFF));
    } else if (key == "Total Width") {
      cur.total_width_bits =
          static_cast<std::uint16_t>(std::min<std::uint32_t>(text_u32(value), 0xFFFF));
    }
  }
  flush();
  return out;
}

namespace {

bool is_sep(char c) { return c == '_' || c == '-' || c == ' ' || c == '.'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::string_view trim_seps(std::string_view s) {
  while (!s.empty() && is_sep(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_sep(s.back())) s.remove_suffix(1);
  return s;
}

/// "P1-DIMMC1" -> "P1/C": a letter then a digit right after "DIMM" (separators allowed).
std::optional<std::string> dimm_letter_key(std::string_view loc) {
  std::string lower = core::to_lower(loc);
  for (std::size_t at = lower.find("dimm"); at != std::string::npos;
       at = lower.find("dimm", at + 1)) {
    std::size_t p = at + 4;
    while (p < loc.size() && is_sep(loc[p])) ++p;
    if (p + 1 < loc.size() && is_alpha(loc[p]) && is_digit(loc[p + 1]))
      return core::to_lower(trim_seps(loc.substr(0, at))) + "/" +
             static_cast<char>(std::tolower(static_cast<unsigned char>(loc[p])));
  }
  return std::nullopt;
}

/// "CPU0_C1D0" -> "cpu0/c1": an Inspur-style "C<channel>D<slot>" last token.
std::optional<std::string> c_d_key(std::string_view loc) {
  auto us = loc.find_last_of("_-");
  if (us == std::string_view::npos) return std::nullopt;
  std::string_view tok = loc.substr(us + 1);
  if (tok.size() < 4 || (tok[0] != 'C' && tok[0] != 'c')) return std::nullopt;
  std::size_t p = 1;
  while (p < tok.size() && is_digit(tok[p])) ++p;
  if (p == 1 || p >= tok.size() || (tok[p] != 'D' && tok[p] != 'd')) return std::nullopt;
  std::size_t q = p + 1;
  while (q < tok.size() && is_digit(tok[q])) ++q;
  if (q == p + 1 || q != tok.size()) return std::nullopt;
  return core::to_lower(loc.substr(0, us)) + "/" + core::to_lower(tok.substr(0, p));
}

/// "P0_Node0_Channel2_Dimm0" -> "p0_node0_channel2": everything up to the token after "channel".
std::optional<std::string> channel_word_key(std::string_view loc) {
  std::string lower = core::to_lower(loc);
  auto at = lower.find("channel");
  if (at == std::string::npos) return std::nullopt;
  std::size_t p = at + 7;
  while (p < loc.size() && is_sep(loc[p])) ++p;
  std::size_t q = p;
  while (q < loc.size() && std::isalnum(static_cast<unsigned char>(loc[q]))) ++q;
  if (q == p) return std::nullopt;
  return lower.substr(0, q);
}

}  // namespace

std::optional<std::string> channel_key(const Dimm& d) {
  if (auto k = dimm_letter_key(d.locator)) return k;
  if (auto k = c_d_key(d.locator)) return k;
  if (auto k = channel_word_key(d.locator)) return k;
  if (auto k = channel_word_key(d.bank_locator)) return "bank:" + *k;
  return std::nullopt;
}

std::optional<MemoryCeiling> memory_ceiling(std::span<const Dimm> dimms, int channels_hint) {
  std::map<std::string, std::uint32_t> by_channel;  // key -> slowest effective MT/s
  std::vector<std::uint32_t> rates;
  MemoryCeiling c;
  for (const auto& d : dimms) {
    std::uint32_t mts = d.effective_mts();
    if (mts == 0) continue;
    ++c.dimms;
    if (auto key = channel_key(d)) {
      auto [it, inserted] = by_channel.emplace(*key, mts);
      if (!inserted) it->second = std::min(it->second, mts);
    } else {
      rates.push_back(mts);
      ++c.assumed_channels;
    }
  }
  if (c.dimms == 0) return std::nullopt;
  for (const auto& [key, mts] : by_channel) rates.push_back(mts);
  std::sort(rates.begin(), rates.end(), std::greater<>());
  bool capped = channels_hint > 0 && static_cast<int>(rates.size()) > channels_hint;
  if (capped) rates.resize(static_cast<std::size_t>(channels_hint));
  c.channels = static_cast<int>(rates.size());
  double mt_sum = 0;
  for (auto r : rates) mt_sum += r;
  c.gbps = mt_sum * 8.0 / 1000.0;  // MT/s x 8 B = MB/s; / 1000 = GB/s

  std::string speeds = rates.front() == rates.back()
                           ? fmt::format("{} MT/s", rates.front())
                           : fmt::format("{}-{} MT/s", rates.back(), rates.front());
  std::string how;
  if (capped)
    how = fmt::format("capped at the {} channels the CPU has", channels_hint);
  else if (c.assumed_channels == 0)
    how = "channels from locators";
  else
    how = fmt::format("{} of them assumed one DIMM per channel: locators name no channel",
                      c.assumed_channels);
  c.basis = fmt::format("{} channel{} x {} x 8 B ({})", c.channels, c.channels == 1 ? "" : "s",
                        speeds, how);
  return c;
}

double memory_ceiling_gbps(std::span<const Dimm> dimms, int channels_hint) {
  auto c = memory_ceiling(dimms, channels_hint);
  return c ? c->gbps : 0;
}

}  // namespace cmax::health
