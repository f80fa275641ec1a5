#include "audit/floors.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/json_fields.h"

namespace cmax::audit {

extern const char kBuiltinMinVersions[];  // generated from data/min-versions.json

namespace {

using nlohmann::json;

Result<core::Version> version_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) return fail("{}: '{}' must be a version string", where, key);
  auto v = core::parse_version(j[key].get<std::string>());
  if (!v) return fail("{}: '{}': {}", where, key, v.error().message);
  return v;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}


std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Whether a CVE with these first-fixed versions (one per release series) affects `v`: below the
// fix of its own major.minor series, or, when its series has no listed fix, below the newest fix.
bool cve_affects(const CveRef& cve, const core::Version& v) {
  if (cve.fixed.empty()) return true;
  std::optional<core::Version> newest;
  for (const auto& text : cve.fixed) {
    auto f = core::parse_version(text);
    if (!f) return true;
    bool same_series = f->parts.size() >= 2 && v.parts.size() >= 2 && f->parts[0] == v.parts[0] &&
                       f->parts[1] == v.parts[1];
    if (same_series) return core::compare_versions(v, *f) < 0;
    if (!newest || core::compare_versions(*f, *newest) > 0) newest = std::move(*f);
  }
  return core::compare_versions(v, *newest) < 0;
}

}  // namespace

const ComponentFloor* Floors::find(std::string_view component) const {
  for (const auto& c : components)
    if (c.component == component) return &c;
  return nullptr;
}

Result<Floors> parse_floors(std::string_view json_text, std::string origin) {
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return fail("read version floors {}: not valid JSON; check the file or drop --min-versions", origin);
  if (!doc.is_object() || core::string_field(doc, "schema") != "cmax.min-versions/1")
    return fail("read version floors {}: schema must be \"cmax.min-versions/1\"", origin);
  Floors floors;
  floors.origin = origin;
  floors.updated = core::string_field(doc, "updated");
  for (auto [key, field] : {std::pair<const char*, int*>{"max_age_days", &floors.max_age_days}, {"grace_days", &floors.grace_days}})
    if (doc.contains(key)) {
      if (!doc[key].is_number_integer() || doc[key].get<int>() < 0)
        return fail("read version floors {}: '{}' must be a whole number of days", origin, key);
      *field = doc[key].get<int>();
    }
  if (doc.contains("components")) {
    if (!doc["components"].is_array()) return fail("read version floors {}: 'components' must be an array", origin);
    for (const auto& c : doc["components"]) {
      ComponentFloor cf;
      cf.component = core::string_field(c, "component");
      std::string where = fmt::format("read version floors {}: component '{}'", origin, cf.component);
      if (cf.component.empty()) return fail("read version floors {}: a component has no 'component' name", origin);
      cf.description = core::string_field(c, "description");
      cf.kind = core::string_field(c, "kind");
      cf.source = core::string_field(c, "source");
      cf.date = core::string_field(c, "date");
      cf.fix_available = core::string_field(c, "fix_available");
      if (cf.fix_available.empty()) cf.fix_available = cf.date;
      if (c.contains("distros") && c["distros"].is_object()) {
        for (const auto& [name, ver] : c["distros"].items()) {
          if (!ver.is_string() || ver.get<std::string>().empty())
            return fail("{}: distros.{} must be a package version string", where, name);
          cf.distros[name] = ver.get<std::string>();
        }
        cf.distros_source = core::string_field(c, "distros_source");
      }
      if (c.contains("models") && c["models"].is_object()) {
        for (const auto& [name, ver] : c["models"].items()) {
          auto v = ver.is_string() ? core::parse_version(ver.get<std::string>()) : Result<core::Version>(fail("not a string"));
          if (!v) return fail("{}: models.{} must be a version string", where, name);
          cf.models[name] = std::move(*v);
        }
      }
      if (c.contains("trains") && c["trains"].is_array()) {
        for (const auto& t : c["trains"]) {
          auto train = version_field(t, "train", where);
          if (!train) return Unexpected<Error>{train.error()};
          auto floor = version_field(t, "floor", where);
          if (!floor) return Unexpected<Error>{floor.error()};
          cf.trains.push_back({std::move(*train), std::move(*floor), strings(t, "cves")});
        }
      }
      if (c.contains("floor") && c["floor"].is_string()) {
        auto floor = version_field(c, "floor", where);
        if (!floor) return Unexpected<Error>{floor.error()};
        cf.floor = std::move(*floor);
      }
      if (c.contains("cves") && c["cves"].is_array())
        for (const auto& cv : c["cves"])
          cf.cves.push_back({core::string_field(cv, "id"), core::string_field(cv, "severity"), core::string_field(cv, "summary"), strings(cv, "fixed")});
      floors.components.push_back(std::move(cf));
    }
  }
  if (doc.contains("kernel_cves") && doc["kernel_cves"].is_array()) {
    for (const auto& k : doc["kernel_cves"]) {
      KernelCve cve;
      cve.id = core::string_field(k, "id");
      std::string where = fmt::format("read version floors {}: kernel CVE '{}'", origin, cve.id);
      cve.summary = core::string_field(k, "summary");
      cve.severity = core::string_field(k, "severity");
      cve.source = core::string_field(k, "source");
      auto intro = version_field(k, "introduced", where);
      if (!intro) return Unexpected<Error>{intro.error()};
      cve.introduced = std::move(*intro);
      for (const auto& f : strings(k, "fixed")) {
        auto v = core::parse_version(f);
        if (!v) return fail("{}: fixed '{}': {}", where, f, v.error().message);
        cve.fixed.push_back(std::move(*v));
      }
      cve.applies = core::string_field(k, "applies");
      if (!cve.applies.empty() && cve.applies != "kvm-host")
        return fail("{}: applies must be \"kvm-host\" or absent, not '{}'", where, cve.applies);
      if (k.contains("distros") && k["distros"].is_object())
        for (const auto& [name, ver] : k["distros"].items())
          if (ver.is_string()) cve.distros[name] = ver.get<std::string>();
      floors.kernel_cves.push_back(std::move(cve));
    }
  }
  return floors;
}

std::string_view builtin_floors_text() { return kBuiltinMinVersions; }

Result<Floors> builtin_floors() { return parse_floors(kBuiltinMinVersions, "built-in data/min-versions.json"); }

Result<std::string> read_floors_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("read version floors {}: cannot open the file; check the --min-versions path", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Floors> load_floors_file(const std::string& path) {
  auto text = read_floors_text(path);
  if (!text) return Unexpected<Error>{text.error()};
  return parse_floors(*text, path);
}

FloorVerdict evaluate_floor(const ComponentFloor& cf, const core::Version& observed) {
  FloorVerdict v;
  const Train* match = nullptr;
  for (const auto& t : cf.trains)
    if (core::in_train(observed, t.train) && (!match || t.train.parts.size() > match->train.parts.size())) match = &t;
  if (match) {
    v.train = match->train.text;
    v.floor = match->floor.text;
    v.cves = match->cves;
    v.status = core::compare_versions(observed, match->floor) < 0 ? FloorVerdict::Status::below
                                                                   : FloorVerdict::Status::ok;
    return v;
  }
  bool newer_than_all = true;
  for (const auto& t : cf.trains)
    if (core::compare_versions(observed, t.train) < 0 || core::in_train(observed, t.train)) newer_than_all = false;
  if (!cf.trains.empty() && !newer_than_all) {
    std::vector<std::string> names;
    for (const auto& t : cf.trains) names.push_back(t.train.text);
    v.status = FloorVerdict::Status::unsupported_train;
    v.supported = join(names);
    for (const auto& c : cf.cves) v.cves.push_back(c.id);
    return v;
  }
  if (cf.floor) {
    v.floor = cf.floor->text;
    for (const auto& c : cf.cves)
      if (cve_affects(c, observed)) v.cves.push_back(c.id);
    v.status = core::compare_versions(observed, *cf.floor) < 0 ? FloorVerdict::Status::below : FloorVerdict::Status::ok;
  }
  return v;
}

std::string kernel_source_package(std::string_view distro, std::string_view release, std::string_view package_version) {
  if (!distro.starts_with("ubuntu-")) return {};
  // "6.8.0-1057-aws": the flavour follows the ABI number.
  auto dash = release.find('-');
  if (dash == std::string_view::npos) return "linux";
  auto rest = release.substr(dash + 1);
  auto dash2 = rest.find('-');
  std::string flavour = dash2 == std::string_view::npos ? std::string() : std::string(rest.substr(dash2 + 1));
  for (std::string_view suffix : {"-64k", "-lpae"})
    if (flavour.size() > suffix.size() && flavour.ends_with(suffix)) flavour.resize(flavour.size() - suffix.size());
  std::string source = flavour.empty() || flavour == "generic" ? "linux" : "linux-" + flavour;
  // A kernel backported from a newer release: "6.8.0-124.124~22.04.1" on jammy is linux-hwe-6.8.
  auto tilde = package_version.find('~');
  if (tilde != std::string_view::npos) {
    auto v = core::parse_version(release);
    if (v && v->parts.size() >= 2) {
      std::string series = fmt::format("{}.{}", v->parts[0], v->parts[1]);
      source = source == "linux" ? "linux-hwe-" + series
               : source == "linux-lowlatency" ? "linux-lowlatency-hwe-" + series
                                              : source + "-" + series;
    }
  }
  return source;
}

KernelCveVerdict evaluate_kernel_cve(const KernelCve& cve, const core::Version& upstream, std::string_view distro,
                                     std::string_view package_version, std::string_view source) {
  using S = KernelCveVerdict::Status;
  KernelCveVerdict v;
  if (!distro.empty() && package_version.empty() && distro.starts_with("ubuntu-")) {
    // A host tree without /proc/version_signature: Ubuntu's release "6.8.0-101-generic" still names
    // the ABI, and a package's first upload of an ABI is ABI.ABI (6.8.0-124.124).
    const std::string own_source = source.empty() ? std::string("linux") : std::string(source);
    auto it = cve.distros.find(own_source == "linux" ? std::string(distro) : fmt::format("{}/{}", distro, own_source));
    std::string_view rel = upstream.text;
    auto d1 = rel.find('-');
    auto d2 = d1 == std::string_view::npos ? d1 : rel.find('-', d1 + 1);
    if (it != cve.distros.end() && d1 != std::string_view::npos) {
      std::string_view base = rel.substr(0, d1), abi = rel.substr(d1 + 1, d2 == std::string_view::npos ? d2 : d2 - d1 - 1);
      std::string_view fixed = it->second;
      auto fd = fixed.find('-'), fdot = fixed.find('.', fd == std::string_view::npos ? 0 : fd);
      auto run_abi = core::parse_uint(abi);
      if (fd != std::string_view::npos && fdot != std::string_view::npos && run_abi && fixed.substr(0, fd) == base) {
        auto fix_abi = core::parse_uint(fixed.substr(fd + 1, fdot - fd - 1));
        auto upload_end = fixed.find_first_not_of("0123456789", fdot + 1);
        auto fix_upload = core::parse_uint(fixed.substr(fdot + 1, upload_end == std::string_view::npos ? upload_end : upload_end - fdot - 1));
        if (fix_abi) {
          if (*run_abi < *fix_abi || (*run_abi == *fix_abi && fix_upload && *fix_upload == *fix_abi) || *run_abi > *fix_abi) {
            bool fixed_now = *run_abi >= *fix_abi;
            v.status = fixed_now ? S::fixed : S::vulnerable;
            v.basis = fmt::format("{} kernel ABI {} {} {} (from the release {}; the package version is not visible)", distro,
                                  *run_abi, fixed_now ? ">=" : "<", fixed, rel);
            return v;
          }
        }
      }
    }
  }
  if (!distro.empty() && !package_version.empty()) {
    const bool own = source.empty() || source == "linux";
    auto it = cve.distros.end();
    if (!own) it = cve.distros.find(fmt::format("{}/{}", distro, source));
    if (it == cve.distros.end() && own) it = cve.distros.find(std::string(distro));
    if (it != cve.distros.end()) {
      bool fixed = core::dpkg_compare(package_version, it->second) >= 0;
      v.status = fixed ? S::fixed : S::vulnerable;
      v.basis = fmt::format("{}{} kernel package {} {} {}", distro, own ? "" : fmt::format(" {}", source),
                            package_version, fixed ? ">=" : "<", it->second);
      return v;
    }
    bool distro_known = false;
    for (const auto& [key, _] : cve.distros)
      if (key == distro || key.starts_with(fmt::format("{}/", distro))) distro_known = true;
    if (distro_known && cve.fixed.empty()) {
      v.status = S::unknown;
      v.basis = fmt::format("no fix recorded for {} {}", distro, own ? std::string("linux") : std::string(source));
      return v;
    }
  }
  if (cve.fixed.empty()) {
    v.status = S::unknown;
    v.basis = distro.empty() ? std::string("no upstream fix recorded")
                             : fmt::format("no fix recorded for {} {} and no upstream fix", distro,
                                           source.empty() ? std::string("linux") : std::string(source));
    return v;
  }
  // Upstream: compare the release's first three numbers with the series' first fix.
  core::Version base = upstream;
  base.suffix.clear();
  base.pre_tag.reset();
  if (base.parts.size() > 3) base.parts.resize(3);
  if (core::compare_versions(base, cve.introduced) < 0) {
    v.status = S::not_affected;
    v.basis = fmt::format("upstream {} is older than {}, which introduced it", base.text, cve.introduced.text);
    return v;
  }
  std::string base_text = fmt::format("{}", fmt::join(base.parts, "."));
  for (const auto& f : cve.fixed) {
    bool same_series = f.parts.size() >= 2 && base.parts.size() >= 2 && f.parts[0] == base.parts[0] &&
                       f.parts[1] == base.parts[1];
    if (same_series) {
      bool fixed = core::compare_versions(base, f) >= 0;
      v.status = fixed ? S::fixed : S::vulnerable;
      v.basis = fmt::format("upstream {} {} {} (first fix in the {}.{} series)", base_text, fixed ? ">=" : "<", f.text,
                            f.parts[0], f.parts[1]);
      return v;
    }
  }
  if (!cve.fixed.empty() && core::compare_versions(base, cve.fixed.back()) >= 0) {
    v.status = S::fixed;
    v.basis = fmt::format("upstream {} >= {} (mainline fix)", base_text, cve.fixed.back().text);
    return v;
  }
  v.status = S::vulnerable;
  v.basis = fmt::format("upstream {} is in a series with no listed fix (below mainline fix {})", base_text,
                        cve.fixed.empty() ? std::string("?") : cve.fixed.back().text);
  return v;
}

}  // namespace cmax::audit
