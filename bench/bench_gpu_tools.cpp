// Google Benchmark: reading and judging what the NVIDIA tools print (src/gputools, src/health), per
// node, as the GPU count grows. The input is a real `nvidia-smi -q -x` (telegraf's A100-SXM4-80GB
// fixture, tests/golden/gpu_tools) with its one <gpu> block repeated N times under new bus ids: the
// shape of an N-GPU node. bench/gpu_tools.sh runs this beside Python's xml.etree on the same files.
// Run: build/bench/bench_gpu_tools

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gputools/smi_xml.h"
#include "gputools/topo.h"
#include "health/gpu_smi_judge.h"
#include "health/gpu_thresholds.h"
#include "health/gpu_tools_judge.h"

namespace {

std::string slurp(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/golden/gpu_tools/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The real document with its <gpu> block repeated `gpus` times, each under its own bus id.
std::string smi_xml_with(int gpus) {
  const std::string doc = slurp("nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml");
  const auto begin = doc.find("    <gpu id=");
  const auto end = doc.find("</gpu>", begin) + 7;
  const std::string block = doc.substr(begin, end - begin);
  std::string out = doc.substr(0, begin);
  for (int i = 0; i < gpus; ++i) {
    std::string b = block;
    const std::string bus = fmt::format("00000000:{:02X}:00.0", i + 1);
    for (std::size_t at = 0; (at = b.find("00000000:01:00.0", at)) != std::string::npos; at += bus.size())
      b.replace(at, 16, bus);
    out += b;
  }
  return out + doc.substr(end);
}

}  // namespace

static void BM_SmiXmlParseJudge(benchmark::State& state) {
  const std::string xml = smi_xml_with(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto report = cmax::gputools::parse_smi_xml(xml);
    benchmark::DoNotOptimize(cmax::health::judge_smi(*report));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(xml.size()));
  state.counters["gpus"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_SmiXmlParseJudge)->Arg(1)->Arg(8)->Arg(72);

static void BM_TopoParseJudge(benchmark::State& state) {
  const std::string text = slurp("nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt");
  const auto thresholds = *cmax::health::builtin_gpu_thresholds();
  cmax::health::TopoJudgeOptions o;
  o.gpu_model = "NVIDIA B200";
  for (auto _ : state) {
    auto topo = cmax::gputools::parse_topo_matrix(text);
    benchmark::DoNotOptimize(cmax::health::judge_topology(*topo, thresholds, o));
  }
}
BENCHMARK(BM_TopoParseJudge);
