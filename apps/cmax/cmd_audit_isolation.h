#pragma once
// cmax audit isolation: the `isolation` subcommand of `cmax audit`.

#include <CLI/CLI.hpp>

#include "apps/cmax/command.h"

namespace cmax::app {

/// The parsed subcommand and its runner.
struct SubcommandRunner {
  CLI::App *app = nullptr;
  Runner run;
};

/// Adds `isolation` under `audit` and returns it with the runner that reads its
/// flags.
SubcommandRunner setup_audit_isolation(CLI::App &audit);

}  // namespace cmax::app
