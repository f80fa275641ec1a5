#include <fmt/format.h>

#include "core/strings.h"
#include "sched/slurm_reservation.h"
#include "sla/parse.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

struct Columns {
  int node = 0, start = 1, end = 2, state = 3, reason = 4;
};

std::vector<std::string_view> split_pipes(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t bar = line.find('|', pos);
    if (bar == std::string_view::npos) {
      out.push_back(line.substr(pos));
      break;
    }
    out.push_back(line.substr(pos, bar - pos));
    pos = bar + 1;
  }
  // -P (--parsable) ends every line with '|'; --parsable2 does not.
  if (out.size() > 1 && out.back().empty()) out.pop_back();
  return out;
}

int find_column(const std::vector<std::string_view>& header, std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (core::to_lower(core::trim(header[i])) == name) return static_cast<int>(i);
  return -1;
}

std::string_view field(const std::vector<std::string_view>& f, int i) {
  return i >= 0 && static_cast<std::size_t>(i) < f.size() ? core::trim(f[static_cast<std::size_t>(i)])
                                                           : std::string_view{};
}

}  // namespace

Result<EventSet> parse_sacctmgr_events(std::string_view text, const Zone& zone) {
  EventSet set;
  Columns col;
  bool first = true;
  std::size_t line_no = 0;
  for (std::string_view line : core::split_lines(text)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (core::trim(line).empty()) continue;
    const auto f = split_pipes(line);
    if (first) {
      first = false;
      if (find_column(f, "nodename") >= 0 || find_column(f, "timestart") >= 0) {
        col.node = find_column(f, "nodename");
        col.start = find_column(f, "timestart");
        col.end = find_column(f, "timeend");
        col.state = find_column(f, "state");
        col.reason = find_column(f, "reason");
        if (col.node < 0 || col.start < 0 || col.end < 0)
          return fail("read sacctmgr events: the header '{}' lacks NodeName, TimeStart or TimeEnd; run "
                      "sacctmgr -P show event format=NodeName,TimeStart,TimeEnd,State,Reason",
                      core::clip(line, 120));
        continue;
      }
      if (line.find('|') == std::string_view::npos)
        return fail("read sacctmgr events: the first line '{}' is not pipe-separated; run sacctmgr with -P "
                    "(show event format=NodeName,TimeStart,TimeEnd,State,Reason)",
                    core::clip(line, 120));
    }
    ++set.records;
    const std::string_view nodes = field(f, col.node), ts = field(f, col.start), te = field(f, col.end);
    const std::string_view state = field(f, col.state);
    if (nodes.empty()) {
      set.anomalies.cluster_events.add(fmt::format("line {}: {}", line_no, core::clip(line, 120)));
      continue;
    }
    const auto start = parse_timestamp(ts, zone);
    const bool open = te.empty() || te == "Unknown" || te == "None";
    const auto end = open ? std::optional<std::int64_t>(kOpenEnd) : parse_timestamp(te, zone);
    if (!start || !end) {
      set.anomalies.malformed.add(fmt::format("line {}: unreadable time: {}", line_no, core::clip(line, 120)));
      continue;
    }
    auto names = sched::expand_hostlist(nodes);
    if (!names || names->empty()) {
      set.anomalies.malformed.add(fmt::format("line {}: bad NodeName '{}': {}", line_no, core::clip(nodes, 60),
                                              names ? "empty" : names.error().message));
      continue;
    }
    const std::int32_t st = set.state(state.empty() ? std::string_view("down") : state);
    for (const auto& n : *names) set.intervals.push_back(RawInterval{*start, *end, set.node(n), st});
  }
  return set;
}

}  // namespace cmax::sla
