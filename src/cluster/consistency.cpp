#include "cluster/consistency.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cmax::cluster {
namespace {

using audit::Category;
using audit::Outcome;

const std::vector<ConsistencyRule>& rules() {
  static const std::vector<ConsistencyRule> kRules = {
      {"cluster.consistency.gpu_driver", "GPU driver version agrees across nodes", Category::lifecycle, {"gpu.driver.version"}},
      {"cluster.consistency.gpu_vbios", "GPU VBIOS (firmware) agrees across nodes", Category::lifecycle, {"gpu.vbios.versions"}},
      {"cluster.consistency.nic_firmware", "NIC firmware agrees across nodes", Category::networking, {"rdma.fw_versions"}},
      {"cluster.consistency.kernel", "Kernel release agrees across nodes", Category::lifecycle, {"kernel.release"}},
      {"cluster.consistency.os", "Operating system agrees across nodes", Category::lifecycle, {"os.pretty_name"}},
      {"cluster.consistency.cuda", "CUDA toolkit version agrees across nodes", Category::lifecycle, {"tool.nvcc.version", "cuda.installed"}},
      {"cluster.consistency.nccl", "NCCL version agrees across nodes", Category::networking, {"pkg.libnccl2"}},
      {"cluster.consistency.slurm", "Slurm version agrees across nodes", Category::orchestration, {"pkg.slurmd", "pkg.slurm-client"}},
      {"cluster.consistency.gpu_count", "GPU count agrees across nodes", Category::reliability, {"gpu.nvidia.count"}},
      {"cluster.consistency.nvswitch_count", "NVSwitch count agrees across nodes", Category::reliability, {"gpu.nvswitch.count"}},
      {"cluster.consistency.nic_count", "NIC count agrees across nodes", Category::networking, {"nic.mellanox.count"}},
      {"cluster.consistency.rdma_ports", "RDMA port count agrees across nodes", Category::networking, {"rdma.port_count"}},
      {"cluster.consistency.link_rates", "RDMA link rates agree across nodes", Category::networking, {"rdma.port_rates"}},
  };
  return kRules;
}

constexpr std::string_view kAbsent = "(absent)";

std::string list_nodes(const std::vector<std::string>& nodes, std::size_t max = 8) {
  if (nodes.size() <= max) return fmt::format("{}", fmt::join(nodes, ","));
  return fmt::format("{},... ({} nodes)", fmt::join(nodes.begin(), nodes.begin() + static_cast<long>(max), ","), nodes.size());
}

audit::Finding judge(const ConsistencyRule& rule, std::span<const NodeFacts> nodes) {
  audit::Finding f;
  f.check_id = std::string(rule.id);
  f.category = rule.category;
  f.severity = audit::Severity::config;
  f.title = std::string(rule.title);
  f.criterion = "Cluster nodes are uniform (one image, one firmware baseline)";
  f.description = "Compares one property across every node that answered; a single node that differs is a finding "
                  "even when it passes on its own (an older driver, a NIC that trained at a lower rate).";
  f.remediation = "Bring the outlier nodes to the majority's version or count, or explain the difference (a second "
                  "node pool) and run cmax per pool with --partition or --nodelist.";
  f.evidence_source = fmt::format("facts {} of every node", fmt::join(rule.keys, " | "));
  if (nodes.size() < 2) {
    f.outcome = Outcome::not_applicable;
    f.reason = "fewer than two nodes answered: nothing to compare";
    return f;
  }
  std::map<std::string, std::vector<std::string>> by_value;
  std::vector<std::string> unreadable;
  for (const auto& n : nodes) {
    const audit::Fact* found = nullptr;
    bool error = false;
    for (auto key : rule.keys) {
      const auto* fact = n.facts ? n.facts->find(key) : nullptr;
      if (!fact) continue;
      if (fact->status == audit::FactStatus::present) {
        found = fact;
        break;
      }
      if (fact->status == audit::FactStatus::error) error = true;
    }
    if (found) by_value[found->value].push_back(n.node);
    else if (error) unreadable.push_back(n.node);
    else by_value[std::string(kAbsent)].push_back(n.node);
  }
  if (by_value.empty() || (by_value.size() == 1 && by_value.begin()->first == kAbsent)) {
    if (!unreadable.empty()) {
      f.outcome = Outcome::unverified;
      f.reason = fmt::format("could not be read on {}", list_nodes(unreadable));
      return f;
    }
    f.outcome = Outcome::not_applicable;
    f.reason = fmt::format("no node has it ({})", fmt::join(rule.keys, ", "));
    return f;
  }
  // The majority value; ties go to the value seen on more nodes first in name order (stable).
  auto majority = std::max_element(by_value.begin(), by_value.end(),
                                   [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  f.expected = fmt::format("every node: {} (the majority, {} of {} nodes)", majority->first, majority->second.size(),
                           nodes.size() - unreadable.size());
  if (by_value.size() == 1) {
    f.outcome = unreadable.empty() ? Outcome::pass : Outcome::unverified;
    f.observed = fmt::format("{} nodes: {}", majority->second.size(), majority->first);
    f.evidence_value = majority->first;
    if (!unreadable.empty()) f.reason = fmt::format("the rest agree; could not be read on {}", list_nodes(unreadable));
    return f;
  }
  std::vector<std::string> outliers;
  for (const auto& [value, names] : by_value)
    if (&value != &majority->first) outliers.push_back(fmt::format("{} on {}", value, list_nodes(names)));
  f.outcome = Outcome::fail;
  f.observed = fmt::format("{} values: {} on {} node(s); {}", by_value.size(), majority->first, majority->second.size(),
                           fmt::join(outliers, "; "));
  f.evidence_value = f.observed;
  f.reason = fmt::format("nodes disagree: {}", fmt::join(outliers, "; "));
  if (!unreadable.empty()) f.reason += fmt::format(" (could not be read on {})", list_nodes(unreadable));
  return f;
}

}  // namespace

std::span<const ConsistencyRule> consistency_rules() { return rules(); }

std::vector<audit::Finding> cross_node_findings(std::span<const NodeFacts> nodes) {
  std::vector<audit::Finding> out;
  for (const auto& r : rules()) out.push_back(judge(r, nodes));
  return out;
}

}  // namespace cmax::cluster
