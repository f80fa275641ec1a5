#include "loadgen/bench_workload.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/text_file.h"
#include "endpoint/trace.h"
#include "loadgen/prompt_file.h"

namespace cmax::loadgen {
namespace {

constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;

Result<BenchWorkload> trace_workload(BenchOptions& f, RunConfig& rc, std::vector<std::string>& warnings) {
  auto text = core::read_text_file(f.trace, kMaxTraceBytes, "; cut the trace with head -n");
  if (!text) return fail("{}", text.error().message);
  auto trace = endpoint::parse_mooncake(*text);
  if (!trace) return fail("trace {}: {}", f.trace, trace.error().message);
  for (const auto& w : trace->warnings) warnings.push_back(fmt::format("trace {}: {}", f.trace, w));
  BenchWorkload out;
  out.trace_requests = trace->requests.size();
  auto& sched = rc.schedule;
  // A trace's opening requests find every cache empty: the sweep's default of a few dozen
  // requests a level would measure the cold start, not the trace. Unless told how much to
  // send, send enough for the trace's own hit rate to reach its steady state.
  out.steady = endpoint::steady_state(*trace);
  const bool told = f.max_requests > 0 || f.requests_per_level > 0 || f.duration_s > 0 || f.trace_timestamps;
  if (!told && out.steady.requests > 0) {
    if (sched.kind == ScheduleKind::kConcurrency) {
      const std::size_t levels = std::max<std::size_t>(1, sched.levels.size());
      sched.requests_per_level = (out.steady.requests + levels - 1) / levels;
    }
    f.max_requests =
        std::min(out.trace_requests, std::max(out.steady.requests, sched.requests_per_level * sched.levels.size()));
    rc.max_requests = f.max_requests;
    out.plan = fmt::format(
        "sending {} of the trace's {} requests: the prefix over which its own upper-bound hit rate stays within 10% "
        "of the whole trace's ({:.1f}% over those, {:.1f}% over all); --max-requests N sends fewer",
        f.max_requests, out.trace_requests, out.steady.prefix_rate * 100, out.steady.whole_rate * 100);
  }
  // The trace's own theoretical rate, over the requests that will be sent.
  endpoint::Trace head = *trace;
  const std::size_t n = f.max_requests ? std::min(f.max_requests, head.requests.size()) : head.requests.size();
  head.requests.resize(n);
  out.trace_theory = endpoint::theoretical_hit_rate(head);
  MooncakeOptions mo;
  mo.max_requests = f.max_requests;
  mo.max_output_tokens = f.max_tokens;
  mo.salt = f.seed == 1 ? 0 : f.seed;
  out.workload = mooncake_workload(*trace, mo);
  out.kind = "mooncake";
  out.source = f.trace;
  return out;
}

Result<BenchWorkload> prompts_workload(BenchOptions& f, const RunConfig& rc, std::vector<std::string>& warnings) {
  auto text = core::read_text_file(f.prompts, 1u << 30);
  if (!text) return fail("{}", text.error().message);
  auto file = parse_prompt_file(*text);
  if (!file) return fail("--prompts {}: {}", f.prompts, file.error().message);
  for (const auto& w : file->warnings) warnings.push_back(fmt::format("--prompts {}: skipped {}", f.prompts, w));
  if (file->skipped > file->warnings.size())
    warnings.push_back(fmt::format("--prompts {}: {} entries skipped in all", f.prompts, file->skipped));
  std::size_t n = f.max_requests;
  if (!n && rc.schedule.kind == ScheduleKind::kConcurrency) n = requests_in_sweep(rc.schedule);
  const std::size_t entries = file->entries.size();
  BenchWorkload out;
  out.workload = prompt_file_workload(std::move(file->entries), n, f.fx.output_tokens, f.max_tokens);
  out.kind = file->format;
  out.source = fmt::format("{} ({} prompts{})", f.prompts, entries,
                           file->skipped ? fmt::format(", {} skipped", file->skipped) : std::string());
  return out;
}

BenchWorkload fixed_bench_workload(BenchOptions& f, const RunConfig& rc) {
  f.fx.seed = f.seed;
  if (f.shared_prefix_given) f.fx.shared_prefix_tokens = std::min(f.shared_prefix_tokens, f.fx.input_tokens);
  if (f.max_requests) {
    f.fx.requests = f.max_requests;
  } else if (rc.schedule.kind == ScheduleKind::kConcurrency) {
    // Enough for every level, not a fixed 100 that would cut the sweep short.
    f.fx.requests = requests_in_sweep(rc.schedule);
  }
  if (f.max_tokens) f.fx.output_tokens = f.max_tokens;
  BenchWorkload out;
  out.workload = fixed_workload(f.fx);
  out.kind = "fixed";
  out.source = fmt::format("{} x ({} in, {} out)", f.fx.requests, f.fx.input_tokens, f.fx.output_tokens);
  return out;
}

BenchWorkload multiturn_bench_workload(BenchOptions& f) {
  f.mt.seed = f.seed;
  f.mt.shared_prefix_tokens = f.shared_prefix_tokens;
  if (f.max_tokens) f.mt.max_tokens = f.max_tokens;
  BenchWorkload out;
  out.workload = multiturn_workload(f.mt);
  out.kind = "multiturn";
  out.source =
      fmt::format("{} sessions x {} turns, {}-token shared prefix", f.mt.sessions, f.mt.turns, f.mt.shared_prefix_tokens);
  return out;
}

}  // namespace

Result<BenchWorkload> make_bench_workload(BenchOptions& o, RunConfig& rc, std::vector<std::string>& warnings) {
  if (!o.trace.empty()) return trace_workload(o, rc, warnings);
  if (!o.prompts.empty()) return prompts_workload(o, rc, warnings);
  if (o.fixed) return fixed_bench_workload(o, rc);
  return multiturn_bench_workload(o);
}

}  // namespace cmax::loadgen
