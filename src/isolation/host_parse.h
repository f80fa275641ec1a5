#pragma once
// Pure readers for the host files the tenant-isolation checks look at: a top-level TOML line
// reader (the NVIDIA Container Toolkit config), /proc/<pid>/status, /proc/mounts, cgroup files,
// /proc/net tables, /etc/passwd and InfiniBand pkey entries. string_view in, value out, no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::isolation {

/// One top-level `key = value` of a TOML document; views into the text given.
struct TomlEntry {
  std::string_view key;    ///< without quotes
  std::string_view value;  ///< trimmed, trailing `# comment` removed, quotes kept
};

/// Pure: the `key = value` lines before the first [table] or [[array]] header, in order
/// (duplicates kept); skips comments, lines it cannot read, and multi-line strings and arrays.
std::vector<TomlEntry> toml_top_level(std::string_view text);

/// Pure: TOML `true` or `false`; nullopt for anything else.
std::optional<bool> toml_bool(std::string_view value);

/// Pure: the real uid (first field of the `Uid:` line) of a /proc/<pid>/status text.
std::optional<unsigned> status_real_uid(std::string_view status);

/// Pure: the options field of the last proc mount on /proc in a /proc/mounts text.
std::optional<std::string_view> proc_mount_options(std::string_view mounts);

/// Pure: the value of `hidepid=` in a mount options field; empty when the option is absent.
std::string_view hidepid_option(std::string_view options);

/// Pure: true for a hidepid value that hides other users' processes (1, 2, 4, noaccess,
/// invisible, ptraceable); false for 0, off and empty.
bool hidepid_hides(std::string_view value);

/// Pure: the first cgroup path component in a /proc/<pid>/cgroup text that names a container
/// runtime (docker, containerd, cri-containerd, kubepods, libpod, crio; not a *.service unit).
std::optional<std::string_view> container_cgroup_marker(std::string_view cgroup);

/// Pure: the owner uids of the sockets in a /proc/net/{tcp,tcp6,udp,udp6} table, sorted, unique.
std::vector<unsigned> socket_table_uids(std::string_view table);

/// Pure: interfaces in a /proc/net/dev text that exist only in a node's own network namespace
/// (the host ends of container links and the bridges and overlays they hang on: veth*, cni*,
/// docker*, br-*, cali*, flannel*, cilium_*, lxc*, weave*, kube-ipvs*).
std::vector<std::string> node_side_interfaces(std::string_view net_dev);

/// Pure: the uid of user `name` in an /etc/passwd text.
std::optional<unsigned> passwd_uid(std::string_view passwd, std::string_view name);

/// Pure: the name of the first user with `uid` in an /etc/passwd text.
std::optional<std::string> passwd_name(std::string_view passwd, unsigned uid);

/// Pure: an InfiniBand pkey table entry ("0xffff", trimmed) as a number; nullopt when malformed.
std::optional<std::uint16_t> parse_pkey(std::string_view text);

}  // namespace cmax::isolation
