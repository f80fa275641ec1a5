#include "apps/cmax/audit_flags.h"

#include <fmt/format.h>

#include "apps/cmax/command.h"

namespace cmax::app {

void add_render_flags(CLI::App& sub, AuditFlags& f) {
  sub.add_flag("--json", f.json, "Print the results as JSON (schema cmax.audit/1, docs/schemas/audit.md)");
  sub.add_flag("-v,--verbose", f.verbosity,
               "More detail; repeat: -v expected vs observed and reasons, -vv evidence, CVE ids and links, "
               "-vvv descriptions and remediation");
  sub.add_flag("--no-color", f.no_color, "No ANSI colours (the default when stdout is not a terminal)");
  sub.add_flag("--hide-na", f.hide_na, "Leave not_applicable findings out of the terminal report");
}

void add_audit_flags(CLI::App& sub, AuditFlags& f) {
  sub.add_option("--host-root", f.host_root,
                 "Audit the host tree under DIR (a mounted image or a fixture) instead of this machine; commands "
                 "are not run and live-only facts are unverified")
      ->check(CLI::ExistingDirectory);
  sub.add_option("--min-versions", f.min_versions,
                 "Version floors file (schema cmax.min-versions/1) instead of the built-in data/min-versions.json");
  sub.add_option("--harness", f.harness, "auto, standalone, slurm or kubernetes: which checks apply")
      ->check(CLI::IsMember({"auto", "standalone", "slurm", "kubernetes"}));
  sub.add_option("--command-timeout-ms", f.timeout_ms, "Deadline for each probed command (e.g. runc --version)")
      ->check(CLI::Range(50, 60000));
  sub.add_option("--enroot-import", f.enroot_import,
                 "Also run `enroot import` of IMAGE (e.g. docker://ubuntu:24.04) into a temporary file and remove it: "
                 "the one audit probe that pulls from a registry, so it runs only when asked (live host only)");
  add_render_flags(sub, f);
}

Result<audit::AuditOptions> to_audit_options(const AuditFlags& f) {
  audit::AuditOptions o;
  o.host_root = f.host_root;
  if (!f.min_versions.empty()) o.min_versions_file = f.min_versions;
  if (f.harness == "standalone") o.harness = audit::kStandalone;
  if (f.harness == "slurm") o.harness = audit::kSlurm;
  if (f.harness == "kubernetes") o.harness = audit::kKubernetes;
  o.command_timeout = std::chrono::milliseconds(f.timeout_ms);
  if (!f.enroot_import.empty()) o.enroot_import_image = f.enroot_import;
  return o;
}

report::TerminalOptions to_terminal_options(const AuditFlags& f) {
  report::TerminalOptions t;
  t.verbosity = f.verbosity;
  t.color = !f.no_color && stdout_is_tty();
  t.show_not_applicable = !f.hide_na;
  return t;
}

int environment_error(std::string_view message) {
  fmt::print(stderr, "cmax: {}\n", message);
  return audit::kExitUsage;
}

}  // namespace cmax::app
