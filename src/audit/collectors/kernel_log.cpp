// Xid lines in the kernel log of the last 7 days: /dev/kmsg on the live host (read without
// blocking, every record still in the ring buffer), the syslog files in a host root.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "audit/collectors/collector.h"
#include "audit/parse/kmsg_xid.h"
#include "core/strings.h"
#include "core/unique_fd.h"

namespace cmax::audit {
namespace {

constexpr std::uint64_t kWindowUsec = 7ull * 24 * 3600 * 1000000;
constexpr std::size_t kMaxRecords = 2'000'000;
constexpr auto kMaxReadTime = std::chrono::seconds(2);

struct XidTally {
  std::map<unsigned, std::map<std::string, unsigned>> by_code;  // code -> pci -> count
  unsigned total = 0;
  std::string sample;

  void add(const XidEvent& ev, std::string_view line) {
    ++by_code[ev.code][std::string(ev.pci)];
    ++total;
    if (sample.empty()) sample = core::clip(line, 200);
  }
  std::string summary() const {
    std::string out;
    for (const auto& [code, pcis] : by_code) {
      unsigned n = 0;
      std::string where;
      for (const auto& [pci, c] : pcis) {
        n += c;
        where += (where.empty() ? "" : " ") + pci;
      }
      out += fmt::format("{}Xid {} x{} ({})", out.empty() ? "" : "; ", code, n, where);
    }
    return out;
  }
};

void record(Facts& facts, const XidTally& t, const std::string& source, const std::string& window) {
  facts.present("kernel_log.xid_count", std::to_string(t.total), source, window);
  if (t.total > 0) {
    facts.present("kernel_log.xid_summary", t.summary(), source, window);
    facts.present("kernel_log.xid_sample", t.sample, source);
  }
}

void scan_kmsg(const CollectContext& ctx, Facts& facts) {
  core::UniqueFd fd(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    facts.error("kernel_log.xid_count", "/dev/kmsg",
                fmt::format("open /dev/kmsg: {}; run as root or with CAP_SYSLOG", std::strerror(errno)));
    return;
  }
  double uptime_s = 0;
  if (auto up = read_optional(ctx, "/proc/uptime")) uptime_s = std::strtod(up->c_str(), nullptr);
  std::uint64_t now_usec = static_cast<std::uint64_t>(uptime_s * 1e6);
  std::uint64_t cutoff = now_usec > kWindowUsec ? now_usec - kWindowUsec : 0;

  XidTally tally;
  std::uint64_t first_usec = 0, lost = 0;
  bool first = true, truncated = false;
  std::size_t records = 0;
  auto deadline = std::chrono::steady_clock::now() + kMaxReadTime;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {  // overwritten while reading: count and carry on
        ++lost;
        continue;
      }
      break;  // EAGAIN: the end of the buffer
    }
    if (n == 0) break;
    if (++records > kMaxRecords || std::chrono::steady_clock::now() > deadline) {
      truncated = true;
      break;
    }
    auto rec = parse_kmsg_record(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!rec) continue;
    if (first) {
      first_usec = rec->usec;
      first = false;
    }
    if (rec->usec < cutoff) continue;
    if (auto ev = parse_xid(rec->message)) tally.add(*ev, rec->message);
  }
  double covered_h = (now_usec - std::max(first_usec, cutoff)) / 3.6e9;
  std::string window = fmt::format("ring buffer covers the last {:.1f} h of the 7-day window ({} records{}{})", covered_h,
                                   records, lost ? fmt::format(", {} overwritten while reading", lost) : "",
                                   truncated ? ", stopped at the read bound" : "");
  record(facts, tally, "/dev/kmsg", window);
}

void scan_files(const CollectContext& ctx, Facts& facts) {
  XidTally tally;
  std::string sources;
  for (std::string_view path : {"/var/log/kern.log", "/var/log/kern.log.1", "/var/log/messages", "/var/log/syslog"}) {
    std::string err;
    if (!ctx.host.exists(path)) continue;
    auto text = ctx.host.read_prefix(path, 256u << 20);
    if (!text) continue;
    sources += (sources.empty() ? "" : ", ") + std::string(path);
    for (auto line : core::split_lines(*text))
      if (auto ev = parse_xid(line)) tally.add(*ev, line);
  }
  if (sources.empty()) {
    facts.error("kernel_log.xid_count", "/var/log/kern.log",
                "no kernel log file in the host root (kern.log, messages, syslog); the Xid history is unknown");
    return;
  }
  record(facts, tally, sources, "whole files (host root: the 7-day window is not applied)");
}

}  // namespace

void collect_kernel_log(const CollectContext& ctx, Facts& facts) {
  if (ctx.host.is_live())
    scan_kmsg(ctx, facts);
  else
    scan_files(ctx, facts);
}

}  // namespace cmax::audit
