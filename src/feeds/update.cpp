#include "feeds/update.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/version.h"

namespace cmax::feeds {
namespace {

using nlohmann::ordered_json;

int cmp(const std::string& a, const std::string& b) {
  auto va = core::parse_version(a), vb = core::parse_version(b);
  if (va && vb) return core::compare_versions(*va, *vb);
  return core::dpkg_compare(a, b);
}

std::string because(const FeedFix& f) { return fmt::format("{}, {}", f.document, f.date); }

bool in_line(const std::string& version, const std::string& train) {
  auto v = core::parse_version(version), t = core::parse_version(train);
  return v && t && core::in_train(*v, *t);
}

// One component's fixes from the feeds, read once: the newest fix of each line, the newest
// document that defines the set of lines (and whether it supersedes the file's lines), and the
// newest fix applied, whose date and advisory become the component's.
struct ComponentFeed {
  std::string name;
  const std::vector<const FeedFix*>& fixes;
  std::map<std::string, const FeedFix*> best;
  const FeedFix* newest_set_doc = nullptr;
  std::set<std::string> listed;
  std::string base_date;
  bool supersede = false;
  std::string newest_date;
  const FeedFix* newest_source = nullptr;

  ComponentFeed(std::string n, const std::vector<const FeedFix*>& f, std::string date)
      : name(std::move(n)), fixes(f), base_date(std::move(date)) {
    for (const auto* fix : fixes) {
      auto& b = best[fix->train];
      if (!b || cmp(fix->fixed, b->fixed) > 0) b = fix;
      if (fix->defines_set && (!newest_set_doc || fix->date > newest_set_doc->date)) newest_set_doc = fix;
    }
    supersede = newest_set_doc && newest_set_doc->date >= base_date;
    if (supersede)
      for (const auto* fix : fixes)
        if (fix->document == newest_set_doc->document) listed.insert(fix->train);
  }
  void touch(const FeedFix* f) {
    if (f->date > newest_date) {
      newest_date = f->date;
      newest_source = f;
    }
  }
  // The component's date and source become the newest applied fix's, when newer than the file's.
  void stamp(ordered_json& c) const {
    if (newest_source && newest_date > base_date) {
      c["date"] = newest_date;
      c["source"] = newest_source->advisory;
    }
  }
};

// Floors per hardware model (ROCm per Instinct model): each model's floor is raised to its newest
// fix, and a model a feed names is added.
void update_models(ordered_json& c, ComponentFeed& feed, FloorsUpdate& up) {
  auto& models = c["models"];
  for (const auto& [model, f] : feed.best) {
    if (model.empty()) continue;
    std::string cur = models.value(model, "");
    if (cur.empty()) {
      models[model] = f->fixed;
      up.changes.push_back({feed.name, "added", model, "", f->fixed, because(*f)});
      feed.touch(f);
    } else if (cmp(f->fixed, cur) > 0) {
      models[model] = f->fixed;
      up.changes.push_back({feed.name, "raised", model, cur, f->fixed, because(*f)});
      feed.touch(f);
    }
  }
  for (const auto* f : feed.fixes) feed.touch(f);
  feed.stamp(c);
}

// The component's lines: existing ones raised, or removed where the newest set-defining document
// lists no fix; lines the feeds add; sorted by version. Returns the lines kept.
ordered_json update_trains(ordered_json& c, const std::string& floor, ComponentFeed& feed, FloorsUpdate& up) {
  ordered_json& trains = c["trains"];
  if (!trains.is_array()) trains = ordered_json::array();
  ordered_json kept = ordered_json::array();
  std::set<std::string> have;
  for (auto& t : trains) {
    std::string train = t.value("train", ""), tf = t.value("floor", "");
    if (feed.supersede && !feed.listed.count(train)) {
      up.changes.push_back({feed.name, "removed", train, tf, "",
                            fmt::format("{} lists no fix for this line", because(*feed.newest_set_doc))});
      continue;
    }
    have.insert(train);
    auto b = feed.best.find(train);
    if (b != feed.best.end() && cmp(b->second->fixed, tf) > 0) {
      up.changes.push_back({feed.name, "raised", train, tf, b->second->fixed, because(*b->second)});
      t["floor"] = b->second->fixed;
      feed.touch(b->second);
    }
    kept.push_back(t);
  }
  // Lines the feeds add (the single-floor line "" and the line the component floor stands for are
  // not trains).
  for (const auto& [train, f] : feed.best) {
    if (train.empty() || have.count(train)) continue;
    if (feed.supersede && !feed.listed.count(train)) continue;
    // A document older than the component's date does not bring back a line the file dropped.
    if (!feed.base_date.empty() && f->date < feed.base_date) continue;
    if (!floor.empty() && in_line(floor, train)) continue;  // represented by the component floor
    if (kept.empty() && trains.empty() && c.value("trains", ordered_json::array()).empty() && !c.contains("trains"))
      continue;
    ordered_json t = {{"train", train}, {"floor", f->fixed}, {"cves", f->cves}};
    up.changes.push_back({feed.name, "added", train, "", f->fixed, because(*f)});
    kept.push_back(t);
    feed.touch(f);
  }
  std::sort(kept.begin(), kept.end(), [](const ordered_json& a, const ordered_json& b) {
    return cmp(a.value("train", ""), b.value("train", "")) < 0;
  });
  trains = kept;
  return kept;
}

// The component floor: the single line's fix, or the fix of the line it stands for, or the top
// line's fix when a newer line appeared above it.
void update_component_floor(ordered_json& c, const std::string& floor, const ordered_json& kept, ComponentFeed& feed,
                            FloorsUpdate& up) {
  std::string new_floor = floor;
  const FeedFix* floor_fix = nullptr;
  for (const auto& [train, f] : feed.best) {
    bool stands_for = train.empty() || (!floor.empty() && in_line(floor, train));
    if (stands_for && (new_floor.empty() || cmp(f->fixed, new_floor) > 0)) {
      new_floor = f->fixed;
      floor_fix = f;
    }
  }
  if (!kept.empty()) {
    const ordered_json& top = kept.back();
    std::string top_floor = top.value("floor", "");
    if (!floor.empty() && cmp(top_floor, new_floor) > 0 && !in_line(floor, top.value("train", ""))) {
      new_floor = top_floor;
      auto it = feed.best.find(top.value("train", ""));
      floor_fix = it != feed.best.end() ? it->second : nullptr;
    }
  }
  if (!new_floor.empty() && new_floor != floor) {
    up.changes.push_back(
        {feed.name, "floor", "", floor, new_floor, floor_fix ? because(*floor_fix) : "the newest line's floor"});
    c["floor"] = new_floor;
    if (floor_fix) feed.touch(floor_fix);
  }
}

// CVEs the feeds name that the file does not (only the superseding document's, when there is one).
void add_component_cves(ordered_json& c, const ComponentFeed& feed, FloorsUpdate& up) {
  std::set<std::string> known;
  if (c.contains("cves") && c["cves"].is_array())
    for (const auto& cv : c["cves"]) known.insert(cv.value("id", ""));
  std::vector<std::string> added;
  for (const auto* f : feed.fixes)
    if (!feed.supersede || f->document == feed.newest_set_doc->document)
      for (const auto& id : f->cves)
        if (!id.empty() && known.insert(id).second) {
          added.push_back(id);
          c["cves"].push_back({{"id", id},
                                {"severity", f->severities.count(id) ? f->severities.at(id) : ""},
                                {"summary", f->summaries.count(id) ? f->summaries.at(id) : ""},
                                {"fixed", {f->fixed}}});
        }
  if (!added.empty())
    up.changes.push_back({feed.name, "cves", "", "", fmt::format("{}", fmt::join(added, ", ")), "named by the feeds"});
}

// Distro kernels: each fix of a kernel source package raises or adds that package's entry of the
// CVEs it fixes that the table lists; a document's CVEs the table lacks become a note.
void update_kernel_cves(const std::vector<const FeedFix*>& fixes, FloorsUpdate& up) {
  std::set<std::string> listed_cves;
  for (auto& k : up.floors["kernel_cves"]) {
    std::string id = k.value("id", "");
    listed_cves.insert(id);
    for (const auto* f : fixes) {
      if (std::find(f->cves.begin(), f->cves.end(), id) == f->cves.end()) continue;
      if (!k.contains("distros") || !k["distros"].is_object()) k["distros"] = ordered_json::object();
      auto& d = k["distros"];
      std::string cur = d.value(f->train, "");
      if (cur.empty()) {
        d[f->train] = f->fixed;
        up.changes.push_back({fmt::format("kernel {}", id), "added", f->train, "", f->fixed, because(*f)});
      } else if (core::dpkg_compare(f->fixed, cur) > 0) {
        d[f->train] = f->fixed;
        up.changes.push_back({fmt::format("kernel {}", id), "raised", f->train, cur, f->fixed, because(*f)});
      }
    }
  }
  std::map<std::string, std::set<std::string>> unlisted;  // document -> CVEs the table lacks
  for (const auto* f : fixes)
    for (const auto& id : f->cves)
      if (!listed_cves.count(id)) unlisted[f->document].insert(id);
  for (const auto& [doc, ids] : unlisted)
    up.notes.push_back({doc, fmt::format("fixes {} kernel CVE(s) the table does not list (add them by hand to judge "
                                         "them): {}",
                                         ids.size(), fmt::join(ids, ", "))});
}

}  // namespace

std::size_t FloorsUpdate::floor_changes() const {
  return static_cast<std::size_t>(std::count_if(changes.begin(), changes.end(), [](const FloorChange& c) { return c.kind != "cves"; }));
}

Result<FloorsUpdate> update_floors(std::string_view base_json, const std::vector<FeedDocument>& documents,
                                   std::string_view today) {
  FloorsUpdate up;
  up.floors = ordered_json::parse(base_json, nullptr, false);
  if (up.floors.is_discarded() || !up.floors.is_object() || !up.floors.contains("components") ||
      !up.floors["components"].is_array())
    return fail("update version floors: the base is not a cmax.min-versions/1 document");
  std::map<std::string, std::vector<const FeedFix*>> by_component;
  for (const auto& d : documents) {
    for (const auto& f : d.fixes) by_component[f.component].push_back(&f);
    for (const auto& n : d.notes) up.notes.push_back(n);
  }

  for (auto& c : up.floors["components"]) {
    std::string name = c.value("component", "");
    auto it = by_component.find(name);
    if (it == by_component.end()) {
      up.unfed.push_back(fmt::format("{} (kept as recorded: {})", name, c.value("source", "no source")));
      continue;
    }
    ComponentFeed feed(name, it->second, c.value("date", ""));
    if (c.contains("models") && c["models"].is_object()) {
      update_models(c, feed, up);
      continue;
    }
    const std::string floor = c.value("floor", "");
    const ordered_json kept = update_trains(c, floor, feed, up);
    update_component_floor(c, floor, kept, feed, up);
    add_component_cves(c, feed, up);
    feed.stamp(c);
  }

  auto kit = by_component.find("kernel");
  if (kit != by_component.end() && up.floors.contains("kernel_cves") && up.floors["kernel_cves"].is_array())
    update_kernel_cves(kit->second, up);
  up.floors["updated"] = std::string(today);
  return up;
}

std::string render_update(const FloorsUpdate& u) {
  std::string out;
  if (u.changes.empty()) out += "No floor changes: the feeds confirm every floor they cover.\n";
  for (const auto& c : u.changes) {
    if (c.kind == "cves")
      out += fmt::format("  {}: CVEs added: {}\n", c.component, c.to);
    else if (c.kind == "floor")
      out += fmt::format("  {}: floor {} -> {} ({})\n", c.component, c.from.empty() ? "none" : c.from, c.to, c.because);
    else if (c.kind == "removed")
      out += fmt::format("  {}: removed line {} (floor {}): {}\n", c.component, c.line, c.from, c.because);
    else if (c.kind == "added")
      out += fmt::format("  {}: added line {} >= {} ({})\n", c.component, c.line, c.to, c.because);
    else
      out += fmt::format("  {}: line {} {} -> {} ({})\n", c.component, c.line, c.from, c.to, c.because);
  }
  if (!u.unfed.empty()) {
    out += "No feed read for:\n";
    for (const auto& n : u.unfed) out += fmt::format("  {}\n", n);
  }
  if (!u.notes.empty()) {
    out += "Notes:\n";
    for (const auto& n : u.notes) out += fmt::format("  {}: {}\n", n.document, n.message);
  }
  return out;
}

}  // namespace cmax::feeds
