#include "loadgen/bench_options.h"

#include <charconv>

#include <fmt/format.h>

#include "core/strings.h"
#include "loadgen/http_client.h"

namespace cmax::loadgen {
namespace {

// The flags that cannot go together, and the values that are out of range.
Result<void> check_combinations(const BenchOptions& f) {
  HttpVersion http;
  if (!http_version_from_name(f.http, http)) return fail("--http {}: use 1.1, 2 or auto", f.http);
  TransportKind transport;
  if (!transport_from_name(f.transport, transport)) return fail("--transport {}: use auto, native or curl", f.transport);
  if (int(!f.trace.empty()) + int(f.multiturn) + int(f.fixed) + int(!f.prompts.empty()) > 1)
    return fail("give one workload: a trace file, --multiturn, --fixed or --prompts FILE");
  if (int(!f.concurrency.empty()) + int(f.rate > 0) + int(f.trace_timestamps) > 1)
    return fail("give one schedule: --concurrency, --rate or --trace-timestamps");
  if (f.trace_timestamps && f.trace.empty()) return fail("--trace-timestamps needs a trace file");
  if (!f.capacity.empty()) {
    if (f.capacity != "concurrency" && f.capacity != "rate") return fail("--capacity: concurrency or rate");
    if (f.slo.ttft_ms <= 0 && f.slo.tpot_ms <= 0 && f.slo.e2e_ms <= 0)
      return fail("--capacity needs an SLO to meet: --slo-ttft-ms, --slo-tpot-ms or --slo-e2e-ms");
    if (!f.trace.empty() || !f.prompts.empty())
      return fail("--capacity runs --fixed or --multiturn at each load; a trace or a prompt file is not repeated");
    if (!f.concurrency.empty() || f.rate > 0 || f.trace_timestamps)
      return fail("--capacity chooses the load itself: drop --concurrency, --rate and --trace-timestamps");
    if (!(f.capacity_attainment > 0 && f.capacity_attainment <= 1))
      return fail("--capacity-attainment: a share above 0, at most 1");
  }
  if (!(f.max_error_share >= 0 && f.max_error_share <= 1)) return fail("--max-error-share: a share between 0 and 1");
  if (f.reference_hit_rate != -1 && !(f.reference_hit_rate >= 0 && f.reference_hit_rate <= 1))
    return fail("--reference-hit-rate: a share between 0 and 1");
  return ok();
}

// --header, --session-header and --extra-body, checked and set on `rc`.
Result<void> request_extras(const BenchOptions& f, RunConfig& rc, std::vector<std::string>& header_names) {
  for (const auto& h : f.headers) {
    auto name = header_name(h);
    if (!name) return fail("{}", name.error().message);
    header_names.push_back(*name);
  }
  if (!f.session_header.empty()) {
    auto name = header_name(f.session_header + ": x");
    if (!name) return fail("--session-header: {}", name.error().message);
    rc.session_header = *name;
  }
  rc.session_user = f.session_user;
  if (!f.extra_body.empty()) {
    auto extra = parse_extra_body(f.extra_body);
    if (!extra) return fail("{}", extra.error().message);
    rc.extra_body = *extra;
  }
  return ok();
}

}  // namespace

Result<std::vector<int>> parse_levels(const std::string& spec) {
  std::vector<int> out;
  for (auto part : core::split_any(spec, ",")) {
    part = core::trim(part);
    int v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || v < 1 || v > 100000)
      return fail("--concurrency {}: '{}' is not a concurrency (1..100000); give a comma list like 1,2,4,8,16,24", spec, part);
    out.push_back(v);
  }
  if (out.empty()) return fail("--concurrency: empty; give a comma list like 1,2,4,8");
  return out;
}

Result<RunConfig> bench_run_config(const BenchOptions& f, std::vector<std::string>& header_names) {
  RunConfig rc;
  if (f.api == "chat") rc.api = endpoint::Api::kChat;
  else if (f.api == "completions") rc.api = endpoint::Api::kCompletions;
  else if (f.api == "messages") rc.api = endpoint::Api::kMessages;
  else return fail("--api {}: use chat, completions or messages", f.api);
  if (auto c = check_combinations(f); !c) return fail("{}", c.error().message);
  if (auto e = request_extras(f, rc, header_names); !e) return fail("{}", e.error().message);
  rc.cache_breakpoint = !f.no_cache_control;
  rc.stream = !f.no_stream;
  rc.include_usage = !f.no_usage;
  rc.ignore_eos = f.ignore_eos;
  rc.max_requests = f.max_requests;
  rc.duration_s = f.duration_s;
  rc.retries = f.retries;
  rc.slo = f.slo;
  rc.theory_block_tokens = f.theory_block_tokens;
  rc.seed = f.seed;
  auto& sched = rc.schedule;
  sched.requests_per_level = f.requests_per_level;
  sched.max_inflight = f.max_inflight;
  if (f.rate > 0) {
    sched.kind = ScheduleKind::kRate;
    sched.rate_per_s = f.rate;
  } else if (f.trace_timestamps) {
    sched.kind = ScheduleKind::kTrace;
    sched.trace_speed = f.trace_speed;
  } else {
    auto levels = parse_levels(f.concurrency.empty() ? "1,2,4,8" : f.concurrency);
    if (!levels) return fail("{}", levels.error().message);
    sched.levels = *levels;
  }
  return rc;
}

}  // namespace cmax::loadgen
