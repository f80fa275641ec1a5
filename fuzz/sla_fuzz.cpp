// libFuzzer target: the SLA event parsers (CSV, JSON, sacctmgr) and timestamps, then the engine on
// what they produced over a small fixed contract. Invariants: no crash and no unbounded allocation
// on any bytes; every interval's node and state index is in range and its end is kOpenEnd or a
// time; the engine's downtime never exceeds the time owed.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sla/compute.h"
#include "sla/contract.h"
#include "sla/drills.h"
#include "sla/parse.h"
#include "sla/timestamp.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const cmax::sla::Contract& contract() {
  static const cmax::sla::Contract c = *cmax::sla::parse_contract(R"({"schema": "cmax.sla-contract/1",
    "scope": "rack", "time_zone": "UTC", "availability_target_percent": 99.5, "gpus_per_node": 4,
    "rack_down": {"min_down_nodes": 2},
    "topology": {"sites": [{"name": "s", "racks": [{"name": "r1", "nodes": "gpu[01-04]"}, {"name": "r2", "nodes": "n[1-3]"}]}]},
    "exclusions": [{"kind": "maintenance", "scope": "node", "targets": "gpu02", "start": "2026-04-10", "end": "2026-04-11"}],
    "credits": {"fee_per_gpu_hour": 1, "tiers": [{"below_percent": 99, "credit_percent": 10}]}})");
  return c;
}

void check_set(cmax::sla::EventSet& set) {
  for (const auto& r : set.intervals) {
    check(r.node >= 0 && static_cast<std::size_t>(r.node) < set.node_names.size());
    check(r.state >= 0 && static_cast<std::size_t>(r.state) < set.state_names.size());
  }
  const auto& c = contract();
  auto w = cmax::sla::month_window(c.zone, {2026, 3}, {2026, 5});
  check(w.has_value());
  const auto rep = cmax::sla::compute_sla(std::move(set), c, *w);
  for (const auto& m : rep.months) {
    check(m.down_gpu_s >= 0 && m.down_gpu_s + m.excluded_gpu_s <= m.gpu_s);
    for (const auto& e : m.listed) check(e.down_gpu_s + e.excluded_gpu_s <= e.gpu_s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto utc = cmax::sla::Zone::utc();
  (void)cmax::sla::parse_timestamp(in, utc);
  (void)cmax::sla::parse_year_month(in);
  if (auto s = cmax::sla::parse_events_csv(in, utc)) check_set(*s);
  if (auto s = cmax::sla::parse_events_json(in, utc)) check_set(*s);
  if (auto s = cmax::sla::parse_sacctmgr_events(in, utc)) check_set(*s);
  // Drill records and the drill a reason names.
  if (auto w = cmax::sla::drill_windows_from_report(in, "fuzz"))
    for (const auto& d : *w) check(!d.node.empty() && d.end_s >= d.start_s);
  const auto drill = cmax::sla::drill_of_reason(in);
  check(drill.size() <= 16);
  return 0;
}
