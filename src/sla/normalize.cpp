#include "sla/normalize.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "sla/huge_pages.h"

namespace cmax::sla {
namespace {

std::string show(const Zone& zone, std::int64_t t) { return t == kOpenEnd ? "open" : zone.format_local(t); }

// Sorts each node's spans and merges them in place, dropping what falls outside [from, to);
// counts duplicates and overlaps when `anomalies` is given.
void merge_per_node(NodeSpans& ns, std::int64_t from, std::int64_t to, Anomalies* anomalies,
                    const Contract& contract) {
  std::uint32_t write = 0;
  const std::size_t nodes = ns.begin.size() - 1;
  for (std::size_t n = 0; n < nodes; ++n) {
    const std::uint32_t b = ns.begin[n], e = ns.begin[n + 1];
    ns.begin[n] = write;
    if (b == e) continue;
    std::sort(ns.spans.begin() + b, ns.spans.begin() + e, [](const Span& x, const Span& y) {
      return x.start_s != y.start_s ? x.start_s < y.start_s : x.end_s < y.end_s;
    });
    Span cur = ns.spans[b], prev = ns.spans[b];
    auto flush = [&](const Span& s) {
      const std::int64_t a = std::max(s.start_s, from), z = std::min(s.end_s, to);
      if (a < z) ns.spans[write++] = Span{a, z};
    };
    for (std::uint32_t i = b + 1; i < e; ++i) {
      const Span s = ns.spans[i];
      if (s == prev) {
        if (anomalies) {
          if (anomalies->duplicated.wants_example())
            anomalies->duplicated.add(fmt::format("{}: {} .. {}", contract.topology.node_names[n],
                                                  show(contract.zone, s.start_s), show(contract.zone, s.end_s)));
          else
            ++anomalies->duplicated.count;
        }
        continue;
      }
      prev = s;
      if (s.start_s < cur.end_s) {
        if (anomalies) {
          if (anomalies->overlapping.wants_example())
            anomalies->overlapping.add(fmt::format(
                "{}: {} .. {} overlaps {} .. {}", contract.topology.node_names[n], show(contract.zone, s.start_s),
                show(contract.zone, s.end_s), show(contract.zone, cur.start_s), show(contract.zone, cur.end_s)));
          else
            ++anomalies->overlapping.count;
        }
        cur.end_s = std::max(cur.end_s, s.end_s);
      } else if (s.start_s == cur.end_s) {
        cur.end_s = s.end_s;  // back to back: one outage
      } else {
        flush(cur);
        cur = s;
      }
    }
    flush(cur);
  }
  ns.begin.back() = write;
  ns.spans.resize(write);
}

}  // namespace

NodeSpans normalize_down(EventSet& events, const Contract& contract, const Window& window, Anomalies& an) {
  const auto& topo = contract.topology;
  const std::int32_t nodes = contract.node_count();
  const std::int64_t from = window.from_s(), to = window.to_s();
  std::vector<std::int32_t> map(events.node_names.size());
  for (std::size_t i = 0; i < map.size(); ++i) map[i] = topo.find_node(events.node_names[i]);
  std::vector<char> down(events.state_names.size());
  for (std::size_t i = 0; i < down.size(); ++i) down[i] = is_down_state(events.state_names[i], contract.down_states);
  std::vector<char> unknown_seen(events.node_names.size(), 0);
  std::vector<std::int64_t> last_start(static_cast<std::size_t>(nodes), std::numeric_limits<std::int64_t>::min());

  NodeSpans ns;
  ns.begin.assign(static_cast<std::size_t>(nodes) + 1, 0);
  // Pass 1: classify, count anomalies, count spans per node.
  for (const RawInterval& r : events.intervals) {
    if (!down[static_cast<std::size_t>(r.state)]) {
      ++an.up_intervals;
      continue;
    }
    const std::int32_t node = map[static_cast<std::size_t>(r.node)];
    if (node < 0) {
      if (!unknown_seen[static_cast<std::size_t>(r.node)]) {
        unknown_seen[static_cast<std::size_t>(r.node)] = 1;
        if (an.unknown_node.wants_example()) {
          an.unknown_node.add(events.node_names[static_cast<std::size_t>(r.node)]);
          continue;
        }
      }
      ++an.unknown_node.count;
      continue;
    }
    if (r.end_s < r.start_s) {
      an.inverted.add(fmt::format("{}: ends {} before it starts {}", topo.node_names[static_cast<std::size_t>(node)],
                                  show(contract.zone, r.end_s), show(contract.zone, r.start_s)));
      continue;
    }
    auto& last = last_start[static_cast<std::size_t>(node)];
    if (r.start_s < last) {
      if (an.out_of_order.wants_example())
        an.out_of_order.add(fmt::format("{}: {} after a record starting {}",
                                        topo.node_names[static_cast<std::size_t>(node)],
                                        show(contract.zone, r.start_s), show(contract.zone, last)));
      else
        ++an.out_of_order.count;
    } else {
      last = r.start_s;
    }
    if (r.end_s == kOpenEnd)
      an.open_ended.add(fmt::format("{}: down since {}, still open: counted to {}",
                                    topo.node_names[static_cast<std::size_t>(node)], show(contract.zone, r.start_s),
                                    show(contract.zone, to)));
    if (r.end_s <= from || r.start_s >= to || r.end_s == r.start_s) continue;
    ++ns.begin[static_cast<std::size_t>(node) + 1];
  }
  for (std::size_t n = 1; n < ns.begin.size(); ++n) ns.begin[n] += ns.begin[n - 1];
  reserve_huge(ns.spans, ns.begin.back());
  ns.spans.resize(ns.begin.back());
  // Pass 2: scatter (same filter, no counting).
  std::vector<std::uint32_t> fill(ns.begin.begin(), ns.begin.end() - 1);
  for (const RawInterval& r : events.intervals) {
    if (!down[static_cast<std::size_t>(r.state)]) continue;
    const std::int32_t node = map[static_cast<std::size_t>(r.node)];
    if (node < 0 || r.end_s < r.start_s || r.end_s <= from || r.start_s >= to || r.end_s == r.start_s) continue;
    ns.spans[fill[static_cast<std::size_t>(node)]++] = Span{r.start_s, r.end_s};
  }
  std::vector<RawInterval>().swap(events.intervals);
  merge_per_node(ns, from, to, &an, contract);
  return ns;
}

NodeSpans exclusion_spans(const Contract& contract, const Window& window) {
  const auto& topo = contract.topology;
  const auto nodes = static_cast<std::size_t>(contract.node_count());
  std::vector<std::pair<std::int32_t, Span>> items;
  auto add_rack = [&](std::int32_t r, const Span& s) {
    for (std::int32_t n = topo.rack_begin[static_cast<std::size_t>(r)]; n < topo.rack_begin[static_cast<std::size_t>(r) + 1]; ++n)
      items.push_back({n, s});
  };
  for (const Exclusion& x : contract.exclusions) {
    const Span s{std::max(x.start_s, window.from_s()), std::min(x.end_s, window.to_s())};
    if (s.start_s >= s.end_s) continue;
    switch (x.target) {
      case Exclusion::Target::all:
        for (std::size_t n = 0; n < nodes; ++n) items.push_back({static_cast<std::int32_t>(n), s});
        break;
      case Exclusion::Target::site:
        for (std::int32_t site : x.indices)
          for (std::size_t r = 0; r < topo.rack_names.size(); ++r)
            if (topo.rack_site[r] == site) add_rack(static_cast<std::int32_t>(r), s);
        break;
      case Exclusion::Target::rack:
        for (std::int32_t r : x.indices) add_rack(r, s);
        break;
      case Exclusion::Target::node:
        for (std::int32_t n : x.indices) items.push_back({n, s});
        break;
    }
  }
  NodeSpans ns;
  ns.begin.assign(nodes + 1, 0);
  for (const auto& it : items) ++ns.begin[static_cast<std::size_t>(it.first) + 1];
  for (std::size_t n = 1; n < ns.begin.size(); ++n) ns.begin[n] += ns.begin[n - 1];
  ns.spans.resize(items.size());
  std::vector<std::uint32_t> fill(ns.begin.begin(), ns.begin.end() - 1);
  for (const auto& it : items) ns.spans[fill[static_cast<std::size_t>(it.first)]++] = it.second;
  merge_per_node(ns, window.from_s(), window.to_s(), nullptr, contract);
  return ns;
}

}  // namespace cmax::sla
