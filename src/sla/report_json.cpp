#include <cmath>

#include <nlohmann/json.hpp>

#include "sla/report.h"

namespace cmax::sla {
namespace {

using ordered = nlohmann::ordered_json;

double hours(std::int64_t s) { return static_cast<double>(s) / 3600.0; }
// Rounded so the document is stable across platforms and easy to read.
double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

std::string month_name(YearMonth ym) { return fmt::format("{:04}-{:02}", ym.year, ym.month); }

ordered tally(const Tally& t) { return ordered{{"count", t.count}, {"examples", t.examples}}; }

}  // namespace

std::string render_json(const SlaReport& rep, const Contract& c, const Window& w, const InputInfo& in) {
  ordered doc;
  doc["schema"] = "cmax.sla/1";
  ordered rack_rule = c.rack_down_min_nodes == kAllNodes ? ordered("all")
                      : c.rack_down_min_nodes == 0       ? ordered(nullptr)
                                                         : ordered(c.rack_down_min_nodes);
  doc["contract"] = {{"name", c.name},
                     {"scope", std::string(scope_name(c.scope))},
                     {"time_zone", c.zone.name()},
                     {"availability_target_percent", c.target_percent},
                     {"rack_down_min_nodes", rack_rule},
                     {"nodes", c.topology.node_names.size()},
                     {"racks", c.topology.rack_names.size()},
                     {"sites", c.topology.site_names.size()},
                     {"exclusions", c.exclusions.size()},
                     {"currency", c.currency}};
  doc["window"] = {{"from", c.zone.format_local(w.from_s())},
                   {"to", c.zone.format_local(w.to_s())},
                   {"months", w.months.size()},
                   {"source", in.window_from_flags ? "flags" : "events"}};
  const Anomalies& a = rep.anomalies;
  doc["input"] = {{"format", in.format},
                  {"path", in.path},
                  {"records", rep.records},
                  {"down_intervals", rep.down_intervals},
                  {"up_intervals", a.up_intervals},
                  {"open_ended_until", c.zone.format_local(w.to_s())},
                  {"anomalies",
                   {{"malformed", tally(a.malformed)},
                    {"open_ended", tally(a.open_ended)},
                    {"inverted", tally(a.inverted)},
                    {"duplicated", tally(a.duplicated)},
                    {"overlapping", tally(a.overlapping)},
                    {"out_of_order", tally(a.out_of_order)},
                    {"unknown_node", tally(a.unknown_node)},
                    {"cluster_events", tally(a.cluster_events)},
                    {"unmatched_resume", tally(a.unmatched)}}}};
  ordered months = ordered::array();
  for (const MonthReport& m : rep.months) {
    ordered listed = ordered::array();
    for (const EntityMonth& e : m.listed)
      listed.push_back({{"name", rep.entity_names[static_cast<std::size_t>(e.entity)]},
                        {"gpus", e.gpus},
                        {"gpu_hours", round_to(hours(e.gpu_s), 4)},
                        {"excluded_gpu_hours", round_to(hours(e.excluded_gpu_s), 4)},
                        {"down_gpu_hours", round_to(hours(e.down_gpu_s), 4)},
                        {"rack_down_hours", round_to(hours(e.rack_down_s), 4)},
                        {"availability_percent", round_to(e.availability_percent, 6)},
                        {"below_target", e.below_target},
                        {"credit_percent", e.credit_percent},
                        {"fee", round_to(e.fee, 2)},
                        {"credit", round_to(e.credit, 2)}});
    months.push_back({{"month", month_name(m.month)},
                      {"start", c.zone.format_local(m.start_s)},
                      {"end", c.zone.format_local(m.end_s)},
                      {"hours", round_to(hours(m.end_s - m.start_s), 4)},
                      {"totals",
                       {{"entities", m.entities},
                        {"with_downtime", m.with_downtime},
                        {"below_target", m.below_target},
                        {"credited", m.credited},
                        {"gpu_hours", round_to(hours(m.gpu_s), 4)},
                        {"excluded_gpu_hours", round_to(hours(m.excluded_gpu_s), 4)},
                        {"down_gpu_hours", round_to(hours(m.down_gpu_s), 4)},
                        {"availability_percent", round_to(m.availability_percent, 6)},
                        {"fee", round_to(m.fee, 2)},
                        {"credit", round_to(m.credit, 2)}}},
                      {"entities", listed}});
  }
  doc["months"] = months;
  ordered cancel = ordered::array();
  for (const CancellationRight& r : rep.cancellations)
    cancel.push_back({{"name", rep.entity_names[static_cast<std::size_t>(r.entity)]},
                      {"month", month_name(rep.months[r.month].month)},
                      {"rule", r.rule},
                      {"detail", r.detail}});
  doc["cancellation_rights"] = cancel;
  doc["summary"] = {{"credit_total", round_to(rep.credit_total, 2)},
                    {"currency", c.currency},
                    {"cancellation_rights", rep.cancellations.size()}};
  return doc.dump(2) + "\n";
}

}  // namespace cmax::sla
