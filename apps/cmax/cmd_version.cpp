#include <fmt/format.h>

#include "apps/cmax/command.h"
#include "report/audit_json.h"

namespace cmax::app {

Runner setup_version(CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "Print {\"schema\":\"cmax.version/1\",\"version\":...}");
  return [json] {
    if (*json)
      fmt::print("{{\"schema\": \"cmax.version/1\", \"version\": \"{}\"}}\n", report::cmax_version());
    else
      fmt::print("cmax {}\n", report::cmax_version());
    return 0;
  };
}

}  // namespace cmax::app
