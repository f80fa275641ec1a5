// cmax endpoint simulate TRACE|--synthetic: replay a request trace through a modelled fleet of
// inference replicas under each routing policy and compare prefix-cache hit rates, TTFT, E2E
// latency, load balance and the bill (docs/endpoint.md). cmax endpoint serve: a test endpoint
// (apps/cmax/cmd_endpoint_serve.cpp).
// Exit codes: 0 simulated (skipped trace lines are reported as warnings); 3 usage error or a trace
// that cannot be read or holds no usable request.

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/cmd_endpoint_bench.h"
#include "apps/cmax/cmd_endpoint_serve.h"
#include "apps/cmax/command.h"
#include "core/text_file.h"
#include "core/strings.h"
#include "endpoint/fleet.h"
#include "endpoint/simulate.h"
#include "endpoint/trace.h"

namespace cmax::app {
namespace {

using json = nlohmann::json;
constexpr int kExitOk = 0, kExitUsage = 3;
constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;  // a bound against the wrong file, not a limit

struct SimFlags {
  std::string trace;
  bool synthetic = false, json = false;
  std::string policies = "all";
  int replicas = 8;
  std::size_t cache_blocks = 4096;
  std::size_t router_cache_blocks = 0;
  int block_tokens = 512;
  double prefill_tps = 20000, decode_tps = 60, batch_slowdown = 0.02;
  int max_concurrent = 64;
  double time_scale = 1.0;
  double cache_threshold = 0.3, overlap_weight = 1.0;  // the routers' defaults (fleet.h)
  int balance_abs = 64;
  double balance_rel = 1.5;
  std::uint64_t seed = 1;
  endpoint::SyntheticConfig synth;
  endpoint::PriceSheet prices;
};

Result<std::vector<endpoint::Policy>> parse_policies(const std::string& spec) {
  if (spec == "all") {
    auto all = endpoint::all_policies();
    return std::vector<endpoint::Policy>(all.begin(), all.end());
  }
  std::vector<endpoint::Policy> out;
  for (const auto name : core::split_any(spec, ",")) {
    endpoint::Policy p;
    if (!endpoint::policy_from_name(core::trim(name), p))
      return fail("--policies: unknown policy '{}'; use all or a comma list of round_robin, random, least_loaded, "
                  "consistent_hash, cache_aware, precise",
                  name);
    out.push_back(p);
  }
  if (out.empty()) return fail("--policies: empty; use all or a comma list");
  return out;
}

json pct_json(const endpoint::Percentiles& p) { return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}}; }

json policy_json(const endpoint::PolicyResult& r) {
  return {{"policy", std::string(endpoint::policy_name(r.policy))},
          {"requests", r.requests},
          {"prompt_blocks", r.prompt_blocks},
          {"cached_blocks", r.cached_blocks},
          {"hit_rate", r.hit_rate},
          {"token_hit_rate", r.token_hit_rate},
          {"theoretical_hit_rate", r.theoretical_hit_rate},
          {"ttft_s", pct_json(r.ttft_s)},
          {"e2e_s", pct_json(r.e2e_s)},
          {"queue_s", pct_json(r.queue_s)},
          {"replica_requests", r.replica_requests},
          {"replica_prefill_busy_s", r.replica_busy_s},
          {"load_imbalance", r.load_imbalance},
          {"busy_imbalance", r.busy_imbalance},
          {"evictions", r.evictions},
          {"makespan_s", r.makespan_s},
          {"cost",
           {{"input_tokens", r.input_tokens},
            {"cached_tokens", r.cached_tokens},
            {"output_tokens", r.output_tokens},
            {"input_usd", r.cost.input_usd},
            {"cached_input_usd", r.cost.cached_input_usd},
            {"output_usd", r.cost.output_usd},
            {"total_usd", r.cost.total_usd},
            {"total_usd_no_cache", r.cost.total_usd_no_cache},
            {"input_per_mtok_effective", r.cost.input_per_mtok_effective}}}};
}

std::string share(const std::vector<std::uint64_t>& v, std::uint64_t total) {
  std::string s;
  for (auto x : v) s += fmt::format("{}{:.0f}%", s.empty() ? "" : " ", total ? 100.0 * static_cast<double>(x) / static_cast<double>(total) : 0.0);
  return s;
}

void print_table(const endpoint::Trace& trace, const endpoint::SimConfig& cfg,
                 const std::vector<endpoint::PolicyResult>& results, double theoretical) {
  const auto& f = cfg.fleet;
  const auto& p = cfg.prices;
  fmt::print("trace {}: {} requests, {} prompt blocks of {} tokens{}\n", trace.source, trace.requests.size(), trace.hashes.size(),
             trace.block_tokens, trace.skipped_lines ? fmt::format(", {} malformed lines skipped", trace.skipped_lines) : "");
  fmt::print("fleet: {} replicas x {} cached blocks, prefill {:.0f} tok/s, decode {:.0f} tok/s/seq, {} slots, time scale {:g}\n",
             f.replicas, f.cache_blocks, f.timing.prefill_tokens_per_s, f.timing.decode_tokens_per_s, f.timing.max_concurrent,
             cfg.time_scale);
  fmt::print("infinite-cache (theoretical) block hit rate: {:.1f}%\n\n", theoretical * 100);
  fmt::print("{:<16} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>10} {:>7}\n", "policy", "hit", "tok hit", "TTFT p50",
             "TTFT p90", "TTFT p99", "E2E p50", "E2E p99", "imbal", "cost $", "vs none");
  for (const auto& r : results)
    fmt::print("{:<16} {:>6.1f}% {:>6.1f}% {:>8.3f} {:>8.3f} {:>8.3f} {:>8.2f} {:>8.2f} {:>6.2f} {:>10.2f} {:>6.1f}%\n",
               endpoint::policy_name(r.policy), r.hit_rate * 100, r.token_hit_rate * 100, r.ttft_s.p50, r.ttft_s.p90,
               r.ttft_s.p99, r.e2e_s.p50, r.e2e_s.p99, r.load_imbalance, r.cost.total_usd,
               r.cost.total_usd_no_cache > 0 ? 100 * r.cost.total_usd / r.cost.total_usd_no_cache : 0.0);
  fmt::print("\n(hit = cached prompt blocks; TTFT/E2E in seconds; imbal = max/mean requests per replica; vs none = the bill "
             "against no cache hit at all)\n");
  for (const auto& r : results) {
    const double h = r.token_hit_rate;
    fmt::print("\n{}: requests per replica {}\n", endpoint::policy_name(r.policy), share(r.replica_requests, r.requests));
    fmt::print("  input per Mtok at {:.1f}% cached: (1 - {:.3f}) x {:g} + {:.3f} x {:g} = {:.4f} $ (no cache: {:g} $, {:.2f}x)\n",
               h * 100, h, p.input_per_mtok, h, p.cached_input_per_mtok, r.cost.input_per_mtok_effective, p.input_per_mtok,
               r.cost.input_per_mtok_effective > 0 ? p.input_per_mtok / r.cost.input_per_mtok_effective : 0.0);
    fmt::print("  bill: {:.2f} $ uncached input + {:.2f} $ cached input + {:.2f} $ output = {:.2f} $ (no cache: {:.2f} $)\n",
               r.cost.input_usd, r.cost.cached_input_usd, r.cost.output_usd, r.cost.total_usd, r.cost.total_usd_no_cache);
  }
}

int run_simulate(const SimFlags& fl) {
  auto policies = parse_policies(fl.policies);
  if (!policies) return fmt::print(stderr, "cmax endpoint simulate: {}\n", policies.error().message), kExitUsage;
  if (fl.synthetic == !fl.trace.empty())
    return fmt::print(stderr, "cmax endpoint simulate: give a Mooncake JSONL trace file or --synthetic (not both)\n"), kExitUsage;
  endpoint::Trace trace;
  if (fl.synthetic) {
    auto sc = fl.synth;
    sc.block_tokens = fl.block_tokens;
    sc.seed = fl.seed;
    trace = endpoint::synthetic_trace(sc);
  } else {
    if (fl.block_tokens != 512)
      return fmt::print(stderr, "cmax endpoint simulate: Mooncake hash_ids are 512-token blocks; drop --block-tokens\n"), kExitUsage;
    auto text = core::read_text_file(fl.trace, kMaxTraceBytes, "; split the trace");
    if (!text) return fmt::print(stderr, "cmax endpoint simulate: {}\n", text.error().message), kExitUsage;
    auto parsed = endpoint::parse_mooncake(*text);
    if (!parsed) return fmt::print(stderr, "cmax endpoint simulate: {}: {}\n", fl.trace, parsed.error().message), kExitUsage;
    trace = std::move(*parsed);
    trace.source = fl.trace;
    for (const auto& w : trace.warnings) fmt::print(stderr, "cmax endpoint simulate: {}: {}\n", fl.trace, w);
    if (trace.skipped_lines > trace.warnings.size())
      fmt::print(stderr, "cmax endpoint simulate: {}: {} malformed lines skipped in all\n", fl.trace, trace.skipped_lines);
  }

  endpoint::SimConfig cfg;
  auto& f = cfg.fleet;
  f.replicas = fl.replicas;
  f.cache_blocks = fl.cache_blocks;
  f.router_cache_blocks = fl.router_cache_blocks;
  f.block_tokens = trace.block_tokens;
  f.timing.prefill_tokens_per_s = fl.prefill_tps;
  f.timing.decode_tokens_per_s = fl.decode_tps;
  f.timing.batch_slowdown = fl.batch_slowdown;
  f.timing.max_concurrent = fl.max_concurrent;
  f.seed = fl.seed;
  f.cache_threshold = fl.cache_threshold;
  f.balance_abs_threshold = fl.balance_abs;
  f.balance_rel_threshold = fl.balance_rel;
  f.overlap_weight = fl.overlap_weight;
  cfg.time_scale = fl.time_scale;
  cfg.prices = fl.prices;

  const double theoretical = endpoint::theoretical_hit_rate(trace);
  std::vector<endpoint::PolicyResult> results;
  for (auto p : *policies) {
    f.policy = p;
    results.push_back(endpoint::simulate(trace, cfg, theoretical));
  }

  if (fl.json) {
    std::uint64_t in = 0, out = 0;
    for (const auto& r : trace.requests) in += r.input_tokens, out += r.output_tokens;
    json pol = json::array();
    for (const auto& r : results) pol.push_back(policy_json(r));
    json j{{"schema", "cmax.endpoint.sim/1"},
           {"trace",
            {{"source", trace.source},
             {"requests", trace.requests.size()},
             {"prompt_blocks", trace.hashes.size()},
             {"block_tokens", trace.block_tokens},
             {"input_tokens", in},
             {"output_tokens", out},
             {"duration_s", trace.requests.empty() ? 0.0 : trace.requests.back().arrival_s - trace.requests.front().arrival_s},
             {"skipped_lines", trace.skipped_lines},
             {"warnings", trace.warnings},
             {"theoretical_hit_rate", theoretical}}},
           {"config",
            {{"replicas", f.replicas},
             {"cache_blocks", f.cache_blocks},
             {"router_cache_blocks", f.router_cache_blocks ? f.router_cache_blocks : f.cache_blocks},
             {"block_tokens", f.block_tokens},
             {"prefill_tokens_per_s", f.timing.prefill_tokens_per_s},
             {"decode_tokens_per_s", f.timing.decode_tokens_per_s},
             {"batch_slowdown", f.timing.batch_slowdown},
             {"max_concurrent", f.timing.max_concurrent},
             {"time_scale", cfg.time_scale},
             {"cache_threshold", f.cache_threshold},
             {"balance_abs_threshold", f.balance_abs_threshold},
             {"balance_rel_threshold", f.balance_rel_threshold},
             {"overlap_weight", f.overlap_weight},
             {"seed", f.seed},
             {"prices_per_mtok",
              {{"input", cfg.prices.input_per_mtok}, {"cached_input", cfg.prices.cached_input_per_mtok}, {"output", cfg.prices.output_per_mtok}}}}},
           {"policies", pol}};
    fmt::print("{}\n", j.dump(2));
  } else {
    print_table(trace, cfg, results, theoretical);
  }
  return kExitOk;
}

}  // namespace

Runner setup_endpoint(CLI::App& sub) {
  auto fl = std::make_shared<SimFlags>();
  sub.description(
      "Inference endpoints. simulate: replay a request trace (Mooncake JSONL, or a synthetic multi-turn chat) through a\n"
      "modelled fleet of replicas with prefix caches under six routing policies and compare cache hit rate, TTFT, E2E,\n"
      "load balance and the bill. The model is analytic, not a GPU: it ranks policies. docs/endpoint.md.\n\n"
      "simulate exit codes: 0 done; 3 usage error or an unusable trace (others: cmax endpoint serve|bench|compare --help).");
  sub.require_subcommand(1);
  auto* sim = sub.add_subcommand("simulate", "Replay a trace under each routing policy: hit rate, TTFT, E2E, balance, cost");
  sim->add_option("trace", fl->trace, "Mooncake JSONL trace (timestamp ms, input_length, output_length, hash_ids)");
  sim->add_flag("--synthetic", fl->synthetic, "Generate a multi-turn chat workload instead of reading a trace");
  sim->add_option("--policies", fl->policies, "all, or a comma list of round_robin,random,least_loaded,consistent_hash,cache_aware,precise,power_of_two")
      ->capture_default_str();
  sim->add_option("--replicas", fl->replicas, "Replicas behind the router")->check(CLI::Range(1, 4096))->capture_default_str();
  sim->add_option("--cache-blocks", fl->cache_blocks, "Prefix-cache capacity per replica, in blocks (0 = no cache)")->capture_default_str();
  sim->add_option("--router-cache-blocks", fl->router_cache_blocks, "cache_aware's own tree per replica, in blocks (0 = --cache-blocks)")
      ->capture_default_str();
  sim->add_option("--block-tokens", fl->block_tokens, "Tokens per block (Mooncake: 512)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  sim->add_option("--prefill-tps", fl->prefill_tps, "Uncached prompt tokens per second per replica")->check(CLI::PositiveNumber)->capture_default_str();
  sim->add_option("--decode-tps", fl->decode_tps, "Decode tokens per second of one sequence alone")->check(CLI::PositiveNumber)->capture_default_str();
  sim->add_option("--batch-slowdown", fl->batch_slowdown, "Per-sequence decode rate = decode / (1 + this x (batch - 1))")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sim->add_option("--max-concurrent", fl->max_concurrent, "Decode slots per replica; more requests queue")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  sim->add_option("--time-scale", fl->time_scale, "Replay speed: 2 = arrivals twice as fast")->check(CLI::PositiveNumber)->capture_default_str();
  sim->add_option("--cache-threshold", fl->cache_threshold, "cache_aware: follow the best match when its ratio is above this (smg, sglang-router and vllm-router: 0.3)")
      ->capture_default_str();
  sim->add_option("--balance-abs", fl->balance_abs, "cache_aware: imbalanced when max - min running > this (the routers: 64) ...")->capture_default_str();
  sim->add_option("--balance-rel", fl->balance_rel, "... and max > this x min (the routers: 1.5)")->capture_default_str();
  sim->add_option("--overlap-weight", fl->overlap_weight, "precise: cost = this x blocks to prefill + running requests")->capture_default_str();
  sim->add_option("--seed", fl->seed, "Seed of the random policy and the synthetic workload")->capture_default_str();
  sim->add_option("--sessions", fl->synth.sessions, "--synthetic: sessions")->check(CLI::Range(1, 1000000))->capture_default_str();
  sim->add_option("--turns", fl->synth.turns, "--synthetic: turns per session")->check(CLI::Range(1, 10000))->capture_default_str();
  sim->add_option("--system-tokens", fl->synth.system_tokens, "--synthetic: system prompt shared by all sessions")->capture_default_str();
  sim->add_option("--price-input", fl->prices.input_per_mtok, "$ per million uncached input tokens")->check(CLI::NonNegativeNumber)->capture_default_str();
  sim->add_option("--price-cached-input", fl->prices.cached_input_per_mtok, "$ per million cached input tokens")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sim->add_option("--price-output", fl->prices.output_per_mtok, "$ per million output tokens")->check(CLI::NonNegativeNumber)->capture_default_str();
  sim->add_flag("--json", fl->json, "Print {\"schema\": \"cmax.endpoint.sim/1\", ...} (docs/schemas/endpoint-sim.md)");

  auto* serve = sub.add_subcommand("serve", "Run an OpenAI-compatible test endpoint backed by the fleet model");
  auto serve_run = setup_endpoint_serve(*serve);
  auto* bench = sub.add_subcommand("bench", "Measure an endpoint: latency, prefix-cache hit rate, errors and the bill");
  auto bench_run = setup_endpoint_bench(*bench);
  auto* compare = sub.add_subcommand("compare", "Put bench runs side by side: table and SVG charts");
  auto compare_run = setup_endpoint_compare(*compare);
  return [fl, sim, serve, serve_run, bench, bench_run, compare, compare_run]() -> int {
    if (sim->parsed()) return run_simulate(*fl);
    if (serve->parsed()) return serve_run();
    if (bench->parsed()) return bench_run();
    if (compare->parsed()) return compare_run();
    return kExitUsage;
  };
}

}  // namespace cmax::app
