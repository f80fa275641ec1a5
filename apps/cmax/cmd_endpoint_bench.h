#pragma once
// cmax endpoint bench and cmax endpoint compare (docs/endpoint-bench.md).

#include "apps/cmax/command.h"

namespace cmax::app {

Runner setup_endpoint_bench(CLI::App& bench);
Runner setup_endpoint_compare(CLI::App& compare);

}  // namespace cmax::app
