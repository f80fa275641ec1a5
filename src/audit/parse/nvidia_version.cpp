#include "audit/parse/nvidia_version.h"

#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit {

std::optional<NvidiaDriverInfo> parse_nvidia_version(std::string_view text) {
  NvidiaDriverInfo info;
  bool found = false;
  for (auto line : core::split_lines(text)) {
    if (line.starts_with("NVRM version:")) {
      auto rest = line.substr(13);
      info.open_module = core::contains_icase(rest, "open kernel module");
      for (std::string_view arch : {"x86_64", "aarch64", "ppc64le"})
        if (rest.find(arch) != std::string_view::npos) info.arch = std::string(arch);
      // The version is the first token of the form N.N[.N] after "Module".
      auto module_at = rest.find("Module");
      auto tail = module_at == std::string_view::npos ? rest : rest.substr(module_at + 6);
      auto tok = core::find_version_token(tail);
      if (!tok) return std::nullopt;
      info.version = std::string(*tok);
      found = true;
    } else if (line.starts_with("GCC version:")) {
      info.gcc = std::string(core::trim(line.substr(12)));
    }
  }
  if (!found) return std::nullopt;
  return info;
}

}  // namespace cmax::audit
