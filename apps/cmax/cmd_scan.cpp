// cmax scan [FILE...]: kernel-log signals, classified and correlated into incidents.
// No files: this machine's /dev/kmsg (or the journal with --journal --since).

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/command.h"
#include "core/clock.h"
#include "report/run_dir.h"
#include "report/scan_report.h"
#include "signals/catalog.h"
#include "signals/host_map.h"
#include "signals/pstore.h"
#include "signals/scanner.h"

namespace cmax::app {
namespace {

struct ScanFlags {
  std::vector<std::string> files;
  bool json = false;
  std::string out;  ///< run directory: scan.json there too
  bool journal = false;
  std::string pstore;  ///< a pstore directory to read (the previous boot's last words)
  int driver_branch = -1;
  std::string since = "7d";
  std::string config;
  std::string node;
  bool kernel_only = false;
  bool no_color = false;
  int timeout_s = 600;
  std::string prefilter;  ///< "" = the best this processor has
};

// "7d", "12h", "30m", "90s" -> seconds.
std::optional<long long> parse_duration(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  long long n = 0;
  for (char c : s.substr(0, s.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  switch (s.back()) {
    case 'd': return n * 86400;
    case 'h': return n * 3600;
    case 'm': return n * 60;
    case 's': return n;
  }
  return std::nullopt;
}

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

int run_scan(const ScanFlags& f) {
  auto catalog = signals::Catalog::builtin();
  if (!catalog) return environment_error(catalog.error().message);
  if (!f.config.empty()) {
    std::ifstream in(f.config, std::ios::binary);
    if (!in) return environment_error(fmt::format("open {}: cannot read the --config file", f.config));
    std::stringstream ss;
    ss << in.rdbuf();
    if (auto r = catalog->apply_config(ss.str(), f.config); !r) return environment_error(r.error().message);
  }
  core::SystemClock clock;
  signals::ScanOptions opt;
  opt.assumed_year = core::utc_year(clock.now());
  opt.kernel_origin_only = f.kernel_only;
  opt.driver_branch = f.driver_branch;
  if (f.files.empty()) {
    // This host's own log: its RDMA devices map to PCI addresses, and its driver names its branch.
    opt.live_sys_root = "/sys";
    if (opt.driver_branch <= 0) opt.driver_branch = signals::nvidia_driver_branch();
  }
  if (f.prefilter == "scalar") opt.isa = signals::Isa::scalar;
  if (f.prefilter == "avx2") opt.isa = signals::Isa::avx2;
  signals::Correlator correlator(*catalog), drills(*catalog);
  auto scanner = signals::Scanner::create(correlator, opt);
  if (!scanner) return environment_error(scanner.error().message);
  scanner->set_drill_correlator(drills);

  report::ScanReport rep;
  auto t0 = std::chrono::steady_clock::now();
  auto note_error = [&](const Error& e) {
    rep.errors.push_back(e.message);
    fmt::print(stderr, "cmax scan: {} (results so far are kept)\n", e.message);
  };
  auto scan_one = [&](Result<std::unique_ptr<signals::ByteSource>> src, const std::string& node) {
    if (!src) return note_error(src.error());
    rep.sources.push_back((*src)->describe());
    if (auto r = scanner->scan(**src, node); !r) note_error(r.error());
  };
  if (!f.pstore.empty()) {
    // The previous boot's crash records; each is scanned as the kernel log it holds.
    auto records = signals::read_pstore(f.pstore);
    if (!records) {
      note_error(records.error());
    } else {
      if (records->empty()) fmt::print(stderr, "cmax scan: no pstore records in {}\n", f.pstore);
      for (const auto& r : *records) {
        rep.sources.push_back(r.header ? fmt::format("{} (pstore {}#{} Part{})", r.path, r.header->why, r.header->count,
                                                     r.header->part)
                                       : fmt::format("{} (pstore)", r.path));
        if (auto s = scanner->scan_text(r.text, f.node.empty() ? hostname() : f.node); !s) note_error(s.error());
      }
    }
  } else if (!f.files.empty()) {
    for (const auto& path : f.files) {
      auto what = scanner->scan_path(path, f.node.empty() ? signals::node_from_path(path) : f.node);
      rep.sources.push_back(what ? *what : path);
      if (!what) note_error(what.error());
    }
  } else if (f.journal) {
    auto secs = parse_duration(f.since);
    if (!secs) return environment_error(fmt::format("--since {}: use a number and d, h, m or s (7d, 12h)", f.since));
    auto since = std::chrono::system_clock::to_time_t(clock.now() - std::chrono::seconds(*secs));
    std::tm st{};
    ::gmtime_r(&since, &st);
    std::string stamp = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", st.tm_year + 1900, st.tm_mon + 1,
                                    st.tm_mday, st.tm_hour, st.tm_min, st.tm_sec);
    // Not "journalctl -k": it implies --boot=0, and a crash is in the boots before this one.
    scan_one(signals::open_process_source({"journalctl", "_TRANSPORT=kernel", "-o", "short-iso", "--no-pager", "--since", stamp},
                                          std::chrono::seconds(f.timeout_s)),
             f.node.empty() ? hostname() : f.node);
  } else {
    scan_one(signals::open_kmsg_source(), f.node.empty() ? hostname() : f.node);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.stats = scanner->stats();
  rep.prefilter = std::string(signals::to_string(scanner->isa()));
  rep.incidents = correlator.take_incidents();
  rep.drills = drills.take_incidents();
  rep.merged_past_cap = correlator.merged_past_cap();
  rep.dropped_past_cap = correlator.dropped_past_cap();
  if (!f.out.empty()) {
    auto w = report::write_stage_document(f.out, "scan.json", report::scan_to_json(rep));
    if (!w) return environment_error(w.error().message);
  }
  if (f.json)
    report::write_scan_json(rep, stdout);
  else
    fmt::print("{}", report::render_scan_terminal(rep, !f.no_color && stdout_is_tty()));
  int code = report::scan_exit_code(rep);
  if (code == 0 && !rep.errors.empty()) return audit::kExitUsage;
  return code;
}

}  // namespace

Runner setup_scan(CLI::App& sub) {
  auto f = std::make_shared<ScanFlags>();
  sub.description(
      "Classify every GPU, NVSwitch, NIC, CPU, memory, PCIe, disk and filesystem fault in kernel logs and\n"
      "correlate the lines into incidents, each with the recommended action (ignore, monitor, restart_app,\n"
      "reset_gpu, drain, reboot_node, replace). Files may be plain, gzip or zstd (detected by content); the\n"
      "node comes from the line's syslog/journal host, else the file name (an srun 'N: ' prefix adds /taskN).\n"
      "With no files: this machine's /dev/kmsg, the journal with --journal, or pstore with --pstore.\n"
      "Exit codes: 0 nothing needs action; 1 an unresolved incident needs restart_app or stronger;\n"
      "3 usage error, or a source failed and nothing needs action (partial results are still printed).");
  sub.add_option("FILE", f->files, "Kernel logs: dmesg, syslog/kern.log, journalctl -o short[-iso], srun -l output");
  sub.add_flag("--json", f->json, "Print {\"schema\": \"cmax.scan/1\", ...} (docs/schemas/scan.md)");
  sub.add_option("--out", f->out, "Also write scan.json into this run directory (created if missing)");
  sub.add_flag("--journal", f->journal, "Read the kernel journal (journalctl _TRANSPORT=kernel, every boot in --since) instead of /dev/kmsg");
  sub.add_option("--since", f->since, "With --journal: how far back (7d, 12h, 30m), across boots")->capture_default_str();
  sub.add_option("--pstore", f->pstore,
                 "Read the crash records the previous boot left in this pstore directory (/sys/fs/pstore, or\n"
                 "systemd-pstore's /var/lib/systemd/pstore/TIME) instead: its panic, oops or lockup")
      ->expected(0, 1)
      ->default_str("/sys/fs/pstore");
  sub.add_option("--config", f->config, "Overrides of actions, ignore lists, thresholds (docs/signals-config.md)");
  sub.add_option("--node", f->node, "Name for lines without a host field (default: from the file name or hostname)");
  sub.add_flag("--kernel-only", f->kernel_only,
               "Drop /dev/kmsg records written from userspace (an injected '<3>NVRM: Xid' becomes facility user)");
  sub.add_option("--timeout", f->timeout_s, "With --journal: seconds before journalctl is stopped")->check(CLI::Range(1, 86400));
  sub.add_option("--driver-branch", f->driver_branch,
                 "NVIDIA driver branch of the logs' nodes (570, 575...): picks the Xid 144-150 decode (V1 before R575,\n"
                 "V2 from R575). Default: for this machine's own log, /proc/driver/nvidia/version; otherwise\n"
                 "unknown: both generations are tried, the stronger action is taken and the reason says so")
      ->check(CLI::Range(1, 9999));
  sub.add_flag("--no-color", f->no_color, "No ANSI colours");
  sub.add_option("--prefilter", f->prefilter,
                 "Instruction set of the first pass: avx512, avx2 or scalar (default: the best this CPU has;\n"
                 "a lower one is for benchmarks and bug reports; stats.prefilter says which ran)")
      ->check(CLI::IsMember({"avx512", "avx2", "scalar"}));
  return [f] { return run_scan(*f); };
}

}  // namespace cmax::app
