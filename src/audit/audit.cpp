#include "audit/audit.h"

#include <fmt/format.h>

#include "audit/check.h"
#include "audit/collectors/collector.h"
#include "audit/peer_view.h"
#include "core/host.h"
#include "core/strings.h"

namespace cmax::audit {

Result<Floors> load_floors(const AuditOptions& options) {
  if (options.min_versions_file) return load_floors_file(*options.min_versions_file);
  return builtin_floors();
}

Harness detect_harness(const Facts& facts) {
  if (facts.is_present("k8s.in_pod") || facts.is_present("k8s.kubelet_config")) return kKubernetes;
  if (facts.is_present("slurm.conf.path") && facts.is_present("slurm.tool.sinfo")) return kSlurm;
  return kStandalone;
}

int exit_code_for(const std::vector<Finding>& findings) {
  int code = kExitOk;
  for (const auto& f : findings) {
    if (f.outcome != Outcome::fail) continue;
    if (f.security) return kExitSecurityFail;
    code = kExitFail;
  }
  return code;
}

Result<AuditReport> run_audit(const AuditOptions& options) {
  core::SystemClock system_clock;
  const core::Clock& clock = options.clock ? *options.clock : system_clock;
  auto floors = load_floors(options);
  if (!floors) return Unexpected<Error>{floors.error()};

  core::HostRoot host(options.host_root);
  if (!host.is_live() && !host.exists("/"))
    return fail("open host root {}: no such directory; pass --host-root a directory that holds a host tree",
                options.host_root);

  AuditReport report;
  auto t0 = std::chrono::steady_clock::now();
  report.started_at = core::format_utc(clock.now());
  report.host_root = host.root();
  report.floors_origin = floors->origin;
  report.floors_updated = floors->updated;

  CollectContext cctx{host, options.command_timeout, options.path_env};
  cctx.enroot_import_image = options.enroot_import_image;
  cctx.enroot_import_timeout = options.enroot_import_timeout;
  report.facts = collect_all(cctx, all_collectors());
  report.host = std::string(report.facts.value_or("host.name", "unknown"));
  report.harness = options.harness ? *options.harness : detect_harness(report.facts);

  CheckContext ctx{report.facts, *floors, report.harness, clock};
  report.findings = run_checks(all_checks(), ctx);
  annotate_peer_view(report.findings, report.facts);
  report.finished_at = core::format_utc(clock.now());
  report.duration = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  return report;
}

}  // namespace cmax::audit
