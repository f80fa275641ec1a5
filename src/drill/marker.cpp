#include "drill/marker.h"

#include "signals/drill_marker.h"

namespace cmax::drill {

KmsgLine begin_marker(const RunOptions& options, const std::string& node, const std::vector<Step>& steps) {
  std::vector<std::string> texts;
  for (const auto& s : steps) texts.push_back(s.line);
  return {0, 6, signals::format_drill_begin(options.drill_id, options.scenario, node, options.until_unix, texts)};
}

KmsgLine end_marker_line(const std::string& drill_id) { return {0, 6, signals::format_drill_end(drill_id)}; }

std::vector<KmsgLine> to_kmsg(const std::vector<Step>& steps) {
  std::vector<KmsgLine> out;
  for (const auto& s : steps) out.push_back({s.after_ms, s.level, s.line});
  return out;
}

Result<Scenario> load_scenario(const std::string& id) {
  auto all = builtin_scenarios();
  if (!all) return Unexpected<Error>{all.error()};
  const Scenario* s = find_scenario(*all, id);
  if (!s) {
    std::string ids;
    for (const auto& x : *all) ids += (ids.empty() ? "" : ", ") + x.id;
    return fail("no scenario \"{}\": one of {} (cmax drill list)", id, ids);
  }
  return *s;
}

Targets targets_for(const std::string& drill_id, const std::string& gpu) {
  Targets t;
  t.drill_id = drill_id;
  if (!gpu.empty()) t.gpu = gpu;
  return t;
}

}  // namespace cmax::drill
