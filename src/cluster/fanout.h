#pragma once
// Fan-out: run `cmax collect` once on every node through the scheduler the cluster already has
// (Slurm's srun, Kubernetes pods) and bring each node's answer back. One NodeOutput per node the
// plan named, whatever happened to it: a node that does not answer in time is reported, and the
// others still finish.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::cluster {

enum class NodeStatus {
  ok,             ///< the node answered with a collect document
  unreachable,    ///< the scheduler could not start the task there (slurmd down, pod unschedulable)
  failed,         ///< the task ran and failed (non-zero exit, no or malformed document)
  timeout,        ///< no answer within the node timeout
  not_scheduled,  ///< the scheduler would not place work there (down, drained, cordoned): not tried
  queued,         ///< the scheduler queued the work instead of starting it (reserved, busy): not evaluated
};
std::string_view to_string(NodeStatus s);

struct NodeOutput {
  std::string node;
  NodeStatus status = NodeStatus::timeout;
  std::string payload;  ///< the node's cmax.collect/1 JSON document when ok
  std::string detail;   ///< why not ok, in an operator's words; the scheduler's own message
  double seconds = 0;   ///< from launch to the node's answer (or to giving up)
};

/// Called as each node reports in (from the fan-out's thread; for a progress line).
using NodeCallback = std::function<void(const NodeOutput&)>;

}  // namespace cmax::cluster
