#include "isolation/scope.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <memory>

namespace cmax::isolation {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

bool looks_like_ipv4(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

Ipv4 mask_of(int prefix) { return prefix == 0 ? 0 : ~Ipv4{0} << (32 - prefix); }

// The first and last address of a block, both inclusive.
bool overlaps(Ipv4 base, int prefix, Ipv4 block, int block_prefix) {
  Ipv4 last = base | ~mask_of(prefix);
  Ipv4 block_last = block | ~mask_of(block_prefix);
  return base <= block_last && block <= last;
}

}  // namespace

std::optional<Ipv4> parse_ipv4(std::string_view text) {
  Ipv4 addr = 0;
  const char *p = text.data();
  const char *end = text.data() + text.size();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
    unsigned octet = 0;
    auto [next, ec] = std::from_chars(p, end, octet);
    if (ec != std::errc() || next == p || next - p > 3 || octet > 255) return std::nullopt;
    p = next;
    addr = (addr << 8) | octet;
  }
  if (p != end) return std::nullopt;
  return addr;
}

std::string format_ipv4(Ipv4 a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

Result<Scope> parse_scope(std::string_view text) {
  Scope s;
  s.text = std::string(text);
  if (text.empty())
    return fail(
        "read --scope: empty value; name an IPv4 address, a CIDR block "
        "or a host name");
  if (text.find(':') != std::string_view::npos)
    return fail(
        "read --scope {}: IPv6 scopes are not supported yet; name IPv4 "
        "addresses or CIDR blocks",
        text);
  std::string_view addr_text = text;
  std::string_view prefix_text;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    addr_text = text.substr(0, slash);
    prefix_text = text.substr(slash + 1);
  }
  if (prefix_text.empty() && !looks_like_ipv4(addr_text)) {
    if (!std::all_of(text.begin(), text.end(), is_name_char) || text.front() == '-' ||
        text.size() > 253)
      return fail(
          "read --scope {}: not an IPv4 address, a CIDR block "
          "(10.0.0.0/24) or a host name",
          text);
    s.name = std::string(text);
    return s;
  }
  auto addr = parse_ipv4(addr_text);
  if (!addr)
    return fail("read --scope {}: '{}' is not an IPv4 address (four octets, 0-255)", text,
                addr_text);
  if (!prefix_text.empty() || text.back() == '/') {
    int prefix = -1;
    auto [next, ec] =
        std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(), prefix);
    if (ec != std::errc() || next != prefix_text.data() + prefix_text.size() || prefix < 0 ||
        prefix > 32)
      return fail("read --scope {}: the prefix length must be 0-32 (10.0.0.0/24)", text);
    s.prefix = prefix;
  }
  s.base = *addr & mask_of(s.prefix);
  if (overlaps(s.base, s.prefix, 0xE0000000u, 4))
    return fail(
        "read --scope {}: covers multicast addresses (224.0.0.0/4), "
        "which are not hosts; name unicast "
        "addresses only",
        text);
  if (overlaps(s.base, s.prefix, 0xF0000000u, 4))
    return fail(
        "read --scope {}: covers reserved or broadcast addresses "
        "(240.0.0.0/4, 255.255.255.255); name "
        "unicast addresses only",
        text);
  if (overlaps(s.base, s.prefix, 0x00000000u, 8))
    return fail(
        "read --scope {}: covers 0.0.0.0/8 ('this network'), which is "
        "not a host; name unicast "
        "addresses only",
        text);
  return s;
}

std::uint64_t scope_host_count(const Scope &s) {
  if (!s.name.empty()) return 1;
  std::uint64_t size = std::uint64_t{1} << (32 - s.prefix);
  return s.prefix <= 30 ? size - 2 : size;
}

Result<std::vector<Ipv4>> resolve_with_getaddrinfo(std::string_view name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  std::string host(name);
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    return fail("resolve --scope {}: {}; name an IPv4 address or check the name", name,
                ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, &::freeaddrinfo);
  std::vector<Ipv4> out;
  for (auto *a = found; a; a = a->ai_next)
    if (a->ai_family == AF_INET)
      out.push_back(ntohl(reinterpret_cast<const sockaddr_in *>(a->ai_addr)->sin_addr.s_addr));
  if (out.empty()) return fail("resolve --scope {}: no IPv4 address; name an IPv4 address", name);
  return out;
}

Result<std::vector<Ipv4>> expand_scopes(const std::vector<Scope> &scopes, std::size_t max_hosts,
                                        const Resolver &resolver) {
  std::uint64_t total = 0;
  for (const auto &s : scopes) {
    std::uint64_t n = scope_host_count(s);
    total += n;
    if (n > max_hosts)
      return fail(
          "plan --scope {}: holds {} addresses, over the limit of {}; "
          "name a smaller scope or raise "
          "--max-hosts",
          s.text, n, max_hosts);
  }
  if (total > max_hosts)
    return fail(
        "plan --scope: the scopes hold {} addresses together, over the "
        "limit of {}; name fewer or "
        "smaller scopes, or raise --max-hosts",
        total, max_hosts);
  std::vector<Ipv4> out;
  out.reserve(static_cast<std::size_t>(total));
  for (const auto &s : scopes) {
    if (!s.name.empty()) {
      auto found = resolver ? resolver(s.name) : resolve_with_getaddrinfo(s.name);
      if (!found) return Unexpected<Error>{found.error()};
      out.insert(out.end(), found->begin(), found->end());
      continue;
    }
    Ipv4 first = s.base;
    Ipv4 last = s.base | ~mask_of(s.prefix);
    if (s.prefix <= 30) {
      ++first;
      --last;
    }
    for (std::uint64_t a = first; a <= last; ++a) out.push_back(static_cast<Ipv4>(a));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > max_hosts)
    return fail(
        "plan --scope: the names resolve to {} addresses, over the "
        "limit of {}; raise --max-hosts",
        out.size(), max_hosts);
  return out;
}

}  // namespace cmax::isolation
