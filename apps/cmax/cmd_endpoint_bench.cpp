// cmax endpoint bench: measure an OpenAI-compatible endpoint's latency, prefix-cache hit rate and
// bill (src/loadgen). cmax endpoint compare: runs side by side.
// Exit codes (bench): 0 done; 1 done, but more than --max-error-share of requests failed;
// 2 interrupted (Ctrl-C): partial results were written; 3 usage or environment (bad flag,
// unreadable trace or price sheet, endpoint unreachable, API key refused, unknown model).
// Exit codes (compare): 0 done; 3 a run could not be read.

#include "apps/cmax/cmd_endpoint_bench.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/text_file.h"
#include "loadgen/bench_run.h"
#include "loadgen/compare.h"
#include "loadgen/metrics.h"
#include "report/audit_json.h"
#include "report/run_dir.h"
#include "score/evidence.h"

namespace cmax::app {
namespace {

using namespace cmax::loadgen;
constexpr int kExitOk = 0, kExitErrors = 1, kExitInterrupted = 2, kExitUsage = 3;

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop.store(true);
  ::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills at once
}

struct BenchFlags {
  BenchOptions o;
  CLI::Option* api_key_env_option = nullptr;    // --api messages reads ANTHROPIC_API_KEY unless it is given
  CLI::Option* shared_prefix_option = nullptr;  // --fixed shares nothing unless it is given
  CLI::Option* seed_option = nullptr;           // without --seed, each run draws a fresh prompt seed
};

// The API key and where it came from; the key is never printed.
Result<ApiKey> load_api_key(const BenchOptions& f) {
  if (!f.api_key_file.empty()) {
    auto text = core::read_text_file(f.api_key_file, 64 * 1024);
    if (!text) return fail("--api-key-file: {}", text.error().message);
    std::string key(core::trim(*text));
    if (key.empty()) return fail("--api-key-file {}: the file is empty", f.api_key_file);
    return ApiKey{key, "file:" + f.api_key_file};
  }
  if (const char* v = std::getenv(f.api_key_env.c_str()); v != nullptr && *v != '\0')
    return ApiKey{std::string(v), "env:" + f.api_key_env};
  return ApiKey{};
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

// The terminal: a progress line on stderr when it is a terminal; --dry-run's bodies on stdout.
class TerminalSink final : public BenchSink {
 public:
  void progress(const Progress& p) override {
    if (!tty_) return;
    fmt::print(stderr, "\r\033[Kcmax endpoint bench: {}  {}/{} done, {} failed, {} in flight, {:.0f} tok/s, hit {}, {:.1f} s",
               p.phase, p.finished, p.total, p.failed, p.inflight, p.output_tokens_per_s,
               p.cache_hit_rate < 0 ? std::string("-") : fmt::format("{:.1f}%", p.cache_hit_rate * 100), p.elapsed_s);
  }
  void capacity_load(std::string_view dimension, double load) override {
    if (tty_) fmt::print(stderr, "\r\033[Kcmax endpoint bench: capacity: {} {:g} ...", dimension, load);
  }
  void progress_done() override {
    if (tty_) fmt::print(stderr, "\r\033[K");
  }
  void dry_run_seed(std::uint64_t seed) override {
    fmt::print(stderr, "cmax endpoint bench: --dry-run: prompt seed {} (drawn fresh: pass --seed {} to send these bodies)\n",
               seed, seed);
  }
  void dry_run_body(const std::string& body) override { fmt::print("{}\n", body); }

 private:
  bool tty_ = ::isatty(STDERR_FILENO) == 1;
};

std::string pct(double v) { return v < 0 ? "-" : fmt::format("{:.1f}%", v * 100); }
std::string ms(const LatencyStats& l, double v) { return l.count ? fmt::format("{:.1f}", v) : "-"; }

void print_text(const BenchOptions& f, const BenchOutcome& out) {
  const RunResult& r = out.result;
  fmt::print("cmax endpoint bench: {} model {} ({} {}, {})\n", f.base_url, out.model, f.api,
             f.no_stream ? "whole bodies" : "streaming", out.workload_source);
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
  if (out.bill) {
    fmt::print("bill:\n");
    for (const auto& line : out.bill->arithmetic) fmt::print("  {}\n", line);
  }
  for (const auto& w : out.warnings) fmt::print(stderr, "cmax endpoint bench: warning: {}\n", w);
  if (r.interrupted) fmt::print("interrupted: partial results ({} requests finished)\n", r.records.size());
  fmt::print("results: {}/bench.json, {}/requests.jsonl\n", out.dir, out.dir);
}

void print_capacity(const CapacityRun& run, const std::string& dir) {
  const auto& cc = run.config;
  const auto& res = run.result;
  const char* unit = run.by_rate ? "requests/s" : "streams";
  fmt::print("{:>12} {:>9} {:>11} {:>11} {:>11} {:>6}\n", run.by_rate ? "rate/s" : "concurrency", "attained",
             "TTFT p90 ms", "TPOT p90 ms", "E2E p90 ms", "SLO");
  for (const auto& m : run.measurements)
    fmt::print("{:>12g} {:>8.1f}% {:>11.1f} {:>11.2f} {:>11.1f} {:>6}\n", m.load, 100 * m.summary.goodput_share,
               m.summary.ttft_incl_queue.p90_ms, m.summary.tpot.p90_ms, m.summary.e2e.p90_ms, m.pass ? "met" : "missed");
  if (res.edge <= 0)
    fmt::print("capacity: the SLOs are missed even at {} {} ({:.0f}% of requests must meet them)\n", cc.start, unit,
               100 * cc.attainment);
  else if (res.reached_max)
    fmt::print("capacity: at least {:g} {} (the search's --capacity-max; the SLOs still held)\n", res.edge, unit);
  else
    fmt::print("capacity: {:g} {} ({:.0f}% of requests meet the SLOs there; {:g} misses them); {} measurements\n", res.edge,
               unit, 100 * cc.attainment, res.first_fail, res.probes.size());
  fmt::print("run directory: {}\n", dir);
}

// Flags the command settles itself before the run: the seed, the key's variable, --shared-prefix-tokens.
void settle_flags(BenchFlags& f) {
  if (f.seed_option == nullptr || f.seed_option->count() == 0) {
    f.o.seed = fresh_seed();
    f.o.seed_source = "fresh";
  }
  if (f.o.api == "messages" && (f.api_key_env_option == nullptr || f.api_key_env_option->count() == 0))
    f.o.api_key_env = "ANTHROPIC_API_KEY";
  f.o.shared_prefix_given = f.shared_prefix_option && f.shared_prefix_option->count() > 0;
}

int run_bench_cmd(BenchFlags& f) {
  settle_flags(f);
  const BenchOptions& o = f.o;
  if (!o.dry_run) {
    raise_fd_limit();  // one socket per stream
    g_stop = false;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
  }
  TerminalSink sink;
  const core::SystemClock clock;
  BenchEnv env;
  env.clock = &clock;
  env.stop = &g_stop;
  env.sink = &sink;
  env.api_key = [&o] { return load_api_key(o); };
  env.default_run_dir = [](std::string_view stamp) { return report::default_run_dir(stamp); };
  env.cmax_version = std::string(report::cmax_version());
  env.hit_above_achievable_tolerance = score::kHitAboveAchievableTolerance;
  auto out = run_endpoint_bench(o, env);
  if (!out) {
    fmt::print(stderr, "cmax endpoint bench: {}\n", out.error().message);
    return kExitUsage;
  }
  if (out->kind == BenchOutcome::Kind::kDryRun) return kExitOk;
  if (out->kind == BenchOutcome::Kind::kCapacity) {
    if (o.json) fmt::print("{}\n", out->document);
    else print_capacity(out->capacity, out->dir);
    return out->capacity.result.interrupted ? kExitInterrupted : kExitOk;
  }
  if (o.json) {
    fmt::print("{}\n", out->document);
    if (!out->warm_warning.empty()) fmt::print(stderr, "cmax endpoint bench: warning: {}\n", out->warm_warning);
  } else {
    if (!out->workload_plan.empty()) fmt::print("workload: {}\n", out->workload_plan);
    print_text(o, *out);
  }
  if (out->result.stop_reason == "interrupted") return kExitInterrupted;
  return too_many_errors(out->result.overall, o.max_error_share) ? kExitErrors : kExitOk;
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
  b.add_option("trace", f->o.trace, "Mooncake JSONL trace to replay (timestamp ms, input_length, output_length, hash_ids)");
  b.add_option("--base-url", f->o.base_url, "The API base")->capture_default_str();
  b.add_option("--model", f->o.model, "Model name (default: the first the endpoint lists)");
  b.add_option("--provider", f->o.provider, "Label for reports and the price sheet entry (default: none)");
  b.add_option("--api", f->o.api,
               "chat or completions (OpenAI's /chat/completions, /completions), or messages (Anthropic's /messages: "
               "x-api-key from ANTHROPIC_API_KEY, anthropic-version 2023-06-01, system messages on top, the session "
               "id in metadata.user_id, cache_read_input_tokens read as the cached count)")
      ->capture_default_str();
  b.add_flag("--no-cache-control", f->o.no_cache_control,
             "--api messages: do not mark the last turn cache_control ephemeral (Anthropic caches only up to a mark; "
             "servers that cache prefixes themselves ignore it)");
  b.add_flag("--no-stream", f->o.no_stream, "Ask for whole responses (TTFT is then the whole response time)");
  b.add_flag("--no-usage", f->o.no_usage, "Do not send stream_options.include_usage (then no cached-token count)");
  b.add_flag("--ignore-eos", f->o.ignore_eos, "Send vLLM's ignore_eos: every response max_tokens long");
  b.add_option("--header", f->o.headers,
               "\"Name: value\" sent on every request (repeatable): a gateway's key, a routing or session header. "
               "bench.json records the names only");
  b.add_flag("--session-user", f->o.session_user,
             "Send each conversation's session id (cmax-SEED-N, the same on every turn) in the body's `user` field "
             "(vllm-router's consistent_hash reads it). --multiturn only: a trace has no sessions");
  b.add_option("--session-header", f->o.session_header,
               "Send each conversation's session id in this header too: X-SMG-Routing-Key (smg consistent_hashing), "
               "X-Session-Id (vllm-router consistent_hash)");
  b.add_option("--capacity", f->o.capacity,
               "Find the highest load that meets the SLOs (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms): concurrency "
               "(closed loop) or rate (open-loop Poisson). Doubles from 1 until the SLOs are missed, bisects to 5%, "
               "measures both ends of the edge --capacity-repeats times; RUN/capacity.json");
  b.add_option("--capacity-start", f->o.capacity_start, "--capacity: the first load tried")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  b.add_option("--capacity-max", f->o.capacity_max, "--capacity: the highest load tried (default 1024 streams or 1000/s)");
  b.add_option("--capacity-attainment", f->o.capacity_attainment,
               "--capacity: the share of requests that must meet every SLO at a load")
      ->capture_default_str();
  b.add_option("--capacity-repeats", f->o.capacity_repeats, "--capacity: measurements at each end of the edge")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  b.add_option("--capacity-requests", f->o.capacity_requests,
               "--capacity: requests per measurement (default max(50, 4 x concurrency), or max(20, 5 s at the rate))");
  b.add_option("--warmup", f->o.warmup,
               "Send N requests first, not counted: unique prompts that warm the server without priming the cache "
               "the run measures; recorded in bench.json");
  b.add_flag("--flush-cache", f->o.flush_cache,
             "Empty the server's prefix cache before each level (POST /flush_cache, SGLang; else /reset_prefix_cache, "
             "vLLM with VLLM_SERVER_DEV_MODE=1); each attempt recorded in bench.json");
  b.add_flag("--no-server-metrics", f->o.no_server_metrics,
             "Do not read the endpoint's /metrics (at the base URL's origin) before and after each level; read, the "
             "engine's own prefix-cache hit rate (vLLM, SGLang) is set beside the responses' in bench.json");
  b.add_option("--extra-body", f->o.extra_body,
               "A JSON object merged into every request body (top level, over cmax's fields): sampling parameters, "
               "vLLM's or SGLang's extensions. model, messages, prompt, stream and stream_options are refused: "
               "cmax sets them");
  b.add_option("--http", f->o.http, "1.1, 2 (h2c on http://) or auto (HTTP/2 when TLS offers it)")->capture_default_str();
  b.add_option("--transport", f->o.transport,
               "auto (native for http://, libcurl for https:// and HTTP/2), native (lean HTTP/1.1), or curl")
      ->capture_default_str();
  b.add_option("--wake-interval-us", f->o.wake_interval_us,
               "With --coalesce-from or more requests in flight, wake at most this often and read all that arrived "
               "(timestamps then have this resolution; 0 = wake on every byte)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  b.add_option("--coalesce-from", f->o.coalesce_from, "In-flight requests from which --wake-interval-us applies")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  b.add_option("--ca-file", f->o.ca_file, "TLS trust anchors (PEM) instead of the system's");
  f->api_key_env_option =
      b.add_option("--api-key-env", f->o.api_key_env, "Environment variable holding the API key (--api messages: ANTHROPIC_API_KEY)")
          ->capture_default_str();
  b.add_option("--api-key-file", f->o.api_key_file, "File holding the API key (wins over --api-key-env)");
  b.add_flag("--multiturn", f->o.multiturn, "Multi-turn sessions over a shared system prompt (the default workload)");
  b.add_option("--sessions", f->o.mt.sessions, "--multiturn: sessions")->check(CLI::Range(1, 10000000))->capture_default_str();
  b.add_option("--turns", f->o.mt.turns, "--multiturn: turns per session")->check(CLI::Range(1, 100000))->capture_default_str();
  b.add_option("--user-tokens", f->o.mt.user_tokens, "--multiturn: mean user message")->capture_default_str();
  f->shared_prefix_option =
      b.add_option("--shared-prefix-tokens", f->o.shared_prefix_tokens,
                   "Tokens every request shares: --multiturn's system prompt (default 800); --fixed's prefix (default 0)");
  b.add_flag("--fixed", f->o.fixed, "Fixed input and output lengths");
  b.add_option("--prompts", f->o.prompts,
               "Prompts from a file, in order: ShareGPT (a JSON array of conversations: the first human turn is the "
               "prompt, the reply's length the output) or JSONL with \"prompt\" (vLLM custom), \"text\" (AIPerf) or "
               "\"messages\" per line, and \"output_tokens\" (else --output-tokens)");
  b.add_option("--input-tokens", f->o.fx.input_tokens, "--fixed: prompt tokens")->capture_default_str();
  b.add_option("--output-tokens", f->o.fx.output_tokens, "--fixed: max_tokens")->capture_default_str();
  b.add_option("--max-tokens", f->o.max_tokens, "Cap on each response's max_tokens (trace), or the reply length (--multiturn)");
  b.add_option("--concurrency", f->o.concurrency, "Closed-loop levels, e.g. 1,2,4,8,16,24,32");
  b.add_option("--requests-per-level", f->o.requests_per_level, "Requests per concurrency level (default max(20, 4 x level))");
  b.add_option("--rate", f->o.rate, "Open-loop Poisson arrivals per second")->check(CLI::NonNegativeNumber);
  b.add_flag("--trace-timestamps", f->o.trace_timestamps, "Send at the trace's own arrival times");
  b.add_option("--trace-speed", f->o.trace_speed, "--trace-timestamps: 2 replays twice as fast")->check(CLI::PositiveNumber)
      ->capture_default_str();
  b.add_option("--max-inflight", f->o.max_inflight, "--rate, --trace-timestamps: more requests wait in the client (measured)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  b.add_option("--max-requests", f->o.max_requests, "Stop after this many requests (0 = the workload's)");
  b.add_option("--duration", f->o.duration_s, "Stop after this many seconds (in-flight requests are canceled)")
      ->check(CLI::NonNegativeNumber);
  b.add_option("--timeout", f->o.timeout_s, "Per-request limit, seconds")->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--stall-timeout", f->o.stall_timeout_s, "No byte for this long ends a request as a timeout")
      ->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--connect-timeout", f->o.connect_timeout_s, "Seconds")->check(CLI::PositiveNumber)->capture_default_str();
  b.add_option("--retries", f->o.retries, "Retries of 429, 5xx, timeouts, connect errors and drops before any content")
      ->check(CLI::Range(0, 100))->capture_default_str();
  b.add_option("--slo-ttft-ms", f->o.slo.ttft_ms, "Goodput bound on TTFT incl. client queueing (0 = none)");
  b.add_option("--slo-tpot-ms", f->o.slo.tpot_ms, "Goodput bound on TPOT (0 = none)");
  b.add_option("--slo-e2e-ms", f->o.slo.e2e_ms, "Goodput bound on E2E (0 = none)");
  b.add_option("--prices", f->o.prices, "Price sheet JSON (docs/endpoint-bench.md): the bill, monthly, and at the reference hit rate");
  b.add_option("--price-provider", f->o.price_provider, "Entry of a multi-provider sheet (default: --provider)");
  b.add_option("--reference-hit-rate", f->o.reference_hit_rate,
               "Hit rate the bill is also shown at (default: the best peers' 0.99, or the upper bound for the prompts\n"
               "sent when that is lower: no endpoint can beat it)");
  b.add_option("--monthly-mtok", f->o.monthly_mtok, "Project a month of this many million tokens (default: the run's rate for 30 days)");
  b.add_option("--theory-block-tokens", f->o.theory_block_tokens, "Block size of the theoretical cache over the prompts sent")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  b.add_option("--max-error-share", f->o.max_error_share, "Exit 1 when more than this share of requests failed")->capture_default_str();
  b.add_flag("--no-preflight", f->o.no_preflight, "Skip GET /models (needs --model)");
  b.add_flag("--dry-run", f->o.dry_run, "Print the request bodies (JSONL) that would be sent, send nothing (needs --model)");
  f->seed_option = b.add_option(
      "--seed", f->o.seed,
      "Seed of the workload text, Poisson arrivals and backoff jitter (default: a fresh one each run, recorded in "
      "bench.json, so that an endpoint's cache is never warm from an earlier run; give it to reproduce a run)");
  b.add_option("--out", f->o.out, "Run directory (default ~/.cmax/runs/<UTC>-endpoint-bench)");
  b.add_flag("--json", f->o.json, "Print bench.json on stdout instead of the table");
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
