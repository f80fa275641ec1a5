// The three steps of `cmax nccl analyze` on one real log (tests/golden/nccl/02_..., 4 nodes, 32
// rows, both placements): parse, analyse (robust logistic fit and anomaly rules), chart (SVG).
// Goal (issue 6): 1,000 such logs, charts included, in under 2 s, i.e. under 2 ms per log for all
// three together; bench/nccl_analyze.sh times the whole command.

#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <string>

#include "nccl/analyze.h"
#include "nccl/chart.h"
#include "nccl/parse.h"
#include "nccl/reference.h"

namespace {

std::string golden() {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) +
                   "/tests/golden/nccl/02_nccl-tests-309_h100_4node_32gpu_allreduce_default.txt");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void BM_Parse(benchmark::State& state) {
  const std::string text = golden();
  for (auto _ : state) {
    auto r = cmax::nccl::parse_nccl_tests(text);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Parse);

void BM_Analyze(benchmark::State& state) {
  auto parsed = cmax::nccl::parse_nccl_tests(golden());
  auto refs = cmax::nccl::builtin_references();
  if (!parsed || !refs || parsed->runs.empty()) {
    state.SkipWithError("the golden log did not parse");
    return;
  }
  for (auto _ : state) {
    auto a = cmax::nccl::analyze_run(parsed->runs[0], *refs);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_Analyze);

void BM_Chart(benchmark::State& state) {
  auto parsed = cmax::nccl::parse_nccl_tests(golden());
  auto refs = cmax::nccl::builtin_references();
  if (!parsed || !refs || parsed->runs.empty()) {
    state.SkipWithError("the golden log did not parse");
    return;
  }
  auto a = cmax::nccl::analyze_run(parsed->runs[0], *refs);
  for (auto _ : state) {
    auto svg = cmax::nccl::render_svg(parsed->runs[0], a);
    benchmark::DoNotOptimize(svg);
  }
}
BENCHMARK(BM_Chart);

}  // namespace
