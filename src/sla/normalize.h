#pragma once
// From parsed intervals to per-node down spans: state classification, topology lookup, sorting,
// merging of duplicates and overlaps, clipping to the window; every oddity counted in Anomalies.

#include <cstdint>
#include <vector>

#include "sla/compute.h"

namespace cmax::sla {

/// [start_s, end_s), UTC seconds.
struct Span {
  std::int64_t start_s = 0, end_s = 0;
  friend bool operator==(const Span&, const Span&) = default;
};

/// Spans per node, compressed: node n's are spans[begin[n]] .. spans[begin[n + 1]], sorted,
/// disjoint and not touching.
struct NodeSpans {
  std::vector<std::uint32_t> begin;
  std::vector<Span> spans;
  std::size_t count(std::int32_t node) const { return begin[node + 1] - begin[node]; }
};

/// The down spans of every topology node inside `window`. Releases `events.intervals`; adds to
/// `anomalies` (which may be events.anomalies).
NodeSpans normalize_down(EventSet& events, const Contract& contract, const Window& window, Anomalies& anomalies);

/// The excluded spans of every topology node inside `window` (exclusions merged per node).
NodeSpans exclusion_spans(const Contract& contract, const Window& window);

}  // namespace cmax::sla
