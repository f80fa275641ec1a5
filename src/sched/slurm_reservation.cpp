#include "sched/slurm_reservation.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "core/strings.h"
#include "sched/scontrol_fields.h"

namespace cmax::sched {
namespace {

constexpr std::size_t kMaxDigits = 18;  // fits in uint64 with room; Slurm's own limit is lower
// A DNS name is at most 253 characters; longer ones are garbage, and bounding them bounds the
// memory an expansion of kMaxHostlistNames names may take.
constexpr std::size_t kMaxNameChars = 255;

struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  int width = 0;  // the lower bound's printed width: "01" pads to two digits
};

// A name split at its brackets: literal pieces and, between them, range lists.
struct Pattern {
  std::vector<std::string_view> literals;  // literals.size() == groups.size() + 1
  std::vector<std::vector<Range>> groups;
};

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

Result<Range> parse_range(std::string_view text, std::string_view name) {
  auto dash = text.find('-');
  std::string_view lo = text.substr(0, dash);
  std::string_view hi = dash == std::string_view::npos ? lo : text.substr(dash + 1);
  if (!is_digits(lo) || !is_digits(hi) || lo.size() > kMaxDigits || hi.size() > kMaxDigits)
    return fail("hostlist \"{}\": \"{}\" is not a number or a range of numbers",
                core::clip(name, 80), core::clip(text, 40));
  Range r{to_u64(lo), to_u64(hi), static_cast<int>(lo.size())};
  if (r.hi < r.lo)
    return fail("hostlist \"{}\": range \"{}\" runs backwards", core::clip(name, 80),
                core::clip(text, 40));
  return r;
}

Result<Pattern> parse_pattern(std::string_view name) {
  if (name.empty()) return fail("hostlist has an empty name (two commas in a row?)");
  Pattern p;
  std::size_t i = 0;
  for (;;) {
    auto open = name.find_first_of("[]", i);
    if (open == std::string_view::npos) {
      p.literals.push_back(name.substr(i));
      return p;
    }
    if (name[open] == ']')
      return fail("hostlist \"{}\": \"]\" without \"[\"", core::clip(name, 80));
    auto close = name.find_first_of("[]", open + 1);
    if (close == std::string_view::npos || name[close] == '[')
      return fail("hostlist \"{}\": \"[\" without \"]\"", core::clip(name, 80));
    p.literals.push_back(name.substr(i, open - i));
    std::vector<Range> group;
    auto inside = name.substr(open + 1, close - open - 1);
    if (inside.empty()) return fail("hostlist \"{}\": empty brackets", core::clip(name, 80));
    std::size_t j = 0;
    for (;;) {
      auto comma = inside.find(',', j);
      auto r = parse_range(
          inside.substr(j, comma == std::string_view::npos ? inside.npos : comma - j), name);
      if (!r) return Unexpected<Error>{r.error()};
      group.push_back(*r);
      if (comma == std::string_view::npos) break;
      j = comma + 1;
    }
    p.groups.push_back(std::move(group));
    i = close + 1;
  }
}

// The longest name the pattern expands to.
std::size_t longest(const Pattern& p) {
  std::size_t n = 0;
  for (auto l : p.literals) n += l.size();
  for (const auto& group : p.groups) {
    std::size_t widest = 0;
    for (const auto& r : group)
      widest =
          std::max({widest, static_cast<std::size_t>(r.width), fmt::formatted_size("{}", r.hi)});
    n += widest;
  }
  return n;
}

// Names the pattern expands to, saturating just past kMaxHostlistNames.
std::size_t count(const Pattern& p) {
  constexpr std::uint64_t kCap = kMaxHostlistNames + 1;
  std::uint64_t total = 1;
  for (const auto& group : p.groups) {
    std::uint64_t n = 0;
    for (const auto& r : group) n = std::min(kCap, n + std::min(kCap, r.hi - r.lo + 1));
    total = std::min(kCap, total * n);  // both factors are at most kCap: no overflow
  }
  return static_cast<std::size_t>(total);
}

void expand(const Pattern& p, std::size_t group, std::string& prefix,
            std::vector<std::string>& out) {
  prefix += p.literals[group];
  if (group == p.groups.size()) {
    out.push_back(prefix);
  } else {
    auto keep = prefix.size();
    for (const auto& r : p.groups[group]) {
      for (std::uint64_t v = r.lo;; ++v) {
        prefix.resize(keep);
        fmt::format_to(std::back_inserter(prefix), "{:0{}}", v, r.width);
        expand(p, group + 1, prefix, out);
        if (v == r.hi) break;
      }
    }
    prefix.resize(keep);
  }
  prefix.resize(prefix.size() - p.literals[group].size());
}

}  // namespace

bool Reservation::has_flag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool Reservation::contains(std::string_view node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

Result<std::vector<std::string>> expand_hostlist(std::string_view hostlist) {
  std::vector<Pattern> patterns;
  std::size_t total = 0;
  std::size_t i = 0;
  while (i < hostlist.size()) {
    // A comma inside brackets separates ranges, not names.
    std::size_t j = i;
    int depth = 0;
    for (; j < hostlist.size() && !(hostlist[j] == ',' && depth == 0); ++j) {
      char c = hostlist[j];
      if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
        return fail("hostlist \"{}\": a space or control character at offset {}",
                    core::clip(hostlist, 80), j);
      if (c == '[') ++depth;
      if (c == ']') --depth;
    }
    auto p = parse_pattern(hostlist.substr(i, j - i));
    if (!p) return Unexpected<Error>{p.error()};
    if (longest(*p) > kMaxNameChars)
      return fail("hostlist \"{}\" holds a name longer than {} characters",
                  core::clip(hostlist, 80), kMaxNameChars);
    total += count(*p);
    if (total > kMaxHostlistNames)
      return fail("hostlist \"{}\" names more than {} nodes; refusing to expand it",
                  core::clip(hostlist, 80), kMaxHostlistNames);
    patterns.push_back(std::move(*p));
    if (j == hostlist.size()) break;
    i = j + 1;
    if (i == hostlist.size())
      return fail("hostlist \"{}\" ends in a comma", core::clip(hostlist, 80));
  }
  std::vector<std::string> names;
  names.reserve(total);
  std::string prefix;
  for (const auto& p : patterns) expand(p, 0, prefix, names);
  return names;
}

Result<Reservation> parse_scontrol_reservation(std::string_view text) {
  auto one = sched::single_scontrol_line(text, "reservation");
  if (!one) return Unexpected<Error>{one.error()};
  const std::string_view line = *one;
  if (line.starts_with("Reservation ") && line.ends_with(" not found"))
    return fail("{}: it ended or was deleted; create it again or check the name",
                core::clip(line, 120));
  if (line.starts_with("No reservations"))
    return fail("{}: create the reservation first", core::clip(line, 120));
  if (!line.starts_with("ReservationName="))
    return fail("not a reservation line (no ReservationName= first): \"{}\"", core::clip(line, 80));

  std::vector<sched::ScontrolField> fields;
  sched::split_scontrol_fields(line, fields);
  Reservation r;
  r.name = fields[0].value;
  if (r.name.empty())
    return fail("reservation line with an empty ReservationName=: \"{}\"", core::clip(line, 80));
  const std::string* nodes = sched::find_scontrol_field(fields, "Nodes");
  const std::string* node_cnt = sched::find_scontrol_field(fields, "NodeCnt");
  const std::string* state = sched::find_scontrol_field(fields, "State");
  const std::pair<const std::string*, std::string_view> required[] = {
      {nodes, "Nodes"}, {node_cnt, "NodeCnt"}, {state, "State"}};
  for (const auto& [value, key] : required)
    if (value == nullptr)
      return fail("reservation {}: no {}= field (truncated output?): \"{}\"", r.name, key,
                  core::clip(line, 80));

  if (*nodes != "(null)") {
    auto names = expand_hostlist(*nodes);
    if (!names) return fail("reservation {}: Nodes=: {}", r.name, names.error().message);
    r.nodes = std::move(*names);
  }
  auto cnt = core::parse_uint(*node_cnt);
  if (!cnt || *cnt > kMaxHostlistNames)
    return fail("reservation {}: NodeCnt=\"{}\" is not a node count", r.name,
                core::clip(*node_cnt, 30));
  r.node_cnt = static_cast<int>(*cnt);
  if (state->empty()) return fail("reservation {}: empty State=", r.name);
  r.state = *state;
  if (const auto* flags = sched::find_scontrol_field(fields, "Flags"); flags != nullptr && *flags != "(null)")
    for (auto f : core::split_any(*flags, ",")) r.flags.emplace_back(f);
  if (const auto* t = sched::find_scontrol_field(fields, "StartTime")) r.start_time = *t;
  if (const auto* t = sched::find_scontrol_field(fields, "EndTime")) r.end_time = *t;
  auto list = [](const std::string* v) {
    std::vector<std::string> out;
    if (v != nullptr && *v != "(null)")
      for (auto f : core::split_any(*v, ",")) out.emplace_back(f);
    return out;
  };
  if (const auto* p = sched::find_scontrol_field(fields, "PartitionName"); p != nullptr && *p != "(null)")
    r.partition = *p;
  r.users = list(sched::find_scontrol_field(fields, "Users"));
  r.accounts = list(sched::find_scontrol_field(fields, "Accounts"));
  return r;
}

Result<std::vector<Reservation>> parse_scontrol_reservations(std::string_view text) {
  std::vector<Reservation> out;
  for (auto raw : core::split_lines(text)) {
    auto line = core::trim(raw);
    if (line.empty()) continue;
    if (line.starts_with("No reservations")) continue;
    auto r = parse_scontrol_reservation(line);
    if (!r) return Unexpected<Error>{r.error()};
    out.push_back(std::move(*r));
  }
  return out;
}

bool user_may_use(const Reservation& r, std::string_view user) {
  if (r.users.empty()) return true;
  bool only_excludes = true;
  for (const auto& u : r.users) {
    if (u.starts_with('-')) {
      if (std::string_view(u).substr(1) == user) return false;
    } else {
      only_excludes = false;
      if (u == user) return true;
    }
  }
  return only_excludes;
}

std::size_t drop_reserved_nodes(std::vector<std::string>& nodes, const std::vector<Reservation>& reservations) {
  return std::erase_if(nodes, [&](const std::string& n) {
    return std::any_of(reservations.begin(), reservations.end(),
                       [&](const Reservation& r) { return r.state == "ACTIVE" && r.contains(n); });
  });
}

}  // namespace cmax::sched
