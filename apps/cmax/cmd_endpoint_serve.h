#pragma once
#include <CLI/CLI.hpp>
#include "apps/cmax/command.h"
namespace cmax::app {
/// Registers `cmax endpoint serve`'s flags on `serve` and returns its runner (apps/cmax/cmd_endpoint_serve.cpp).
Runner setup_endpoint_serve(CLI::App& serve);
}
