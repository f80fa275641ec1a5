#pragma once
// The SLA engine: per-node down intervals (merged, clipped, exclusions taken out), the rack rule,
// and per month and scope entity the GPU-hours down, availability, credit and cancellation rights.
//
// Downtime is counted per GPU-second, never twice: at any instant a node's GPUs are down when the
// node is down, or when its rack counts as down (at least rack_down_min_nodes members down) and
// the node is not excluded. Excluded GPU-time (maintenance, force majeure) leaves both the downtime
// and the time owed: availability = 1 - down / (total - excluded).

#include <cstdint>
#include <string>
#include <vector>

#include "sla/contract.h"
#include "sla/events.h"
#include "sla/timestamp.h"

namespace cmax::sla {

/// Whole months in the contract's zone: bounds[i] .. bounds[i + 1] is months[i], UTC seconds.
struct Window {
  std::vector<YearMonth> months;
  std::vector<std::int64_t> bounds;
  std::int64_t from_s() const { return bounds.front(); }
  std::int64_t to_s() const { return bounds.back(); }
};
/// The months `first` through `last`, inclusive; an error when last is before first or the span
/// is over 120 months.
Result<Window> month_window(const Zone& zone, YearMonth first, YearMonth last);
/// The months from the earliest to the latest time in `events` (starts and closed ends), in `zone`;
/// nullopt when there are no intervals.
std::optional<Window> default_window(const EventSet& events, const Zone& zone);

/// One scope entity in one month. Seconds are GPU-seconds unless named otherwise.
struct EntityMonth {
  std::int32_t entity = 0;  ///< index into SlaReport::entity_names
  std::int32_t gpus = 0;
  std::int64_t gpu_s = 0, excluded_gpu_s = 0, down_gpu_s = 0;
  std::int64_t rack_down_s = 0;  ///< wall seconds a rack counted as down (summed over a site's racks)
  double availability_percent = 100, credit_percent = 0, fee = 0, credit = 0;
  bool below_target = false;
};

struct MonthReport {
  YearMonth month;
  std::int64_t start_s = 0, end_s = 0;
  std::int64_t gpu_s = 0, excluded_gpu_s = 0, down_gpu_s = 0;
  double availability_percent = 100, fee = 0, credit = 0;
  std::int32_t entities = 0, with_downtime = 0, below_target = 0, credited = 0;
  std::vector<EntityMonth> listed;  ///< entities with downtime or exclusions this month, by index
  bool to_date = false;  ///< the month runs past the report's as-of time: counted up to it
};

/// A right to cancel that a month's figures trigger.
struct CancellationRight {
  std::int32_t entity = 0;
  std::size_t month = 0;  ///< index into SlaReport::months
  std::string rule;       ///< "below_percent" or "consecutive_months_below_target"
  std::string detail;
};

struct SlaReport {
  Scope scope = Scope::rack;
  std::vector<std::string> entity_names;
  std::vector<MonthReport> months;
  std::vector<CancellationRight> cancellations;
  Anomalies anomalies;
  std::uint64_t records = 0, down_intervals = 0;  ///< read; merged down intervals inside the window
  double credit_total = 0;
  std::int64_t as_of_s = 0;  ///< nothing after this was counted (kOpenEnd: no limit)
};

/// Computes the report. Consumes the event set's intervals (sorted and merged in place to bound
/// memory). Nothing after `as_of_s` (now, for a live report) is counted: an interval still open
/// ends there, and a month still running counts GPU-time up to it (to_date). Single-threaded;
/// about 0.3 us per interval.
SlaReport compute_sla(EventSet&& events, const Contract& contract, const Window& window,
                      std::int64_t as_of_s = kOpenEnd);

}  // namespace cmax::sla
