#include "isolation/host_parse.h"

#include <algorithm>
#include <array>

#include "core/strings.h"

namespace cmax::isolation {
namespace {

bool bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// The value up to a trailing # comment; a # inside a quoted string is part of the value.
std::string_view value_part(std::string_view v) {
  v = core::trim(v);
  for (std::string_view delim : {std::string_view("\"\"\""), std::string_view("'''")}) {
    if (!v.starts_with(delim)) continue;
    auto close = v.find(delim, 3);
    return close == std::string_view::npos ? v : v.substr(0, close + 3);
  }
  if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
    const char quote = v.front();
    for (std::size_t i = 1; i < v.size(); ++i) {
      if (quote == '"' && v[i] == '\\') {
        ++i;
        continue;
      }
      if (v[i] == quote) return v.substr(0, i + 1);
    }
    return v;
  }
  return core::trim(v.substr(0, v.find('#')));
}

// Brackets opened minus closed outside quoted strings and comments, for multi-line arrays.
int bracket_depth(std::string_view line) {
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (quote == '"' && c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '#') break;
    if (c == '"' || c == '\'') quote = c;
    if (c == '[') ++depth;
    if (c == ']') --depth;
  }
  return depth;
}

// The fields of a ':'-separated line, empty fields kept (an empty password field is common).
std::vector<std::string_view> colon_fields(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    auto at = line.find(':');
    out.push_back(line.substr(0, at));
    if (at == std::string_view::npos) break;
    line.remove_prefix(at + 1);
  }
  return out;
}

bool starts_with_any(std::string_view s, const auto& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return s.starts_with(p); });
}

}  // namespace

std::vector<TomlEntry> toml_top_level(std::string_view text) {
  std::vector<TomlEntry> out;
  int depth = 0;                    // inside a multi-line array
  std::string_view open_multiline;  // `"""` or `'''` while inside a multi-line string
  for (auto raw : core::split_lines(text)) {
    auto line = core::trim(raw);
    if (!open_multiline.empty()) {
      if (line.find(open_multiline) != std::string_view::npos) open_multiline = {};
      continue;
    }
    if (depth > 0) {
      depth += bracket_depth(line);
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') break;
    std::string_view key;
    std::string_view rest;
    if (line.front() == '"' || line.front() == '\'') {
      auto close = line.find(line.front(), 1);
      if (close == std::string_view::npos) continue;
      key = line.substr(1, close - 1);
      rest = core::trim(line.substr(close + 1));
    } else {
      auto eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      key = core::trim(line.substr(0, eq));
      rest = line.substr(eq);
      if (key.empty() || !std::all_of(key.begin(), key.end(), bare_key_char)) continue;
    }
    if (rest.empty() || rest.front() != '=') continue;
    auto value = value_part(rest.substr(1));
    for (std::string_view delim : {std::string_view("\"\"\""), std::string_view("'''")}) {
      if (value.starts_with(delim) && value.find(delim, 3) == std::string_view::npos)
        open_multiline = delim;
    }
    if (open_multiline.empty() && value.starts_with('[')) depth = bracket_depth(value);
    out.push_back({key, value});
  }
  return out;
}

std::optional<bool> toml_bool(std::string_view value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return std::nullopt;
}

std::optional<unsigned> status_real_uid(std::string_view status) {
  for (auto line : core::split_lines(status)) {
    if (!line.starts_with("Uid:")) continue;
    auto fields = core::split_any(line.substr(4), " \t");
    if (fields.empty()) return std::nullopt;
    auto uid = core::parse_uint(fields.front());
    if (!uid || *uid > 0xffffffffull) return std::nullopt;
    return static_cast<unsigned>(*uid);
  }
  return std::nullopt;
}

std::optional<std::string_view> proc_mount_options(std::string_view mounts) {
  std::optional<std::string_view> out;
  for (auto line : core::split_lines(mounts)) {
    auto fields = core::split_any(line, " \t");
    if (fields.size() >= 4 && fields[1] == "/proc" && fields[2] == "proc") out = fields[3];
  }
  return out;
}

std::string_view hidepid_option(std::string_view options) {
  for (auto option : core::split_any(options, ",")) {
    if (option.starts_with("hidepid=")) return option.substr(8);
  }
  return {};
}

bool hidepid_hides(std::string_view value) {
  constexpr std::array<std::string_view, 6> kHiding = {"1",        "2",         "4",
                                                       "noaccess", "invisible", "ptraceable"};
  return std::find(kHiding.begin(), kHiding.end(), value) != kHiding.end();
}

std::optional<std::string_view> container_cgroup_marker(std::string_view cgroup) {
  constexpr std::array<std::string_view, 6> kRuntimes = {"docker",   "containerd", "cri-containerd",
                                                         "kubepods", "libpod",     "crio"};
  for (auto line : core::split_lines(cgroup)) {
    // hierarchy-ID:controllers:path
    auto first = line.find(':');
    if (first == std::string_view::npos) continue;
    auto second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    for (auto part : core::split_any(line.substr(second + 1), "/")) {
      if (part.ends_with(".service")) continue;
      if (starts_with_any(part, kRuntimes)) return part;
    }
  }
  return std::nullopt;
}

std::vector<unsigned> socket_table_uids(std::string_view table) {
  std::vector<unsigned> out;
  for (auto line : core::split_lines(table)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
    auto fields = core::split_any(line, " \t");
    if (fields.size() < 8 || !fields[0].ends_with(':')) continue;
    auto uid = core::parse_uint(fields[7]);
    if (uid && *uid <= 0xffffffffull) out.push_back(static_cast<unsigned>(*uid));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> node_side_interfaces(std::string_view net_dev) {
  constexpr std::array<std::string_view, 10> kNodeSide = {
      "veth", "cni", "docker", "br-", "cali", "flannel", "cilium_", "lxc", "weave", "kube-ipvs"};
  std::vector<std::string> out;
  for (auto line : core::split_lines(net_dev)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto name = core::trim(line.substr(0, colon));
    if (name.find('|') != std::string_view::npos) continue;  // the header lines
    if (starts_with_any(name, kNodeSide)) out.emplace_back(name);
  }
  return out;
}

std::optional<unsigned> passwd_uid(std::string_view passwd, std::string_view name) {
  for (auto line : core::split_lines(passwd)) {
    auto fields = colon_fields(line);
    if (fields.size() < 3 || fields[0] != name) continue;
    auto uid = core::parse_uint(fields[2]);
    if (!uid || *uid > 0xffffffffull) return std::nullopt;
    return static_cast<unsigned>(*uid);
  }
  return std::nullopt;
}

std::optional<std::string> passwd_name(std::string_view passwd, unsigned uid) {
  for (auto line : core::split_lines(passwd)) {
    auto fields = colon_fields(line);
    if (fields.size() < 3 || fields[0].empty() || fields[0].starts_with('#')) continue;
    auto value = core::parse_uint(fields[2]);
    if (value && *value == uid) return std::string(fields[0]);
  }
  return std::nullopt;
}

std::optional<std::uint16_t> parse_pkey(std::string_view text) {
  text = core::trim(text);
  if (!text.starts_with("0x") && !text.starts_with("0X")) return std::nullopt;
  auto value = core::parse_uint(text, 16);
  if (!value || *value > 0xffff) return std::nullopt;
  return static_cast<std::uint16_t>(*value);
}

}  // namespace cmax::isolation
