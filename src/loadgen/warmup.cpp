#include "loadgen/warmup.h"

#include "loadgen/workload.h"

namespace cmax::loadgen {

WarmupResult run_warmup(const BenchOptions& f, HttpEngine& engine, const RunConfig& rc, const std::atomic<bool>* stop) {
  FixedConfig fx;
  fx.requests = f.warmup;
  fx.input_tokens = f.fixed ? f.fx.input_tokens : 512;
  fx.output_tokens = f.fixed ? f.fx.output_tokens : 16;
  fx.seed = f.seed + 0x9e3779b9u;
  auto w = fixed_workload(fx);
  RunConfig one = rc;
  one.schedule.kind = ScheduleKind::kConcurrency;
  const int level =
      rc.schedule.kind == ScheduleKind::kConcurrency && !rc.schedule.levels.empty() ? rc.schedule.levels.front() : 8;
  one.schedule.levels = {level};
  one.schedule.requests_per_level = f.warmup;
  one.max_requests = f.warmup;
  one.duration_s = 0;
  RunHooks quiet;
  quiet.stop = stop;
  const auto r = run_bench(engine, *w, one, quiet);
  return {r.overall.requests, r.overall.succeeded, level, r.duration_s, fx.input_tokens};
}

}  // namespace cmax::loadgen
