// cmax sla: downtime, availability, credits and cancellation rights per month under an SLA
// contract (docs/sla.md), from cmaxd's event database, `sacctmgr show event` output, or a CSV or
// JSON of node state intervals.
// Exit codes: 0 no credit owed and no cancellation right; 1 a credit is owed or a cancellation right
// triggered; 2 the events could not be read; 3 usage or contract error.

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "apps/cmax/command.h"
#include "report/run_dir.h"
#include "core/text_file.h"
#include "sla/compute.h"
#include "sla/contract.h"
#include "sla/drills.h"
#include "sla/mapped_file.h"
#include "sla/parse.h"
#include "sla/report.h"
#include "sla/timestamp.h"

namespace cmax::app {
namespace {

constexpr int kExitOk = 0, kExitOwed = 1, kExitInput = 2, kExitUsage = 3;
constexpr std::size_t kMaxContractBytes = 64u << 20;
constexpr std::size_t kMaxEventBytes = std::size_t{8} << 30;  // ~150M CSV rows; a bound, not a goal

// Threads for reading a CSV: one per core, a few at most (each holds its own name table).
unsigned parse_threads() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

struct SlaFlags {
  std::string contract, csv, json_events, sacctmgr, cmaxd_db, from, to, events_zone, as_of;
  std::vector<std::string> drills;
  std::string out;  ///< run directory: sla.json there too; its drill.json counts as --drill
  bool json = false;
  std::size_t max_rows = 20;
};

// The contract and the flags read from text: a usage error is printed and *code set.
struct SlaSetup {
  sla::Contract contract;
  sla::Zone events_zone;
  std::optional<sla::YearMonth> from, to;
  std::int64_t as_of = 0;  ///< nothing after it is counted
};

std::optional<SlaSetup> read_setup(const SlaFlags& f) {
  auto contract_text = core::read_text_file(f.contract, kMaxContractBytes);
  if (!contract_text) {
    fmt::print(stderr, "cmax sla: {}\n", contract_text.error().message);
    return std::nullopt;
  }
  auto contract = sla::parse_contract(*contract_text);
  if (!contract) {
    fmt::print(stderr, "cmax sla: {}: {}\n", f.contract, contract.error().message);
    return std::nullopt;
  }
  SlaSetup setup{*contract, contract->zone, std::nullopt, std::nullopt, 0};
  if (!f.events_zone.empty()) {
    auto z = sla::Zone::load(f.events_zone);
    if (!z) {
      fmt::print(stderr, "cmax sla: --events-time-zone: {}\n", z.error().message);
      return std::nullopt;
    }
    setup.events_zone = std::move(*z);
  }
  for (auto [flag, text, out] :
       {std::tuple{"--from", &f.from, &setup.from}, std::tuple{"--to", &f.to, &setup.to}}) {
    if (text->empty()) continue;
    *out = sla::parse_year_month(*text);
    if (!*out) {
      fmt::print(stderr, "cmax sla: {} '{}': write a month as 2026-03 (or a day in it, 2026-03-15)\n", flag, *text);
      return std::nullopt;
    }
  }
  // Nothing after now is counted (an outage still open ends now, not at the month's end).
  setup.as_of = static_cast<std::int64_t>(std::time(nullptr));
  if (!f.as_of.empty()) {
    auto t = sla::parse_timestamp(f.as_of, setup.contract.zone);
    if (!t) {
      fmt::print(stderr, "cmax sla: --as-of '{}': write a time as 2026-03-15T12:00:00 (the contract's zone) or with an offset\n",
                 f.as_of);
      return std::nullopt;
    }
    setup.as_of = *t;
  }
  return setup;
}

// Fault drills from drill records (cmax drill run/cleanup): a directory's drill.json or a file.
Result<std::vector<sla::DrillWindow>> read_drill_records(const std::vector<std::string>& dirs) {
  std::vector<sla::DrillWindow> drills;
  for (const auto& dir : dirs) {
    std::string path = dir;
    if (std::filesystem::is_directory(path)) path = (std::filesystem::path(dir) / "drill.json").string();
    auto text = core::read_text_file(path, kMaxContractBytes);
    if (!text) return Unexpected<Error>{text.error()};
    auto w = sla::drill_windows_from_report(*text, path);
    if (!w) return Unexpected<Error>{w.error()};
    drills.insert(drills.end(), w->begin(), w->end());
  }
  return drills;
}

// The node state intervals from the one source given; cmaxd's drill-tagged drains join `drills`
// where no drill record names the same node and drill (a record knows the resume). A file that
// cannot be opened says so itself; a source that cannot be read is named before the reason.
Result<sla::EventSet> read_events(const SlaFlags& f, const sla::Zone& events_zone, std::vector<sla::DrillWindow>& drills,
                                  sla::InputInfo& info) {
  auto named = [&](Result<sla::EventSet> r) -> Result<sla::EventSet> {
    if (!r) return fail("{}: {}", info.path, r.error().message);
    return r;
  };
  if (!f.cmaxd_db.empty()) {
    info = {"cmaxd-db", f.cmaxd_db};
    auto actions = sla::read_cmaxd_actions(f.cmaxd_db);
    if (!actions) return named(Unexpected<Error>{actions.error()});
    for (auto& t : sla::drill_windows_from_actions(*actions)) {
      bool known = std::any_of(drills.begin(), drills.end(),
                               [&](const sla::DrillWindow& d) { return d.node == t.node && d.drill == t.drill; });
      if (!known) drills.push_back(std::move(t));
    }
    return named(sla::intervals_from_actions(*actions));
  }
  const std::string& path = !f.csv.empty() ? f.csv : !f.json_events.empty() ? f.json_events : f.sacctmgr;
  info = {!f.csv.empty() ? "csv" : !f.json_events.empty() ? "json" : "sacctmgr", path};
  auto file = sla::MappedFile::open(path, kMaxEventBytes);
  if (!file) return Unexpected<Error>{file.error()};
  const std::string_view text = file->text();
  if (!f.csv.empty()) return named(sla::parse_events_csv_parallel(text, events_zone, parse_threads()));
  if (!f.json_events.empty()) return named(sla::parse_events_json(text, events_zone));
  return named(sla::parse_sacctmgr_events(text, events_zone));
}

// The months reported: --from/--to (the events give an end left open), else the events' own span.
// A failure is printed and *code set.
std::optional<sla::Window> choose_window(const SlaSetup& setup, const sla::EventSet& events, sla::InputInfo& info,
                                         int* code) {
  const auto& zone = setup.contract.zone;
  if (!setup.from && !setup.to) {
    auto window = sla::default_window(events, zone);
    if (!window) {
      fmt::print(stderr, "cmax sla: {} holds no intervals; give --from and --to to report a month without downtime\n",
                 info.path);
      *code = kExitInput;
    }
    return window;
  }
  *code = kExitUsage;
  auto fallback = sla::default_window(events, zone);
  if ((!setup.from || !setup.to) && !fallback) {
    fmt::print(stderr, "cmax sla: no events to take the other end of the window from; give both --from and --to\n");
    return std::nullopt;
  }
  const sla::YearMonth a = setup.from ? *setup.from : fallback->months.front();
  const sla::YearMonth z = setup.to ? *setup.to : fallback->months.back();
  auto w = sla::month_window(zone, a, z);
  if (!w) {
    fmt::print(stderr, "cmax sla: {}\n", w.error().message);
    return std::nullopt;
  }
  info.window_from_flags = true;
  return std::move(*w);
}

int run_sla(SlaFlags f) {
  // A run directory's own drill is excluded as if named with --drill.
  if (!f.out.empty() && std::filesystem::exists(std::filesystem::path(f.out) / "drill.json") &&
      std::find(f.drills.begin(), f.drills.end(), f.out) == f.drills.end())
    f.drills.push_back(f.out);
  const int sources = !f.csv.empty() + !f.json_events.empty() + !f.sacctmgr.empty() + !f.cmaxd_db.empty();
  if (sources != 1) {
    fmt::print(stderr, "cmax sla: give exactly one of --events-csv, --events-json, --sacctmgr, --cmaxd-db\n");
    return kExitUsage;
  }
  auto setup = read_setup(f);
  if (!setup) return kExitUsage;
  sla::Contract& contract = setup->contract;
  // Fault drills: from drill records (cmax drill run/cleanup) and from cmaxd's drill-tagged drains.
  auto drills = read_drill_records(f.drills);
  if (!drills) {
    fmt::print(stderr, "cmax sla: --drill: {}\n", drills.error().message);
    return kExitUsage;
  }
  sla::InputInfo info;
  auto events = read_events(f, setup->events_zone, *drills, info);
  if (!events) {
    fmt::print(stderr, "cmax sla: {}\n", events.error().message);
    return kExitInput;
  }
  if (events->records > 0 && events->intervals.empty() && events->anomalies.malformed.count == events->records) {
    fmt::print(stderr, "cmax sla: read {}: no record could be read (first: {}); check the format flag\n", info.path,
               events->anomalies.malformed.examples.empty() ? "?" : events->anomalies.malformed.examples.front());
    return kExitInput;
  }
  int code = kExitOk;
  const std::optional<sla::Window> window = choose_window(*setup, *events, info, &code);
  if (!window) return code;
  info.closed_by_drills = sla::close_with_drills(*events, *drills);
  // Up to the resume the events show, not only to the drill's own end marker.
  sla::extend_drills_to_resume(*drills, *events, contract.down_states);
  info.drills_elsewhere = sla::exclude_drills(contract, *drills, setup->as_of);
  for (const auto& d : *drills)
    if (std::none_of(info.drills_elsewhere.begin(), info.drills_elsewhere.end(),
                     [&](const sla::DrillWindow& x) { return x.node == d.node && x.drill == d.drill; }))
      info.drills.push_back(d);
  const sla::SlaReport report = sla::compute_sla(std::move(*events), contract, *window, setup->as_of);
  // Written as is: fmt::print would copy tens of MB into a growing buffer first.
  // The JSON once, for the run directory and for stdout alike.
  const std::string json = f.json || !f.out.empty() ? sla::render_json(report, contract, *window, info) : "";
  if (!f.out.empty()) {
    auto w = report::write_stage_document(f.out, "sla.json", json);
    if (!w) {
      fmt::print(stderr, "cmax sla: {}\n", w.error().message);
      return kExitUsage;
    }
  }
  const std::string out = f.json ? json : sla::render_table(report, contract, *window, info, f.max_rows);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.credit_total > 0 || !report.cancellations.empty() ? kExitOwed : kExitOk;
}

}  // namespace

Runner setup_sla(CLI::App& sub) {
  auto f = std::make_shared<SlaFlags>();
  sub.add_option("--contract", f->contract, "SLA contract (JSON, cmax.sla-contract/1; docs/sla.md)")->required();
  sub.add_option("--events-csv", f->csv, "Node state intervals: node,start,end,state[,reason]");
  sub.add_option("--events-json", f->json_events, "Node state intervals as JSON");
  sub.add_option("--sacctmgr", f->sacctmgr,
                 "Output of sacctmgr -P show event format=NodeName,TimeStart,TimeEnd,State,Reason");
  sub.add_option("--cmaxd-db", f->cmaxd_db, "cmaxd's event database (its --db): drains and resumes");
  sub.add_option("--from", f->from, "First month (2026-01); default: the month of the earliest event");
  sub.add_option("--to", f->to, "Last month, inclusive; default: the month of the latest event");
  sub.add_option("--events-time-zone", f->events_zone,
                 "Zone of event times written without an offset (default: the contract's)");
  sub.add_option("--as-of", f->as_of,
                 "Count nothing after this time (default: now): an outage still open ends here, a month still\n"
                 "running is counted to date");
  sub.add_option("--drill", f->drills,
                 "A drill's run directory or drill.json (repeatable): its nodes' time out of service is excluded\n"
                 "and listed, and the resume cmax drill cleanup recorded ends an open drain. cmaxd drains whose\n"
                 "reason names a drill are excluded without it");
  sub.add_option("--max-rows", f->max_rows, "Entities listed per month in the table")->capture_default_str();
  sub.add_flag("--json", f->json, "Print the report as JSON (cmax.sla/1, docs/schemas/sla.md)");
  sub.add_option("--out", f->out,
                 "Also write sla.json into this run directory (created if missing); a drill.json there is\n"
                 "excluded as with --drill");
  return [f] { return run_sla(*f); };
}

}  // namespace cmax::app
