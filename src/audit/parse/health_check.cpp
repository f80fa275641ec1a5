#include "audit/parse/health_check.h"

#include <cctype>

#include "core/strings.h"

namespace cmax::audit {
namespace {

// Whether `hay` (lowercase) has `word` starting at a word boundary.
bool has_word(std::string_view hay, std::string_view word) {
  for (std::size_t at = hay.find(word); at != std::string_view::npos; at = hay.find(word, at + 1)) {
    const bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(hay[at - 1])) || hay[at - 1] == '_');
    const std::size_t end = at + word.size();
    const bool right = end >= hay.size() || !(std::isalnum(static_cast<unsigned char>(hay[end])) || hay[end] == '_');
    if (left && right) return true;
  }
  return false;
}

// The value of "state=" in a lowercase line (scontrol takes State=, state= or STATE=), "" none.
std::string_view state_value(std::string_view line) {
  const auto at = line.find("state=");
  if (at == std::string_view::npos) return {};
  if (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_')) return {};
  auto v = line.substr(at + 6);
  if (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  std::size_t n = 0;
  while (n < v.size() && (std::isalpha(static_cast<unsigned char>(v[n])) || v[n] == '_')) ++n;
  return v.substr(0, n);
}

}  // namespace

std::string HealthCheckStates::describe() const {
  std::string out;
  auto add = [&](bool on, std::string_view name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(start_only, "START_ONLY");
  add(reboot_only, "REBOOT_ONLY");
  if (alloc && mixed && idle) {
    add(true, "ANY");
  } else {
    add(alloc, "ALLOC");
    add(mixed, "MIXED");
    add(idle, "IDLE");
    add(nondrained_idle && !idle, "NONDRAINED_IDLE");
  }
  add(cycle, "CYCLE");
  return out;
}

HealthCheckStates parse_health_check_states(std::string_view value) {
  HealthCheckStates s;
  bool state_set = false;
  for (auto word : core::split_any(value, ",")) {
    const auto trimmed = core::trim(word);
    const std::string w = core::to_lower(trimmed);
    if (w.empty()) continue;
    if (w == "alloc") s.alloc = state_set = true;
    else if (w == "mixed") s.mixed = state_set = true;
    else if (w == "idle") s.idle = state_set = true;
    else if (w == "nondrained_idle") s.nondrained_idle = state_set = true;
    else if (w == "any") s.alloc = s.mixed = s.idle = s.nondrained_idle = state_set = true;
    else if (w == "start_only") s.start_only = state_set = true;
    else if (w == "reboot_only") s.reboot_only = state_set = true;
    else if (w == "cycle") s.cycle = true;
    else s.ignored.emplace_back(trimmed);
  }
  // No state word (unset, CYCLE alone, only words Slurm ignores): ANY.
  if (!state_set) s.alloc = s.mixed = s.idle = s.nondrained_idle = true;
  return s;
}

std::optional<HealthScriptActions> classify_health_script(std::string_view text) {
  if (!text.starts_with("#!") || text.find('\0') != std::string_view::npos) return std::nullopt;
  HealthScriptActions a;
  int number = 0;
  int drain_test_line = 0;  // the last line that tested for a drain state without acting on it
  for (auto raw : core::split_lines(text)) {
    ++number;
    auto line = core::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string l = core::to_lower(line);
    const bool leaves = has_word(l, "exit") || has_word(l, "return");
    bool drains = false, resumes = false;
    if (l.find("scontrol") != std::string::npos) {
      const auto state = state_value(l);
      drains = state == "drain" || state == "down" || state == "fail";
      resumes = state == "resume" || state == "idle" || state == "undrain";
    }
    drains = drains || has_word(l, "node-mark-offline") || l.find("$offline_node") != std::string::npos ||
             l.find("${offline_node") != std::string::npos;
    resumes = resumes || has_word(l, "node-mark-online") || l.find("$online_node") != std::string::npos ||
              l.find("${online_node") != std::string::npos;
    if (!drains && !resumes && (l.find("drain") != std::string::npos || has_word(l, "drng"))) {
      if (leaves && !a.skips_drained && !a.resumes) {
        a.skips_drained = true;
        a.skip_line = number;
      }
      drain_test_line = number;
    } else if (leaves && drain_test_line > 0 && number - drain_test_line <= 2 && !a.skips_drained && !a.resumes &&
               !drains) {
      a.skips_drained = true;
      a.skip_line = drain_test_line;
    }
    if (drains && !a.drains) {
      a.drains = true;
      a.drain_line = number;
    }
    if (resumes && !a.resumes) {
      a.resumes = true;
      a.resume_line = number;
    }
  }
  if (!a.resumes) {  // an early exit matters only on the way to a resume
    a.skips_drained = false;
    a.skip_line = 0;
  }
  return a;
}

}  // namespace cmax::audit
