#include "audit/parse/pci_config.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::audit {
namespace {

// The ACS capability: header (4), ACS Capability register (2), ACS Control register (2).
constexpr std::size_t kAcsControlOffset = 6;
// Each capability header takes at least 4 bytes of the 3840-byte extended space, so a list longer
// than this must revisit an offset; the visited set catches that earlier, this bounds it anyway.
constexpr std::size_t kMaxExtCaps = (kPciConfigExtendedBytes - kPciExtCapStart) / 4;

std::uint32_t read_le32(std::string_view b, std::size_t at) {
  auto u = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + i])); };
  return u(0) | (u(1) << 8) | (u(2) << 16) | (u(3) << 24);
}

std::uint16_t read_le16(std::string_view b, std::size_t at) {
  auto u = [&](std::size_t i) { return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at + i])); };
  return static_cast<std::uint16_t>(u(0) | (u(1) << 8));
}

bool is_hex(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

}  // namespace

bool has_extended_config(std::string_view config) { return config.size() > kPciExtCapStart; }

std::vector<PciExtCap> parse_pci_ext_caps(std::string_view config) {
  std::vector<PciExtCap> out;
  std::size_t limit = std::min(config.size(), kPciConfigExtendedBytes);
  std::vector<bool> visited(kPciConfigExtendedBytes / 4, false);
  std::size_t at = kPciExtCapStart;
  while (at >= kPciExtCapStart && at + 4 <= limit && out.size() < kMaxExtCaps) {
    if (visited[at / 4]) break;
    visited[at / 4] = true;
    std::uint32_t header = read_le32(config, at);
    // All ones: the device did not answer (gone, or a read error). Zero: no extended capabilities.
    if (header == 0xFFFFFFFFu || header == 0) break;
    out.push_back({static_cast<std::uint16_t>(header & 0xFFFF), static_cast<std::uint8_t>((header >> 16) & 0xF),
                   static_cast<std::uint16_t>(at)});
    // The two low bits of the next pointer are reserved (PCIe base spec 7.6.3).
    std::size_t next = (header >> 20) & 0xFFC;
    if (next == 0) break;
    at = next;
  }
  return out;
}

std::optional<AcsControl> parse_acs_control(std::string_view config) {
  for (const auto& cap : parse_pci_ext_caps(config)) {
    if (cap.id != kPciExtCapAcs) continue;
    std::size_t at = cap.offset + kAcsControlOffset;
    if (at + 2 > config.size()) return std::nullopt;
    std::uint16_t ctl = read_le16(config, at);
    AcsControl acs;
    acs.cap_offset = cap.offset;
    acs.raw = ctl;
    acs.source_validation = ctl & (1u << 0);
    acs.translation_blocking = ctl & (1u << 1);
    acs.request_redirect = ctl & (1u << 2);
    acs.completion_redirect = ctl & (1u << 3);
    acs.upstream_forwarding = ctl & (1u << 4);
    acs.egress_control = ctl & (1u << 5);
    acs.direct_translated = ctl & (1u << 6);
    return acs;
  }
  return std::nullopt;
}

std::string describe_acs(const AcsControl& acs) {
  auto s = [](bool on) { return on ? '+' : '-'; };
  return fmt::format("SV{} TB{} RR{} CR{} UF{} EC{} DT{}", s(acs.source_validation), s(acs.translation_blocking),
                     s(acs.request_redirect), s(acs.completion_redirect), s(acs.upstream_forwarding),
                     s(acs.egress_control), s(acs.direct_translated));
}

bool is_pci_address(std::string_view s) {
  // domain ':' bus(2) ':' device(2) '.' function(1)
  if (s.size() < 12) return false;
  std::size_t dom = s.size() - 8;
  return is_hex(s.substr(0, dom)) && s[dom] == ':' && is_hex(s.substr(dom + 1, 2)) && s[dom + 3] == ':' &&
         is_hex(s.substr(dom + 4, 2)) && s[dom + 6] == '.' && is_hex(s.substr(dom + 7, 1));
}

std::vector<std::string> pci_upstream_chain(std::string_view device_path) {
  std::vector<std::string> chain;
  for (auto part : core::split_any(device_path, "/"))
    if (is_pci_address(part)) chain.emplace_back(part);
  if (!chain.empty()) chain.pop_back();
  return chain;
}

std::string resolve_link_target(std::string_view link_path, std::string_view target) {
  std::vector<std::string_view> parts;
  auto push_all = [&](std::string_view path) {
    for (auto p : core::split_any(path, "/")) {
      if (p == ".") continue;
      if (p == "..") {
        if (!parts.empty()) parts.pop_back();
        continue;
      }
      parts.push_back(p);
    }
  };
  if (!target.starts_with('/')) {
    auto slash = link_path.rfind('/');
    push_all(slash == std::string_view::npos ? std::string_view() : link_path.substr(0, slash));
  }
  push_all(target);
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? std::string("/") : out;
}

}  // namespace cmax::audit
