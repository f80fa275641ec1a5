#include "sched/scontrol_fields.h"

#include <algorithm>

#include "core/strings.h"

namespace cmax::sched {

bool is_scontrol_key(std::string_view k) {
  if (k.empty() || !((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z'))) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void split_scontrol_fields(std::string_view text, std::vector<ScontrolField>& fields) {
  const std::size_t first = fields.size();
  for (auto token : core::split_any(text, " \t")) {
    auto eq = token.find('=');
    if (eq != std::string_view::npos && is_scontrol_key(token.substr(0, eq))) {
      fields.push_back({token.substr(0, eq), std::string(token.substr(eq + 1))});
    } else if (fields.size() > first) {
      fields.back().value += ' ';
      fields.back().value += token;
    }
  }
}

const std::string* find_scontrol_field(const std::vector<ScontrolField>& fields,
                                       std::string_view key) {
  auto it = std::find_if(fields.begin(), fields.end(),
                         [&](const ScontrolField& f) { return f.key == key; });
  return it == fields.end() ? nullptr : &it->value;
}

Result<std::string_view> single_scontrol_line(std::string_view text, std::string_view what) {
  std::string_view found;
  int lines = 0;
  for (auto line : core::split_lines(text)) {
    if (core::trim(line).empty()) continue;
    if (++lines == 1) found = core::trim(line);
  }
  if (lines == 0) return fail("scontrol printed nothing");
  if (lines > 1) return fail("scontrol printed {} lines, expected one {}", lines, what);
  return found;
}

}  // namespace cmax::sched
