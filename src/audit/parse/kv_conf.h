#pragma once
// KEY=VALUE configuration files: /etc/nccl.conf, slurm.conf, cgroup.conf, gres.conf lines.
// '#' starts a comment outside quotes; keys keep their case (look up with find_kv, which ignores
// case as Slurm does). Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

struct KvEntry {
  std::string key;
  std::string value;  ///< the rest of the line after '=', trimmed and unquoted
  int line = 0;       ///< 1-based
};

std::vector<KvEntry> parse_kv_conf(std::string_view text);

/// The last entry named `key` (ASCII case-insensitive): later lines override earlier ones.
const KvEntry* find_kv(const std::vector<KvEntry>& entries, std::string_view key);

}  // namespace cmax::audit
