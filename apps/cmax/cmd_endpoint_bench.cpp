// cmax endpoint bench: measure an OpenAI-compatible endpoint's latency, prefix-cache hit rate and
// bill (src/loadgen). cmax endpoint compare: runs side by side.
// Exit codes (bench): 0 done; 1 done, but more than --max-error-share of requests failed;
// 2 interrupted (Ctrl-C): partial results were written; 3 usage or environment (bad flag,
// unreadable trace or price sheet, endpoint unreachable, API key refused, unknown model).
// Exit codes (compare): 0 done; 3 a run could not be read.

#include "apps/cmax/cmd_endpoint_bench.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/strings.h"
#include "core/text_file.h"
#include "endpoint/anthropic_protocol.h"
#include "endpoint/simulate.h"
#include "endpoint/trace.h"
#include "loadgen/capacity.h"
#include "loadgen/chunk.h"
#include "loadgen/compare.h"
#include "loadgen/http_client.h"
#include "loadgen/metrics.h"
#include "loadgen/pricing.h"
#include "loadgen/prompt_file.h"
#include "loadgen/runner.h"
#include "loadgen/server_metrics.h"
#include "loadgen/workload.h"
#include "report/audit_json.h"
#include "report/run_dir.h"
#include "score/evidence.h"

namespace cmax::app {
namespace {

using json = nlohmann::json;
using namespace cmax::loadgen;
constexpr int kExitOk = 0, kExitErrors = 1, kExitInterrupted = 2, kExitUsage = 3;
constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop.store(true);
  ::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills at once
}

struct BenchFlags {
  std::string base_url = "http://127.0.0.1:8000/v1";
  std::string model, provider;
  std::string api = "chat";
  bool no_stream = false, no_usage = false, ignore_eos = false;
  std::string http = "auto", ca_file, transport = "auto";
  std::string api_key_env = "OPENAI_API_KEY", api_key_file;
  CLI::Option* api_key_env_option = nullptr;  // --api messages reads ANTHROPIC_API_KEY unless it is given
  bool no_cache_control = false;              ///< --no-cache-control: Messages API turns carry no cache mark
  std::vector<std::string> headers;  ///< --header "Name: value", sent on every request
  std::string extra_body;            ///< --extra-body JSON object merged into every request body
  bool session_user = false;         ///< --session-user: the session id in the body's `user`
  std::string session_header;        ///< --session-header NAME: the session id in this header
  // workload
  std::string trace;
  std::string prompts;  ///< --prompts FILE: ShareGPT JSON or JSONL (loadgen/prompt_file.h)
  bool multiturn = false, fixed = false;
  MultiTurnConfig mt;
  FixedConfig fx;
  std::uint32_t max_tokens = 0;
  std::uint32_t shared_prefix_tokens = 800;
  CLI::Option* shared_prefix_option = nullptr;  // --fixed shares nothing unless it is given
  // schedule
  std::string concurrency;
  double rate = 0;
  bool trace_timestamps = false;
  double trace_speed = 1;
  std::size_t requests_per_level = 0;
  int max_inflight = 1000;
  // limits
  std::size_t max_requests = 0;
  double duration_s = 0, timeout_s = 600, stall_timeout_s = 60, connect_timeout_s = 10;
  int retries = 2;
  Slo slo;
  // money
  std::string prices, price_provider;
  double reference_hit_rate = -1, monthly_mtok = 0;  ///< -1: 0.99, or what the prompts sent allow when less
  int theory_block_tokens = 16;
  std::string out;
  bool json = false, no_preflight = false, dry_run = false, no_server_metrics = false;
  std::size_t warmup = 0;     ///< --warmup N: requests sent first and not counted
  bool flush_cache = false;   ///< --flush-cache: empty the server's prefix cache before each level
  double max_error_share = 0.1;
  int wake_interval_us = 1000, coalesce_from = 128;
  std::uint64_t seed = 1;
  CLI::Option* seed_option = nullptr;  // without --seed, each run draws a fresh prompt seed
  std::string seed_source = "--seed";  // or "fresh"
  // the capacity search
  std::string capacity;          ///< "", "concurrency" or "rate"
  double capacity_start = 1;
  double capacity_max = 0;       ///< 0: 1024 streams, or 1000 requests/s
  double capacity_attainment = 0.9;
  int capacity_repeats = 3;
  std::size_t capacity_requests = 0;  ///< per measurement; 0: max(50, 4 x concurrency) or max(20, 5 s of the rate)
};

// A GET or a whole POST, collected: the preflight, the server's /metrics, its cache flush.
struct Collect final : ExchangeHandler {
  std::string body;
  TransferResult result;
  bool done = false;
  bool on_body(std::string_view b, int) override {
    if (body.size() < (1u << 20)) body.append(b);
    return true;
  }
  void on_done(const TransferResult& r) override {
    result = r;
    done = true;
  }
  /// Polls `engine` until the exchange is done, `timeout` has passed or g_stop is set; what is
  /// still running then is canceled. Returns done.
  bool wait(HttpEngine& engine, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && std::chrono::steady_clock::now() < deadline && !g_stop.load()) engine.poll(std::chrono::milliseconds(20));
    if (!done) engine.cancel_all();
    return done;
  }
};

// The endpoint's own /metrics (at the base URL's origin), read before and after each level: the
// engine's prefix-cache accounting beside what the responses reported (loadgen/server_metrics.h).
class MetricsScraper {
 public:
  MetricsScraper(const ClientConfig& base, std::string origin) : origin_(std::move(origin)) {
    ClientConfig c = base;
    c.base_url = origin_;
    c.max_connections = 2;
    if (auto e = HttpEngine::create(c)) engine_ = std::move(*e);
    else why_not_ = e.error().message;
  }
  /// One read; nullopt when there is none to be had (the reason is kept for the record).
  std::optional<EngineCacheMetrics> scrape() {
    if (!engine_ || gave_up_) return std::nullopt;
    Collect c;
    engine_->get("/metrics", &c);
    if (!c.wait(*engine_, std::chrono::seconds(5))) return give_up(fmt::format("GET {}/metrics: no answer within 5 s", origin_));
    if (c.result.transport != ErrorClass::kNone)
      return give_up(fmt::format("GET {}/metrics: {}", origin_, c.result.detail));
    if (c.result.http_status != 200)
      return give_up(fmt::format("GET {}/metrics: HTTP {} (the endpoint publishes no engine metrics there)", origin_,
                                 c.result.http_status));
    auto m = parse_engine_metrics(c.body);
    if (!m.any()) return give_up(fmt::format("GET {}/metrics: no vLLM or SGLang prefix-cache metrics in it", origin_));
    return m;
  }
  const std::string& origin() const { return origin_; }
  const std::string& why_not() const { return why_not_; }

  /// POST origin + path with an empty JSON body: its HTTP status, or 0 with `detail` set.
  int post(std::string_view path, std::string& detail) {
    if (!engine_) {
      detail = why_not_;
      return 0;
    }
    static const std::string kEmpty = "{}";
    Collect c;
    engine_->post(path, kEmpty, false, &c);
    if (!c.wait(*engine_, std::chrono::seconds(10))) {
      detail = "no answer within 10 s";
      return 0;
    }
    if (c.result.transport != ErrorClass::kNone) {
      detail = c.result.detail;
      return 0;
    }
    detail = core::clip(std::string(core::trim(c.body)), 160);
    return c.result.http_status;
  }

 private:
  std::optional<EngineCacheMetrics> give_up(std::string why) {
    gave_up_ = true;  // a gateway without /metrics is asked once, not before and after every level
    why_not_ = std::move(why);
    return std::nullopt;
  }
  std::string origin_, why_not_;
  std::unique_ptr<HttpEngine> engine_;
  bool gave_up_ = false;
};

// One level's server-side accounting, as bench.json's server_metrics.levels[] holds it.
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

// The API key and where it came from ("env:NAME", "file:PATH", "none"); the key is never printed.
Result<std::pair<std::string, std::string>> load_api_key(const BenchFlags& f) {
  if (!f.api_key_file.empty()) {
    auto text = core::read_text_file(f.api_key_file, 64 * 1024);
    if (!text) return fail("--api-key-file: {}", text.error().message);
    std::string key(core::trim(*text));
    if (key.empty()) return fail("--api-key-file {}: the file is empty", f.api_key_file);
    return std::pair{key, "file:" + f.api_key_file};
  }
  if (const char* v = std::getenv(f.api_key_env.c_str()); v != nullptr && *v != '\0')
    return std::pair{std::string(v), "env:" + f.api_key_env};
  return std::pair{std::string(), std::string("none")};
}

// GET /models: the endpoint answers, the key is accepted, the model exists. Bounded by the
// connect timeout plus 10 s.
Result<std::string> preflight(HttpEngine& engine, const BenchFlags& f, std::vector<std::string>& warnings) {
  Collect c;
  engine.get("/models", &c);
  if (!c.wait(engine, std::chrono::milliseconds(long(f.connect_timeout_s * 1000)) + std::chrono::seconds(10))) {
    return fail("GET {}/models: no answer within {} s; is the endpoint up? (--no-preflight skips this check)",
                f.base_url, f.connect_timeout_s + 10);
  }
  const auto& r = c.result;
  if (r.transport != ErrorClass::kNone)
    return fail("GET {}/models: {}; check --base-url and that the endpoint is up", f.base_url, r.detail);
  if (r.http_status == 401 || r.http_status == 403)
    return fail("GET {}/models: HTTP {}: {}; the endpoint refused the API key (set {} or --api-key-file)", f.base_url,
                r.http_status, error_body_message(c.body), f.api_key_env);
  if (r.http_status == 404) {
    // OpenAI-compatible servers answer under /v1; a base URL without it finds nothing anywhere.
    const std::string said = error_body_message(c.body);
    const std::string body = said.empty() ? std::string() : fmt::format(" (the server said: {})", core::clip(said, 160));
    std::string_view base = f.base_url;
    while (base.ends_with('/')) base.remove_suffix(1);
    if (!base.ends_with("/v1") && base.find("/v1/") == std::string_view::npos)
      return fail("GET {}/models: HTTP 404{}: the base URL lacks the API's path; OpenAI-compatible servers (vLLM, SGLang, "
                  "TGI, cmax endpoint serve) answer under /v1: try --base-url {}/v1",
                  f.base_url, body, base);
    if (f.model.empty())
      return fail("GET {}/models: HTTP 404{}: this endpoint lists no models; name the model with --model", f.base_url, body);
  }
  if (r.http_status != 200) {
    warnings.push_back(fmt::format("GET /models answered HTTP {}; the model name was not checked", r.http_status));
    if (f.model.empty()) return fail("GET {}/models: HTTP {}; name the model with --model", f.base_url, r.http_status);
    return f.model;
  }
  std::vector<std::string> ids;
  try {
    auto j = json::parse(c.body);
    for (const auto& m : j.at("data"))
      if (m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  } catch (const std::exception&) {
    warnings.push_back("GET /models did not answer an OpenAI model list; the model name was not checked");
  }
  if (f.model.empty()) {
    if (ids.empty()) return fail("GET {}/models lists no model; name one with --model", f.base_url);
    if (ids.size() > 1) warnings.push_back(fmt::format("the endpoint serves {} models; using the first, {}", ids.size(), ids[0]));
    return ids.front();
  }
  if (!ids.empty() && std::find(ids.begin(), ids.end(), f.model) == ids.end())
    return fail("model {}: not among the {} the endpoint lists (first: {}); check --model", f.model, ids.size(), ids[0]);
  return f.model;
}

std::string pct(double v) { return v < 0 ? "-" : fmt::format("{:.1f}%", v * 100); }
std::string ms(const LatencyStats& l, double v) { return l.count ? fmt::format("{:.1f}", v) : "-"; }

void print_text(const BenchFlags& f, const RunResult& r, const std::string& model, const std::optional<Bill>& bill,
                const std::string& dir, const std::vector<std::string>& warnings, const std::string& workload_name) {
  fmt::print("cmax endpoint bench: {} model {} ({} {}, {})\n", f.base_url, model, f.api, f.no_stream ? "whole bodies" : "streaming",
             workload_name);
  fmt::print("{:>12} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>7}\n", "schedule", "reqs", "ok", "ttft p50",
             "ttft p99", "tpot p50", "itl p99", "e2e p50", "out tok/s", "hit", "good");
  auto row = [&](const std::string& label, const Summary& s) {
    fmt::print("{:>12} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10.0f} {:>7} {:>7}\n", label, s.requests, s.succeeded,
               ms(s.ttft, s.ttft.p50_ms), ms(s.ttft, s.ttft.p99_ms), ms(s.tpot, s.tpot.p50_ms), ms(s.itl, s.itl.p99_ms),
               ms(s.e2e, s.e2e.p50_ms), s.output_tokens_per_s, pct(s.cache_hit_rate), pct(s.requests ? s.goodput_share : -1));
  };
  for (const auto& l : r.levels) row(fmt::format("c={}", l.concurrency), l.summary);
  row("all", r.overall);
  fmt::print("  latencies in ms; hit = cached / prompt tokens as the endpoint reported them; good = within the SLOs\n");
  const auto& o = r.overall;
  fmt::print("cache: measured {} ({} of {} prompt tokens, field: {}), theoretical {} over the prompts sent ({}-token blocks)\n",
             pct(o.cache_hit_rate), o.cached_tokens, o.prompt_tokens, cache_source_name(o.cache_source),
             pct(r.theoretical_hit_rate), f.theory_block_tokens);
  if (o.requests_with_usage == 0 && o.succeeded > 0)
    fmt::print("cache: the endpoint reported no usage; streaming needs stream_options.include_usage (drop --no-usage)\n");
  if (o.queue.count && o.queue.max_ms > 0)
    fmt::print("client queueing: p50 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms (reported apart from TTFT)\n", o.queue.p50_ms,
               o.queue.p99_ms, o.queue.max_ms);
  std::string errs;
  for (int k = 1; k < kErrorClassCount; ++k) {
    if (ErrorClass(k) == ErrorClass::kCanceled) continue;  // cmax's doing, not the endpoint's: below
    if (o.errors[k] || o.retries[k])
      errs += fmt::format(" {} {} (retried {})", error_class_name(ErrorClass(k)), o.errors[k], o.retries[k]);
  }
  if (!errs.empty()) fmt::print("errors:{}\n", errs);
  if (o.client_canceled)
    fmt::print("canceled by cmax when it stopped: {} (not the endpoint's failures; success rate {} of the rest)\n",
               o.client_canceled, pct(success_rate(o)));
  if (bill) {
    fmt::print("bill:\n");
    for (const auto& line : bill->arithmetic) fmt::print("  {}\n", line);
  }
  for (const auto& w : warnings) fmt::print(stderr, "cmax endpoint bench: warning: {}\n", w);
  if (r.interrupted) fmt::print("interrupted: partial results ({} requests finished)\n", r.records.size());
  fmt::print("results: {}/bench.json, {}/requests.jsonl\n", dir, dir);
}

// --warmup N: N requests before the measured run, not counted and not written: unique prompts
// (seeded apart from the run, sharing nothing with it, so they warm the server without priming the
// cache the run measures) of the run's sizes with --fixed, else 512 prompt and 16 output tokens,
// at the first level's concurrency (8 for a rate or a trace).
json run_warmup(const BenchFlags& f, HttpEngine& engine, const RunConfig& rc) {
  FixedConfig fx;
  fx.requests = f.warmup;
  fx.input_tokens = f.fixed ? f.fx.input_tokens : 512;
  fx.output_tokens = f.fixed ? f.fx.output_tokens : 16;
  fx.seed = f.seed + 0x9e3779b9u;
  auto w = fixed_workload(fx);
  RunConfig one = rc;
  one.schedule.kind = ScheduleKind::kConcurrency;
  const int level = rc.schedule.kind == ScheduleKind::kConcurrency && !rc.schedule.levels.empty() ? rc.schedule.levels.front() : 8;
  one.schedule.levels = {level};
  one.schedule.requests_per_level = f.warmup;
  one.max_requests = f.warmup;
  one.duration_s = 0;
  RunHooks quiet;
  quiet.stop = &g_stop;
  const auto r = run_bench(engine, *w, one, quiet);
  return {{"requests", r.overall.requests}, {"succeeded", r.overall.succeeded}, {"concurrency", level},
          {"duration_s", r.duration_s}, {"prompt_tokens_each", fx.input_tokens}};
}

// --flush-cache, before each level: SGLang's POST /flush_cache, else vLLM's POST
// /reset_prefix_cache (served when vLLM runs with VLLM_SERVER_DEV_MODE=1). Recorded either way; a
// failure is a warning, not the end of the run.
json flush_server_cache(MetricsScraper& origin, std::size_t level, std::vector<std::string>& warnings) {
  std::string detail;
  std::string path = "/flush_cache";
  int status = origin.post(path, detail);
  if (status == 404 || status == 405) {
    path = "/reset_prefix_cache";
    status = origin.post(path, detail);
  }
  const bool ok = status >= 200 && status < 300;
  if (!ok)
    warnings.push_back(fmt::format(
        "level {}: the server's prefix cache was not flushed (POST {}{}: {}{}); this level starts with what the last "
        "left (SGLang answers /flush_cache when idle; vLLM /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1)",
        level + 1, origin.origin(), path, status ? fmt::format("HTTP {}", status) : std::string("no answer"),
        detail.empty() ? "" : ", " + detail));
  return {{"level", level + 1}, {"path", path}, {"status", status}, {"flushed", ok}};
}

// --capacity: the highest concurrency or request rate at which --capacity-attainment of the
// requests meet every SLO given (loadgen/capacity.h), each measurement a fresh run of the
// workload at one load. Writes RUN/capacity.json (cmax.endpoint.capacity/1); its requests go to
// RUN/requests.jsonl as every run's do.
int run_capacity(BenchFlags& f, HttpEngine& engine, RunConfig rc, const RunHooks& hooks, const std::string& dir,
                 const std::vector<std::string>& warnings) {
  const bool by_rate = f.capacity == "rate";
  CapacityConfig cc;
  cc.integer = !by_rate;
  cc.start = f.capacity_start;
  cc.max = f.capacity_max > 0 ? f.capacity_max : by_rate ? 1000 : 1024;
  cc.attainment = f.capacity_attainment;
  cc.repeats = f.capacity_repeats;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  json probes = json::array();
  auto measure = [&](double load) -> std::optional<double> {
    if (g_stop) return std::nullopt;
    RunConfig one = rc;
    std::size_t n = f.capacity_requests;
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
    std::unique_ptr<Workload> w;
    if (f.fixed) {
      FixedConfig fx = f.fx;
      fx.requests = n;
      w = fixed_workload(fx);
    } else {
      MultiTurnConfig mt = f.mt;
      mt.sessions = static_cast<std::uint32_t>(std::max<std::size_t>(mt.sessions, (n + mt.turns - 1) / mt.turns));
      w = multiturn_workload(mt);
    }
    if (tty) fmt::print(stderr, "\r\033[Kcmax endpoint bench: capacity: {} {:g} ...", by_rate ? "rate" : "concurrency", load);
    auto r = run_bench(engine, *w, one, hooks);
    if (r.stop_reason == "interrupted") return std::nullopt;
    const Summary& s = r.overall;
    probes.push_back({{"load", load},
                      {"requests", s.requests},
                      {"failed", s.failed},
                      {"attainment", s.goodput_share},
                      {"pass", s.goodput_share >= cc.attainment},
                      {"request_throughput", s.request_throughput},
                      {"ttft_incl_queue_ms", {{"p50", s.ttft_incl_queue.p50_ms}, {"p90", s.ttft_incl_queue.p90_ms},
                                              {"p99", s.ttft_incl_queue.p99_ms}}},
                      {"tpot_ms", {{"p50", s.tpot.p50_ms}, {"p90", s.tpot.p90_ms}, {"p99", s.tpot.p99_ms}}},
                      {"e2e_ms", {{"p50", s.e2e.p50_ms}, {"p90", s.e2e.p90_ms}, {"p99", s.e2e.p99_ms}}}});
    return s.goodput_share;
  };
  const auto res = search_capacity(cc, measure);
  if (tty) fmt::print(stderr, "\r\033[K");
  const char* unit = by_rate ? "requests/s" : "streams";
  json doc = {{"schema", "cmax.endpoint.capacity/1"},
              {"cmax_version", report::cmax_version()},
              {"endpoint", f.base_url},
              {"model", rc.model},
              {"dimension", by_rate ? "rate" : "concurrency"},
              {"slo", {{"ttft_ms", f.slo.ttft_ms}, {"tpot_ms", f.slo.tpot_ms}, {"e2e_ms", f.slo.e2e_ms}}},
              {"attainment_goal", cc.attainment},
              {"repeats", cc.repeats},
              {"max", cc.max},
              {"edge", res.edge},
              {"first_fail", res.first_fail < 0 ? json(nullptr) : json(res.first_fail)},
              {"reached_max", res.reached_max},
              {"interrupted", res.interrupted},
              {"workload", f.fixed ? "fixed" : "multiturn"},
              {"probes", probes},
              {"warnings", warnings}};
  std::ofstream(dir + "/capacity.json", std::ios::trunc) << doc.dump(2) << '\n';
  if (f.json) {
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{:>12} {:>9} {:>11} {:>11} {:>11} {:>6}\n", by_rate ? "rate/s" : "concurrency", "attained",
               "TTFT p90 ms", "TPOT p90 ms", "E2E p90 ms", "SLO");
    for (const auto& p : probes)
      fmt::print("{:>12g} {:>8.1f}% {:>11.1f} {:>11.2f} {:>11.1f} {:>6}\n", p["load"].get<double>(),
                 100 * p["attainment"].get<double>(), p["ttft_incl_queue_ms"]["p90"].get<double>(),
                 p["tpot_ms"]["p90"].get<double>(), p["e2e_ms"]["p90"].get<double>(), p["pass"].get<bool>() ? "met" : "missed");
    if (res.edge <= 0)
      fmt::print("capacity: the SLOs are missed even at {} {} ({:.0f}% of requests must meet them)\n", cc.start, unit,
                 100 * cc.attainment);
    else if (res.reached_max)
      fmt::print("capacity: at least {:g} {} (the search's --capacity-max; the SLOs still held)\n", res.edge, unit);
    else
      fmt::print("capacity: {:g} {} ({:.0f}% of requests meet the SLOs there; {:g} misses them); {} measurements\n",
                 res.edge, unit, 100 * cc.attainment, res.first_fail, res.probes.size());
    fmt::print("run directory: {}\n", dir);
  }
  return res.interrupted ? kExitInterrupted : kExitOk;
}

// A prompt seed of its own for each run: the same seeded prompts sent again find an endpoint's
// cache warm from the last run, and its hit rate would then measure cmax, not the endpoint.
// Under 2^53, so that a JSON reader in any language reads it back exactly.
std::uint64_t fresh_seed() {
  std::random_device rd;
  std::uint64_t s = 0;
  while (s <= 1)  // 1 is the documented reproducible default of old runs: never drawn
    s = ((std::uint64_t{rd()} << 32) | rd()) & ((std::uint64_t{1} << 53) - 1);
  return s;
}

int run_bench_cmd(BenchFlags& f) {
  std::vector<std::string> warnings;
  if (f.seed_option == nullptr || f.seed_option->count() == 0) {
    f.seed = fresh_seed();
    f.seed_source = "fresh";
  }
  auto usage = [](const std::string& msg) {
    fmt::print(stderr, "cmax endpoint bench: {}\n", msg);
    return kExitUsage;
  };
  // Flags.
  endpoint::Api api;
  if (f.api == "chat") api = endpoint::Api::kChat;
  else if (f.api == "completions") api = endpoint::Api::kCompletions;
  else if (f.api == "messages") api = endpoint::Api::kMessages;
  else return usage(fmt::format("--api {}: use chat, completions or messages", f.api));
  if (api == endpoint::Api::kMessages && (f.api_key_env_option == nullptr || f.api_key_env_option->count() == 0))
    f.api_key_env = "ANTHROPIC_API_KEY";
  HttpVersion http;
  if (!http_version_from_name(f.http, http)) return usage(fmt::format("--http {}: use 1.1, 2 or auto", f.http));
  TransportKind transport;
  if (!transport_from_name(f.transport, transport))
    return usage(fmt::format("--transport {}: use auto, native or curl", f.transport));
  if (int(!f.trace.empty()) + int(f.multiturn) + int(f.fixed) + int(!f.prompts.empty()) > 1)
    return usage("give one workload: a trace file, --multiturn, --fixed or --prompts FILE");
  if (int(!f.concurrency.empty()) + int(f.rate > 0) + int(f.trace_timestamps) > 1)
    return usage("give one schedule: --concurrency, --rate or --trace-timestamps");
  if (f.trace_timestamps && f.trace.empty()) return usage("--trace-timestamps needs a trace file");
  if (!f.capacity.empty()) {
    if (f.capacity != "concurrency" && f.capacity != "rate") return usage("--capacity: concurrency or rate");
    if (f.slo.ttft_ms <= 0 && f.slo.tpot_ms <= 0 && f.slo.e2e_ms <= 0)
      return usage("--capacity needs an SLO to meet: --slo-ttft-ms, --slo-tpot-ms or --slo-e2e-ms");
    if (!f.trace.empty() || !f.prompts.empty())
      return usage("--capacity runs --fixed or --multiturn at each load; a trace or a prompt file is not repeated");
    if (!f.concurrency.empty() || f.rate > 0 || f.trace_timestamps)
      return usage("--capacity chooses the load itself: drop --concurrency, --rate and --trace-timestamps");
    if (!(f.capacity_attainment > 0 && f.capacity_attainment <= 1))
      return usage("--capacity-attainment: a share above 0, at most 1");
  }
  if (!(f.max_error_share >= 0 && f.max_error_share <= 1)) return usage("--max-error-share: a share between 0 and 1");
  if (f.reference_hit_rate != -1 && !(f.reference_hit_rate >= 0 && f.reference_hit_rate <= 1))
    return usage("--reference-hit-rate: a share between 0 and 1");

  std::vector<std::string> header_names;
  for (const auto& h : f.headers) {
    auto name = loadgen::header_name(h);
    if (!name) return usage(name.error().message);
    header_names.push_back(*name);
  }
  RunConfig rc;
  if (!f.session_header.empty()) {
    auto name = loadgen::header_name(f.session_header + ": x");
    if (!name) return usage(fmt::format("--session-header: {}", name.error().message));
    rc.session_header = *name;
  }
  rc.session_user = f.session_user;
  if (!f.extra_body.empty()) {
    auto extra = loadgen::parse_extra_body(f.extra_body);
    if (!extra) return usage(extra.error().message);
    rc.extra_body = *extra;
  }
  rc.api = api;
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
    if (!levels) return usage(levels.error().message);
    sched.levels = *levels;
  }

  // Workload.
  std::unique_ptr<Workload> workload;
  std::string workload_kind, workload_source;
  double trace_theory = -1;
  std::size_t trace_requests = 0;
  endpoint::SteadyState steady;
  std::string workload_plan;  // how much of the workload is sent, and why
  if (!f.trace.empty()) {
    auto text = core::read_text_file(f.trace, kMaxTraceBytes, "; cut the trace with head -n");
    if (!text) return usage(text.error().message);
    auto trace = endpoint::parse_mooncake(*text);
    if (!trace) return usage(fmt::format("trace {}: {}", f.trace, trace.error().message));
    for (const auto& w : trace->warnings) warnings.push_back(fmt::format("trace {}: {}", f.trace, w));
    trace_requests = trace->requests.size();
    // A trace's opening requests find every cache empty: the sweep's default of a few dozen
    // requests a level would measure the cold start, not the trace. Unless told how much to
    // send, send enough for the trace's own hit rate to reach its steady state.
    steady = endpoint::steady_state(*trace);
    const bool told = f.max_requests > 0 || f.requests_per_level > 0 || f.duration_s > 0 || f.trace_timestamps;
    if (!told && steady.requests > 0) {
      if (sched.kind == ScheduleKind::kConcurrency) {
        const std::size_t levels = std::max<std::size_t>(1, sched.levels.size());
        sched.requests_per_level = (steady.requests + levels - 1) / levels;
      }
      f.max_requests = std::min(trace_requests, std::max(steady.requests, sched.requests_per_level * sched.levels.size()));
      rc.max_requests = f.max_requests;
      workload_plan = fmt::format(
          "sending {} of the trace's {} requests: the prefix over which its own upper-bound hit rate stays within 10% "
          "of the whole trace's ({:.1f}% over those, {:.1f}% over all); --max-requests N sends fewer",
          f.max_requests, trace_requests, steady.prefix_rate * 100, steady.whole_rate * 100);
    }
    // The trace's own theoretical rate, over the requests that will be sent.
    endpoint::Trace head = *trace;
    const std::size_t n = f.max_requests ? std::min(f.max_requests, head.requests.size()) : head.requests.size();
    head.requests.resize(n);
    trace_theory = endpoint::theoretical_hit_rate(head);
    MooncakeOptions mo;
    mo.max_requests = f.max_requests;
    mo.max_output_tokens = f.max_tokens;
    mo.salt = f.seed == 1 ? 0 : f.seed;
    workload = mooncake_workload(*trace, mo);
    workload_kind = "mooncake";
    workload_source = f.trace;
  } else if (!f.prompts.empty()) {
    auto text = core::read_text_file(f.prompts, 1u << 30);
    if (!text) return usage(text.error().message);
    auto file = parse_prompt_file(*text);
    if (!file) return usage(fmt::format("--prompts {}: {}", f.prompts, file.error().message));
    for (const auto& w : file->warnings) warnings.push_back(fmt::format("--prompts {}: skipped {}", f.prompts, w));
    if (file->skipped > file->warnings.size())
      warnings.push_back(fmt::format("--prompts {}: {} entries skipped in all", f.prompts, file->skipped));
    std::size_t n = f.max_requests;
    if (!n && sched.kind == ScheduleKind::kConcurrency) n = requests_in_sweep(sched);
    const std::size_t entries = file->entries.size();
    workload = prompt_file_workload(std::move(file->entries), n, f.fx.output_tokens, f.max_tokens);
    workload_kind = file->format;
    workload_source = fmt::format("{} ({} prompts{})", f.prompts, entries,
                                  file->skipped ? fmt::format(", {} skipped", file->skipped) : std::string());
  } else if (f.fixed) {
    f.fx.seed = f.seed;
    if (f.shared_prefix_option && f.shared_prefix_option->count() > 0)
      f.fx.shared_prefix_tokens = std::min(f.shared_prefix_tokens, f.fx.input_tokens);
    if (f.max_requests) {
      f.fx.requests = f.max_requests;
    } else if (sched.kind == ScheduleKind::kConcurrency) {
      // Enough for every level, not a fixed 100 that would cut the sweep short.
      f.fx.requests = requests_in_sweep(sched);
    }
    if (f.max_tokens) f.fx.output_tokens = f.max_tokens;
    workload = fixed_workload(f.fx);
    workload_kind = "fixed";
    workload_source = fmt::format("{} x ({} in, {} out)", f.fx.requests, f.fx.input_tokens, f.fx.output_tokens);
  } else {
    f.mt.seed = f.seed;
    f.mt.shared_prefix_tokens = f.shared_prefix_tokens;
    if (f.max_tokens) f.mt.max_tokens = f.max_tokens;
    workload = multiturn_workload(f.mt);
    workload_kind = "multiturn";
    workload_source = fmt::format("{} sessions x {} turns, {}-token shared prefix", f.mt.sessions, f.mt.turns,
                                  f.mt.shared_prefix_tokens);
  }

  if (f.dry_run) {  // the bodies that would be sent, in order; multi-turn replies are a placeholder
    if (f.model.empty()) return usage("--dry-run needs --model (nothing is sent, so the endpoint is not asked)");
    rc.model = f.model;
    if (f.seed_source == "fresh")
      fmt::print(stderr, "cmax endpoint bench: --dry-run: prompt seed {} (drawn fresh: pass --seed {} to send these bodies)\n",
                 f.seed, f.seed);
    const std::size_t limit = f.max_requests ? f.max_requests : workload->total();
    std::size_t n = 0;
    while (n < limit) {
      auto spec = workload->next();
      if (!spec) break;
      fmt::print("{}\n", request_body(*spec, rc));
      workload->reply(*spec, " (a reply)", true);
      ++n;
    }
    return kExitOk;
  }

  // Prices.
  std::optional<PriceSheet> sheet;
  if (!f.prices.empty()) {
    auto text = core::read_text_file(f.prices, 4 << 20);
    if (!text) return usage(text.error().message);
    auto s = parse_price_sheet(*text, f.price_provider.empty() ? f.provider : f.price_provider);
    if (!s) return usage(fmt::format("--prices {}: {}", f.prices, s.error().message));
    sheet = *s;
  }

  auto key = load_api_key(f);
  if (!key) return usage(key.error().message);
  ClientConfig cc;
  cc.base_url = f.base_url;
  cc.api_key = key->first;
  cc.http = http;
  cc.transport = transport;
  cc.wake_interval = std::chrono::microseconds(f.wake_interval_us);
  cc.coalesce_from = f.coalesce_from;
  cc.ca_file = f.ca_file;
  cc.extra_headers.insert(cc.extra_headers.end(), f.headers.begin(), f.headers.end());
  if (api == endpoint::Api::kMessages) {
    // Anthropic's own: the key in x-api-key, and the API version every request must name.
    cc.api_key_header = "x-api-key";
    const bool has_version = std::any_of(header_names.begin(), header_names.end(), [](const std::string& n) {
      return n.size() == 17 && core::contains_icase(n, "anthropic-version");
    });
    if (!has_version) cc.extra_headers.push_back(fmt::format("anthropic-version: {}", endpoint::kAnthropicVersion));
  }
  cc.connect_timeout = std::chrono::milliseconds(long(f.connect_timeout_s * 1000));
  cc.request_timeout = std::chrono::milliseconds(long(f.timeout_s * 1000));
  cc.stall_timeout = std::chrono::seconds(long(std::max(1.0, f.stall_timeout_s)));
  int most = sched.max_inflight;
  for (int l : sched.levels) most = std::max(most, l);
  cc.max_connections = most + 16;
  auto engine = HttpEngine::create(cc);
  if (!engine) return usage(engine.error().message);

  raise_fd_limit();  // one socket per stream
  g_stop = false;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::string model = f.model;
  if (!f.no_preflight) {
    auto m = preflight(**engine, f, warnings);
    if (!m) return usage(m.error().message);
    model = *m;
  } else if (model.empty()) {
    return usage("--no-preflight needs --model");
  }
  rc.model = model;

  // Run directory; requests.jsonl is written as requests finish.
  const auto now = core::SystemClock().now();
  const std::string dir = f.out.empty() ? report::default_run_dir(core::format_utc_compact(now) + "-endpoint-bench") : f.out;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return usage(fmt::format("create run directory {}: {}; pass --out a writable directory", dir, ec.message()));
  std::ofstream jsonl(dir + "/requests.jsonl", std::ios::trunc);
  if (!jsonl) return usage(fmt::format("write {}/requests.jsonl: cannot open; pass --out a writable directory", dir));

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  RunHooks hooks;
  hooks.stop = &g_stop;
  auto last_flush = std::chrono::steady_clock::now();
  hooks.on_record = [&](const RequestRecord& r) {
    jsonl << record_to_jsonl(r) << '\n';
    if (std::chrono::steady_clock::now() - last_flush > std::chrono::milliseconds(200)) {
      jsonl.flush();
      last_flush = std::chrono::steady_clock::now();
    }
  };
  if (tty) {
    hooks.on_progress = [](const Progress& p) {
      fmt::print(stderr, "\r\033[Kcmax endpoint bench: {}  {}/{} done, {} failed, {} in flight, {:.0f} tok/s, hit {}, {:.1f} s",
                 p.phase, p.finished, p.total, p.failed, p.inflight, p.output_tokens_per_s,
                 p.cache_hit_rate < 0 ? std::string("-") : fmt::format("{:.1f}%", p.cache_hit_rate * 100), p.elapsed_s);
    };
  }
  if (!f.capacity.empty()) return run_capacity(f, **engine, rc, hooks, dir, warnings);
  std::optional<MetricsScraper> scraper;
  if (!f.no_server_metrics || f.flush_cache) scraper.emplace(cc, std::string(core::url_origin(f.base_url)));
  const json warmup = f.warmup ? run_warmup(f, **engine, rc) : json(nullptr);
  std::vector<std::optional<EngineCacheMetrics>> scraped_before, scraped_after;
  json flushes = json::array();
  hooks.on_level = [&](std::size_t level, bool drained) {
    if (!drained && f.flush_cache) flushes.push_back(flush_server_cache(*scraper, level, warnings));
    if (f.no_server_metrics) return;
    auto& v = drained ? scraped_after : scraped_before;
    if (v.size() <= level) v.resize(level + 1);
    v[level] = scraper->scrape();
  };
  auto result = run_bench(**engine, *workload, rc, hooks);
  if (tty) fmt::print(stderr, "\r\033[K");
  jsonl.flush();
  if (result.sessions_ended)
    warnings.push_back(fmt::format("{} multi-turn sessions ended early after a failed turn", result.sessions_ended));
  if (rc.schedule.kind == ScheduleKind::kConcurrency && result.stop_reason.empty()) {
    // A workload smaller than the sweep ends it early; a chart with one point must say why.
    std::vector<int> missing;
    for (int level : rc.schedule.levels)
      if (std::none_of(result.levels.begin(), result.levels.end(), [&](const auto& l) { return l.concurrency == level; }))
        missing.push_back(level);
    if (!missing.empty())
      warnings.push_back(fmt::format("the workload ran out after {} requests: concurrency level(s) {} were not run; "
                                     "give a larger workload (--sessions, --requests, a longer trace) or fewer levels",
                                     result.records.size(), fmt::join(missing, ", ")));
  }

  if (trace_requests > 0) {
    const std::size_t sent = result.records.size();
    const std::string share = fmt::format("{} of the trace's {} requests were sent ({:.1f}%)", sent, trace_requests,
                                          100.0 * static_cast<double>(sent) / static_cast<double>(trace_requests));
    workload_plan = workload_plan.empty() ? share : workload_plan + "; " + share;
    if (sent < steady.requests)
      warnings.push_back(fmt::format("{}, fewer than the {} it takes for the trace's hit rate to reach its steady state: "
                                     "judge the hit rate against what the prompts sent allow ({}), not the trace's {:.1f}%",
                                     share, steady.requests, pct(result.theoretical_hit_rate), steady.whole_rate * 100));
  }
  // Measured above what the prompts sent allow: the cache held them before the run started.
  const bool warm_cache = result.overall.cache_hit_rate >= 0 && result.theoretical_hit_rate >= 0 &&
                          result.overall.cache_hit_rate > result.theoretical_hit_rate + score::kHitAboveAchievableTolerance;
  std::string warm_warning;
  if (warm_cache) {
    warm_warning = fmt::format(
        "the measured prefix-cache hit rate {} is above the {} the prompts sent allow: the endpoint's cache held these "
        "prompts before the run (seed {}, {}, was sent to it before), so the hit rate and the bill do not judge it "
        "(cmax score leaves them out); run again without --seed (a fresh seed) or with --flush-cache",
        pct(result.overall.cache_hit_rate), pct(result.theoretical_hit_rate), f.seed,
        f.seed_source == "fresh" ? "drawn fresh" : "given with --seed");
    warnings.push_back(warm_warning);
  }
  // The bill's reference: the best peer's rate (0.99), but never more than the prompts sent allow.
  double reference_hit_rate = f.reference_hit_rate;
  std::string reference_source = "--reference-hit-rate";
  if (reference_hit_rate < 0) {
    reference_hit_rate = 0.99;
    reference_source = "the best peers' 99%";
    if (result.theoretical_hit_rate >= 0 && result.theoretical_hit_rate < reference_hit_rate) {
      reference_hit_rate = result.theoretical_hit_rate;
      reference_source = "the upper bound for the prompts sent";
    }
  }

  std::optional<Bill> bill;
  if (sheet) {
    BillInput in;
    in.prompt_tokens = result.overall.prompt_tokens;
    in.cached_tokens = result.overall.cached_tokens;
    in.cache_creation_tokens = result.overall.cache_creation_tokens;
    in.completion_tokens = result.overall.completion_tokens;
    in.duration_s = result.overall.duration_s;
    in.reference_hit_rate = reference_hit_rate;
    in.monthly_mtok = f.monthly_mtok;
    bill = compute_bill(*sheet, in);
  }

  json levels = json::array();
  for (const auto& l : result.levels) levels.push_back({{"concurrency", l.concurrency}, {"summary", summary_to_json(l.summary)}});
  auto opt = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  json j = {
      {"schema", "cmax.endpoint.bench/1"},
      {"cmax_version", report::cmax_version()},
      {"started_at", core::format_utc(now)},
      {"provider", f.provider.empty() ? (sheet ? sheet->provider : std::string()) : f.provider},
      {"endpoint", f.base_url},
      {"model", model},
      {"api", f.api},
      {"stream", rc.stream},
      {"http", std::string(http_version_name(http))},
      {"transport", std::string((*engine)->transport())},
      {"api_key", key->second},
      {"headers", header_names},  // names only: a header may carry a credential
      {"extra_body", rc.extra_body.empty() ? json(nullptr) : json::parse(rc.extra_body)},
      {"session_id",
       {{"user", rc.session_user}, {"header", rc.session_header.empty() ? json(nullptr) : json(rc.session_header)}}},
      {"workload",
       {{"kind", workload_kind},
        {"source", workload_source},
        {"requests", result.records.size()},
        {"theoretical_hit_rate", result.theoretical_hit_rate >= 0 ? json(result.theoretical_hit_rate) : json(nullptr)},
        {"theoretical_block_tokens", f.theory_block_tokens},
        {"trace_theoretical_hit_rate", trace_theory >= 0 ? json(trace_theory) : json(nullptr)},
        {"trace_requests", trace_requests ? json(trace_requests) : json(nullptr)},
        {"trace_whole_hit_rate", trace_requests ? json(steady.whole_rate) : json(nullptr)},
        {"trace_steady_state_requests", trace_requests ? json(steady.requests) : json(nullptr)},
        {"plan", workload_plan.empty() ? json(nullptr) : json(workload_plan)}}},
      {"reference_hit_rate", {{"value", reference_hit_rate}, {"source", reference_source}}},
      {"schedule",
       {{"kind", std::string(schedule_kind_name(sched.kind))},
        {"levels", sched.kind == ScheduleKind::kConcurrency ? json(sched.levels) : json(nullptr)},
        {"rate", sched.kind == ScheduleKind::kRate ? json(sched.rate_per_s) : json(nullptr)},
        {"time_scale", sched.kind == ScheduleKind::kTrace ? json(sched.trace_speed) : json(nullptr)},
        {"max_inflight", sched.max_inflight}}},
      {"limits",
       {{"max_requests", f.max_requests ? json(f.max_requests) : json(nullptr)},
        {"duration_s", opt(f.duration_s)},
        {"timeout_s", f.timeout_s},
        {"retries", f.retries}}},
      {"seed", f.seed},
      {"seed_source", f.seed_source},
      {"cache_hit_above_achievable", warm_cache},
      {"interrupted", result.stop_reason == "interrupted"},
      {"stopped_by", result.stop_reason.empty() ? json(nullptr) : json(result.stop_reason)},
      {"slo", {{"ttft_ms", opt(f.slo.ttft_ms)}, {"tpot_ms", opt(f.slo.tpot_ms)}, {"e2e_ms", opt(f.slo.e2e_ms)}}},
      {"overall", summary_to_json(result.overall)},
      {"levels", levels},
      {"cost", bill ? bill_to_json(*sheet, *bill) : json(nullptr)},
      {"warnings", warnings}};
  j["warmup"] = warmup;
  j["cache_flushes"] = f.flush_cache ? flushes : json(nullptr);
  if (scraper && !f.no_server_metrics) {
    json levels_sm = json::array();
    bool any = false;
    auto at = [](const auto& v, std::size_t i) { return i < v.size() ? v[i] : std::nullopt; };
    if (rc.schedule.kind == ScheduleKind::kConcurrency) {
      for (std::size_t i = 0; i < rc.schedule.levels.size(); ++i) {
        const auto it = std::find_if(result.levels.begin(), result.levels.end(),
                                     [&](const auto& l) { return l.concurrency == rc.schedule.levels[i]; });
        if (it == result.levels.end()) continue;
        levels_sm.push_back(server_level_json(at(scraped_before, i), at(scraped_after, i), it->summary, it->concurrency));
        any = any || at(scraped_after, i).has_value();
      }
    } else {
      levels_sm.push_back(server_level_json(at(scraped_before, 0), at(scraped_after, 0), result.overall, std::nullopt));
      any = at(scraped_after, 0).has_value();
    }
    j["server_metrics"] = {{"url", scraper->origin() + "/metrics"},
                           {"read", any},
                           {"why_not", any ? json(nullptr) : json(scraper->why_not())},
                           {"levels", levels_sm}};
    // The server counts prefix-cache hits the responses do not report: a flag is missing.
    for (const auto& l : levels_sm) {
      const bool server_hits = l.contains("prefix_cache_hits") && l["prefix_cache_hits"].get<double>() > 0;
      const bool sglang_hits = l.contains("sglang_cache_hit_rate") && l["sglang_cache_hit_rate"].get<double>() > 0;
      const bool responses_say = !l["responses_hit_rate"].is_null() && l["responses_hit_rate"].get<double>() > 0;
      if ((server_hits || sglang_hits) && !responses_say) {
        warnings.push_back(
            rc.api == endpoint::Api::kMessages
                ? "the server's /metrics count prefix-cache hits, but its /messages responses report no cached tokens: "
                  "the hit rate and the bill here assume none. vLLM's /v1/messages writes input_tokens and "
                  "output_tokens only, whatever its flags; measure the hit rate with --api chat (vLLM with "
                  "--enable-prompt-tokens-details)"
                : "the server's /metrics count prefix-cache hits, but its responses report no cached tokens: the hit "
                  "rate and the bill here assume none. Start vLLM with --enable-prompt-tokens-details, SGLang with "
                  "--enable-cache-report");
        j["warnings"] = warnings;
        break;
      }
    }
  }
  {
    std::ofstream out(dir + "/bench.json", std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out) return usage(fmt::format("write {}/bench.json: failed; check the disk", dir));
  }
  {
    std::vector<std::pair<std::string, Summary>> rows{{"overall", result.overall}};
    for (const auto& l : result.levels) rows.emplace_back(fmt::format("c={}", l.concurrency), l.summary);
    std::ofstream csv(dir + "/bench.csv", std::ios::trunc);
    csv << summaries_csv(rows);
    if (!csv) return usage(fmt::format("write {}/bench.csv: failed; check the disk", dir));
  }
  if (result.levels.size() > 1) {
    RunView v;
    v.label = j["provider"].get<std::string>().empty() ? model : j["provider"].get<std::string>();
    v.overall = result.overall;
    for (const auto& l : result.levels) v.levels.emplace_back(l.concurrency, l.summary);
    std::ofstream svg(dir + "/ttft_vs_concurrency.svg", std::ios::trunc);
    svg << svg_latency_vs_concurrency({v});
  }

  if (f.json) {
    fmt::print("{}\n", j.dump(2));
    if (warm_cache) fmt::print(stderr, "cmax endpoint bench: warning: {}\n", warm_warning);
  } else {
    if (!workload_plan.empty()) fmt::print("workload: {}\n", workload_plan);
    print_text(f, result, model, bill, dir, warnings, workload_source);
  }
  if (result.stop_reason == "interrupted") return kExitInterrupted;
  // The endpoint's failures only: what cmax canceled when it stopped is not the endpoint's doing.
  const auto& o = result.overall;
  const double judged = double(o.requests) - double(o.client_canceled);
  if (judged > 0 && (double(o.failed) - double(o.client_canceled)) / judged > f.max_error_share) return kExitErrors;
  return kExitOk;
}

int run_compare_cmd(const std::vector<std::string>& runs, const std::string& out, bool as_json) {
  std::vector<RunView> views;
  for (const auto& r : runs) {
    auto v = read_bench(r);
    if (!v) {
      fmt::print(stderr, "cmax endpoint compare: {}\n", v.error().message);
      return kExitUsage;
    }
    views.push_back(std::move(*v));
  }
  if (!out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) {
      fmt::print(stderr, "cmax endpoint compare: create {}: {}\n", out, ec.message());
      return kExitUsage;
    }
    for (auto [name, svg] : {std::pair{"latency_vs_concurrency.svg", svg_latency_vs_concurrency(views)},
                             std::pair{"hit_rate.svg", svg_hit_rate(views)}, std::pair{"cost.svg", svg_cost(views)}}) {
      std::ofstream f(out + "/" + name, std::ios::trunc);
      f << svg;
    }
    std::ofstream f(out + "/compare.json", std::ios::trunc);
    f << compare_json(views).dump(2) << '\n';
  }
  if (as_json) fmt::print("{}\n", compare_json(views).dump(2));
  else {
    fmt::print("{}", compare_table(views));
    if (!out.empty()) fmt::print("charts: {}/latency_vs_concurrency.svg, {}/hit_rate.svg, {}/cost.svg\n", out, out, out);
  }
  return kExitOk;
}

}  // namespace

Runner setup_endpoint_bench(CLI::App& b) {
  auto f = std::make_shared<BenchFlags>();
  b.description(
      "Measure an OpenAI-compatible endpoint: TTFT, TPOT, ITL and E2E percentiles, throughput, goodput under SLOs,\n"
      "errors by class, client-side queueing (apart), the cached-token hit rate the endpoint reports beside the\n"
      "theoretical rate of the prompts sent, and the bill. Results: RUN/bench.json (cmax.endpoint.bench/1) and\n"
      "RUN/requests.jsonl. docs/endpoint-bench.md.\n\n"
      "Workloads: TRACE (Mooncake JSONL replay: hash_ids become deterministic text, so equal ids share prefixes),\n"
      "--multiturn (default: sessions over a shared ~800-token system prompt), --fixed (fixed input/output lengths).\n"
      "Schedules: --concurrency 1,2,4,... (closed loop, one level after another; default 1,2,4,8), --rate R (open-loop\n"
      "Poisson), --trace-timestamps (the trace's own arrivals, --trace-speed to scale).\n\n"
      "The API key comes from $OPENAI_API_KEY (--api-key-env) or --api-key-file; it is never printed or stored.\n"
      "Ctrl-C stops: in-flight requests are canceled and what finished is written.\n\n"
      "Exit codes: 0 done; 1 more than --max-error-share of requests failed; 2 interrupted (partial results written);\n"
      "3 usage or environment (bad flag, unreadable file, endpoint unreachable, key refused, unknown model).");
  b.add_option("trace", f->trace, "Mooncake JSONL trace to replay (timestamp ms, input_length, output_length, hash_ids)");
  b.add_option("--base-url", f->base_url, "The API base")->capture_default_str();
  b.add_option("--model", f->model, "Model name (default: the first the endpoint lists)");
  b.add_option("--provider", f->provider, "Label for reports and the price sheet entry (default: none)");
  b.add_option("--api", f->api,
               "chat or completions (OpenAI's /chat/completions, /completions), or messages (Anthropic's /messages: "
               "x-api-key from ANTHROPIC_API_KEY, anthropic-version 2023-06-01, system messages on top, the session "
               "id in metadata.user_id, cache_read_input_tokens read as the cached count)")
      ->capture_default_str();
  b.add_flag("--no-cache-control", f->no_cache_control,
             "--api messages: do not mark the last turn cache_control ephemeral (Anthropic caches only up to a mark; "
             "servers that cache prefixes themselves ignore it)");
  b.add_flag("--no-stream", f->no_stream, "Ask for whole responses (TTFT is then the whole response time)");
  b.add_flag("--no-usage", f->no_usage, "Do not send stream_options.include_usage (then no cached-token count)");
  b.add_flag("--ignore-eos", f->ignore_eos, "Send vLLM's ignore_eos: every response max_tokens long");
  b.add_option("--header", f->headers,
               "\"Name: value\" sent on every request (repeatable): a gateway's key, a routing or session header. "
               "bench.json records the names only");
  b.add_flag("--session-user", f->session_user,
             "Send each conversation's session id (cmax-SEED-N, the same on every turn) in the body's `user` field "
             "(vllm-router's consistent_hash reads it). --multiturn only: a trace has no sessions");
  b.add_option("--session-header", f->session_header,
               "Send each conversation's session id in this header too: X-SMG-Routing-Key (smg consistent_hashing), "
               "X-Session-Id (vllm-router consistent_hash)");
  b.add_option("--capacity", f->capacity,
               "Find the highest load that meets the SLOs (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms): concurrency "
               "(closed loop) or rate (open-loop Poisson). Doubles from 1 until the SLOs are missed, bisects to 5%, "
               "measures both ends of the edge --capacity-repeats times; RUN/capacity.json");
  b.add_option("--capacity-start", f->capacity_start, "--capacity: the first load tried")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  b.add_option("--capacity-max", f->capacity_max, "--capacity: the highest load tried (default 1024 streams or 1000/s)");
  b.add_option("--capacity-attainment", f->capacity_attainment,
               "--capacity: the share of requests that must meet every SLO at a load")
      ->capture_default_str();
  b.add_option("--capacity-repeats", f->capacity_repeats, "--capacity: measurements at each end of the edge")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  b.add_option("--capacity-requests", f->capacity_requests,
               "--capacity: requests per measurement (default max(50, 4 x concurrency), or max(20, 5 s at the rate))");
  b.add_option("--warmup", f->warmup,
               "Send N requests first, not counted: unique prompts that warm the server without priming the cache "
               "the run measures; recorded in bench.json");
  b.add_flag("--flush-cache", f->flush_cache,
             "Empty the server's prefix cache before each level (POST /flush_cache, SGLang; else /reset_prefix_cache, "
             "vLLM with VLLM_SERVER_DEV_MODE=1); each attempt recorded in bench.json");
  b.add_flag("--no-server-metrics", f->no_server_metrics,
             "Do not read the endpoint's /metrics (at the base URL's origin) before and after each level; read, the "
             "engine's own prefix-cache hit rate (vLLM, SGLang) is set beside the responses' in bench.json");
  b.add_option("--extra-body", f->extra_body,
               "A JSON object merged into every request body (top level, over cmax's fields): sampling parameters, "
               "vLLM's or SGLang's extensions. model, messages, prompt, stream and stream_options are refused: "
               "cmax sets them");
  b.add_option("--http", f->http, "1.1, 2 (h2c on http://) or auto (HTTP/2 when TLS offers it)")->capture_default_str();
  b.add_option("--transport", f->transport,
               "auto (native for http://, libcurl for https:// and HTTP/2), native (lean HTTP/1.1), or curl")
      ->capture_default_str();
  b.add_option("--wake-interval-us", f->wake_interval_us,
               "With --coalesce-from or more requests in flight, wake at most this often and read all that arrived "
               "(timestamps then have this resolution; 0 = wake on every byte)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  b.add_option("--coalesce-from", f->coalesce_from, "In-flight requests from which --wake-interval-us applies")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  b.add_option("--ca-file", f->ca_file, "TLS trust anchors (PEM) instead of the system's");
  f->api_key_env_option =
      b.add_option("--api-key-env", f->api_key_env, "Environment variable holding the API key (--api messages: ANTHROPIC_API_KEY)")
          ->capture_default_str();
  b.add_option("--api-key-file", f->api_key_file, "File holding the API key (wins over --api-key-env)");
  b.add_flag("--multiturn", f->multiturn, "Multi-turn sessions over a shared system prompt (the default workload)");
  b.add_option("--sessions", f->mt.sessions, "--multiturn: sessions")->check(CLI::Range(1, 10000000))->capture_default_str();
  b.add_option("--turns", f->mt.turns, "--multiturn: turns per session")->check(CLI::Range(1, 100000))->capture_default_str();
  b.add_option("--user-tokens", f->mt.user_tokens, "--multiturn: mean user message")->capture_default_str();
  f->shared_prefix_option =
      b.add_option("--shared-prefix-tokens", f->shared_prefix_tokens,
                   "Tokens every request shares: --multiturn's system prompt (default 800); --fixed's prefix (default 0)");
  b.add_flag("--fixed", f->fixed, "Fixed input and output lengths");
  b.add_option("--prompts", f->prompts,
               "Prompts from a file, in order: ShareGPT (a JSON array of conversations: the first human turn is the "
               "prompt, the reply's length the output) or JSONL with \"prompt\" (vLLM custom), \"text\" (AIPerf) or "
               "\"messages\" per line, and \"output_tokens\" (else --output-tokens)");
  b.add_option("--input-tokens", f->fx.input_tokens, "--fixed: prompt tokens")->capture_default_str();
  b.add_option("--output-tokens", f->fx.output_tokens, "--fixed: max_tokens")->capture_default_str();
  b.add_option("--max-tokens", f->max_tokens, "Cap on each response's max_tokens (trace), or the reply length (--multiturn)");
  b.add_option("--concurrency", f->concurrency, "Closed-loop levels, e.g. 1,2,4,8,16,24,32");
  b.add_option("--requests-per-level", f->requests_per_level, "Requests per concurrency level (default max(20, 4 x level))");
  b.add_option("--rate", f->rate, "Open-loop Poisson arrivals per second")->check(CLI::NonNegativeNumber);
  b.add_flag("--trace-timestamps", f->trace_timestamps, "Send at the trace's own arrival times");
  b.add_option("--trace-speed", f->trace_speed, "--trace-timestamps: 2 replays twice as fast")->check(CLI::PositiveNumber)
      ->capture_default_str();
  b.add_option("--max-inflight", f->max_inflight, "--rate, --trace-timestamps: more requests wait in the client (measured)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  b.add_option("--max-requests", f->max_requests, "Stop after this many requests (0 = the workload's)");
  b.add_option("--duration", f->duration_s, "Stop after this many seconds (in-flight requests are canceled)")
      ->check(CLI::NonNegativeNumber);
  b.add_option("--timeout", f->timeout_s, "Per-request limit, seconds")->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--stall-timeout", f->stall_timeout_s, "No byte for this long ends a request as a timeout")
      ->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--connect-timeout", f->connect_timeout_s, "Seconds")->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--retries", f->retries, "Retries of 429, 5xx, timeouts, connect errors and drops before any content")
      ->check(CLI::Range(0, 100))->capture_default_str();
  b.add_option("--slo-ttft-ms", f->slo.ttft_ms, "Goodput bound on TTFT incl. client queueing (0 = none)");
  b.add_option("--slo-tpot-ms", f->slo.tpot_ms, "Goodput bound on TPOT (0 = none)");
  b.add_option("--slo-e2e-ms", f->slo.e2e_ms, "Goodput bound on E2E (0 = none)");
  b.add_option("--prices", f->prices, "Price sheet JSON (docs/endpoint-bench.md): the bill, monthly, and at the reference hit rate");
  b.add_option("--price-provider", f->price_provider, "Entry of a multi-provider sheet (default: --provider)");
  b.add_option("--reference-hit-rate", f->reference_hit_rate,
               "Hit rate the bill is also shown at (default: the best peers' 0.99, or the upper bound for the prompts\n"
               "sent when that is lower: no endpoint can beat it)");
  b.add_option("--monthly-mtok", f->monthly_mtok, "Project a month of this many million tokens (default: the run's rate for 30 days)");
  b.add_option("--theory-block-tokens", f->theory_block_tokens, "Block size of the theoretical cache over the prompts sent")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  b.add_option("--max-error-share", f->max_error_share, "Exit 1 when more than this share of requests failed")->capture_default_str();
  b.add_flag("--no-preflight", f->no_preflight, "Skip GET /models (needs --model)");
  b.add_flag("--dry-run", f->dry_run, "Print the request bodies (JSONL) that would be sent, send nothing (needs --model)");
  f->seed_option = b.add_option(
      "--seed", f->seed,
      "Seed of the workload text, Poisson arrivals and backoff jitter (default: a fresh one each run, recorded in "
      "bench.json, so that an endpoint's cache is never warm from an earlier run; give it to reproduce a run)");
  b.add_option("--out", f->out, "Run directory (default ~/.cmax/runs/<UTC>-endpoint-bench)");
  b.add_flag("--json", f->json, "Print bench.json on stdout instead of the table");
  return [f] { return run_bench_cmd(*f); };
}

Runner setup_endpoint_compare(CLI::App& c) {
  auto runs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  c.description(
      "Put cmax endpoint bench runs side by side: a table (hit rate, theoretical, TTFT, TPOT, throughput, $/Mtok, the\n"
      "bill at the reference hit rate), and with --out SVG charts (latency vs concurrency, hit rate, cost).\n"
      "Exit codes: 0 done; 3 a run could not be read.");
  c.add_option("runs", *runs, "Run directories (or their bench.json)")->required();
  c.add_option("--out", *out, "Write latency_vs_concurrency.svg, hit_rate.svg, cost.svg and compare.json here");
  c.add_flag("--json", *as_json, "Print {\"schema\": \"cmax.endpoint.compare/1\", ...}");
  return [runs, out, as_json] { return run_compare_cmd(*runs, *out, *as_json); };
}

}  // namespace cmax::app
