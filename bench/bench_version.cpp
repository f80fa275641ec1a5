// Google Benchmark: the parsers on the audit's path. Run: build/bench/bench_version

#include <benchmark/benchmark.h>

#include <string>

#include "audit/parse/dpkg_status.h"
#include "core/version.h"

static void BM_ParseVersion(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cmax::core::parse_version("1.1.12-0ubuntu2~22.04.1"));
}
BENCHMARK(BM_ParseVersion);

static void BM_DpkgCompare(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cmax::core::dpkg_compare("5.15.0-97.107", "5.15.0-101.111"));
}
BENCHMARK(BM_DpkgCompare);

static void BM_ParseDpkgStatus(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "Package: pkg" + std::to_string(i) +
            "\nStatus: install ok installed\nPriority: optional\nVersion: 1.2." + std::to_string(i) +
            "-1\nDescription: a package\n long description line\n\n";
  for (auto _ : state) benchmark::DoNotOptimize(cmax::audit::parse_dpkg_status(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseDpkgStatus);
