#pragma once
// The SLA contract file ("cmax.sla-contract/1", docs/sla.md): what is measured (scope), the fleet
// (sites -> racks -> nodes with their GPUs), when a rack counts as down, what is excluded, the
// month's time zone, the availability target, the credit schedule and the cancellation rights.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "sla/zone.h"

namespace cmax::sla {

/// The unit availability, credits and cancellation rights are computed for.
enum class Scope { node, rack, site };
std::string_view scope_name(Scope s);

/// The fleet. Nodes are numbered rack by rack, so a rack's members are one index range.
struct Topology {
  std::vector<std::string> node_names;
  std::vector<std::int32_t> node_gpus;
  std::vector<std::int32_t> node_rack;
  std::vector<std::string> rack_names;
  std::vector<std::int32_t> rack_site;
  std::vector<std::int32_t> rack_begin;  ///< rack r holds nodes [rack_begin[r], rack_begin[r + 1])
  std::vector<std::string> site_names;

  /// The index of node `name`, or -1.
  std::int32_t find_node(std::string_view name) const;
  std::unordered_map<std::string, std::int32_t> node_index;
};

/// A span of time taken out of the accounting for some of the fleet.
struct Exclusion {
  /// drill: added at run time for a fault drill's window (sla/drills.h), never from a contract file.
  enum class Kind { maintenance, force_majeure, drill };
  enum class Target { all, site, rack, node };
  Kind kind = Kind::maintenance;
  Target target = Target::all;
  std::vector<std::int32_t> indices;  ///< sites, racks or nodes, per target; empty for all
  std::int64_t start_s = 0, end_s = 0;  ///< UTC, [start, end)
  std::string reason;                   ///< required for force majeure
};

/// "Availability below `below_percent` earns `credit_percent` of the month's fee."
struct CreditTier {
  double below_percent = 0;
  double credit_percent = 0;
};

inline constexpr std::int32_t kAllNodes = -1;

struct Contract {
  std::string name;
  Scope scope = Scope::rack;
  Zone zone = Zone::utc();
  double target_percent = 99.5;
  /// A rack counts as down (all its GPUs) while at least this many of its nodes are down; 0: never;
  /// kAllNodes: while all of them are.
  std::int32_t rack_down_min_nodes = 0;
  std::vector<std::string> down_states;  ///< lower-case Slurm-style states that count as down
  Topology topology;
  std::vector<Exclusion> exclusions;
  std::vector<CreditTier> credit_tiers;  ///< sorted by below_percent, highest first
  std::string currency = "USD";
  double fee_per_gpu_hour = 0;    ///< the month's fee per GPU-hour of the month; or
  double fee_per_node_month = 0;  ///< per node per month
  std::optional<double> cancel_below_percent;  ///< a month below this gives a cancellation right
  std::int32_t cancel_consecutive_months = 0;  ///< so do this many months in a row below target; 0: no
  std::int32_t node_count() const { return static_cast<std::int32_t>(topology.node_names.size()); }
};

/// Parses a contract. Every malformed field is an error naming the field and what to write.
/// Loads the contract's time zone (Zone::load: call at start-up).
Result<Contract> parse_contract(std::string_view json_text);

/// True when a state string ("IDLE+DRAIN", "down*") counts as down under `down_states`: any
/// '+'-separated part, lower-cased and without Slurm's trailing flag characters (* ~ # ! % $ @ ^ -),
/// is in the list.
bool is_down_state(std::string_view state, const std::vector<std::string>& down_states);

}  // namespace cmax::sla
