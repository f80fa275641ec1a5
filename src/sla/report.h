#pragma once
// Renders an SlaReport: JSON "cmax.sla/1" (docs/schemas/sla.md) and a terminal table.

#include <string>
#include <string_view>

#include "sla/compute.h"
#include "sla/drills.h"

namespace cmax::sla {

/// Where the events came from, for the report.
struct InputInfo {
  std::string format;  ///< "csv", "json", "sacctmgr", "cmaxd-db"
  std::string path;
  bool window_from_flags = false;  ///< false: the window spans the events' months
  std::vector<DrillWindow> drills;          ///< excluded from downtime and from time owed
  std::vector<DrillWindow> drills_elsewhere;  ///< drills on nodes the contract does not name
  std::size_t closed_by_drills = 0;          ///< open intervals a drill record's resume closed
};

/// The report as one deterministic JSON document (keys in schema order), newline-terminated.
std::string render_json(const SlaReport& report, const Contract& contract, const Window& window,
                        const InputInfo& input);

/// A table per month for a terminal: totals, then the listed entities (at most `max_rows` a month,
/// worst availability first), then the anomalies and cancellation rights.
std::string render_table(const SlaReport& report, const Contract& contract, const Window& window,
                         const InputInfo& input, std::size_t max_rows = 20);

}  // namespace cmax::sla
