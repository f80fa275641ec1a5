#pragma once
// The subcommand table: each command registers its flags on a CLI11 subcommand and runs.

#include <functional>
#include <memory>
#include <string_view>

#include <CLI/CLI.hpp>

namespace cmax::app {

/// A parsed command ready to run; returns the process exit code.
using Runner = std::function<int()>;

struct Command {
  std::string_view name;
  std::string_view summary;
  /// Adds flags to `sub` and returns the runner that reads them after parsing.
  Runner (*setup)(CLI::App& sub);
};

Runner setup_run(CLI::App& sub);
Runner setup_audit(CLI::App& sub);
Runner setup_collect(CLI::App& sub);
Runner setup_scan(CLI::App& sub);
Runner setup_check(CLI::App& sub);
Runner setup_drill(CLI::App& sub);
Runner setup_nccl(CLI::App& sub);
Runner setup_endpoint(CLI::App& sub);
Runner setup_sla(CLI::App& sub);
Runner setup_score(CLI::App& sub);
Runner setup_report(CLI::App& sub);
Runner setup_version(CLI::App& sub);
Runner setup_floors(CLI::App& sub);

/// True when stdout is a terminal (colour, progress lines).
bool stdout_is_tty();

/// Raises the soft RLIMIT_NOFILE to the hard limit: the default soft limit (often 1024) would cap
/// the concurrent streams of cmax endpoint serve and bench, one socket each.
void raise_fd_limit();

}  // namespace cmax::app
