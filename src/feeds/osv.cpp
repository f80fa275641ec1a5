#include "feeds/osv.h"

#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/version.h"
#include "feeds/phrase.h"

namespace cmax::feeds {
namespace {

using nlohmann::json;

// OSV packages whose releases cmax floors.
const std::map<std::string, std::string>& package_components() {
  static const std::map<std::string, std::string> m = {
      {"github.com/opencontainers/runc", "runc"},
      {"github.com/containerd/containerd", "containerd"},
      {"github.com/containerd/containerd/v2", "containerd"},
      // Docker Engine's releases up to 28.x as the Go module's "+incompatible" versions.
      {"github.com/docker/docker", "docker"},
  };
  return m;
}

std::string major_minor(const core::Version& v) {
  return v.parts.size() >= 2 ? fmt::format("{}.{}", v.parts[0], v.parts[1]) : std::string();
}

std::vector<std::string> cve_aliases(const json& r) {
  std::vector<std::string> out;
  if (r.contains("aliases") && r["aliases"].is_array())
    for (const auto& a : r["aliases"])
      if (a.is_string() && a.get<std::string>().starts_with("CVE-")) out.push_back(a.get<std::string>());
  if (r.value("id", "").starts_with("CVE-")) out.push_back(r.value("id", ""));
  return out;
}

}  // namespace

Result<FeedDocument> read_osv_record(const json& r, std::string_view name) {
  if (!r.is_object() || !r.contains("id") || !r["id"].is_string() || !r.contains("affected"))
    return fail("read OSV record {}: no id or affected[]", name);
  FeedDocument out;
  out.kind = "osv";
  out.id = r["id"].get<std::string>();
  out.date = date_part(r.value("published", r.value("modified", "")));
  std::string advisory = fmt::format("https://osv.dev/vulnerability/{}", out.id);
  std::string label = fmt::format("OSV {}", out.id);
  auto cves = cve_aliases(r);
  if (!r["affected"].is_array()) return out;
  for (const auto& a : r["affected"]) {
    if (!a.is_object() || !a.contains("package") || !a["package"].is_object()) continue;
    const std::string package = a["package"].value("name", "");
    if (package.starts_with("github.com/moby/moby")) {
      // Since Docker 29 the engine is the module github.com/moby/moby/v2, whose v2.x versions are not
      // Docker Engine release numbers: no floor can be taken from them.
      out.notes.push_back({label, fmt::format("{}: its module versions are not Docker Engine releases; read Docker's "
                                              "release notes for the engine floor", package)});
      continue;
    }
    auto comp = package_components().find(package);
    if (comp == package_components().end()) continue;
    if (!a.contains("ranges") || !a["ranges"].is_array()) continue;
    for (const auto& range : a["ranges"]) {
      std::string type = range.value("type", "");
      if (type != "ECOSYSTEM" && type != "SEMVER") continue;
      if (!range.contains("events") || !range["events"].is_array()) continue;
      for (const auto& e : range["events"]) {
        if (!e.is_object() || !e.contains("fixed") || !e["fixed"].is_string()) continue;
        std::string fixed = e["fixed"].get<std::string>();
        if (fixed.ends_with("+incompatible")) fixed.resize(fixed.size() - std::string_view("+incompatible").size());
        auto v = core::parse_version(fixed);
        if (!v || v->parts.size() < 2) {
          out.notes.push_back({label, fmt::format("{}: fixed '{}' is not a release; skipped", comp->second, fixed)});
          continue;
        }
        // Go pseudo-versions (1.0.0-rc8.0.20190930145003-cad42f6e0932) name commits, not releases.
        if (fixed.find(".0.20") != std::string::npos && std::count(fixed.begin(), fixed.end(), '-') >= 2) {
          out.notes.push_back({label, fmt::format("{}: fixed '{}' is a Go pseudo-version; skipped", comp->second, fixed)});
          continue;
        }
        std::string floor = fixed;
        if (v->pre_tag) {
          // A release candidate fixes the line before its release; hosts run the stable release.
          floor = fmt::format("{}", fmt::join(v->parts, "."));
          out.notes.push_back({label, fmt::format("{}: the fix '{}' is a pre-release; the floor is its release {}",
                                                  comp->second, fixed, floor)});
        }
        // runc's and containerd's advisories list every supported release branch; the docker/docker
        // module's list only the branches its maintainers tagged.
        out.fixes.push_back({comp->second, major_minor(*v), floor, cves, label, advisory, out.date,
                             comp->second != "docker"});
      }
    }
  }
  return out;
}

Result<FeedDocument> read_osv_query(const json& response, std::string_view name) {
  if (!response.is_object() || !response.contains("vulns") || !response["vulns"].is_array())
    return fail("read osv.dev response {}: no vulns[]", name);
  FeedDocument out;
  out.kind = "osv-query";
  out.id = std::string(name);
  for (const auto& r : response["vulns"]) {
    auto one = read_osv_record(r, name);
    if (!one) {
      out.notes.push_back({std::string(name), one.error().message});
      continue;
    }
    if (one->date > out.date) out.date = one->date;
    for (auto& f : one->fixes) out.fixes.push_back(std::move(f));
    for (auto& n : one->notes) out.notes.push_back(std::move(n));
  }
  return out;
}

Result<FeedDocument> read_usn(const json& r, std::string_view name) {
  if (!r.is_object() || !r.contains("id") || !r["id"].is_string() || !r["id"].get<std::string>().starts_with("USN-"))
    return fail("read Ubuntu notice {}: no USN id", name);
  FeedDocument out;
  out.kind = "ubuntu-usn";
  out.id = r["id"].get<std::string>();
  out.date = date_part(r.value("published", r.value("modified", "")));
  std::string label = out.id;
  std::string advisory = fmt::format("https://ubuntu.com/security/notices/{}", out.id);
  // The CVEs: upstream[] ("UBUNTU-CVE-2026-53359" or "CVE-..."), else the ids in the details.
  std::set<std::string> cves;
  static const std::regex cve_re(R"(CVE-[0-9]{4}-[0-9]{4,})");
  if (r.contains("upstream") && r["upstream"].is_array())
    for (const auto& u : r["upstream"])
      if (u.is_string()) {
        std::string s = u.get<std::string>();
        std::smatch m;
        if (std::regex_search(s, m, cve_re)) cves.insert(m[0].str());
      }
  if (cves.empty()) {
    std::string details = r.value("details", "");
    for (auto it = std::sregex_iterator(details.begin(), details.end(), cve_re); it != std::sregex_iterator(); ++it)
      cves.insert(it->str());
    if (!cves.empty())
      out.notes.push_back({label, "upstream[] is empty: the CVEs were read from the notice's details"});
  }
  if (!r.contains("affected") || !r["affected"].is_array()) return out;
  static const std::regex eco_re(R"(^Ubuntu:([0-9]+\.[0-9]+):LTS$)");
  for (const auto& a : r["affected"]) {
    if (!a.is_object() || !a.contains("package")) continue;
    std::string eco = a["package"].value("ecosystem", "");
    std::string pkg = a["package"].value("name", "");
    std::smatch m;
    if (!std::regex_match(eco, m, eco_re)) continue;  // Pro/FIPS/Realtime streams are not the archive's
    if (pkg != "linux" && !pkg.starts_with("linux-")) continue;
    if (pkg.starts_with("linux-signed") || pkg.starts_with("linux-meta") || pkg.starts_with("linux-restricted"))
      continue;
    std::string distro = fmt::format("ubuntu-{}", m[1].str());
    std::string key = pkg == "linux" ? distro : fmt::format("{}/{}", distro, pkg);
    std::set<std::string> mine = cves;
    if (a.contains("database_specific") && a["database_specific"].contains("cves_map")) {
      const auto& cm = a["database_specific"]["cves_map"];
      if (cm.is_object() && cm.contains("cves") && cm["cves"].is_array())
        for (const auto& c : cm["cves"])
          if (c.is_object() && c.value("id", "").starts_with("CVE-")) mine.insert(c.value("id", ""));
    }
    if (!a.contains("ranges") || !a["ranges"].is_array()) continue;
    for (const auto& range : a["ranges"])
      if (range.contains("events") && range["events"].is_array())
        for (const auto& e : range["events"])
          if (e.is_object() && e.contains("fixed") && e["fixed"].is_string())
            out.fixes.push_back({"kernel", key, e["fixed"].get<std::string>(), {mine.begin(), mine.end()}, label,
                                 advisory, out.date, false});
  }
  return out;
}

}  // namespace cmax::feeds
