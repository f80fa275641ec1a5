#include "feeds/nvidia_csaf.h"

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

struct Leaf {
  std::string arch;   ///< "Linux(R580)"
  std::string label;  ///< "Tesla"
  std::string name;   ///< the version phrase
  std::string id;     ///< product_id
};

void collect(const json& node, const std::string& arch, std::vector<Leaf>& out) {
  if (!node.is_object() || !node.contains("branches") || !node["branches"].is_array()) return;
  for (const auto& b : node["branches"]) {
    if (!b.is_object()) continue;
    std::string category = b.value("category", "");
    std::string name = b.value("name", "");
    std::string a = category == "architecture" ? name : arch;
    if (category == "product_version" && b.contains("product") && b["product"].is_object())
      out.push_back({a, name, b["product"].value("name", ""), b["product"].value("product_id", "")});
    collect(b, a, out);
  }
}

// NVIDIA networking firmware: the chip prefix of fw_ver for each device the bulletins name.
const std::map<std::string, std::string>& chip_prefix() {
  static const std::map<std::string, std::string> m = {
      {"connectx-4", "12"}, {"connectx-4 lx", "14"}, {"connectx-5", "16"},   {"connectx-6", "20"},
      {"connectx-6 dx", "22"}, {"connectx-6 lx", "26"}, {"connectx-7", "28"}, {"connectx-8", "40"},
      {"bluefield-2", "24"}, {"bluefield-3", "32"},
  };
  return m;
}

// "BlueField-2(46), BlueField-3(46)" -> {"bluefield-2", "bluefield-3"}.
std::vector<std::string> devices_of(std::string_view arch) {
  std::vector<std::string> out;
  for (auto part : core::split_any(arch, ",")) {
    std::string d = core::to_lower(core::trim(part));
    if (auto paren = d.find('('); paren != std::string::npos) d = std::string(core::trim(d.substr(0, paren)));
    while (!d.empty() && d.back() == '*') d.pop_back();
    if (!d.empty()) out.push_back(d);
  }
  return out;
}

std::string branch_of(std::string_view arch) {
  static const std::regex re(R"(^Linux\(R([0-9]+)\)$)");
  std::string a(arch);
  std::smatch m;
  return std::regex_match(a, m, re) ? m[1].str() : std::string();
}

std::string first_parts(const std::string& v, std::size_t n) {
  auto parsed = core::parse_version(v);
  if (!parsed || parsed->parts.size() < n) return {};
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? "." : "") + std::to_string(parsed->parts[i]);
  return out;
}

}  // namespace

Result<FeedDocument> read_nvidia_csaf(std::string_view json_text, std::string_view name) {
  auto doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("document") || !doc["document"].is_object())
    return fail("read NVIDIA CSAF {}: not a CSAF JSON document", name);
  const json& d = doc["document"];
  FeedDocument out;
  out.kind = "nvidia-csaf";
  const json tracking = d.contains("tracking") && d["tracking"].is_object() ? d["tracking"] : json::object();
  out.id = tracking.value("id", std::string(name));
  out.date = date_part(tracking.value("current_release_date", tracking.value("initial_release_date", "")));
  std::string label = fmt::format("NVIDIA CSAF {} (rev {})", out.id, tracking.value("version", "?"));
  std::string advisory = fmt::format("https://nvidia.custhelp.com/app/answers/detail/a_id/{}", out.id);
  const std::string title = d.value("title", "");

  std::vector<Leaf> leaves;
  if (doc.contains("product_tree")) collect(doc["product_tree"], "", leaves);
  // product_id -> CVEs that list it, by status.
  std::map<std::string, std::set<std::string>> fixed_cves, affected_cves;
  std::map<std::string, std::string> summaries, severities;
  if (doc.contains("vulnerabilities") && doc["vulnerabilities"].is_array())
    for (const auto& v : doc["vulnerabilities"]) {
      if (!v.is_object() || !v.contains("product_status")) continue;
      std::string cve = v.value("cve", "");
      // The summary: the CVE's own description, else its weakness's name.
      if (v.contains("notes") && v["notes"].is_array())
        for (const auto& n : v["notes"])
          if (n.is_object() && n.value("category", "") == "description" && n.contains("text") && n["text"].is_string())
            summaries[cve] = core::one_line(n["text"].get<std::string>(), 160);
      if (!summaries.count(cve) && v.contains("cwe") && v["cwe"].is_object() && v["cwe"].contains("name") &&
          v["cwe"]["name"].is_string())
        summaries[cve] = fmt::format("{} ({})", v["cwe"]["name"].get<std::string>(), v["cwe"].value("id", "CWE"));
      if (v.contains("scores") && v["scores"].is_array())
        for (const auto& sc : v["scores"])
          if (sc.is_object() && sc.contains("cvss_v3") && sc["cvss_v3"].is_object() &&
              sc["cvss_v3"].contains("baseSeverity") && sc["cvss_v3"]["baseSeverity"].is_string())
            severities[cve] = core::to_lower(sc["cvss_v3"]["baseSeverity"].get<std::string>());
      for (auto [key, map] : {std::pair<const char*, decltype(&fixed_cves)>{"fixed", &fixed_cves},
                              {"known_affected", &affected_cves}})
        if (v["product_status"].contains(key) && v["product_status"][key].is_array())
          for (const auto& id : v["product_status"][key])
            if (id.is_string()) (*map)[id.get<std::string>()].insert(cve);
    }

  auto add = [&](std::string component, std::string train, std::string fixed, const std::set<std::string>& cves,
                 bool defines_set) {
    FeedFix f{std::move(component), std::move(train), std::move(fixed), {cves.begin(), cves.end()}, label, advisory,
              out.date, defines_set, {}, {}};
    for (const auto& id : f.cves) {
      if (auto it = summaries.find(id); it != summaries.end()) f.summaries[id] = it->second;
      if (auto it = severities.find(id); it != severities.end()) f.severities[id] = it->second;
    }
    out.fixes.push_back(std::move(f));
  };
  const bool driver_bulletin = core::contains_icase(title, "Display Driver");
  for (const auto& leaf : leaves) {
    auto fc = fixed_cves.find(leaf.id);
    if (fc == fixed_cves.end()) continue;  // only fixed leaves name a floor
    auto versions = fixed_versions_in(leaf.name);
    if (versions.empty()) {
      out.notes.push_back({label, fmt::format("{} / {}: '{}' names no version; no floor taken", leaf.arch, leaf.label,
                                              core::one_line(leaf.name, 100))});
      continue;
    }
    const std::string lab = core::to_lower(leaf.label);
    if (lab == "tesla") {
      std::string branch = branch_of(leaf.arch);
      if (branch.empty()) continue;  // vGPU, cloud gaming, Windows
      for (const auto& v : versions) {
        if (first_parts(v, 1) != branch) {
          out.notes.push_back({label, fmt::format("{} / Tesla: fixed '{}' is not on branch R{}; dropped", leaf.arch, v,
                                                  branch)});
          continue;
        }
        add("nvidia-driver", branch, v, fc->second, driver_bulletin);
      }
    } else if (lab.find("cuda toolkit") != std::string::npos) {
      if (leaf.arch.find("Linux") == std::string::npos) continue;
      for (const auto& v : versions) add("cuda-toolkit", "", v, fc->second, false);
    } else if (lab == "nvidia container toolkit") {
      for (const auto& v : versions) add("nvidia-container-toolkit", "", v, fc->second, false);
    } else if (lab == "dcgm") {
      for (const auto& v : versions) add("dcgm", "", v, fc->second, false);
    } else if (lab == "dcgm exporter") {
      for (const auto& v : versions) add("dcgm-exporter", "", v, fc->second, false);
    } else if (lab.starts_with("virtio-net")) {
      for (const auto& v : versions) {
        add("bluefield-virtio-net", first_parts(v, 2), v, fc->second, false);
        // A line renumbered since ("1.7.21 and older versions" -> "23.10.23 or newer"): the old
        // scheme's releases move to this fix.
        for (const auto& other : leaves)
          if (other.label == leaf.label && affected_cves.count(other.id))
            if (auto old = inclusive_affected_in(other.name); old && first_parts(*old, 1) != first_parts(v, 1))
              add("bluefield-virtio-net", first_parts(*old, 1), v, fc->second, false);
      }
    } else if (lab.starts_with("connectx") || lab.starts_with("bluefield")) {
      // RELEASE.BUILD ("46.3008 or newer"), per chip of the devices the branch names.
      auto devices = leaf.arch.starts_with("N/A") ? std::vector<std::string>{core::to_lower(leaf.label)}
                                                  : devices_of(leaf.arch);
      for (const auto& v : versions) {
        if (first_parts(v, 2).empty() || core::parse_version(v)->parts.size() != 2) {
          out.notes.push_back({label, fmt::format("{} / {}: '{}' is not RELEASE.BUILD; dropped", leaf.arch, leaf.label, v)});
          continue;
        }
        std::string release = first_parts(v, 1);
        for (const auto& dev : devices) {
          auto chip = chip_prefix().find(dev);
          if (chip == chip_prefix().end()) {
            out.notes.push_back({label, fmt::format("{} / {}: no firmware prefix known for '{}'; skipped", leaf.arch,
                                                    leaf.label, dev)});
            continue;
          }
          add("connectx-firmware", fmt::format("{}.{}", chip->second, release), fmt::format("{}.{}", chip->second, v),
              fc->second, false);
        }
      }
    }
  }
  return out;
}

}  // namespace cmax::feeds
