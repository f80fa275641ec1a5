#pragma once
// What the event parsers produce: per-node intervals in some state, names interned, plus counts and
// examples of what looked wrong. Intervals are kept compact (24 bytes) for tens of millions of rows.

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::sla {

/// The end of an interval that had none (still open when the source was written).
inline constexpr std::int64_t kOpenEnd = std::numeric_limits<std::int64_t>::max();

/// One node in one state over [start_s, end_s), UTC seconds; end_s == kOpenEnd when open.
struct RawInterval {
  std::int64_t start_s = 0;
  std::int64_t end_s = 0;
  std::int32_t node = 0;   ///< index into EventSet::node_names
  std::int32_t state = 0;  ///< index into EventSet::state_names
};

/// A count of one kind of oddity with its first few examples (for the report, not for logic).
struct Tally {
  static constexpr std::size_t kMaxExamples = 5;
  std::uint64_t count = 0;
  std::vector<std::string> examples;
  void add(std::string example) {
    ++count;
    if (examples.size() < kMaxExamples) examples.push_back(std::move(example));
  }
  /// Counts without building an example string once the examples are full.
  bool wants_example() const { return examples.size() < kMaxExamples; }
  /// Adds the count and examples of `later` (from input after this tally's), first examples kept.
  void absorb(Tally&& later);
};

/// Everything odd in the input, reported rather than failed on.
struct Anomalies {
  Tally malformed;       ///< lines or records that could not be read (skipped)
  Tally open_ended;      ///< no end: down until the end of the evaluation window
  Tally inverted;        ///< end before start (skipped)
  Tally duplicated;      ///< the same node, start and end as an earlier interval (dropped)
  Tally overlapping;     ///< overlaps an earlier down interval of the node (merged)
  Tally out_of_order;    ///< starts before an earlier record of the same node (sorted)
  Tally unknown_node;    ///< a node the contract's topology does not name (ignored)
  Tally cluster_events;  ///< sacctmgr events without a node (cluster-wide; ignored)
  Tally unmatched;       ///< cmaxd: a resume without a drain before it (ignored)
  std::uint64_t up_intervals = 0;  ///< intervals in a state the contract does not count as down
  /// Adds the tallies of `later` (from input after these anomalies'), as one pass would count them.
  void absorb(Anomalies&& later);
};

/// The parsed input: node and state names interned, intervals in input order.
class EventSet {
 public:
  std::vector<std::string> node_names;
  std::vector<std::string> state_names;
  std::vector<RawInterval> intervals;
  Anomalies anomalies;
  std::uint64_t records = 0;  ///< rows or records read, good or bad

  /// Index of `name`, adding it when new.
  std::int32_t node(std::string_view name) { return node(name, node_hash(name)); }
  /// node(name) with `hash` == node_hash(name) already computed (see prefetch_node).
  std::int32_t node(std::string_view name, std::uint64_t hash);
  /// The hash the name table files `name` under.
  static std::uint64_t node_hash(std::string_view name);
  /// Starts loading the table slot of `hash` into the cache, so that a node(name, hash) a row
  /// later does not wait on memory. A hint: it changes no result.
  void prefetch_node(std::uint64_t hash) const {
    // Unconditional: g++ 12 drops a prefetch under a branch. An empty table prefetches null.
    __builtin_prefetch(slots_.data() + (hash & mask_));
  }
  /// Index of `state`, lower-cased, adding it when new.
  std::int32_t state(std::string_view state);

 private:
  // Open addressing over node indices: tens of millions of lookups over ~1e5 names in time order,
  // where std::unordered_map's node chasing cost a second per ten million rows. A slot holds its
  // name's length and first 27 bytes, so that a lookup reads one cache line, not the slot and
  // then the name; only names longer than that are compared with node_names as well.
  // [0]: min(size, 255); then the name's first 27 bytes, zero-padded.
  using NameKey = std::array<char, 28>;
  struct alignas(32) Slot {
    std::int32_t index = -1;  // into node_names; -1 empty
    NameKey key{};
  };
  static NameKey key_of(std::string_view name);
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;  // slots_.size() - 1, or 0 while empty
  std::int32_t last_node_index_ = -1;
  NameKey last_key_{};
  void grow();
};

/// Appends `later`, parsed from input that follows `into`'s, to `into`: names re-interned and
/// intervals re-indexed, records and anomalies summed. The result equals one parse of both inputs
/// in a row (same names, indices, intervals, counts and examples).
void append_events(EventSet& into, EventSet&& later);

}  // namespace cmax::sla
