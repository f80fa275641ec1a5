#include "loadgen/bench_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/strings.h"
#include "core/text_file.h"
#include "endpoint/anthropic_protocol.h"
#include "loadgen/bench_report.h"
#include "loadgen/bench_workload.h"
#include "loadgen/metrics.h"
#include "loadgen/origin_client.h"
#include "loadgen/preflight.h"
#include "loadgen/warmup.h"

namespace cmax::loadgen {
namespace {

std::string pct(double v) { return v < 0 ? "-" : fmt::format("{:.1f}%", v * 100); }

// What the steps of one run share once the options are settled.
struct Bench {
  BenchOptions& o;
  const BenchEnv& env;
  RunConfig rc;
  std::vector<std::string> header_names;
  BenchWorkload wl;
  std::optional<PriceSheet> sheet;
  ApiKey key;
  HttpVersion http = HttpVersion::kAuto;
  ClientConfig cc;
  std::unique_ptr<HttpEngine> engine;
  std::chrono::system_clock::time_point now;
  BenchOutcome out;
};

// --dry-run: the bodies that would be sent, in order; multi-turn replies are a placeholder.
Result<BenchOutcome> dry_run(Bench& b) {
  if (b.o.model.empty()) return fail("--dry-run needs --model (nothing is sent, so the endpoint is not asked)");
  b.rc.model = b.o.model;
  if (b.env.sink && b.o.seed_source == "fresh") b.env.sink->dry_run_seed(b.o.seed);
  const std::size_t limit = b.o.max_requests ? b.o.max_requests : b.wl.workload->total();
  for (std::size_t n = 0; n < limit; ++n) {
    auto spec = b.wl.workload->next();
    if (!spec) break;
    if (b.env.sink) b.env.sink->dry_run_body(request_body(*spec, b.rc));
    b.wl.workload->reply(*spec, " (a reply)", true);
  }
  b.out.kind = BenchOutcome::Kind::kDryRun;
  return std::move(b.out);
}

Result<void> load_prices(Bench& b) {
  if (b.o.prices.empty()) return ok();
  auto text = core::read_text_file(b.o.prices, 4 << 20);
  if (!text) return fail("{}", text.error().message);
  auto s = parse_price_sheet(*text, b.o.price_provider.empty() ? b.o.provider : b.o.price_provider);
  if (!s) return fail("--prices {}: {}", b.o.prices, s.error().message);
  b.sheet = *s;
  return ok();
}

// The client: the key, the headers (Anthropic's own for --api messages), the limits.
ClientConfig client_config(const Bench& b, TransportKind transport) {
  const BenchOptions& f = b.o;
  ClientConfig cc;
  cc.base_url = f.base_url;
  cc.api_key = b.key.value;
  cc.http = b.http;
  cc.transport = transport;
  cc.wake_interval = std::chrono::microseconds(f.wake_interval_us);
  cc.coalesce_from = f.coalesce_from;
  cc.ca_file = f.ca_file;
  cc.extra_headers.insert(cc.extra_headers.end(), f.headers.begin(), f.headers.end());
  if (b.rc.api == endpoint::Api::kMessages) {
    // Anthropic's own: the key in x-api-key, and the API version every request must name.
    cc.api_key_header = "x-api-key";
    const bool has_version = std::any_of(b.header_names.begin(), b.header_names.end(), [](const std::string& n) {
      return n.size() == 17 && core::contains_icase(n, "anthropic-version");
    });
    if (!has_version) cc.extra_headers.push_back(fmt::format("anthropic-version: {}", endpoint::kAnthropicVersion));
  }
  cc.connect_timeout = std::chrono::milliseconds(long(f.connect_timeout_s * 1000));
  cc.request_timeout = std::chrono::milliseconds(long(f.timeout_s * 1000));
  cc.stall_timeout = std::chrono::seconds(long(std::max(1.0, f.stall_timeout_s)));
  int most = b.rc.schedule.max_inflight;
  for (int l : b.rc.schedule.levels) most = std::max(most, l);
  cc.max_connections = most + 16;
  return cc;
}

// The key, the engine, and the model the preflight settles on.
Result<void> connect(Bench& b) {
  if (b.env.api_key) {
    auto key = b.env.api_key();
    if (!key) return fail("{}", key.error().message);
    b.key = *key;
  }
  http_version_from_name(b.o.http, b.http);
  TransportKind transport = TransportKind::kAuto;
  transport_from_name(b.o.transport, transport);
  b.cc = client_config(b, transport);
  auto engine = b.env.make_engine(b.cc);
  if (!engine) return fail("{}", engine.error().message);
  b.engine = std::move(*engine);
  b.out.model = b.o.model;
  if (!b.o.no_preflight) {
    auto m = preflight(*b.engine, {b.o.base_url, b.o.model, b.o.api_key_env, b.o.connect_timeout_s}, b.out.warnings,
                       b.env.stop);
    if (!m) return fail("{}", m.error().message);
    b.out.model = *m;
  } else if (b.out.model.empty()) {
    return fail("--no-preflight needs --model");
  }
  b.rc.model = b.out.model;
  return ok();
}

// The run directory; requests.jsonl is opened there and written as requests finish.
Result<std::unique_ptr<std::ofstream>> open_run_dir(Bench& b) {
  b.now = b.env.clock ? b.env.clock->now() : core::SystemClock().now();
  const std::string stamp = core::format_utc_compact(b.now) + "-endpoint-bench";
  b.out.dir = !b.o.out.empty() ? b.o.out : b.env.default_run_dir ? b.env.default_run_dir(stamp) : stamp;
  const std::string& dir = b.out.dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("create run directory {}: {}; pass --out a writable directory", dir, ec.message());
  auto jsonl = std::make_unique<std::ofstream>(dir + "/requests.jsonl", std::ios::trunc);
  if (!*jsonl) return fail("write {}/requests.jsonl: cannot open; pass --out a writable directory", dir);
  return jsonl;
}

RunHooks run_hooks(const BenchEnv& env, std::ofstream& jsonl) {
  RunHooks hooks;
  hooks.stop = env.stop;
  hooks.on_record = [&jsonl, last_flush = std::chrono::steady_clock::now()](const RequestRecord& r) mutable {
    jsonl << record_to_jsonl(r) << '\n';
    if (std::chrono::steady_clock::now() - last_flush > std::chrono::milliseconds(200)) {
      jsonl.flush();
      last_flush = std::chrono::steady_clock::now();
    }
  };
  if (env.sink) hooks.on_progress = [sink = env.sink](const Progress& p) { sink->progress(p); };
  return hooks;
}

Result<BenchOutcome> capacity(Bench& b, const RunHooks& hooks) {
  b.out.kind = BenchOutcome::Kind::kCapacity;
  b.out.capacity = run_capacity(b.o, *b.engine, b.rc, hooks, b.env.sink);
  b.out.document = capacity_document(b.o, b.out.capacity, b.rc.model, b.env.cmax_version, b.out.warnings);
  std::ofstream(b.out.dir + "/capacity.json", std::ios::trunc) << b.out.document << '\n';
  return std::move(b.out);
}

// The warmup, then the levels: before each, the cache flush (--flush-cache) and a /metrics read;
// after each drains, another read.
RunResult measure(Bench& b, RunHooks hooks, BenchFacts& facts) {
  const BenchOptions& f = b.o;
  std::optional<OriginClient> origin;
  if (!f.no_server_metrics || f.flush_cache)
    origin.emplace(b.cc, std::string(core::url_origin(f.base_url)), b.env.make_engine, b.env.stop);
  if (f.warmup) facts.warmup = run_warmup(f, *b.engine, b.rc, b.env.stop);
  ServerScrapes scrapes;
  hooks.on_level = [&](std::size_t level, bool drained) {
    if (!drained && f.flush_cache) facts.flushes.push_back(flush_server_cache(*origin, level, b.out.warnings));
    if (f.no_server_metrics) return;
    auto& v = drained ? scrapes.after : scrapes.before;
    if (v.size() <= level) v.resize(level + 1);
    v[level] = origin->scrape();
  };
  auto result = run_bench(*b.engine, *b.wl.workload, b.rc, hooks);
  if (b.env.sink) b.env.sink->progress_done();
  if (!f.no_server_metrics) {
    scrapes.origin = origin->origin();
    scrapes.why_not = origin->why_not();
    facts.scrapes = std::move(scrapes);
  }
  return result;
}

// A workload smaller than the sweep ends it early; a chart with one point must say why.
void note_levels_not_run(const RunConfig& rc, const RunResult& result, std::vector<std::string>& warnings) {
  if (rc.schedule.kind != ScheduleKind::kConcurrency || !result.stop_reason.empty()) return;
  std::vector<int> missing;
  for (int level : rc.schedule.levels)
    if (std::none_of(result.levels.begin(), result.levels.end(), [&](const auto& l) { return l.concurrency == level; }))
      missing.push_back(level);
  if (!missing.empty())
    warnings.push_back(fmt::format("the workload ran out after {} requests: concurrency level(s) {} were not run; "
                                   "give a larger workload (--sessions, --requests, a longer trace) or fewer levels",
                                   result.records.size(), fmt::join(missing, ", ")));
}

// How much of a trace was sent, beside how much its hit rate needs to settle.
void note_trace_share(Bench& b, const RunResult& result) {
  const auto& wl = b.wl;
  if (wl.trace_requests == 0) return;
  const std::size_t sent = result.records.size();
  const std::string share = fmt::format("{} of the trace's {} requests were sent ({:.1f}%)", sent, wl.trace_requests,
                                        100.0 * static_cast<double>(sent) / static_cast<double>(wl.trace_requests));
  b.wl.plan = wl.plan.empty() ? share : wl.plan + "; " + share;
  if (sent < wl.steady.requests)
    b.out.warnings.push_back(fmt::format(
        "{}, fewer than the {} it takes for the trace's hit rate to reach its steady state: "
        "judge the hit rate against what the prompts sent allow ({}), not the trace's {:.1f}%",
        share, wl.steady.requests, pct(result.theoretical_hit_rate), wl.steady.whole_rate * 100));
}

// Measured above what the prompts sent allow: the cache held them before the run started.
void note_warm_cache(Bench& b, const RunResult& result, BenchFacts& facts) {
  const auto& o = result.overall;
  facts.warm_cache = o.cache_hit_rate >= 0 && result.theoretical_hit_rate >= 0 &&
                     o.cache_hit_rate > result.theoretical_hit_rate + b.env.hit_above_achievable_tolerance;
  if (!facts.warm_cache) return;
  b.out.warm_warning = fmt::format(
      "the measured prefix-cache hit rate {} is above the {} the prompts sent allow: the endpoint's cache held these "
      "prompts before the run (seed {}, {}, was sent to it before), so the hit rate and the bill do not judge it "
      "(cmax score leaves them out); run again without --seed (a fresh seed) or with --flush-cache",
      pct(o.cache_hit_rate), pct(result.theoretical_hit_rate), b.o.seed,
      b.o.seed_source == "fresh" ? "drawn fresh" : "given with --seed");
  b.out.warnings.push_back(b.out.warm_warning);
}

// The bill's reference: the best peer's rate (0.99), but never more than the prompts sent allow;
// and the bill itself when there is a price sheet.
void settle_bill(Bench& b, const RunResult& result, BenchFacts& facts) {
  facts.reference_hit_rate = b.o.reference_hit_rate;
  facts.reference_source = "--reference-hit-rate";
  if (facts.reference_hit_rate < 0) {
    facts.reference_hit_rate = 0.99;
    facts.reference_source = "the best peers' 99%";
    if (result.theoretical_hit_rate >= 0 && result.theoretical_hit_rate < facts.reference_hit_rate) {
      facts.reference_hit_rate = result.theoretical_hit_rate;
      facts.reference_source = "the upper bound for the prompts sent";
    }
  }
  if (!b.sheet) return;
  BillInput in;
  in.prompt_tokens = result.overall.prompt_tokens;
  in.cached_tokens = result.overall.cached_tokens;
  in.cache_creation_tokens = result.overall.cache_creation_tokens;
  in.completion_tokens = result.overall.completion_tokens;
  in.duration_s = result.overall.duration_s;
  in.reference_hit_rate = facts.reference_hit_rate;
  in.monthly_mtok = b.o.monthly_mtok;
  b.out.bill = compute_bill(*b.sheet, in);
  facts.sheet = b.sheet;
  facts.bill = b.out.bill;
}

Result<BenchOutcome> levels(Bench& b, const RunHooks& hooks, std::ofstream& jsonl) {
  BenchFacts facts;
  auto result = measure(b, hooks, facts);
  jsonl.flush();
  if (result.sessions_ended)
    b.out.warnings.push_back(fmt::format("{} multi-turn sessions ended early after a failed turn", result.sessions_ended));
  note_levels_not_run(b.rc, result, b.out.warnings);
  note_trace_share(b, result);
  note_warm_cache(b, result, facts);
  settle_bill(b, result, facts);
  facts.started_at = b.now;
  facts.cmax_version = b.env.cmax_version;
  facts.model = b.out.model;
  facts.http = std::string(http_version_name(b.http));
  facts.transport = std::string(b.engine->transport());
  facts.api_key_source = b.key.source;
  facts.header_names = b.header_names;
  facts.rc = b.rc;
  facts.workload = &b.wl;
  b.out.document = bench_document(b.o, facts, result, b.out.warnings);
  const std::string provider = b.o.provider.empty() ? (b.sheet ? b.sheet->provider : std::string()) : b.o.provider;
  if (auto w = write_bench_files(b.out.dir, b.out.document, result, provider.empty() ? b.out.model : provider); !w)
    return fail("{}", w.error().message);
  b.out.kind = BenchOutcome::Kind::kBench;
  b.out.workload_source = b.wl.source;
  b.out.workload_plan = b.wl.plan;
  b.out.result = std::move(result);
  return std::move(b.out);
}

}  // namespace

Result<BenchOutcome> run_endpoint_bench(BenchOptions o, const BenchEnv& given) {
  BenchEnv env = given;
  if (!env.make_engine) env.make_engine = [](const ClientConfig& c) { return HttpEngine::create(c); };
  Bench b{o, env};
  auto rc = bench_run_config(o, b.header_names);
  if (!rc) return fail("{}", rc.error().message);
  b.rc = std::move(*rc);
  auto wl = make_bench_workload(o, b.rc, b.out.warnings);
  if (!wl) return fail("{}", wl.error().message);
  b.wl = std::move(*wl);
  if (o.dry_run) return dry_run(b);
  if (auto p = load_prices(b); !p) return fail("{}", p.error().message);
  if (auto c = connect(b); !c) return fail("{}", c.error().message);
  auto jsonl = open_run_dir(b);
  if (!jsonl) return fail("{}", jsonl.error().message);
  const RunHooks hooks = run_hooks(env, **jsonl);
  if (!o.capacity.empty()) return capacity(b, hooks);
  return levels(b, hooks, **jsonl);
}

bool too_many_errors(const Summary& o, double max_share) {
  // The endpoint's failures only: what cmax canceled when it stopped is not the endpoint's doing.
  const double judged = double(o.requests) - double(o.client_canceled);
  return judged > 0 && (double(o.failed) - double(o.client_canceled)) / judged > max_share;
}

}  // namespace cmax::loadgen
