// The endpoint model's hot paths on the Mooncake conversation trace (tests/golden/traces):
// PrefixCache::match over every request's chain against a warm cache (goal, issue 7: >= 5M block
// lookups/s on one core), insert with eviction, and one policy's whole replay.

#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <string>

#include "endpoint/prefix_cache.h"
#include "endpoint/simulate.h"
#include "endpoint/trace.h"

namespace {

using namespace cmax::endpoint;

const Trace& trace() {
  static const Trace t = [] {
    std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/golden/traces/mooncake_conversation_trace.jsonl");
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto parsed = parse_mooncake(text);
    return parsed ? std::move(*parsed) : Trace{};
  }();
  return t;
}

// match() of every chain in the trace after inserting them all in order. Counted: the block
// lookups actually made (the matched blocks and the one that missed). Capacity 4,096 is the
// simulator's per-replica cache (most chains miss early); 200,000 holds the trace's 182,790
// distinct blocks, so every lookup hits and walks its whole chain.
void BM_CacheMatch(benchmark::State& state) {
  const Trace& t = trace();
  if (t.requests.empty()) return state.SkipWithError("the golden trace did not load");
  PrefixCache cache(static_cast<std::size_t>(state.range(0)));
  std::uint64_t tick = 0;
  for (const auto& r : t.requests) cache.insert(t.blocks(r), ++tick);
  std::size_t blocks = 0;
  for (auto _ : state) {
    for (const auto& r : t.requests) {
      const std::size_t m = cache.match(t.blocks(r));
      benchmark::DoNotOptimize(m);
      blocks += m < r.block_count ? m + 1 : m;
    }
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CacheMatch)->Arg(4096)->Arg(200000)->Unit(benchmark::kMillisecond);

// insert() of every chain into a cache a tenth of the working set: touches, inserts, evictions.
void BM_CacheInsert(benchmark::State& state) {
  const Trace& t = trace();
  if (t.requests.empty()) return state.SkipWithError("the golden trace did not load");
  std::size_t blocks = 0;
  for (auto _ : state) {
    PrefixCache cache(18000);
    std::uint64_t tick = 0;
    for (const auto& r : t.requests) {
      benchmark::DoNotOptimize(cache.insert(t.blocks(r), ++tick));
      blocks += r.block_count;
    }
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CacheInsert)->Unit(benchmark::kMillisecond);

void BM_SimulatePolicy(benchmark::State& state) {
  const Trace& t = trace();
  if (t.requests.empty()) return state.SkipWithError("the golden trace did not load");
  SimConfig cfg;
  cfg.fleet.replicas = 8;
  cfg.fleet.cache_blocks = 4096;
  cfg.fleet.policy = all_policies()[static_cast<std::size_t>(state.range(0))];
  for (auto _ : state) benchmark::DoNotOptimize(simulate(t, cfg, 0));
  state.SetLabel(std::string(policy_name(cfg.fleet.policy)));
}
BENCHMARK(BM_SimulatePolicy)->DenseRange(0, 5)->Unit(benchmark::kMillisecond);

}  // namespace
