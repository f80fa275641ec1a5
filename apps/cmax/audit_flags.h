#pragma once
// The flags `cmax audit` and `cmax run` share, and their translation into AuditOptions.

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "audit/audit.h"
#include "core/result.h"
#include "report/terminal.h"

namespace cmax::app {

struct AuditFlags {
  std::string host_root = "/";
  std::string min_versions;
  std::string harness = "auto";
  int timeout_ms = 3000;
  bool json = false;
  int verbosity = 0;
  bool no_color = false;
  bool hide_na = false;
  std::string enroot_import;  ///< image to `enroot import` as a probe (it is pulled); "" = not run
};

void add_audit_flags(CLI::App& sub, AuditFlags& flags);
void add_render_flags(CLI::App& sub, AuditFlags& flags);
Result<audit::AuditOptions> to_audit_options(const AuditFlags& flags);
report::TerminalOptions to_terminal_options(const AuditFlags& flags);

/// Prints `message` to stderr as "cmax: ..." and returns exit code 3.
int environment_error(std::string_view message);

}  // namespace cmax::app
