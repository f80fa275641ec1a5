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
  auto contract_text = core::read_text_file(f.contract, kMaxContractBytes);
  if (!contract_text) {
    fmt::print(stderr, "cmax sla: {}\n", contract_text.error().message);
    return kExitUsage;
  }
  auto contract = sla::parse_contract(*contract_text);
  if (!contract) {
    fmt::print(stderr, "cmax sla: {}: {}\n", f.contract, contract.error().message);
    return kExitUsage;
  }
  sla::Zone events_zone = contract->zone;
  if (!f.events_zone.empty()) {
    auto z = sla::Zone::load(f.events_zone);
    if (!z) {
      fmt::print(stderr, "cmax sla: --events-time-zone: {}\n", z.error().message);
      return kExitUsage;
    }
    events_zone = std::move(*z);
  }
  std::optional<sla::YearMonth> from, to;
  for (auto [flag, text, out] : {std::tuple{"--from", &f.from, &from}, std::tuple{"--to", &f.to, &to}}) {
    if (text->empty()) continue;
    *out = sla::parse_year_month(*text);
    if (!*out) {
      fmt::print(stderr, "cmax sla: {} '{}': write a month as 2026-03 (or a day in it, 2026-03-15)\n", flag, *text);
      return kExitUsage;
    }
  }

  // Nothing after now is counted (an outage still open ends now, not at the month's end).
  std::int64_t as_of = static_cast<std::int64_t>(std::time(nullptr));
  if (!f.as_of.empty()) {
    auto t = sla::parse_timestamp(f.as_of, contract->zone);
    if (!t) {
      fmt::print(stderr, "cmax sla: --as-of '{}': write a time as 2026-03-15T12:00:00 (the contract's zone) or with an offset\n",
                 f.as_of);
      return kExitUsage;
    }
    as_of = *t;
  }
  // Fault drills: from drill records (cmax drill run/cleanup) and from cmaxd's drill-tagged drains.
  std::vector<sla::DrillWindow> drills;
  for (const auto& dir : f.drills) {
    std::string path = dir;
    if (std::filesystem::is_directory(path)) path = (std::filesystem::path(dir) / "drill.json").string();
    auto text = core::read_text_file(path, kMaxContractBytes);
    auto w = text ? sla::drill_windows_from_report(*text, path) : Result<std::vector<sla::DrillWindow>>(Unexpected<Error>{text.error()});
    if (!w) {
      fmt::print(stderr, "cmax sla: --drill: {}\n", w.error().message);
      return kExitUsage;
    }
    drills.insert(drills.end(), w->begin(), w->end());
  }

  sla::InputInfo info;
  Result<sla::EventSet> events = fail("no input");
  if (!f.cmaxd_db.empty()) {
    info = {"cmaxd-db", f.cmaxd_db};
    auto actions = sla::read_cmaxd_actions(f.cmaxd_db);
    if (actions) {
      auto tagged = sla::drill_windows_from_actions(*actions);
      // A drill record's window for the same node and drill is the better one (it knows the resume).
      for (auto& t : tagged) {
        bool known = std::any_of(drills.begin(), drills.end(),
                                 [&](const sla::DrillWindow& d) { return d.node == t.node && d.drill == t.drill; });
        if (!known) drills.push_back(std::move(t));
      }
      events = sla::intervals_from_actions(*actions);
    } else {
      events = Unexpected<Error>{actions.error()};
    }
  } else {
    const std::string& path = !f.csv.empty() ? f.csv : !f.json_events.empty() ? f.json_events : f.sacctmgr;
    info = {!f.csv.empty() ? "csv" : !f.json_events.empty() ? "json" : "sacctmgr", path};
    auto file = sla::MappedFile::open(path, kMaxEventBytes);
    if (!file) {
      fmt::print(stderr, "cmax sla: {}\n", file.error().message);
      return kExitInput;
    }
    const std::string_view text = file->text();
    if (!f.csv.empty())
      events = sla::parse_events_csv_parallel(text, events_zone, parse_threads());
    else if (!f.json_events.empty())
      events = sla::parse_events_json(text, events_zone);
    else
      events = sla::parse_sacctmgr_events(text, events_zone);
  }
  if (!events) {
    fmt::print(stderr, "cmax sla: {}: {}\n", info.path, events.error().message);
    return kExitInput;
  }
  if (events->records > 0 && events->intervals.empty() && events->anomalies.malformed.count == events->records) {
    fmt::print(stderr, "cmax sla: read {}: no record could be read (first: {}); check the format flag\n", info.path,
               events->anomalies.malformed.examples.empty() ? "?" : events->anomalies.malformed.examples.front());
    return kExitInput;
  }

  std::optional<sla::Window> window;
  if (from || to) {
    auto fallback = sla::default_window(*events, contract->zone);
    if ((!from || !to) && !fallback) {
      fmt::print(stderr, "cmax sla: no events to take the other end of the window from; give both --from and --to\n");
      return kExitUsage;
    }
    const sla::YearMonth a = from ? *from : fallback->months.front(), z = to ? *to : fallback->months.back();
    auto w = sla::month_window(contract->zone, a, z);
    if (!w) {
      fmt::print(stderr, "cmax sla: {}\n", w.error().message);
      return kExitUsage;
    }
    window = std::move(*w);
    info.window_from_flags = true;
  } else {
    window = sla::default_window(*events, contract->zone);
    if (!window) {
      fmt::print(stderr, "cmax sla: {} holds no intervals; give --from and --to to report a month without downtime\n",
                 info.path);
      return kExitInput;
    }
  }
  info.closed_by_drills = sla::close_with_drills(*events, drills);
  // Up to the resume the events show, not only to the drill's own end marker.
  sla::extend_drills_to_resume(drills, *events, contract->down_states);
  info.drills_elsewhere = sla::exclude_drills(*contract, drills, as_of);
  for (const auto& d : drills)
    if (std::none_of(info.drills_elsewhere.begin(), info.drills_elsewhere.end(),
                     [&](const sla::DrillWindow& x) { return x.node == d.node && x.drill == d.drill; }))
      info.drills.push_back(d);
  const sla::SlaReport report = sla::compute_sla(std::move(*events), *contract, *window, as_of);
  // Written as is: fmt::print would copy tens of MB into a growing buffer first.
  // The JSON once, for the run directory and for stdout alike.
  const std::string json = f.json || !f.out.empty() ? sla::render_json(report, *contract, *window, info) : "";
  if (!f.out.empty()) {
    auto w = report::write_stage_document(f.out, "sla.json", json);
    if (!w) {
      fmt::print(stderr, "cmax sla: {}\n", w.error().message);
      return kExitUsage;
    }
  }
  const std::string out = f.json ? json : sla::render_table(report, *contract, *window, info, f.max_rows);
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
