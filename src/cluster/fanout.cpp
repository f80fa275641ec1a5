#include "cluster/fanout.h"

namespace cmax::cluster {

std::string_view to_string(NodeStatus s) {
  switch (s) {
    case NodeStatus::ok: return "ok";
    case NodeStatus::unreachable: return "unreachable";
    case NodeStatus::failed: return "failed";
    case NodeStatus::timeout: return "timeout";
    case NodeStatus::not_scheduled: return "not_scheduled";
    case NodeStatus::queued: return "queued";
  }
  return "unknown";
}

}  // namespace cmax::cluster
