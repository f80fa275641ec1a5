#include "apps/cmax-collbench/format.h"

#include <cstdarg>
#include <cstdio>

namespace cmax::collbench {
namespace {

// printf, because the point is to reproduce nccl-tests' printf output exactly (%g, %7.1f rounding).
__attribute__((format(printf, 1, 2))) std::string cformat(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (n < 0) return {};
  return std::string(buf, static_cast<std::size_t>(n) < sizeof(buf) ? static_cast<std::size_t>(n)
                                                                    : sizeof(buf) - 1);
}

std::string format_placement(const Placement& p) {
  std::string time = format_time_us(p.time_us);
  if (p.wrong) {
    return cformat("  %7s  %6.2f  %6.2f  %5g", time.c_str(), p.algbw_gbps, p.busbw_gbps,
                   static_cast<double>(*p.wrong));
  }
  return cformat("  %7s  %6.2f  %6.2f  %5s", time.c_str(), p.algbw_gbps, p.busbw_gbps, "N/A");
}

}  // namespace

std::string format_time_us(double time_us) {
  if (time_us >= 10000.0) return cformat("%7.0f", time_us);
  if (time_us >= 100.0) return cformat("%7.1f", time_us);
  return cformat("%7.2f", time_us);
}

std::string format_run_header(const RunHeader& h) {
  std::string out = cformat("# cmax-collbench version %s backend %s (%s)\n", h.tool_version.c_str(),
                            h.backend.c_str(), h.backend_library.c_str());
  out += cformat("# Collective test starting: %s\n", h.test_name.c_str());
  out += cformat(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d "
      "validation: %d graph: %d\n",
      1, 1, h.min_bytes, h.max_bytes, h.step, h.step_is_factor ? "factor" : "bytes", h.warmup_iters,
      h.iters, 1, h.validation, 0);
  out += "#\n# Using devices\n";
  return out;
}

std::string format_rank_line(const RankLine& r) {
  return cformat("#  Rank %2d Group %2d Pid %6ld on %10s device %2d [%s] %s\n", r.rank, r.group,
                 r.pid, r.host.c_str(), r.device, r.pci.c_str(), r.name.c_str());
}

std::string format_column_header() {
  std::string out = "#\n";
  out += cformat(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "\n",
      "", "", "", "", "");
  out += cformat("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                 "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                 "algbw", "busbw", "#wrong");
  out += cformat("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                 "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                 "(GB/s)", "");
  return out;
}

std::string format_row(const RowKey& key, const Placement& out_of_place,
                       const Placement& in_place) {
  std::string redop(key.redop);
  std::string type(key.type);
  std::string out = cformat("%12zu  %12zu  %8s  %6s  %6i", key.size_bytes, key.count, type.c_str(),
                            redop.c_str(), key.root);
  out += format_placement(out_of_place);
  out += format_placement(in_place);
  out += '\n';
  return out;
}

std::string format_footer(std::int64_t out_of_bounds, double avg_busbw_gbps) {
  std::string out = cformat("# %-20s : %lld %s\n", "Out of bounds values",
                            static_cast<long long>(out_of_bounds), out_of_bounds ? "FAILED" : "OK");
  out += cformat("# %-20s : %g %s\n", "Avg bus bandwidth", avg_busbw_gbps, "");
  out += "#\n";
  return out;
}

}  // namespace cmax::collbench
