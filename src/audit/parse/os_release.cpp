#include "audit/parse/os_release.h"

#include "core/strings.h"

namespace cmax::audit {

std::map<std::string, std::string, std::less<>> parse_os_release(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto line : core::split_lines(text)) {
    auto kv = core::parse_key_value(line);
    if (!kv) continue;
    out.emplace(std::string(kv->key), std::string(core::unquote(kv->value)));
  }
  return out;
}

std::string kernel_package_version(std::string_view proc_version, std::string_view version_signature) {
  version_signature = core::trim(version_signature);
  if (version_signature.starts_with("Ubuntu ")) {
    auto v = version_signature.substr(7);
    v = v.substr(0, v.find(' '));
    // "5.15.0-97.107-generic": drop the flavour after the last '-'.
    auto dash = v.rfind('-');
    if (dash != std::string_view::npos && dash > v.find('-')) v = v.substr(0, dash);
    return std::string(v);
  }
  auto at = proc_version.find(" Debian ");
  if (at == std::string_view::npos) return {};
  auto v = proc_version.substr(at + 8);
  v = v.substr(0, v.find_first_of(" (\n"));
  if (v.empty() || !(v[0] >= '0' && v[0] <= '9')) return {};
  return std::string(v);
}

std::string kernel_upstream_version(std::string_view package_version, std::string_view version_signature) {
  version_signature = core::trim(version_signature);
  if (version_signature.starts_with("Ubuntu ")) {
    auto last = version_signature.rfind(' ');
    auto v = version_signature.substr(last + 1);
    if (!v.empty() && v[0] >= '0' && v[0] <= '9') return std::string(v);
    return {};
  }
  if (package_version.empty()) return {};
  return std::string(package_version.substr(0, package_version.find('-')));
}

}  // namespace cmax::audit
