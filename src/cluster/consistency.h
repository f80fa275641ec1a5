#pragma once
// Cross-node consistency: nodes of one cluster must agree on driver, firmware, kernel, NCCL and
// CUDA versions, GPU and NIC counts and link rates. One node with an older driver or a NIC that
// trained at half rate is a finding even when every node passes on its own. Pure.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audit/facts.h"
#include "audit/model.h"

namespace cmax::cluster {

/// A node's facts, by reference (the caller owns them).
struct NodeFacts {
  std::string node;
  const audit::Facts* facts = nullptr;
};

/// One compared property: the facts it reads (the first present one counts) and its category.
struct ConsistencyRule {
  std::string_view id;  ///< "cluster.consistency.gpu_driver"
  std::string_view title;
  audit::Category category;
  std::vector<std::string_view> keys;
};

/// The table of compared properties, in report order.
std::span<const ConsistencyRule> consistency_rules();

/// One finding per rule: pass when every node that answered agrees (absent counts as a value:
/// one node without a driver among drivered nodes is a disagreement); fail naming the outliers
/// against the majority; unverified when a node's fact could not be read; not_applicable with
/// fewer than two nodes or when no node has the property.
std::vector<audit::Finding> cross_node_findings(std::span<const NodeFacts> nodes);

}  // namespace cmax::cluster
