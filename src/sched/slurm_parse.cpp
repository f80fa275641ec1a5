#include "sched/slurm_parse.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/strings.h"
#include "sched/scontrol_fields.h"

namespace cmax::sched {
namespace {

constexpr std::array<std::string_view, 7> kBaseStates = {"ALLOCATED", "DOWN",  "ERROR",  "FUTURE",
                                                         "IDLE",      "MIXED", "UNKNOWN"};

// sinfo's one-character state suffixes and the flag each one stands for.
constexpr std::array<std::pair<char, std::string_view>, 9> kSuffixFlags = {
    {{'*', "NOT_RESPONDING"},
     {'~', "POWERED_DOWN"},
     {'#', "POWERING_UP"},
     {'%', "POWERING_DOWN"},
     {'!', "POWER_DOWN"},
     {'@', "REBOOT_REQUESTED"},
     {'^', "REBOOT_ISSUED"},
     {'$', "MAINTENANCE"},
     {'-', "PLANNED"}}};

constexpr std::string_view kReasonKey = " Reason=";

bool is_upper_word(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; });
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view next_token(std::string_view text, std::size_t& i) {
  while (i < text.size() && is_space(text[i])) ++i;
  std::size_t start = i;
  while (i < text.size() && !is_space(text[i])) ++i;
  return text.substr(start, i - start);
}

bool starts_with_key(std::string_view text) {
  std::size_t i = 0;
  auto token = next_token(text, i);
  auto eq = token.find('=');
  return eq != std::string_view::npos && is_scontrol_key(token.substr(0, eq));
}

struct ReasonParts {
  std::string_view reason, user, time, rest;
};

// Reason text ends at the first " [user@time]" that is followed by the end or by another Key=Value.
ReasonParts split_reason(std::string_view tail) {
  for (std::size_t i = tail.find('['); i != std::string_view::npos; i = tail.find('[', i + 1)) {
    if (i > 0 && !is_space(tail[i - 1])) continue;
    auto close = tail.find(']', i);
    if (close == std::string_view::npos) break;
    auto inner = tail.substr(i + 1, close - i - 1);
    auto at = inner.find('@');
    if (at == 0 || at == std::string_view::npos || at + 1 == inner.size()) continue;
    if (inner.find_first_of(" \t[") != std::string_view::npos) continue;
    auto rest = tail.substr(close + 1);
    if (!rest.empty() && (!is_space(rest[0]) || !starts_with_key(rest))) continue;
    return {core::trim(tail.substr(0, i)), inner.substr(0, at), inner.substr(at + 1), rest};
  }
  return {core::trim(tail), {}, {}, {}};
}

}  // namespace

Result<SlurmState> parse_slurm_state(std::string_view state) {
  SlurmState out;
  std::string_view text = state;
  std::vector<std::string_view> suffix_flags;
  while (!text.empty()) {
    auto it = std::find_if(kSuffixFlags.begin(), kSuffixFlags.end(),
                           [&](const auto& s) { return s.first == text.back(); });
    if (it == kSuffixFlags.end()) break;
    suffix_flags.insert(suffix_flags.begin(), it->second);
    text.remove_suffix(1);
  }
  auto parts = core::split_any(text, "+");
  if (text.empty() || parts.empty()) return fail("empty node state \"{}\"", core::clip(state, 60));
  if (parts.size() != static_cast<std::size_t>(std::count(text.begin(), text.end(), '+')) + 1)
    return fail("node state \"{}\" has an empty part", core::clip(state, 60));
  if (std::find(kBaseStates.begin(), kBaseStates.end(), parts[0]) == kBaseStates.end())
    return fail("node state \"{}\": unknown base state \"{}\"", core::clip(state, 60),
                core::clip(parts[0], 30));
  out.base = std::string(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (!is_upper_word(parts[i]))
      return fail("node state \"{}\": \"{}\" is not a flag", core::clip(state, 60),
                  core::clip(parts[i], 30));
    out.flags.emplace_back(parts[i]);
  }
  for (auto flag : suffix_flags)
    if (std::find(out.flags.begin(), out.flags.end(), flag) == out.flags.end())
      out.flags.emplace_back(flag);
  return out;
}

namespace {

Result<NodeState> parse_node_line(std::string_view line) {
  if (!line.starts_with("NodeName="))
    return fail("not a node line (no NodeName= first): \"{}\"", core::clip(line, 80));
  std::vector<ScontrolField> fields;
  ReasonParts reason;
  std::string_view head = line;
  if (auto pos = head.find(kReasonKey); pos != std::string_view::npos) {
    reason = split_reason(head.substr(pos + kReasonKey.size()));
    head = head.substr(0, pos);
  }
  split_scontrol_fields(head, fields);
  split_scontrol_fields(reason.rest, fields);
  if (fields[0].value.empty())
    return fail("node line with an empty NodeName=: \"{}\"", core::clip(line, 80));

  NodeState node;
  node.name = fields[0].value;
  const std::string* state = find_scontrol_field(fields, "State");
  if (state == nullptr)
    return fail("node {}: no State= field (truncated output?): \"{}\"", node.name,
                core::clip(line, 80));
  auto parsed = parse_slurm_state(*state);
  if (!parsed) return fail("node {}: {}", node.name, parsed.error().message);
  node.state = *state;
  node.base = std::move(parsed->base);
  node.flags = std::move(parsed->flags);
  node.reason = std::string(reason.reason);
  node.reason_user = std::string(reason.user);
  node.reason_time = std::string(reason.time);
  if (const std::string* partitions = find_scontrol_field(fields, "Partitions"))
    for (auto p : core::split_any(*partitions, ",")) node.partitions.emplace_back(p);
  if (const std::string* boot = find_scontrol_field(fields, "BootTime"); boot && *boot != "None")
    node.boot_time = *boot;
  return node;
}

}  // namespace

Result<NodeState> parse_scontrol_node(std::string_view text) {
  auto line = single_scontrol_line(text, "node");
  if (!line) return Unexpected<Error>{line.error()};
  return parse_node_line(*line);
}

Result<std::vector<NodeState>> parse_scontrol_nodes(std::string_view text) {
  std::vector<NodeState> nodes;
  int n = 0;
  for (auto line : core::split_lines(text)) {
    ++n;
    line = core::trim(line);
    if (line.empty()) continue;
    auto node = parse_node_line(line);
    if (!node) return fail("line {}: {}", n, node.error().message);
    nodes.push_back(std::move(*node));
  }
  return nodes;
}

}  // namespace cmax::sched
