#include "loadgen/bench_report.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "loadgen/compare.h"
#include "loadgen/metrics.h"

namespace cmax::loadgen {
namespace {

using json = nlohmann::json;

json opt(double v) { return v > 0 ? json(v) : json(nullptr); }

// One level's server-side accounting, as server_metrics.levels[] holds it.
json server_level_json(const std::optional<EngineCacheMetrics>& before, const std::optional<EngineCacheMetrics>& after,
                       const Summary& responses, std::optional<int> concurrency) {
  json j = {{"concurrency", concurrency ? json(*concurrency) : json(nullptr)},
            {"responses_hit_rate", responses.cache_hit_rate < 0 ? json(nullptr) : json(responses.cache_hit_rate)}};
  if (!after) {
    j["family"] = nullptr;
    return j;
  }
  j["family"] = after->family;
  if (before && before->queries && after->queries && before->hits && after->hits) {
    const double q = *after->queries - *before->queries, h = *after->hits - *before->hits;
    j["prefix_cache_queries"] = q;
    j["prefix_cache_hits"] = h;
    j["hit_rate"] = q > 0 ? json(h / q) : json(nullptr);
  }
  if (after->sglang_hit_rate) j["sglang_cache_hit_rate"] = *after->sglang_hit_rate;
  return j;
}

json workload_json(const BenchOptions& f, const BenchWorkload& w, const RunResult& result) {
  return {{"kind", w.kind},
          {"source", w.source},
          {"requests", result.records.size()},
          {"theoretical_hit_rate", result.theoretical_hit_rate >= 0 ? json(result.theoretical_hit_rate) : json(nullptr)},
          {"theoretical_block_tokens", f.theory_block_tokens},
          {"trace_theoretical_hit_rate", w.trace_theory >= 0 ? json(w.trace_theory) : json(nullptr)},
          {"trace_requests", w.trace_requests ? json(w.trace_requests) : json(nullptr)},
          {"trace_whole_hit_rate", w.trace_requests ? json(w.steady.whole_rate) : json(nullptr)},
          {"trace_steady_state_requests", w.trace_requests ? json(w.steady.requests) : json(nullptr)},
          {"plan", w.plan.empty() ? json(nullptr) : json(w.plan)}};
}

json schedule_json(const Schedule& sched) {
  return {{"kind", std::string(schedule_kind_name(sched.kind))},
          {"levels", sched.kind == ScheduleKind::kConcurrency ? json(sched.levels) : json(nullptr)},
          {"rate", sched.kind == ScheduleKind::kRate ? json(sched.rate_per_s) : json(nullptr)},
          {"time_scale", sched.kind == ScheduleKind::kTrace ? json(sched.trace_speed) : json(nullptr)},
          {"max_inflight", sched.max_inflight}};
}

json warmup_json(const std::optional<WarmupResult>& w) {
  if (!w) return nullptr;
  return {{"requests", w->requests}, {"succeeded", w->succeeded}, {"concurrency", w->concurrency},
          {"duration_s", w->duration_s}, {"prompt_tokens_each", w->prompt_tokens_each}};
}

json flushes_json(const std::vector<CacheFlush>& flushes) {
  json a = json::array();
  for (const auto& f : flushes)
    a.push_back({{"level", f.level + 1}, {"path", f.path}, {"status", f.status}, {"flushed", f.flushed}});
  return a;
}

// server_metrics.levels[]: one per level run of a sweep, else one for the whole run.
json server_levels_json(const ServerScrapes& s, const RunConfig& rc, const RunResult& result, bool& any) {
  json levels = json::array();
  auto at = [](const auto& v, std::size_t i) { return i < v.size() ? v[i] : std::nullopt; };
  if (rc.schedule.kind != ScheduleKind::kConcurrency) {
    levels.push_back(server_level_json(at(s.before, 0), at(s.after, 0), result.overall, std::nullopt));
    any = at(s.after, 0).has_value();
    return levels;
  }
  for (std::size_t i = 0; i < rc.schedule.levels.size(); ++i) {
    const auto it = std::find_if(result.levels.begin(), result.levels.end(),
                                 [&](const auto& l) { return l.concurrency == rc.schedule.levels[i]; });
    if (it == result.levels.end()) continue;
    levels.push_back(server_level_json(at(s.before, i), at(s.after, i), it->summary, it->concurrency));
    any = any || at(s.after, i).has_value();
  }
  return levels;
}

// The server counts prefix-cache hits the responses do not report: a flag is missing.
std::optional<std::string> unreported_hits_warning(const json& levels, endpoint::Api api) {
  for (const auto& l : levels) {
    const bool server_hits = l.contains("prefix_cache_hits") && l["prefix_cache_hits"].get<double>() > 0;
    const bool sglang_hits = l.contains("sglang_cache_hit_rate") && l["sglang_cache_hit_rate"].get<double>() > 0;
    const bool responses_say = !l["responses_hit_rate"].is_null() && l["responses_hit_rate"].get<double>() > 0;
    if ((server_hits || sglang_hits) && !responses_say)
      return api == endpoint::Api::kMessages
                 ? "the server's /metrics count prefix-cache hits, but its /messages responses report no cached tokens: "
                   "the hit rate and the bill here assume none. vLLM's /v1/messages writes input_tokens and "
                   "output_tokens only, whatever its flags; measure the hit rate with --api chat (vLLM with "
                   "--enable-prompt-tokens-details)"
                 : "the server's /metrics count prefix-cache hits, but its responses report no cached tokens: the hit "
                   "rate and the bill here assume none. Start vLLM with --enable-prompt-tokens-details, SGLang with "
                   "--enable-cache-report";
  }
  return std::nullopt;
}

}  // namespace

std::string bench_document(const BenchOptions& f, const BenchFacts& x, const RunResult& result,
                           std::vector<std::string>& warnings) {
  json levels = json::array();
  for (const auto& l : result.levels) levels.push_back({{"concurrency", l.concurrency}, {"summary", summary_to_json(l.summary)}});
  const auto& rc = x.rc;
  json j = {
      {"schema", "cmax.endpoint.bench/1"},
      {"cmax_version", x.cmax_version},
      {"started_at", core::format_utc(x.started_at)},
      {"provider", f.provider.empty() ? (x.sheet ? x.sheet->provider : std::string()) : f.provider},
      {"endpoint", f.base_url},
      {"model", x.model},
      {"api", f.api},
      {"stream", rc.stream},
      {"http", x.http},
      {"transport", x.transport},
      {"api_key", x.api_key_source},
      {"headers", x.header_names},
      {"extra_body", rc.extra_body.empty() ? json(nullptr) : json::parse(rc.extra_body)},
      {"session_id",
       {{"user", rc.session_user}, {"header", rc.session_header.empty() ? json(nullptr) : json(rc.session_header)}}},
      {"workload", workload_json(f, *x.workload, result)},
      {"reference_hit_rate", {{"value", x.reference_hit_rate}, {"source", x.reference_source}}},
      {"schedule", schedule_json(rc.schedule)},
      {"limits",
       {{"max_requests", f.max_requests ? json(f.max_requests) : json(nullptr)},
        {"duration_s", opt(f.duration_s)},
        {"timeout_s", f.timeout_s},
        {"retries", f.retries}}},
      {"seed", f.seed},
      {"seed_source", f.seed_source},
      {"cache_hit_above_achievable", x.warm_cache},
      {"interrupted", result.stop_reason == "interrupted"},
      {"stopped_by", result.stop_reason.empty() ? json(nullptr) : json(result.stop_reason)},
      {"slo", {{"ttft_ms", opt(f.slo.ttft_ms)}, {"tpot_ms", opt(f.slo.tpot_ms)}, {"e2e_ms", opt(f.slo.e2e_ms)}}},
      {"overall", summary_to_json(result.overall)},
      {"levels", levels},
      {"cost", x.bill ? bill_to_json(*x.sheet, *x.bill) : json(nullptr)}};
  j["warmup"] = warmup_json(x.warmup);
  j["cache_flushes"] = f.flush_cache ? flushes_json(x.flushes) : json(nullptr);
  if (x.scrapes) {
    bool any = false;
    json levels_sm = server_levels_json(*x.scrapes, rc, result, any);
    j["server_metrics"] = {{"url", x.scrapes->origin + "/metrics"},
                           {"read", any},
                           {"why_not", any ? json(nullptr) : json(x.scrapes->why_not)},
                           {"levels", levels_sm}};
    if (auto w = unreported_hits_warning(levels_sm, rc.api)) warnings.push_back(*w);
  }
  j["warnings"] = warnings;
  return j.dump(2);
}

Result<void> write_bench_files(const std::string& dir, const std::string& document, const RunResult& result,
                               const std::string& label) {
  {
    std::ofstream out(dir + "/bench.json", std::ios::trunc);
    out << document << '\n';
    if (!out) return fail("write {}/bench.json: failed; check the disk", dir);
  }
  {
    std::vector<std::pair<std::string, Summary>> rows{{"overall", result.overall}};
    for (const auto& l : result.levels) rows.emplace_back(fmt::format("c={}", l.concurrency), l.summary);
    std::ofstream csv(dir + "/bench.csv", std::ios::trunc);
    csv << summaries_csv(rows);
    if (!csv) return fail("write {}/bench.csv: failed; check the disk", dir);
  }
  if (result.levels.size() > 1) {
    RunView v;
    v.label = label;
    v.overall = result.overall;
    for (const auto& l : result.levels) v.levels.emplace_back(l.concurrency, l.summary);
    std::ofstream svg(dir + "/ttft_vs_concurrency.svg", std::ios::trunc);
    svg << svg_latency_vs_concurrency({v});
  }
  return ok();
}

}  // namespace cmax::loadgen
