// The engine's prefix-cache accounting from its /metrics (loadgen/server_metrics.h): real vLLM
// lines (tests/golden/engine_metrics) and the exposition `cmax endpoint serve` writes.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "endpoint/worker_api.h"
#include "loadgen/server_metrics.h"

namespace {

using cmax::loadgen::parse_engine_metrics;

std::string golden(const char* name) {
  std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "tests/golden/engine_metrics" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EngineMetrics, AHalfOfEachPairIsNoHitRateAndTheCreatedGaugesAreNotCounters) {
  const auto text = golden("vllm_0.10_glm45_excerpt.prom");
  ASSERT_FALSE(text.empty());
  const auto m = parse_engine_metrics(text);
  EXPECT_FALSE(m.any()) << "queries without hits (and gpu_ hits without queries) give no rate";
  EXPECT_EQ(m.family, "");
  // With the missing halves the rate is read, and the new names win over the deprecated ones.
  const auto whole = parse_engine_metrics(
      text + "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"zai-org/GLM-4.5\"} 16.0\n"
             "vllm:gpu_prefix_cache_queries_total{engine=\"0\",model_name=\"zai-org/GLM-4.5\"} 32.0\n");
  ASSERT_TRUE(whole.queries && whole.hits);
  EXPECT_EQ(whole.family, "vllm");
  EXPECT_DOUBLE_EQ(*whole.queries, 32);
  EXPECT_DOUBLE_EQ(*whole.hits, 16);
}

TEST(EngineMetrics, EnginesAreSummedLabelsWithBracesAndSpacesAreSkippedAndGarbageIsIgnored) {
  const auto m = parse_engine_metrics(
      "vllm:gpu_prefix_cache_queries_total{engine=\"0\",model_name=\"a}b c\"} 100\r\n"
      "vllm:gpu_prefix_cache_queries_total{engine=\"1\",model_name=\"a}b c\"} 50 1712345678000\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"0\"} 30\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"1\"} NaN\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"2\" 7\n"
      "  # a comment\n\n"
      "sglang_cache_hit_rate 0.42\n");
  ASSERT_TRUE(m.queries && m.hits);
  EXPECT_EQ(m.family, "vllm (gpu_ names)");
  EXPECT_DOUBLE_EQ(*m.queries, 150);
  EXPECT_DOUBLE_EQ(*m.hits, 30) << "NaN and a line with no closing brace are skipped";
  ASSERT_TRUE(m.sglang_hit_rate);
  EXPECT_DOUBLE_EQ(*m.sglang_hit_rate, 0.42);
  EXPECT_EQ(parse_engine_metrics("sglang:cache_hit_rate{model_name=\"m\"} 0.5\n").family, "sglang");
}

TEST(EngineMetrics, ServesOwnExpositionReadsBackAsItsCounters) {
  cmax::endpoint::WorkerSnapshot s;
  s.model = "cmax-sim";
  s.block_tokens = 16;
  s.prompt_tokens = 1000;
  s.cached_tokens = 250;
  const auto m = parse_engine_metrics(cmax::endpoint::metrics_text(s));
  ASSERT_TRUE(m.queries && m.hits) << cmax::endpoint::metrics_text(s);
  EXPECT_EQ(m.family, "vllm");
  EXPECT_DOUBLE_EQ(*m.hits / *m.queries, 0.25);
}

}  // namespace
