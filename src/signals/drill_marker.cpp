#include "signals/drill_marker.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace cmax::signals {
namespace {

constexpr std::size_t kMaxLines = 64;

bool id_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

bool valid_id(std::string_view id) {
  return !id.empty() && id.size() <= 16 && std::all_of(id.begin(), id.end(), id_char);
}

// The value of " key=" in `s` up to the next space, or nullopt.
std::optional<std::string_view> field(std::string_view s, std::string_view key) {
  for (std::size_t at = 0; (at = s.find(key, at)) != std::string_view::npos; at += key.size()) {
    const std::size_t eq = at + key.size();
    if (at == 0 || s[at - 1] != ' ' || eq >= s.size() || s[eq] != '=') continue;
    auto v = s.substr(eq + 1);
    return v.substr(0, v.find(' '));
  }
  return std::nullopt;
}

}  // namespace

std::uint32_t drill_line_hash(std::string_view m) {
  while (!m.empty() && (m.back() == ' ' || m.back() == '\r' || m.back() == '\n')) m.remove_suffix(1);
  std::uint32_t h = 2166136261u;
  for (unsigned char c : m) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string format_drill_begin(std::string_view id, std::string_view scenario, std::string_view node, double until_unix,
                               const std::vector<std::string>& messages) {
  std::string out = fmt::format("{}begin drill={} scenario={} node={} until={:.0f} lines=", kDrillMarker, id, scenario,
                                node, until_unix);
  for (std::size_t i = 0; i < messages.size() && i < kMaxLines; ++i)
    fmt::format_to(std::back_inserter(out), "{}{:08x}", i ? "," : "", drill_line_hash(messages[i]));
  return out;
}

std::string format_drill_end(std::string_view id) { return fmt::format("{}end drill={}", kDrillMarker, id); }

std::optional<DrillMarker> parse_drill_marker(std::string_view m) {
  auto at = m.find(kDrillMarker);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = m.substr(at + kDrillMarker.size());
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
  DrillMarker mk;
  std::string_view verb = rest.substr(0, rest.find(' '));
  std::string_view args = rest.substr(verb.size());
  auto id = field(args, "drill");
  if (!id || !valid_id(*id)) return std::nullopt;
  mk.id = std::string(*id);
  if (verb == "end") {
    mk.end = true;
    return mk;
  }
  if (verb != "begin") return std::nullopt;
  auto scenario = field(args, "scenario");
  auto node = field(args, "node");
  auto until = field(args, "until");
  auto lines = field(args, "lines");
  if (!scenario || !node || !until || !lines || scenario->empty() || scenario->size() > 64 || node->size() > 256)
    return std::nullopt;
  mk.scenario = std::string(*scenario);
  mk.node = std::string(*node);
  long long u = 0;
  auto [p, ec] = std::from_chars(until->data(), until->data() + until->size(), u);
  if (ec != std::errc() || p != until->data() + until->size() || u < 0) return std::nullopt;
  mk.until_unix = static_cast<double>(u);
  for (std::string_view l = *lines; !l.empty();) {
    auto comma = l.find(',');
    auto h = l.substr(0, comma);
    std::uint32_t v = 0;
    auto [q, ec2] = std::from_chars(h.data(), h.data() + h.size(), v, 16);
    if (h.size() != 8 || ec2 != std::errc() || q != h.data() + h.size() || mk.lines.size() >= kMaxLines)
      return std::nullopt;
    mk.lines.push_back(v);
    if (comma == std::string_view::npos) break;
    l = l.substr(comma + 1);
    if (l.empty()) return std::nullopt;
  }
  return mk;
}

std::optional<std::string_view> drill_tag_of(std::string_view m) {
  auto at = m.find(kDrillTag);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = m.substr(at + kDrillTag.size());
  std::size_t n = 0;
  while (n < rest.size() && n < 16 && id_char(rest[n])) ++n;
  if (n == 0) return std::nullopt;
  return rest.substr(0, n);
}

DrillTracker::Open* DrillTracker::find(std::string_view node, std::string_view id) {
  for (auto& o : open_)
    if (o.node == node && o.id == id) return &o;
  return nullptr;
}

const DrillTracker::Open* DrillTracker::find(std::string_view node, std::string_view id) const {
  for (const auto& o : open_)
    if (o.node == node && o.id == id) return &o;
  return nullptr;
}

bool DrillTracker::live(std::string_view node, std::string_view id, double now_unix) const {
  const Open* o = find(node, id);
  if (o == nullptr) return true;
  return !o->ended && (now_unix <= 0 || o->until_unix <= 0 || now_unix <= o->until_unix);
}

void DrillTracker::on_marker(std::string_view node, const DrillMarker& mk) {
  if (Open* o = find(node, mk.id)) {
    if (mk.end) o->ended = true;
    return;
  }
  if (mk.end) return;  // the end of a drill whose start this log does not hold
  if (open_.size() >= kMaxOpen) open_.erase(open_.begin());
  open_.push_back({std::string(node), mk.id, mk.until_unix, false, mk.lines});
  seen_.push_back(mk.id);
}

std::optional<DrillMatch> DrillTracker::match(std::string_view node, std::string_view message, double now_unix) {
  auto live = [&](const Open& o) { return !o.ended && (now_unix <= 0 || o.until_unix <= 0 || now_unix <= o.until_unix); };
  if (auto tag = drill_tag_of(message)) {
    if (Open* o = find(node, *tag)) {
      const auto h = drill_line_hash(message);
      if (auto it = std::find(o->pending.begin(), o->pending.end(), h); it != o->pending.end()) o->pending.erase(it);
      return DrillMatch{o->id, live(*o)};
    }
    // A tagged line without its marker (an older cmax, or a log cut before it): a drill line all
    // the same; whether it is live cannot be told, so a detector treats it as live.
    return DrillMatch{std::string(*tag), true};
  }
  if (open_.empty()) return std::nullopt;
  const auto h = drill_line_hash(message);
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (it->node != node) continue;
    auto p = std::find(it->pending.begin(), it->pending.end(), h);
    if (p == it->pending.end()) continue;
    it->pending.erase(p);
    return DrillMatch{it->id, live(*it)};
  }
  return std::nullopt;
}

}  // namespace cmax::signals
