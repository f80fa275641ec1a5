#include "feeds/phrase.h"

#include <regex>

#include "core/strings.h"

namespace cmax::feeds {
namespace {

// A dotted release: 595.71.05, 28.4702, 1.5.0-rc.3 (the pre-release kept for the caller).
const std::regex& version_re() {
  static const std::regex re(R"((?:^|[^0-9A-Za-z.])v?([0-9]+(?:\.[0-9]+)+(?:-rc\.?[0-9]+)?)(?:U([0-9]+))?(?:\s+Update\s+([0-9]+))?)",
                             std::regex::icase);
  return re;
}

}  // namespace

std::vector<std::string> fixed_versions_in(std::string_view phrase) {
  std::string p(core::trim(phrase));
  // The part before a parenthesis: "595.71.05(vGPU 20.1)" names the driver first; what follows names
  // another product's release. "24.35.3006 or later(BFB 3.9.5 or later)" likewise.
  if (auto paren = p.find('('); paren != std::string::npos) p = p.substr(0, paren);
  std::vector<std::string> out;
  const std::string lower = core::to_lower(p);
  // Affected phrases never name a fix.
  for (const char* affected : {"prior to", "up to", "and older", "and earlier", "and prior", "before", " to ",
                               "after", "all versions"})
    if (lower.find(affected) != std::string::npos) return out;
  for (auto it = std::sregex_iterator(p.begin(), p.end(), version_re()); it != std::sregex_iterator(); ++it) {
    std::string v = (*it)[1].str();
    if ((*it)[2].matched) v += "." + (*it)[2].str();       // 12.6U1 -> 12.6.1
    else if ((*it)[3].matched) v += "." + (*it)[3].str();  // 12.9 Update 1 -> 12.9.1
    out.push_back(v);
  }
  return out;
}

std::optional<std::string> inclusive_affected_in(std::string_view phrase) {
  std::string p(core::trim(phrase));
  std::string lower = core::to_lower(p);
  if (lower.find("and older") == std::string::npos && lower.find("and earlier") == std::string::npos &&
      lower.find("and prior") == std::string::npos)
    return std::nullopt;
  std::smatch m;
  if (std::regex_search(p, m, version_re())) return m[1].str();
  return std::nullopt;
}

std::string date_part(std::string_view timestamp) {
  auto t = core::trim(timestamp);
  if (t.size() < 10 || t[4] != '-' || t[7] != '-') return {};
  return std::string(t.substr(0, 10));
}

}  // namespace cmax::feeds
