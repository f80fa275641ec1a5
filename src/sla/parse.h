#pragma once
// Pure parsers of node state intervals: CSV, JSON, `sacctmgr -P show event` output, and the
// drain/resume actions of cmaxd's event database. string_view (or rows) in, an EventSet out. Odd
// records are counted in EventSet::anomalies, not failed on; an error only for input that is not
// of the format at all.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sla/events.h"
#include "sla/zone.h"

namespace cmax::sla {

/// CSV rows `node,start,end,state[,reason]` (an optional header line starting with "node", '#'
/// comments, CRLF and a quoted reason are fine). `end` empty, "Unknown" or "open" is open-ended.
/// Times as parse_timestamp reads them, local ones in `zone`.
Result<EventSet> parse_events_csv(std::string_view text, const Zone& zone);

/// parse_events_csv on up to `threads` threads (parts of at least 4 MiB), each reading a run of
/// whole lines into its own EventSet, merged in input order: the same result, sooner.
Result<EventSet> parse_events_csv_parallel(std::string_view text, const Zone& zone,
                                           unsigned threads);

/// parse_events_csv with a thread per part, the parts starting at the line boundaries at or after
/// the byte offsets `splits` (ascending): the seam that tests the parallel parse at every offset.
Result<EventSet> parse_events_csv_parts(std::string_view text, const Zone& zone,
                                        std::span<const std::size_t> splits);

/// JSON: an array of {"node", "start", "end" (null or absent: open), "state" (default "down"),
/// "reason"}, or an object with such an array under "intervals". Times are strings as above or
/// Unix seconds.
Result<EventSet> parse_events_json(std::string_view text, const Zone& zone);

/// `sacctmgr -P show event format=NodeName,TimeStart,TimeEnd,State,Reason` (or --parsable2, any
/// column order when a header names them, this order without one). NodeName may be a hostlist
/// ("gpu[01-04]"), expanded; an empty one is a cluster event, counted and skipped. TimeEnd "Unknown"
/// or empty is open-ended. Times are local to `zone` (sacctmgr prints its own local time).
Result<EventSet> parse_sacctmgr_events(std::string_view text, const Zone& zone);

/// One row of cmaxd's `actions` table, as the event-database adapter reads it.
struct NodeAction {
  std::string node, verb, status, reason;
  double t_requested = 0, t_done = 0;
};
/// Down intervals from cmaxd's actions, oldest first: a done "drain" opens one, a done "resume"
/// closes it, a done "reboot" is down from request to completion. A second drain while drained is
/// a duplicate; a resume with nothing open is unmatched; a drain never resumed is open-ended.
/// Actions not done (dry_run, failed, refused, pending, skipped) never happened and are ignored.
EventSet intervals_from_actions(const std::vector<NodeAction>& actions);

/// The actions of cmaxd's event database at `path` (read-only), oldest first.
Result<std::vector<NodeAction>> read_cmaxd_actions(const std::string& path);
/// Reads the actions of cmaxd's event database at `path` (read-only) and pairs them.
Result<EventSet> read_cmaxd_db(const std::string& path);

}  // namespace cmax::sla
