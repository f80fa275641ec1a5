#include "health/numa.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "core/strings.h"

namespace cmax::health {

namespace {

std::optional<int> cpu_number(std::string_view s) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > kMaxCpuId) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<int>> parse_cpulist(std::string_view text) {
  std::vector<int> cpus;
  for (std::string_view piece : core::split_any(core::trim(text), ",")) {
    piece = core::trim(piece);
    if (piece.empty()) continue;
    int stride = 1;
    if (auto colon = piece.find(':'); colon != std::string_view::npos) {
      auto s = cpu_number(piece.substr(colon + 1));
      if (!s || *s == 0) return fail("parse cpulist: bad stride in \"{}\"", core::clip(piece, 40));
      stride = *s;
      piece = piece.substr(0, colon);
    }
    auto dash = piece.find('-');
    auto first = cpu_number(piece.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : cpu_number(piece.substr(dash + 1));
    if (!first || !last || *last < *first)
      return fail("parse cpulist: bad range \"{}\" (expected N or N-M, N <= M <= {})",
                  core::clip(piece, 40), kMaxCpuId);
    for (int c = *first; c <= *last; c += stride) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

Result<std::vector<int>> read_online_cpus(const core::HostRoot& host) {
  constexpr std::string_view kPath = "/sys/devices/system/cpu/online";
  auto text = host.read_file(kPath, 64 * 1024);
  if (!text) return Unexpected<Error>{text.error()};
  auto cpus = parse_cpulist(*text);
  if (!cpus) return fail("read {}: {}", kPath, cpus.error().message);
  return cpus;
}

Result<std::vector<NumaNode>> read_numa_nodes(const core::HostRoot& host) {
  constexpr std::string_view kDir = "/sys/devices/system/node";
  std::vector<NumaNode> nodes;
  if (!host.exists(kDir)) {
    auto cpus = read_online_cpus(host);
    if (!cpus) return Unexpected<Error>{cpus.error()};
    nodes.push_back(NumaNode{0, std::move(*cpus)});
    return nodes;
  }
  auto entries = host.list_dir(kDir);
  if (!entries) return Unexpected<Error>{entries.error()};
  for (const auto& e : *entries) {
    std::string_view name = e.name;
    if (!name.starts_with("node")) continue;
    auto id = cpu_number(name.substr(4));
    if (!id) continue;  // "node" files that are not node directories ("has_cpu" does not match)
    std::string path = core::join_path(core::join_path(kDir, name), "cpulist");
    auto text = host.read_file(path, 64 * 1024);
    if (!text) return Unexpected<Error>{text.error()};
    auto cpus = parse_cpulist(*text);
    if (!cpus) return fail("read {}: {}", path, cpus.error().message);
    nodes.push_back(NumaNode{*id, std::move(*cpus)});
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  if (nodes.empty())
    return fail("read {}: no node<N> directories; check that sysfs is mounted", kDir);
  return nodes;
}

}  // namespace cmax::health
