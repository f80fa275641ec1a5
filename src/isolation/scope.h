#pragma once
// Scopes a user names for `cmax audit isolation --scope`: IPv4 addresses, CIDR
// blocks and host names. Parsing is pure; only expand_scopes with a name in it
// asks a resolver.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::isolation {

/// An IPv4 address in host byte order (10.0.0.1 is 0x0A000001).
using Ipv4 = std::uint32_t;

/// The default cap on the addresses one run may probe (`--max-hosts`).
inline constexpr std::size_t kDefaultMaxHosts = 4096;

/// "10.0.0.1" -> 0x0A000001; nullopt for anything but four decimal octets.
std::optional<Ipv4> parse_ipv4(std::string_view text);

/// 0x0A000001 -> "10.0.0.1".
std::string format_ipv4(Ipv4 addr);

/// One `--scope` value: a CIDR block (a bare address is a /32) or a host name
/// to resolve.
struct Scope {
  std::string text;  ///< as the user wrote it
  Ipv4 base = 0;     ///< network address (host bits cleared); unused for names
  int prefix = 32;
  std::string name;  ///< non-empty: a host name, resolved by expand_scopes
};

/// Parses "10.0.0.0/24", "10.0.0.5" or "node-7.cluster". Refuses IPv6,
/// multicast, the limited broadcast, 0.0.0.0/8 and 240.0.0.0/4 with a message
/// that says what to name instead.
Result<Scope> parse_scope(std::string_view text);

/// The addresses a scope probes: a /24 probes 254 (network and broadcast left
/// out), a /31 or /32 all of its addresses; a name counts 1 before it is
/// resolved.
std::uint64_t scope_host_count(const Scope &scope);

/// Resolves a host name to its IPv4 addresses (may block on DNS).
using Resolver = std::function<Result<std::vector<Ipv4>>(std::string_view name)>;

/// The system resolver (getaddrinfo, AF_INET).
Result<std::vector<Ipv4>> resolve_with_getaddrinfo(std::string_view name);

/// Every address the scopes name, sorted and without duplicates. Fails before
/// expanding anything when the scopes hold more than `max_hosts` addresses (the
/// message names --max-hosts), and when a name does not resolve. A null
/// `resolver` means resolve_with_getaddrinfo.
Result<std::vector<Ipv4>> expand_scopes(const std::vector<Scope> &scopes, std::size_t max_hosts,
                                        const Resolver &resolver = nullptr);

}  // namespace cmax::isolation
