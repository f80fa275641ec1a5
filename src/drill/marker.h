#pragma once
// The lines a drill writes around its fault lines (signals/drill_marker.h), and the scenario's
// steps as kernel log lines.

#include <string>
#include <vector>

#include "core/result.h"
#include "drill/inject.h"
#include "drill/run_options.h"
#include "drill/scenario.h"

namespace cmax::drill {

/// The marker line written before the fault lines: readers of the log tell the drill's lines from
/// a real fault by it. Uses `options`' drill_id, scenario and until_unix.
KmsgLine begin_marker(const RunOptions& options, const std::string& node, const std::vector<Step>& steps);

/// The line that ends drill `drill_id` in a node's kernel log.
KmsgLine end_marker_line(const std::string& drill_id);

/// The steps as lines to write, in order.
std::vector<KmsgLine> to_kmsg(const std::vector<Step>& steps);

/// The scenario `id` of the built-in ones; an error listing them when there is none.
Result<Scenario> load_scenario(const std::string& id);

/// The targets a scenario's lines name: the drill id, and the GPU when `gpu` is not "".
Targets targets_for(const std::string& drill_id, const std::string& gpu);

}  // namespace cmax::drill
