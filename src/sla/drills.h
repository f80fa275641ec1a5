#pragma once
// Fault drills in SLA accounting. A drill takes a node out on purpose: that time is neither the
// provider's downtime nor time owed, so it is excluded (like maintenance) and listed. Drills are
// known from cmaxd's actions (a drain whose reason ends "[drill ID]") and from drill.json files
// (cmax drill run writes one; cmax drill cleanup adds when it resumed each node). A drill record
// that knows when the node came back also closes an open-ended drain of that node: a resume from
// any source ends the outage, not only one cmaxd made.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sla/contract.h"
#include "sla/events.h"
#include "sla/parse.h"

namespace cmax::sla {

/// One node out of service because of one drill, [start_s, end_s) UTC; end_s == kOpenEnd while
/// it is not known to have returned.
struct DrillWindow {
  std::string node;
  std::string drill;   ///< the drill id
  std::string source;  ///< "cmaxd db" or the drill.json path
  std::int64_t start_s = 0;
  std::int64_t end_s = kOpenEnd;
  /// The drill's own end (the resume cmax drill cleanup recorded, or cmaxd's resume) when end_s
  /// was moved on to the resume the events show (extend_drills_to_resume); kOpenEnd otherwise.
  std::int64_t marker_end_s = kOpenEnd;
};

/// How long after a drill's own end the events' resume may come and still be the drill's: cmaxd
/// notices a resume it did not make within its watch interval (10 s by default).
inline constexpr std::int64_t kResumeLagMaxS = 300;

/// "... [drill 1a2b]" -> "1a2b"; empty when the reason names no drill.
std::string_view drill_of_reason(std::string_view reason);

/// The drills among cmaxd's actions: a done drain whose reason names a drill opens a window, the
/// node's next done resume closes it.
std::vector<DrillWindow> drill_windows_from_actions(const std::vector<NodeAction>& actions);

/// The windows of a cmax.drill/1 document: per node, from the first line injected to the resume
/// cmax drill cleanup recorded (open while there is none). `path` names it in errors.
Result<std::vector<DrillWindow>> drill_windows_from_report(std::string_view text, std::string_view path);

/// Closes each open-ended interval of `events` on a node whose drill window began by the
/// interval's start plus `slack_s` and has a known end: at that end. Returns how many it closed.
std::size_t close_with_drills(EventSet& events, const std::vector<DrillWindow>& drills, std::int64_t slack_s = 60);

/// Moves each drill window's end on to the node's observed resume: the end of the node's down
/// interval (a state `down_states` counts) that began within the drill (from `slack_s` before its
/// start to its end) and ended after the drill's own end, by at most `max_lag_s`. The drill's end
/// marker (cmax drill cleanup's resume) comes before the resume the event source sees (cmaxd's, up
/// to its watch interval later): that time is the drill's too, not downtime. The old end is kept in
/// marker_end_s. Returns how many windows it moved. Pure.
std::size_t extend_drills_to_resume(std::vector<DrillWindow>& drills, const EventSet& events,
                                    const std::vector<std::string>& down_states, std::int64_t slack_s = 60,
                                    std::int64_t max_lag_s = kResumeLagMaxS);

/// Adds one node exclusion per drill window (open ones end at `as_of_s`) to `contract`, for the
/// nodes its topology names; returns the windows of nodes it does not name.
std::vector<DrillWindow> exclude_drills(Contract& contract, const std::vector<DrillWindow>& drills, std::int64_t as_of_s);

}  // namespace cmax::sla
