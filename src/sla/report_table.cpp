#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "sla/report.h"

namespace cmax::sla {

std::string render_table(const SlaReport& rep, const Contract& c, const Window& w, const InputInfo& in,
                         std::size_t max_rows) {
  std::string out;
  auto line = [&out](const std::string& s) { out += s + "\n"; };
  line(fmt::format("SLA {} ({} scope, {}, target {}%), {} .. {}", c.name.empty() ? "(unnamed)" : c.name,
                   scope_name(c.scope), c.zone.name(), c.target_percent, c.zone.format_local(w.from_s()),
                   c.zone.format_local(w.to_s())));
  line(fmt::format("input: {} {} ({} records, {} down intervals in the window)", in.format, in.path, rep.records,
                   rep.down_intervals));
  if (rep.as_of_s != kOpenEnd && rep.as_of_s < w.to_s())
    line(fmt::format("as of {}: nothing later is counted; a month still running is counted to date",
                     c.zone.format_local(rep.as_of_s)));
  if (!in.drills.empty() || !in.drills_elsewhere.empty()) {
    line(fmt::format("fault drills ({}), excluded from downtime and from time owed:", in.drills.size() + in.drills_elsewhere.size()));
    for (const auto* list : {&in.drills, &in.drills_elsewhere})
      for (const DrillWindow& d : *list)
        line(fmt::format("  drill {} on {}: {} .. {}{}{} ({})", d.drill, d.node, c.zone.format_local(d.start_s),
                         d.end_s == kOpenEnd ? "still out" : c.zone.format_local(d.end_s),
                         d.marker_end_s == kOpenEnd
                             ? std::string()
                             : fmt::format(" (the resume the events show; the drill itself ended {} s before)",
                                           d.end_s - d.marker_end_s),
                         list == &in.drills ? "" : ", a node the contract does not name", d.source));
    if (in.closed_by_drills > 0)
      line(fmt::format("  {} open drain(s) ended at the resume a drill record gives", in.closed_by_drills));
  }
  for (const MonthReport& m : rep.months) {
    line("");
    line(fmt::format("{:04}-{:02}{}: availability {:.4f}%, down {:.1f} of {:.1f} GPU-h ({:.1f} excluded), {} of {} "
                     "below target, credit {:.2f} {}",
                     m.month.year, m.month.month, m.to_date ? " (to date)" : "", m.availability_percent, m.down_gpu_s / 3600.0, m.gpu_s / 3600.0,
                     m.excluded_gpu_s / 3600.0, m.below_target, m.entities, m.credit, c.currency));
    if (m.listed.empty()) continue;
    std::vector<const EntityMonth*> rows;
    for (const auto& e : m.listed) rows.push_back(&e);
    std::sort(rows.begin(), rows.end(), [](const EntityMonth* a, const EntityMonth* b) {
      return a->availability_percent != b->availability_percent ? a->availability_percent < b->availability_percent
                                                                 : a->entity < b->entity;
    });
    line(fmt::format("  {:<24} {:>6} {:>12} {:>12} {:>10} {:>10} {:>7} {:>12}", "name", "gpus", "down GPU-h",
                     "excl GPU-h", "rack-dn h", "avail %", "credit%", "credit"));
    for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
      const EntityMonth& e = *rows[i];
      line(fmt::format("  {:<24} {:>6} {:>12.2f} {:>12.2f} {:>10.2f} {:>10.4f} {:>7g} {:>12.2f}",
                       rep.entity_names[static_cast<std::size_t>(e.entity)], e.gpus, e.down_gpu_s / 3600.0,
                       e.excluded_gpu_s / 3600.0, e.rack_down_s / 3600.0, e.availability_percent, e.credit_percent,
                       e.credit));
    }
    if (rows.size() > max_rows) line(fmt::format("  ... {} more (--json lists all)", rows.size() - max_rows));
  }
  line("");
  const Anomalies& a = rep.anomalies;
  const std::pair<const char*, const Tally*> tallies[] = {
      {"malformed", &a.malformed},       {"open-ended", &a.open_ended},   {"inverted", &a.inverted},
      {"duplicated", &a.duplicated},     {"overlapping", &a.overlapping}, {"out of order", &a.out_of_order},
      {"unknown node", &a.unknown_node}, {"cluster event", &a.cluster_events}, {"unmatched resume", &a.unmatched}};
  for (const auto& [name, t] : tallies) {
    if (t->count == 0) continue;
    line(fmt::format("input: {} {}{}", t->count, name, t->examples.empty() ? "" : ", e.g. " + t->examples.front()));
  }
  for (const CancellationRight& r : rep.cancellations)
    line(fmt::format("cancellation right: {} in {:04}-{:02}: {}", rep.entity_names[static_cast<std::size_t>(r.entity)],
                     rep.months[r.month].month.year, rep.months[r.month].month.month, r.detail));
  line(fmt::format("credit owed over the window: {:.2f} {}", rep.credit_total, c.currency));
  return out;
}

}  // namespace cmax::sla
