#include "sla/compute.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "sla/normalize.h"

namespace cmax::sla {
namespace {

constexpr double kEpsilonPercent = 1e-9;  // 99.5 computed as 99.49999999999 is not below 99.5

// Adds the seconds of [a, b) to row[m] for each month m it covers; a and b lie inside the window.
void add_span(std::int64_t* row, const std::vector<std::int64_t>& bounds, std::int64_t a, std::int64_t b) {
  auto m = static_cast<std::size_t>(std::upper_bound(bounds.begin(), bounds.end(), a) - bounds.begin() - 1);
  while (a < b && m + 1 < bounds.size()) {
    const std::int64_t end = std::min(b, bounds[m + 1]);
    row[m] += end - a;
    a = end;
    ++m;
  }
}

struct SweepEvent {
  std::int64_t t;
  std::int32_t member;
  std::int8_t kind;  // 0 down, 1 excluded
  std::int8_t delta;
};

// Per-node and per-rack seconds per month.
struct Seconds {
  std::size_t months = 0;
  std::vector<std::int64_t> node_down, node_excluded, rack_down;
  std::int64_t* node_down_row(std::int32_t n) { return node_down.data() + static_cast<std::size_t>(n) * months; }
  std::int64_t* node_excl_row(std::int32_t n) { return node_excluded.data() + static_cast<std::size_t>(n) * months; }
  std::int64_t* rack_row(std::int32_t r) { return rack_down.data() + static_cast<std::size_t>(r) * months; }
};

// One rack's members over the window: which of them count as down when, with the rack rule.
void sweep_rack(std::int32_t rack, const Contract& c, const NodeSpans& down, const NodeSpans& excl,
                const Window& w, Seconds& sec, std::vector<SweepEvent>& events) {
  const auto& topo = c.topology;
  const std::int32_t b = topo.rack_begin[static_cast<std::size_t>(rack)];
  const std::int32_t e = topo.rack_begin[static_cast<std::size_t>(rack) + 1];
  const std::int32_t size = e - b;
  const std::int32_t k = c.rack_down_min_nodes == kAllNodes ? size : c.rack_down_min_nodes;
  events.clear();
  for (std::int32_t n = b; n < e; ++n) {
    for (std::uint32_t i = down.begin[static_cast<std::size_t>(n)]; i < down.begin[static_cast<std::size_t>(n) + 1]; ++i) {
      events.push_back({down.spans[i].start_s, n - b, 0, 1});
      events.push_back({down.spans[i].end_s, n - b, 0, -1});
    }
    for (std::uint32_t i = excl.begin[static_cast<std::size_t>(n)]; i < excl.begin[static_cast<std::size_t>(n) + 1]; ++i) {
      const Span& s = excl.spans[i];
      add_span(sec.node_excl_row(n), w.bounds, s.start_s, s.end_s);
      events.push_back({s.start_s, n - b, 1, 1});
      events.push_back({s.end_s, n - b, 1, -1});
    }
  }
  if (events.empty()) return;
  std::sort(events.begin(), events.end(), [](const SweepEvent& x, const SweepEvent& y) { return x.t < y.t; });
  // Small racks (18 trays) are the rule; a vector keeps any size correct.
  std::vector<std::int8_t> is_down(static_cast<std::size_t>(size), 0), is_excl(static_cast<std::size_t>(size), 0);
  std::vector<std::int8_t> eff(static_cast<std::size_t>(size), 0), counted(static_cast<std::size_t>(size), 0);
  std::vector<std::int64_t> since(static_cast<std::size_t>(size), 0);
  std::vector<std::int32_t> changed;
  std::int32_t n_eff = 0;
  bool rack_down = false;
  std::int64_t rack_since = 0;
  auto recount = [&](std::int32_t m, std::int64_t t) {
    const auto mi = static_cast<std::size_t>(m);
    const std::int8_t now = (eff[mi] || (rack_down && !is_excl[mi])) ? 1 : 0;
    if (now == counted[mi]) return;
    if (now)
      since[mi] = t;
    else
      add_span(sec.node_down_row(b + m), w.bounds, since[mi], t);
    counted[mi] = now;
  };
  std::size_t i = 0;
  while (i < events.size()) {
    const std::int64_t t = events[i].t;
    changed.clear();
    for (; i < events.size() && events[i].t == t; ++i) {
      const auto mi = static_cast<std::size_t>(events[i].member);
      (events[i].kind == 0 ? is_down[mi] : is_excl[mi]) += events[i].delta;
      changed.push_back(events[i].member);
    }
    for (std::int32_t m : changed) {
      const auto mi = static_cast<std::size_t>(m);
      const std::int8_t now = (is_down[mi] > 0 && is_excl[mi] <= 0) ? 1 : 0;
      n_eff += now - eff[mi];
      eff[mi] = now;
    }
    const bool rack_now = k > 0 && n_eff >= k;
    if (rack_now != rack_down) {
      if (rack_down)
        add_span(sec.rack_row(rack), w.bounds, rack_since, t);
      else
        rack_since = t;
      rack_down = rack_now;
      for (std::int32_t m = 0; m < size; ++m) recount(m, t);
    } else {
      for (std::int32_t m : changed) recount(m, t);
    }
  }
}

}  // namespace

Result<Window> month_window(const Zone& zone, YearMonth first, YearMonth last) {
  const int span = (last.year - first.year) * 12 + (last.month - first.month) + 1;
  if (span < 1)
    return fail("choose SLA months: --to {:04}-{:02} is before --from {:04}-{:02}", last.year, last.month, first.year,
                first.month);
  if (span > 120) return fail("choose SLA months: {} months is more than 120; evaluate at most ten years at once", span);
  Window w;
  YearMonth ym = first;
  for (int i = 0; i <= span; ++i) {
    if (i < span) w.months.push_back(ym);
    w.bounds.push_back(zone.month_start(ym.year, ym.month));
    if (++ym.month == 13) {
      ym.month = 1;
      ++ym.year;
    }
  }
  return w;
}

std::optional<Window> default_window(const EventSet& events, const Zone& zone) {
  if (events.intervals.empty()) return std::nullopt;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (const RawInterval& r : events.intervals) {
    lo = std::min(lo, r.start_s);
    hi = std::max(hi, r.start_s);
    if (r.end_s != kOpenEnd) hi = std::max(hi, r.end_s - 1);
  }
  const Civil a = civil_from_seconds(lo + zone.offset_at(lo)), z = civil_from_seconds(hi + zone.offset_at(hi));
  auto w = month_window(zone, {a.year, a.month}, {z.year, z.month});
  if (!w) {  // over ten years: the last 120 months
    int y = z.year, m = z.month - 119;
    while (m < 1) {
      m += 12;
      --y;
    }
    w = month_window(zone, {y, m}, {z.year, z.month});
  }
  return std::move(*w);
}

SlaReport compute_sla(EventSet&& events, const Contract& c, const Window& window, std::int64_t as_of_s) {
  // The window cut at the as-of time: months (or their rest) after it have no time in them.
  Window w = window;
  const std::int64_t cut = std::max(as_of_s, window.from_s());
  for (auto& b : w.bounds) b = std::min(b, cut);
  SlaReport rep;
  rep.as_of_s = as_of_s;
  rep.scope = c.scope;
  rep.records = events.records;
  rep.anomalies = std::move(events.anomalies);
  const auto& topo = c.topology;
  const std::size_t months = w.months.size();
  const NodeSpans down = normalize_down(events, c, w, rep.anomalies);
  rep.down_intervals = down.spans.size();
  const NodeSpans excl = exclusion_spans(c, w);

  Seconds sec;
  sec.months = months;
  sec.node_down.assign(topo.node_names.size() * months, 0);
  sec.node_excluded.assign(topo.node_names.size() * months, 0);
  sec.rack_down.assign(topo.rack_names.size() * months, 0);
  std::vector<SweepEvent> scratch;
  for (std::size_t r = 0; r < topo.rack_names.size(); ++r)
    sweep_rack(static_cast<std::int32_t>(r), c, down, excl, w, sec, scratch);

  // Entities of the scope, and each node's entity.
  const auto nodes = static_cast<std::int32_t>(topo.node_names.size());
  std::vector<std::int32_t> entity_of(static_cast<std::size_t>(nodes));
  for (std::int32_t n = 0; n < nodes; ++n) {
    const std::int32_t rack = topo.node_rack[static_cast<std::size_t>(n)];
    entity_of[static_cast<std::size_t>(n)] =
        c.scope == Scope::node ? n : c.scope == Scope::rack ? rack : topo.rack_site[static_cast<std::size_t>(rack)];
  }
  rep.entity_names = c.scope == Scope::node ? topo.node_names : c.scope == Scope::rack ? topo.rack_names : topo.site_names;
  const std::size_t entities = rep.entity_names.size();
  std::vector<std::int32_t> streak(entities, 0);
  std::vector<EntityMonth> acc(entities);
  std::vector<std::int32_t> ent_nodes(entities, 0);
  for (std::int32_t n = 0; n < nodes; ++n) ++ent_nodes[static_cast<std::size_t>(entity_of[static_cast<std::size_t>(n)])];

  for (std::size_t m = 0; m < months; ++m) {
    MonthReport mr;
    mr.month = w.months[m];
    mr.start_s = w.bounds[m];
    mr.end_s = w.bounds[m + 1];
    mr.to_date = window.bounds[m + 1] > as_of_s;
    const std::int64_t len = mr.end_s - mr.start_s;
    for (std::size_t e = 0; e < entities; ++e) acc[e] = EntityMonth{static_cast<std::int32_t>(e)};
    for (std::int32_t n = 0; n < nodes; ++n) {
      auto& a = acc[static_cast<std::size_t>(entity_of[static_cast<std::size_t>(n)])];
      const std::int64_t g = topo.node_gpus[static_cast<std::size_t>(n)];
      a.gpus += static_cast<std::int32_t>(g);
      a.gpu_s += g * len;
      a.excluded_gpu_s += g * sec.node_excl_row(n)[m];
      a.down_gpu_s += g * sec.node_down_row(n)[m];
    }
    for (std::size_t r = 0; r < topo.rack_names.size(); ++r) {
      const std::int64_t s = sec.rack_row(static_cast<std::int32_t>(r))[m];
      if (s == 0) continue;
      if (c.scope == Scope::rack)
        acc[r].rack_down_s += s;
      else if (c.scope == Scope::site)
        acc[static_cast<std::size_t>(topo.rack_site[r])].rack_down_s += s;
      else
        for (std::int32_t n = topo.rack_begin[r]; n < topo.rack_begin[r + 1]; ++n) acc[static_cast<std::size_t>(n)].rack_down_s += s;
    }
    mr.entities = static_cast<std::int32_t>(entities);
    for (std::size_t e = 0; e < entities; ++e) {
      EntityMonth& a = acc[e];
      const std::int64_t owed = a.gpu_s - a.excluded_gpu_s;
      a.availability_percent = owed > 0 ? 100.0 * (1.0 - static_cast<double>(a.down_gpu_s) / static_cast<double>(owed)) : 100.0;
      for (const CreditTier& t : c.credit_tiers)
        if (a.availability_percent < t.below_percent - kEpsilonPercent) a.credit_percent = std::max(a.credit_percent, t.credit_percent);
      a.fee = c.fee_per_gpu_hour > 0 ? c.fee_per_gpu_hour * static_cast<double>(a.gpu_s) / 3600.0
                                     : c.fee_per_node_month * ent_nodes[e];
      a.credit = a.fee * a.credit_percent / 100.0;
      a.below_target = a.availability_percent < c.target_percent - kEpsilonPercent;
      mr.gpu_s += a.gpu_s;
      mr.excluded_gpu_s += a.excluded_gpu_s;
      mr.down_gpu_s += a.down_gpu_s;
      mr.fee += a.fee;
      mr.credit += a.credit;
      if (a.down_gpu_s > 0) ++mr.with_downtime;
      if (a.below_target) ++mr.below_target;
      if (a.credit > 0 || a.credit_percent > 0) ++mr.credited;
      if (a.down_gpu_s > 0 || a.excluded_gpu_s > 0) mr.listed.push_back(a);
      // Cancellation rights.
      if (c.cancel_below_percent && a.availability_percent < *c.cancel_below_percent - kEpsilonPercent)
        rep.cancellations.push_back({a.entity, m, "below_percent",
                                     fmt::format("availability {:.4f}% is below {}%", a.availability_percent,
                                                 *c.cancel_below_percent)});
      streak[e] = a.below_target ? streak[e] + 1 : 0;
      if (c.cancel_consecutive_months > 0 && streak[e] == c.cancel_consecutive_months)
        rep.cancellations.push_back({a.entity, m, "consecutive_months_below_target",
                                     fmt::format("{} months in a row below the {}% target", streak[e], c.target_percent)});
    }
    const std::int64_t owed = mr.gpu_s - mr.excluded_gpu_s;
    mr.availability_percent = owed > 0 ? 100.0 * (1.0 - static_cast<double>(mr.down_gpu_s) / static_cast<double>(owed)) : 100.0;
    rep.credit_total += mr.credit;
    rep.months.push_back(std::move(mr));
  }
  return rep;
}

}  // namespace cmax::sla
