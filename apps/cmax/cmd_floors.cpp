// cmax floors show              the version floors in use: each component's floor, its advisory and age
// cmax floors update ...        a new floors file from the vendors' feeds: the diff, written only on --write

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/command.h"
#include "audit/floors.h"
#include "core/clock.h"
#include "feeds/fetch.h"
#include "feeds/read.h"
#include "feeds/update.h"

namespace cmax::app {
namespace {

struct FloorsState {
  CLI::App* show = nullptr;
  CLI::App* update = nullptr;
  std::string min_versions;
  std::string feeds_dir;
  bool fetch = false;
  std::string write;
  bool json = false;
  bool exit_code = false;
  std::string today;
};

std::string today_utc() {
  core::SystemClock clock;
  auto days = std::chrono::floor<std::chrono::days>(clock.now());
  std::chrono::year_month_day ymd(days);
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                     static_cast<unsigned>(ymd.day()));
}

Result<std::string> base_text(const FloorsState& s) {
  if (s.min_versions.empty()) return std::string(audit::builtin_floors_text());
  return audit::read_floors_text(s.min_versions);
}

int run_show(const FloorsState& s) {
  auto text = base_text(s);
  if (!text) return environment_error(text.error().message);
  auto floors = audit::parse_floors(*text, s.min_versions.empty() ? "built-in data/min-versions.json" : s.min_versions);
  if (!floors) return environment_error(floors.error().message);
  fmt::print("version floors: {} (updated {}, warn after {} days)\n", floors->origin, floors->updated, floors->max_age_days);
  for (const auto& c : floors->components) {
    std::string lines;
    for (const auto& t : c.trains) lines += fmt::format("{}{}>={}", lines.empty() ? "" : " ", t.train.text, t.floor.text);
    for (const auto& [m, v] : c.models) lines += fmt::format("{}{}>={}", lines.empty() ? "" : " ", m, v.text);
    fmt::print("  {:<26} {:<12} {}  {}{}\n    {}\n", c.component, c.floor ? c.floor->text : "-", c.date,
               lines.empty() ? "" : lines, "", c.source);
  }
  fmt::print("  kernel CVEs: {}\n", floors->kernel_cves.size());
  return 0;
}

int run_update(const FloorsState& s) {
  auto text = base_text(s);
  if (!text) return environment_error(text.error().message);
  if (auto parsed = audit::parse_floors(*text, "base"); !parsed) return environment_error(parsed.error().message);
  if (s.feeds_dir.empty() == !s.fetch)
    return environment_error("floors update: give exactly one of --feeds DIR (recorded documents) or --fetch (the "
                             "vendors' own publications)");
  std::vector<feeds::FeedDocument> docs;
  std::vector<feeds::FeedNote> notes;
  if (!s.feeds_dir.empty()) {
    auto set = feeds::read_feed_dir(s.feeds_dir);
    if (!set) return environment_error(set.error().message);
    docs = std::move(set->documents);
    notes = std::move(set->notes);
  } else {
    feeds::FetchOptions fo;
    if (const char* v = std::getenv("CMAX_FEEDS_GITHUB_API")) fo.github_api = v;
    if (const char* v = std::getenv("CMAX_FEEDS_GITHUB_RAW")) fo.github_raw = v;
    if (const char* v = std::getenv("CMAX_FEEDS_OSV_API")) fo.osv_api = v;
    if (const char* v = std::getenv("CMAX_FEEDS_AMD")) fo.amd = v;
    if (!s.today.empty()) fo.year = std::stoi(s.today.substr(0, 4));
    if (stdout_is_tty()) fmt::print(stderr, "fetching NVIDIA CSAF, OSV and Ubuntu notices...\n");
    auto fetched = feeds::fetch_feeds(*text, fo);
    if (!fetched) return environment_error(fetched.error().message);
    notes = std::move(fetched->notes);
    for (const auto& [name, body] : fetched->documents) {
      auto d = feeds::read_feed_document(body, name);
      if (d) docs.push_back(std::move(*d));
      else notes.push_back({name, d.error().message});
    }
  }
  if (docs.empty()) return environment_error("floors update: no feed document was read");
  auto up = feeds::update_floors(*text, docs, s.today.empty() ? today_utc() : s.today);
  if (!up) return environment_error(up.error().message);
  for (auto& n : notes) up->notes.push_back(std::move(n));
  std::string out = up->floors.dump(2) + "\n";
  // The result must itself be a floors file cmax reads.
  if (auto check = audit::parse_floors(out, "the updated floors"); !check)
    return environment_error(fmt::format("floors update produced a file cmax cannot read: {}", check.error().message));
  if (s.json) {
    nlohmann::ordered_json j;
    j["schema"] = "cmax.floors-update/1";
    j["documents"] = docs.size();
    j["floor_changes"] = up->floor_changes();
    nlohmann::ordered_json changes = nlohmann::ordered_json::array();
    for (const auto& c : up->changes)
      changes.push_back({{"component", c.component}, {"kind", c.kind}, {"line", c.line}, {"from", c.from}, {"to", c.to},
                         {"because", c.because}});
    j["changes"] = changes;
    j["unfed"] = up->unfed;
    nlohmann::ordered_json ns = nlohmann::ordered_json::array();
    for (const auto& n : up->notes) ns.push_back({{"document", n.document}, {"note", n.message}});
    j["notes"] = ns;
    j["written"] = s.write.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.write);
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} feed document(s) read; {} floor change(s)\n{}", docs.size(), up->floor_changes(),
               feeds::render_update(*up));
  }
  if (!s.write.empty()) {
    std::string tmp = s.write + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f || !(f << out)) return environment_error(fmt::format("write {}: cannot write the file", tmp));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, s.write, ec);
    if (ec) return environment_error(fmt::format("write {}: {}", s.write, ec.message()));
    if (!s.json) fmt::print("wrote {}\n", s.write);
  } else if (!s.json && up->floor_changes() > 0) {
    fmt::print("not written: pass --write FILE to save the new floors\n");
  }
  return s.exit_code && up->floor_changes() > 0 ? 1 : 0;
}

}  // namespace

Runner setup_floors(CLI::App& sub) {
  auto s = std::make_shared<FloorsState>();
  sub.description(
      "The version floors cmax audits against (data/min-versions.json, built in; --min-versions FILE replaces it).\n"
      "`floors update` reads the vendors' security feeds (NVIDIA CSAF bulletins, OSV advisories, Ubuntu notices),\n"
      "raises every floor to the newest fix of its line, adds the lines a feed adds, removes the lines the newest\n"
      "driver bulletin or runc advisory no longer fixes, prints the diff and writes the file only with --write.\n"
      "It never lowers a floor. Exit codes: 0 done (with --exit-code: 0 no floor change, 1 floors changed);\n"
      "3 usage or environment error.");
  sub.require_subcommand(1);
  s->show = sub.add_subcommand("show", "Print the floors in use: each component's floor, date and advisory");
  s->show->add_option("--min-versions", s->min_versions, "Floors file instead of the built-in data/min-versions.json");
  s->update = sub.add_subcommand("update", "Build new floors from the vendors' feeds and print the diff");
  s->update->add_option("--min-versions", s->min_versions, "The floors file to update (default: the built-in one)");
  s->update->add_option("--feeds", s->feeds_dir, "A directory of recorded feed documents (*.json, any depth)");
  s->update->add_flag("--fetch", s->fetch,
                      "Fetch the documents from the vendors: github.com/NVIDIA/product-security, api.osv.dev, "
                      "canonical/ubuntu-security-notices (the one cmax command that goes to the network)");
  s->update->add_option("--write", s->write, "Write the new floors to FILE (atomically); without it nothing is written");
  s->update->add_flag("--json", s->json, "Print the changes as JSON (schema cmax.floors-update/1)");
  s->update->add_flag("--exit-code", s->exit_code, "Exit 1 when a floor would change (for CI)");
  s->update->add_option("--today", s->today, "The date written as 'updated' (YYYY-MM-DD; default: today, UTC)");
  return [s, &sub]() -> int {
    if (s->show->parsed()) return run_show(*s);
    return run_update(*s);
  };
}

}  // namespace cmax::app
