#include "isolation/ipmi.h"

#include <fmt/format.h>

namespace cmax::isolation {
namespace {

constexpr std::uint8_t kRmcpVersion = 0x06;
constexpr std::uint8_t kRmcpClassIpmi = 0x07;
constexpr std::uint8_t kCmdGetChannelAuthCaps = 0x38;
constexpr std::uint8_t kNetFnAppResponse = 0x07;  // App (0x06) | response bit

std::uint8_t byte(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }

// IPMI's two's-complement checksum: the bytes plus the checksum sum to 0 mod 256.
bool checksum_ok(std::string_view s, std::size_t from, std::size_t to_inclusive) {
  std::uint8_t sum = 0;
  for (std::size_t i = from; i <= to_inclusive; ++i) sum = static_cast<std::uint8_t>(sum + byte(s, i));
  return sum == 0;
}

}  // namespace

std::string ipmi_auth_caps_request() {
  // RMCP: version 6, reserved, sequence 0xff (no RMCP ACK), class IPMI.
  // Session (IPMI 1.5, no session yet): auth type none, sequence 0, session id 0, length 9.
  // Message: rsSA 0x20 (BMC), netFn App request / LUN 0, checksum, rqSA 0x81, rqSeq 0, command
  // 0x38, data: channel 0x0e (this one) | 0x80 (IPMI 2.0 extended data), privilege 4 (ADMIN),
  // checksum.
  static constexpr unsigned char kBytes[] = {0x06, 0x00, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00,
                                             0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x20, 0x18,
                                             0xc8, 0x81, 0x00, 0x38, 0x8e, 0x04, 0xb5};
  return std::string(reinterpret_cast<const char*>(kBytes), sizeof kBytes);
}

std::optional<IpmiAuthCaps> parse_ipmi_auth_caps(std::string_view d) {
  // RMCP header (4), session header (auth type 1, sequence 4, id 4, [16-byte auth code when the
  // auth type is not none], length 1), then the message.
  if (d.size() < 4 || byte(d, 0) != kRmcpVersion || (byte(d, 3) & 0x1f) != kRmcpClassIpmi) return std::nullopt;
  std::size_t at = 4;
  if (d.size() < at + 10) return std::nullopt;
  const std::uint8_t auth_type = byte(d, at);
  if (auth_type == 0x06) return std::nullopt;  // an RMCP+ (IPMI 2.0) session packet: not our answer
  at += 9;
  if (auth_type != 0x00) at += 16;
  if (d.size() < at + 1) return std::nullopt;
  const std::size_t len = byte(d, at);
  ++at;
  if (d.size() < at + len) return std::nullopt;
  std::string_view m = d.substr(at, len);
  // rqSA, netFn/rqLUN, checksum, rsSA, rqSeq/rsLUN, command, completion code, data..., checksum
  if (m.size() < 8) return std::nullopt;
  if ((byte(m, 1) >> 2) != kNetFnAppResponse || byte(m, 5) != kCmdGetChannelAuthCaps) return std::nullopt;
  if (!checksum_ok(m, 0, 2) || !checksum_ok(m, 3, m.size() - 1)) return std::nullopt;
  IpmiAuthCaps c;
  c.completion_code = byte(m, 6);
  if (c.completion_code != 0) return c;  // the BMC answered, but refused the command
  // Data after the completion code: channel, auth type support, auth status, extended
  // capabilities, OEM IANA (3, little-endian), OEM aux.
  if (m.size() < 7 + 8 + 1) return std::nullopt;
  c.channel = byte(m, 7) & 0x0f;
  const std::uint8_t types = byte(m, 8), status = byte(m, 9), ext = byte(m, 10);
  c.auth_none = types & 0x01;
  c.auth_md2 = types & 0x02;
  c.auth_md5 = types & 0x04;
  c.auth_password = types & 0x10;
  c.anonymous_login = status & 0x01;
  c.null_usernames = status & 0x02;
  c.non_null_usernames = status & 0x04;
  const bool extended = types & 0x80;
  c.ipmi20 = extended && (ext & 0x02);
  c.ipmi15 = !extended || (ext & 0x01);
  c.oem_iana = static_cast<std::uint32_t>(byte(m, 11)) | static_cast<std::uint32_t>(byte(m, 12)) << 8 |
               static_cast<std::uint32_t>(byte(m, 13)) << 16;
  return c;
}

std::string describe(const IpmiAuthCaps& c) {
  if (c.completion_code != 0) return fmt::format("IPMI answered with completion code 0x{:02x}", c.completion_code);
  std::string out = c.ipmi20 ? (c.ipmi15 ? "IPMI 1.5 and 2.0" : "IPMI 2.0") : "IPMI 1.5";
  if (c.anonymous_login) out += ", anonymous login enabled";
  if (c.null_usernames) out += ", null user names enabled";
  std::string types;
  auto add = [&](bool on, std::string_view name) {
    if (on) types += fmt::format("{}{}", types.empty() ? "" : "/", name);
  };
  add(c.auth_none, "none");
  add(c.auth_md2, "MD2");
  add(c.auth_md5, "MD5");
  add(c.auth_password, "password");
  if (!types.empty()) out += ", 1.5 auth types " + types;
  if (c.oem_iana != 0) out += fmt::format(", vendor IANA {}", c.oem_iana);
  return out;
}

std::string hex_bytes(std::string_view bytes, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < max_bytes; ++i)
    out += fmt::format("{}{:02x}", i ? " " : "", byte(bytes, i));
  if (bytes.size() > max_bytes) out += fmt::format(" ... ({} bytes)", bytes.size());
  return out;
}

}  // namespace cmax::isolation
