#include <algorithm>
#include <fmt/format.h>

#include <cmath>

#include "sla/huge_pages.h"
#include "sla/json_out.h"
#include "sla/report.h"

namespace cmax::sla {
namespace {

double hours(std::int64_t s) { return static_cast<double>(s) / 3600.0; }
// Rounded so the document is stable across platforms and easy to read.
double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

std::string month_name(YearMonth ym) { return fmt::format("{:04}-{:02}", ym.year, ym.month); }

void tally(JsonOut& j, std::string_view key, const Tally& t) {
  j.key(key);
  j.begin_object();
  j.key("count");
  j.value(t.count);
  j.key("examples");
  j.begin_array();
  for (const std::string& e : t.examples) j.value(e);
  j.end_array();
  j.end_object();
}

// Entity names as JSON strings, each escaped once however many months list it.
class QuotedNames {
 public:
  explicit QuotedNames(const std::vector<std::string>& names)
      : names_(names), quoted_(names.size()) {}
  const std::string& operator[](std::int32_t i) {
    std::string& q = quoted_[static_cast<std::size_t>(i)];
    if (q.empty()) q = JsonOut::quote(names_[static_cast<std::size_t>(i)]);
    return q;
  }

 private:
  const std::vector<std::string>& names_;
  std::vector<std::string> quoted_;
};

void write_contract(JsonOut& j, const Contract& c) {
  j.key("contract");
  j.begin_object();
  j.key("name");
  j.value(c.name);
  j.key("scope");
  j.value(scope_name(c.scope));
  j.key("time_zone");
  j.value(c.zone.name());
  j.key("availability_target_percent");
  j.value(c.target_percent);
  j.key("rack_down_min_nodes");
  if (c.rack_down_min_nodes == kAllNodes)
    j.value("all");
  else if (c.rack_down_min_nodes == 0)
    j.null();
  else
    j.value(c.rack_down_min_nodes);
  j.key("nodes");
  j.value(std::uint64_t{c.topology.node_names.size()});
  j.key("racks");
  j.value(std::uint64_t{c.topology.rack_names.size()});
  j.key("sites");
  j.value(std::uint64_t{c.topology.site_names.size()});
  j.key("exclusions");
  j.value(std::uint64_t{c.exclusions.size()});
  j.key("currency");
  j.value(c.currency);
  j.end_object();
}

void write_window(JsonOut& j, const SlaReport& rep, const Contract& c, const Window& w,
                  const InputInfo& in) {
  j.key("window");
  j.begin_object();
  j.key("from");
  j.value(c.zone.format_local(w.from_s()));
  j.key("to");
  j.value(c.zone.format_local(w.to_s()));
  j.key("months");
  j.value(std::uint64_t{w.months.size()});
  j.key("source");
  j.value(in.window_from_flags ? "flags" : "events");
  j.key("as_of");
  if (rep.as_of_s == kOpenEnd)
    j.null();
  else
    j.value(c.zone.format_local(rep.as_of_s));
  j.end_object();
}

void write_drill(JsonOut& j, const Contract& c, const DrillWindow& d, bool excluded) {
  j.begin_object();
  j.key("node");
  j.value(d.node);
  j.key("drill");
  j.value(d.drill);
  j.key("source");
  j.value(d.source);
  j.key("start");
  j.value(c.zone.format_local(d.start_s));
  j.key("end");
  if (d.end_s == kOpenEnd)
    j.null();
  else
    j.value(c.zone.format_local(d.end_s));
  // The drill's own end (cleanup's resume) when "end" was moved on to the resume the events show.
  j.key("drill_end");
  if (d.marker_end_s == kOpenEnd)
    j.null();
  else
    j.value(c.zone.format_local(d.marker_end_s));
  j.key("excluded");
  j.value(excluded);
  j.end_object();
}

// Fault drills: taken out on purpose, so neither downtime nor time owed.
void write_drills(JsonOut& j, const Contract& c, const InputInfo& in) {
  j.key("drills");
  j.begin_array();
  for (const auto* list : {&in.drills, &in.drills_elsewhere})
    for (const DrillWindow& d : *list) write_drill(j, c, d, list == &in.drills);
  j.end_array();
}

void write_input(JsonOut& j, const SlaReport& rep, const Contract& c, const Window& w,
                 const InputInfo& in) {
  const Anomalies& a = rep.anomalies;
  j.key("input");
  j.begin_object();
  j.key("format");
  j.value(in.format);
  j.key("path");
  j.value(in.path);
  j.key("records");
  j.value(rep.records);
  j.key("down_intervals");
  j.value(rep.down_intervals);
  j.key("up_intervals");
  j.value(a.up_intervals);
  j.key("open_ended_until");
  j.value(c.zone.format_local(std::min(w.to_s(), rep.as_of_s)));
  j.key("closed_by_drill_records");
  j.value(std::uint64_t{in.closed_by_drills});
  j.key("anomalies");
  j.begin_object();
  tally(j, "malformed", a.malformed);
  tally(j, "open_ended", a.open_ended);
  tally(j, "inverted", a.inverted);
  tally(j, "duplicated", a.duplicated);
  tally(j, "overlapping", a.overlapping);
  tally(j, "out_of_order", a.out_of_order);
  tally(j, "unknown_node", a.unknown_node);
  tally(j, "cluster_events", a.cluster_events);
  tally(j, "unmatched_resume", a.unmatched);
  j.end_object();
  j.end_object();
}

void write_month_totals(JsonOut& j, const MonthReport& m) {
  j.key("totals");
  j.begin_object();
  j.key("entities");
  j.value(m.entities);
  j.key("with_downtime");
  j.value(m.with_downtime);
  j.key("below_target");
  j.value(m.below_target);
  j.key("credited");
  j.value(m.credited);
  j.key("gpu_hours");
  j.value(round_to(hours(m.gpu_s), 4));
  j.key("excluded_gpu_hours");
  j.value(round_to(hours(m.excluded_gpu_s), 4));
  j.key("down_gpu_hours");
  j.value(round_to(hours(m.down_gpu_s), 4));
  j.key("availability_percent");
  j.value(round_to(m.availability_percent, 6));
  j.key("fee");
  j.value(round_to(m.fee, 2));
  j.key("credit");
  j.value(round_to(m.credit, 2));
  j.end_object();
}

void write_entity_month(JsonOut& j, QuotedNames& names, const EntityMonth& e) {
  j.begin_object();
  j.key("name");
  j.raw(names[e.entity]);
  j.key("gpus");
  j.value(e.gpus);
  j.key("gpu_hours");
  j.value(round_to(hours(e.gpu_s), 4));
  j.key("excluded_gpu_hours");
  j.value(round_to(hours(e.excluded_gpu_s), 4));
  j.key("down_gpu_hours");
  j.value(round_to(hours(e.down_gpu_s), 4));
  j.key("rack_down_hours");
  j.value(round_to(hours(e.rack_down_s), 4));
  j.key("availability_percent");
  j.value(round_to(e.availability_percent, 6));
  j.key("below_target");
  j.value(e.below_target);
  j.key("credit_percent");
  j.value(e.credit_percent);
  j.key("fee");
  j.value(round_to(e.fee, 2));
  j.key("credit");
  j.value(round_to(e.credit, 2));
  j.end_object();
}

void write_month(JsonOut& j, QuotedNames& names, const Contract& c, const MonthReport& m) {
  j.begin_object();
  j.key("month");
  j.value(month_name(m.month));
  j.key("start");
  j.value(c.zone.format_local(m.start_s));
  j.key("end");
  j.value(c.zone.format_local(m.end_s));
  j.key("hours");
  j.value(round_to(hours(m.end_s - m.start_s), 4));
  j.key("to_date");
  j.value(m.to_date);
  write_month_totals(j, m);
  j.key("entities");
  j.begin_array();
  for (const EntityMonth& e : m.listed) write_entity_month(j, names, e);
  j.end_array();
  j.end_object();
}

void write_months(JsonOut& j, QuotedNames& names, const SlaReport& rep, const Contract& c) {
  j.key("months");
  j.begin_array();
  for (const MonthReport& m : rep.months) write_month(j, names, c, m);
  j.end_array();
}

void write_cancellations(JsonOut& j, QuotedNames& names, const SlaReport& rep) {
  j.key("cancellation_rights");
  j.begin_array();
  std::vector<std::string> month_names;
  for (const MonthReport& m : rep.months)
    month_names.push_back(JsonOut::quote(month_name(m.month)));
  for (const CancellationRight& r : rep.cancellations) {
    j.begin_object();
    j.key("name");
    j.raw(names[r.entity]);
    j.key("month");
    j.raw(month_names[r.month]);
    j.key("rule");
    j.value(r.rule);
    j.key("detail");
    j.value(r.detail);
    j.end_object();
  }
  j.end_array();
}

void write_summary(JsonOut& j, const SlaReport& rep, const Contract& c) {
  j.key("summary");
  j.begin_object();
  j.key("credit_total");
  j.value(round_to(rep.credit_total, 2));
  j.key("currency");
  j.value(c.currency);
  j.key("cancellation_rights");
  j.value(std::uint64_t{rep.cancellations.size()});
  j.end_object();
}

}  // namespace

// Written straight into one string (tens of MB for a large cluster), not through a JSON tree.
std::string render_json(const SlaReport& rep, const Contract& c, const Window& w,
                        const InputInfo& in) {
  std::size_t listed = 0;
  for (const MonthReport& m : rep.months) listed += m.listed.size();
  std::string out;
  out.reserve(16384 + 600 * listed + 256 * rep.cancellations.size());
  advise_huge_pages(out.data(), out.capacity());
  JsonOut j(out);
  QuotedNames names(rep.entity_names);
  j.begin_object();
  j.key("schema");
  j.value("cmax.sla/1");
  write_contract(j, c);
  write_window(j, rep, c, w, in);
  write_drills(j, c, in);
  write_input(j, rep, c, w, in);
  write_months(j, names, rep, c);
  write_cancellations(j, names, rep);
  write_summary(j, rep, c);
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace cmax::sla
