// cmax collect: this node's facts, as one JSON document (cmax.collect/1) for a controller that runs
// `cmax run` across the cluster: the audit's facts and findings, the kernel-log scan, and the active
// checks asked for. `--frame` writes it as short framed lines (cluster/frame.h) that survive srun's
// line splitting. Read-only, like the audit.
// Exit codes: 0 the document was written (whatever it says); 3 usage or it could not be made.

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/command.h"
#include "cluster/collect_doc.h"
#include "cluster/frame.h"
#include "core/host.h"
#include "health/runner.h"
#include "report/audit_json.h"
#include "report/scan_report.h"
#include "signals/catalog.h"
#include "signals/scanner.h"

namespace cmax::app {
namespace {

struct CollectFlags {
  AuditFlags audit;
  std::string node;
  bool frame = false;
  bool no_scan = false;
  bool kmsg = false;       ///< read /dev/kmsg even when the host root is not "/" (a pod's /host)
  bool json = true;        ///< the only output; the flag is accepted for symmetry with other commands
  std::string kernel_log;  ///< a file instead of /dev/kmsg
  std::string checks;      ///< active check groups ("storage,cpu"); empty: none
  std::string path;        ///< storage checks' directory
  int check_timeout_s = 60;
};

std::string node_name(const std::string& given) {
  if (!given.empty()) return given;
  for (const char* var : {"SLURMD_NODENAME", "CMAX_NODE_NAME", "NODE_NAME"})
    if (const char* v = std::getenv(var); v && *v) return v;
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

// The kernel log through the same engine as `cmax scan`; errors are kept in the report.
report::ScanReport scan_kernel_log(const CollectFlags& f, const std::string& node, const core::Clock& clock) {
  report::ScanReport rep;
  auto t0 = std::chrono::steady_clock::now();
  auto catalog = signals::Catalog::builtin();
  if (!catalog) {
    rep.errors.push_back(catalog.error().message);
    return rep;
  }
  signals::ScanOptions opt;
  opt.assumed_year = core::utc_year(clock.now());
  signals::Correlator correlator(*catalog), drills(*catalog);
  auto scanner = signals::Scanner::create(correlator, opt);
  if (!scanner) {
    rep.errors.push_back(scanner.error().message);
    return rep;
  }
  scanner->set_drill_correlator(drills);
  if (!f.kernel_log.empty()) {
    auto what = scanner->scan_path(f.kernel_log, node);
    rep.sources.push_back(what ? *what : f.kernel_log);
    if (!what) rep.errors.push_back(what.error().message);
  } else {
    auto src = signals::open_kmsg_source();
    if (!src) {
      rep.errors.push_back(src.error().message);
    } else {
      rep.sources.push_back((*src)->describe());
      if (auto r = scanner->scan(**src, node); !r) rep.errors.push_back(r.error().message);
    }
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.stats = scanner->stats();
  rep.prefilter = std::string(signals::to_string(scanner->isa()));
  rep.incidents = correlator.take_incidents();
  rep.drills = drills.take_incidents();
  rep.merged_past_cap = correlator.merged_past_cap();
  rep.dropped_past_cap = correlator.dropped_past_cap();
  return rep;
}

int collect_main(const CollectFlags& f) {
  auto t0 = std::chrono::steady_clock::now();
  auto options = to_audit_options(f.audit);
  if (!options) return environment_error(options.error().message);
  const std::string node = node_name(f.node);
  core::SystemClock clock;
  std::vector<std::string> errors;

  std::string audit_json;
  if (auto report = audit::run_audit(*options)) audit_json = report::audit_to_json(*report, audit::exit_code_for(report->findings));
  else errors.push_back("audit: " + report.error().message);

  std::string scan_json;
  if (!f.no_scan) {
    core::HostRoot host(options->host_root);
    if (host.is_live() || f.kmsg || !f.kernel_log.empty()) {
      auto rep = scan_kernel_log(f, node, clock);
      for (const auto& e : rep.errors) errors.push_back("scan: " + e);
      scan_json = report::scan_to_json(rep);
    } else {
      errors.push_back(fmt::format("scan: not run: the host root {} is not this machine, so its /dev/kmsg cannot be read "
                                   "(pass --kmsg in a privileged pod, whose /dev/kmsg is the node's, or --kernel-log FILE)", options->host_root));
    }
  }

  std::vector<health::CheckResult> checks;
  if (!f.checks.empty()) {
    auto groups = health::parse_groups(f.checks);
    if (!groups) return environment_error(groups.error().message);
    auto thresholds = health::Thresholds::builtin();
    if (!thresholds) return environment_error(thresholds.error().message);
    health::ActiveOptions ao;
    ao.host_root = options->host_root;
    ao.storage_path = f.path;
    ao.check_timeout = std::chrono::seconds(f.check_timeout_s);
    auto ran = health::run_active(ao, *thresholds, *groups);
    if (ran) checks = std::move(*ran);
    else errors.push_back("checks: " + ran.error().message);
  }

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto doc = cluster::render_collect_doc(node, seconds, audit_json, scan_json, checks, errors);
  if (!doc) return environment_error(doc.error().message);
  std::string out = f.frame ? cluster::encode_frames(node, *doc) : *doc + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

Runner setup_collect(CLI::App& sub) {
  auto f = std::make_shared<CollectFlags>();
  sub.description(
      "This node's facts as one JSON document (schema cmax.collect/1, docs/schemas/collect.md): the audit's\n"
      "facts and findings, the kernel-log scan (/dev/kmsg, or --kernel-log FILE) and the stages that failed.\n"
      "`cmax run --harness slurm|kubernetes` runs it on every node and merges the answers; run it by hand to\n"
      "see what a node reports. Read-only.\n"
      "Exit codes: 0 the document was written; 3 usage or environment error.");
  sub.add_option("--host-root", f->audit.host_root, "Audit the host tree under this directory (default /)");
  sub.add_option("--min-versions", f->audit.min_versions, "Version floors file (default: built in)");
  sub.add_option("--timeout-ms", f->audit.timeout_ms, "Timeout of each command the audit runs (default 3000)");
  sub.add_option("--node", f->node, "Node name in the document (default $SLURMD_NODENAME, $NODE_NAME, hostname)");
  sub.add_option("--kernel-log", f->kernel_log, "Scan this log file instead of /dev/kmsg");
  sub.add_flag("--no-scan", f->no_scan, "Skip the kernel-log scan");
  sub.add_flag("--kmsg", f->kmsg, "Scan /dev/kmsg even with --host-root (a privileged pod sees the node's kernel log)");
  sub.add_flag("--json", f->json, "JSON output (the default and only format; accepted for scripts)");
  sub.add_option("--checks", f->checks,
                 "Also run these active check groups (storage, memory, cpu, gpu; docs/checks-active.md), each in a "
                 "bounded child");
  sub.add_option("--path", f->path, "Directory for the storage checks (a shared filesystem's scratch directory)");
  sub.add_option("--check-timeout-s", f->check_timeout_s, "Time limit of each active check (default 60)")
      ->check(CLI::Range(1, 3600));
  sub.add_flag("--frame", f->frame, "Write the document as framed lines for a fan-out through srun (cluster/frame.h)");
  return [f] { return collect_main(*f); };
}

}  // namespace cmax::app
