#include "loadgen/capacity_run.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include "loadgen/workload.h"

namespace cmax::loadgen {
namespace {

using json = nlohmann::json;

// One measurement's run: the schedule at `load`, and the requests it sends.
RunConfig measurement_config(const BenchOptions& f, const RunConfig& rc, bool by_rate, double load, std::size_t& n) {
  RunConfig one = rc;
  n = f.capacity_requests;
  if (by_rate) {
    if (!n) n = std::max<std::size_t>(20, static_cast<std::size_t>(std::ceil(5 * load)));
    one.schedule.kind = ScheduleKind::kRate;
    one.schedule.rate_per_s = load;
    one.max_requests = n;
  } else {
    if (!n) n = std::max<std::size_t>(50, 4 * static_cast<std::size_t>(load));
    one.schedule.kind = ScheduleKind::kConcurrency;
    one.schedule.levels = {static_cast<int>(load)};
    one.schedule.requests_per_level = n;
  }
  return one;
}

// A fresh workload of `n` requests: the same prompts at every load.
std::unique_ptr<Workload> measurement_workload(const BenchOptions& f, std::size_t n) {
  if (f.fixed) {
    FixedConfig fx = f.fx;
    fx.requests = n;
    return fixed_workload(fx);
  }
  MultiTurnConfig mt = f.mt;
  mt.sessions = static_cast<std::uint32_t>(std::max<std::size_t>(mt.sessions, (n + mt.turns - 1) / mt.turns));
  return multiturn_workload(mt);
}

json percentiles(const LatencyStats& l) { return {{"p50", l.p50_ms}, {"p90", l.p90_ms}, {"p99", l.p99_ms}}; }

}  // namespace

CapacityConfig capacity_config(const BenchOptions& f) {
  const bool by_rate = f.capacity == "rate";
  CapacityConfig cc;
  cc.integer = !by_rate;
  cc.start = f.capacity_start;
  cc.max = f.capacity_max > 0 ? f.capacity_max : by_rate ? 1000 : 1024;
  cc.attainment = f.capacity_attainment;
  cc.repeats = f.capacity_repeats;
  return cc;
}

CapacityRun run_capacity(const BenchOptions& f, HttpEngine& engine, const RunConfig& rc, const RunHooks& hooks,
                         BenchSink* sink) {
  CapacityRun run;
  run.by_rate = f.capacity == "rate";
  run.config = capacity_config(f);
  auto measure = [&](double load) -> std::optional<double> {
    if (hooks.stop && hooks.stop->load()) return std::nullopt;
    std::size_t n = 0;
    const RunConfig one = measurement_config(f, rc, run.by_rate, load, n);
    auto w = measurement_workload(f, n);
    if (sink) sink->capacity_load(run.by_rate ? "rate" : "concurrency", load);
    auto r = run_bench(engine, *w, one, hooks);
    if (r.stop_reason == "interrupted") return std::nullopt;
    run.measurements.push_back({load, r.overall, r.overall.goodput_share >= run.config.attainment});
    return r.overall.goodput_share;
  };
  run.result = search_capacity(run.config, measure);
  if (sink) sink->progress_done();
  return run;
}

std::string capacity_document(const BenchOptions& f, const CapacityRun& run, const std::string& model,
                              const std::string& cmax_version, const std::vector<std::string>& warnings) {
  json probes = json::array();
  for (const auto& m : run.measurements) {
    const Summary& s = m.summary;
    probes.push_back({{"load", m.load},
                      {"requests", s.requests},
                      {"failed", s.failed},
                      {"attainment", s.goodput_share},
                      {"pass", m.pass},
                      {"request_throughput", s.request_throughput},
                      {"ttft_incl_queue_ms", percentiles(s.ttft_incl_queue)},
                      {"tpot_ms", percentiles(s.tpot)},
                      {"e2e_ms", percentiles(s.e2e)}});
  }
  const auto& res = run.result;
  json doc = {{"schema", "cmax.endpoint.capacity/1"},
              {"cmax_version", cmax_version},
              {"endpoint", f.base_url},
              {"model", model},
              {"dimension", run.by_rate ? "rate" : "concurrency"},
              {"slo", {{"ttft_ms", f.slo.ttft_ms}, {"tpot_ms", f.slo.tpot_ms}, {"e2e_ms", f.slo.e2e_ms}}},
              {"attainment_goal", run.config.attainment},
              {"repeats", run.config.repeats},
              {"max", run.config.max},
              {"edge", res.edge},
              {"first_fail", res.first_fail < 0 ? json(nullptr) : json(res.first_fail)},
              {"reached_max", res.reached_max},
              {"interrupted", res.interrupted},
              {"workload", f.fixed ? "fixed" : "multiturn"},
              {"probes", probes},
              {"warnings", warnings}};
  return doc.dump(2);
}

}  // namespace cmax::loadgen
