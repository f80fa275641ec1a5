// Xid lines in the kernel log of the last 7 days, through the signal engine (src/signals):
// /dev/kmsg on the live host (every record still in the ring buffer, read without blocking),
// the syslog files of a host root. Xid floods count once per incident; Xid 45s attributed to
// the Xid that caused them are not counted as faults of their own.

#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/collectors/collector.h"
#include "core/clock.h"
#include "core/strings.h"
#include "signals/catalog.h"
#include "signals/scanner.h"

namespace cmax::audit {
namespace {

constexpr double kWindowSeconds = 7.0 * 24 * 3600;

void record(Facts& facts, const std::vector<signals::Incident>& incidents, const std::string& source,
            const std::string& window, double cutoff) {
  std::map<int, std::pair<std::uint64_t, std::set<std::string>>> by_code;
  std::uint64_t total = 0;
  std::string sample;
  signals::Action strongest = signals::Action::ignore;
  for (const auto& i : incidents) {
    if (i.kind != signals::Kind::xid) continue;
    if (i.has_time && cutoff > 0 && i.last_t < cutoff) continue;
    auto& slot = by_code[i.code];
    slot.first += i.count;
    slot.second.insert(i.device);
    total += i.count;
    if (sample.empty()) sample = core::clip(i.sample, 200);
    strongest = std::max(strongest, i.action);
  }
  facts.present("kernel_log.xid_count", std::to_string(total), source, window);
  if (total == 0) return;
  std::string summary;
  for (const auto& [code, slot] : by_code) {
    std::string where;
    for (const auto& d : slot.second) where += (where.empty() ? "" : " ") + d;
    summary += fmt::format("{}Xid {} x{} ({})", summary.empty() ? "" : "; ", code, slot.first, where);
  }
  facts.present("kernel_log.xid_summary", summary, source, window);
  facts.present("kernel_log.xid_sample", sample, source);
  facts.present("kernel_log.xid_action", std::string(signals::to_string(strongest)), source,
                "strongest action among the Xid incidents (cmax scan for the full list)");
}

}  // namespace

void collect_kernel_log(const CollectContext& ctx, Facts& facts) {
  auto catalog = signals::Catalog::builtin();
  if (!catalog) {
    facts.error("kernel_log.xid_count", "cmax", catalog.error().message);
    return;
  }
  signals::Correlator correlator(*catalog);
  signals::ScanOptions opt;
  // Syslog stamps print no year: date them in the current one.
  opt.assumed_year = core::utc_year(std::chrono::system_clock::now());
  auto scanner = signals::Scanner::create(correlator, opt);
  if (!scanner) {
    facts.error("kernel_log.xid_count", "cmax", scanner.error().message);
    return;
  }
  if (ctx.host.is_live()) {
    auto src = signals::open_kmsg_source();
    if (!src) {
      facts.error("kernel_log.xid_count", "/dev/kmsg", src.error().message);
      return;
    }
    auto r = scanner->scan(**src, "localhost");
    if (!r) {
      facts.error("kernel_log.xid_count", "/dev/kmsg", r.error().message);
      return;
    }
    double uptime = 0;
    if (auto up = read_optional(ctx, "/proc/uptime")) uptime = std::strtod(up->c_str(), nullptr);
    double cutoff = uptime > kWindowSeconds ? uptime - kWindowSeconds : 0;
    const auto& st = scanner->stats();
    std::string window = fmt::format("ring buffer: {:.1f} MB since boot {:.1f} h ago{}", st.bytes / 1e6, uptime / 3600,
                                     st.lost_records ? fmt::format(", {} records overwritten while reading", st.lost_records) : "");
    record(facts, correlator.incidents(), "/dev/kmsg", window, cutoff);
    if (st.drill_lines > 0)
      facts.present("kernel_log.drill_lines", std::to_string(st.drill_lines), "/dev/kmsg",
                    fmt::format("lines fault drills wrote ({}), not counted as faults",
                                fmt::join(scanner->drills_seen(), " ")));
    return;
  }
  std::string sources;
  for (std::string_view path : {"/var/log/kern.log", "/var/log/kern.log.1", "/var/log/messages", "/var/log/syslog"}) {
    if (!ctx.host.exists(path)) continue;
    // Through HostRoot, so an image's absolute symlinks resolve inside the image.
    auto text = ctx.host.read_prefix(path, 256u << 20);
    if (!text || !scanner->scan_text(*text, "host")) continue;
    sources += (sources.empty() ? "" : ", ") + std::string(path);
  }
  if (sources.empty()) {
    facts.error("kernel_log.xid_count", "/var/log/kern.log",
                "no kernel log file in the host root (kern.log, messages, syslog); the Xid history is unknown");
    return;
  }
  record(facts, correlator.incidents(), sources, "whole files (host root: the 7-day window is not applied)", 0);
}

}  // namespace cmax::audit
