#pragma once
// cmax run's terminal output that is not a result: the progress line while nodes answer, and the
// plan --dry-run prints for a Slurm fan-out.

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "cluster/fanout.h"
#include "cluster/slurm_fanout.h"

namespace cmax::app {

/// One progress line on stderr, rewritten in place; nothing when stderr is not a terminal.
void run_progress(std::string_view line);

/// Counts the nodes as they settle and shows the last one on the progress line. Thread-safe (the
/// fan-outs call it from their own threads); must outlive the callback.
class NodeProgress {
 public:
  cluster::NodeCallback callback();

 private:
  std::mutex mu_;
  std::size_t heard_ = 0;
};

/// `cmax run --dry-run` with Slurm: the nodes to ask, those left out, notes and the srun commands.
void print_slurm_dry_run(const cluster::SrunPlan& plan, const std::string& why);

}  // namespace cmax::app
