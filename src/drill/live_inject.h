#pragma once
// Writing a drill's lines on a node: locally into this machine's kernel log, or through srun on
// the node itself (`cmax drill inject` there), bounded, its job cancelled on any failure.

#include <string>
#include <vector>

#include "core/result.h"
#include "drill/inject.h"
#include "drill/site.h"

namespace cmax::drill {

/// The marker first, then the fault lines; the fault lines written. `slurm_conf` ("" the default)
/// is what srun reads. `devkmsg_note` gets what was done to printk_devkmsg around the writes.
Result<std::vector<Injected>> inject_lines(const InjectRequest& request, const std::string& slurm_conf,
                                           std::string& devkmsg_note);

/// Ends the drill in the node's kernel log (signals/drill_marker.h). Best effort: "end marker
/// written", or "end marker not written: " and why.
std::string write_end_marker(const RunOptions& options, const std::string& slurm_conf, const std::string& node,
                             bool local, const std::string& reservation);

}  // namespace cmax::drill
