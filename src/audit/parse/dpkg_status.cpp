#include "audit/parse/dpkg_status.h"

#include "core/strings.h"

namespace cmax::audit {

std::map<std::string, std::string, std::less<>> parse_dpkg_status(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  std::string_view package, version;
  bool installed = false;
  auto flush = [&] {
    if (installed && !package.empty() && !version.empty()) out.emplace(std::string(package), std::string(version));
    package = version = {};
    installed = false;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') continue;  // continuation of a multi-line field
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = core::trim(line.substr(colon + 1));
    if (key == "Package") {
      package = value;
    } else if (key == "Version") {
      version = value;
    } else if (key == "Status") {
      installed = value.ends_with(" installed") || value == "installed";
    }
  }
  flush();
  return out;
}

}  // namespace cmax::audit
