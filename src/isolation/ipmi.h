#pragma once
// IPMI over LAN (RMCP, UDP 623), read-only: the one unauthenticated request a BMC answers before
// any session, "Get Channel Authentication Capabilities" (IPMI v2.0 section 22.13), and a pure
// parser of its answer. The answer says whether the BMC speaks IPMI 2.0 and whether it admits
// anonymous or null-user logins; nothing here logs in.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::isolation {

/// What a BMC said about how it authenticates on this channel.
struct IpmiAuthCaps {
  int completion_code = 0;          ///< 0 = the command succeeded
  int channel = 0;
  bool auth_none = false;           ///< authentication type "none" offered (IPMI 1.5)
  bool auth_md2 = false;
  bool auth_md5 = false;
  bool auth_password = false;       ///< straight password
  bool anonymous_login = false;     ///< null user name and null password admitted
  bool null_usernames = false;      ///< users with a null name exist
  bool non_null_usernames = false;
  bool ipmi15 = false;
  bool ipmi20 = false;              ///< RMCP+ (the cipher-zero and RAKP hash issues live here)
  std::uint32_t oem_iana = 0;       ///< the vendor's IANA enterprise number (0 none)
};

/// The 23-byte RMCP datagram: an IPMI 1.5 session-less "Get Channel Authentication
/// Capabilities" for the current channel, asking for IPMI 2.0 extended data, privilege ADMIN.
std::string ipmi_auth_caps_request();

/// Pure: the BMC's answer datagram -> its capabilities; nullopt when it is not an RMCP/IPMI answer
/// to that request (wrong class, command or checksum, or truncated).
std::optional<IpmiAuthCaps> parse_ipmi_auth_caps(std::string_view datagram);

/// "IPMI 2.0, anonymous login enabled, auth types none/MD5": for findings.
std::string describe(const IpmiAuthCaps& caps);

/// The bytes as hex pairs ("06 00 ff 07 ..."), at most `max_bytes` of them, for evidence.
std::string hex_bytes(std::string_view bytes, std::size_t max_bytes = 64);

}  // namespace cmax::isolation
