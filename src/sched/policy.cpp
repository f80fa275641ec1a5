#include "sched/policy.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cmax::sched {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string quoted_reason(const NodeState& s) {
  return s.reason.empty() ? std::string("no reason") : fmt::format("reason \"{}\"", s.reason);
}

}  // namespace

bool is_cmax_reason(std::string_view reason) { return reason.starts_with(kReasonPrefix); }

Result<std::string> cmax_reason(std::string_view reason) {
  std::string full =
      is_cmax_reason(reason) ? std::string(reason) : fmt::format("{}{}", kReasonPrefix, reason);
  if (full.size() == kReasonPrefix.size())
    return fail("reason is empty: say why the node is taken out");
  if (full.size() > kMaxReasonBytes)
    return fail("reason is {} bytes, more than {}: shorten it", full.size(), kMaxReasonBytes);
  for (unsigned char c : full)
    // A newline would end `scontrol show node -o` output early; other control bytes garble it.
    if (c < 0x20 || c == 0x7f)
      return fail("reason holds control character 0x{:02x}: use plain text", c);
  return full;
}

Result<void> check_node_name(std::string_view node) {
  if (node.empty()) return fail("empty node name");
  if (node.size() > 255) return fail("node name longer than 255 characters");
  for (char c : node)
    if (!is_name_char(c))
      return fail("\"{}\" is not one node name (letters, digits, '.', '_', '-'; no hostlists)",
                  node);
  return ok();
}

bool held_by_others(const NodeState& s) {
  return (s.drain_flag() || s.down()) && !is_cmax_reason(s.reason);
}

Decision decide_drain(const NodeState& s) {
  if (held_by_others(s))
    return {false, fmt::format("already {} for someone else's {}; left as is",
                               s.drain_flag() ? "drained" : "down", quoted_reason(s))};
  if (s.drain_flag())
    return {false, fmt::format("already {}: {}", s.drained() ? "drained" : "draining", s.reason)};
  return {true, {}};
}

Result<Decision> decide_resume(const NodeState& s, Force force) {
  if (!s.drain_flag() && !s.down())
    return Decision{false, fmt::format("in service ({}); nothing to resume", s.state)};
  if (held_by_others(s) && force == Force::kNo)
    return fail(
        "{} with {}, not set by cmax: cmax resumes only its own drains; resume it by hand or force "
        "it",
        s.state, quoted_reason(s));
  return Decision{true, {}};
}

Result<Decision> decide_reboot(const NodeState& s) {
  for (std::string_view pending : {"REBOOT_REQUESTED", "REBOOT_ISSUED"})
    if (s.has_flag(pending))
      return Decision{false, fmt::format("reboot already pending ({})", s.state)};
  if (held_by_others(s))
    return fail(
        "{} with {}, not set by cmax: a reboot would return it to service; leave it to its owner",
        s.state, quoted_reason(s));
  return Decision{true, {}};
}

bool held_by_cmax(const NodeState& s) { return (s.drain_flag() || s.down()) && is_cmax_reason(s.reason); }

PoolCount pool_count(const std::vector<NodeState>& nodes, std::string_view node) {
  const NodeState* self = nullptr;
  for (const auto& n : nodes)
    if (n.name == node) self = &n;
  auto shares = [&](const NodeState& n) {
    if (!self || self->partitions.empty()) return true;
    for (const auto& p : n.partitions)
      if (std::find(self->partitions.begin(), self->partitions.end(), p) != self->partitions.end()) return true;
    return false;
  };
  PoolCount c;
  c.pool = !self || self->partitions.empty() ? std::string("all nodes")
                                             : fmt::format("partition {}", fmt::join(self->partitions, ","));
  for (const auto& n : nodes) {
    if (!shares(n)) continue;
    ++c.total;
    if (held_by_cmax(n)) {
      ++c.held;
      c.node_held |= n.name == node;
      c.held_nodes.push_back(n.name);
    }
  }
  return c;
}

}  // namespace cmax::sched
