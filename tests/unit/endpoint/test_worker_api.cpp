// What `cmax endpoint serve` tells a router and a scraper (endpoint/worker_api.h): the shapes real
// routers read (SGLang's /get_load and /v1/loads as sglang-router and smg parse them, server and
// model info) and Prometheus text with vLLM's and SGLang's family names.

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "endpoint/worker_api.h"

namespace {

using cmax::endpoint::WorkerSnapshot;
using json = nlohmann::json;

WorkerSnapshot two_ranks() {
  WorkerSnapshot s;
  s.model = "cmax-sim";
  s.block_tokens = 16;
  s.max_concurrent = 4;
  s.ranks = {{6, 100, 1000}, {1, 0, 1000}};  // rank 0: 4 decoding, 2 queued
  s.requests = 10;
  s.prompt_tokens = 4000;
  s.cached_tokens = 3000;
  s.completion_tokens = 80;
  s.version = "1.2.3";
  return s;
}

// name{labels} -> value, for every sample line of an exposition.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([-+0-9.eE]+|NaN)$)");
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, sample)) << "not a Prometheus sample line: " << line;
    if (m.size() == 4) out[m[1].str() + m[2].str()] = std::stod(m[3].str());
  }
  return out;
}

TEST(WorkerApi, LoadsHaveTheShapesSglangRouterAndSmgParse) {
  auto s = two_ranks();
  auto get_load = json::parse(cmax::endpoint::get_load_json(s));
  ASSERT_TRUE(get_load.is_array());
  ASSERT_EQ(get_load.size(), 2u);
  EXPECT_EQ(get_load[0]["num_tokens"], 1600);  // 100 blocks of 16 tokens
  EXPECT_EQ(get_load[0]["num_reqs"], 6);
  EXPECT_EQ(get_load[0]["num_waiting_reqs"], 2);

  auto loads = json::parse(cmax::endpoint::v1_loads_json(s, "2026-12-05T16:00:00Z"));
  EXPECT_EQ(loads["dp_rank_count"], 2);
  ASSERT_EQ(loads["loads"].size(), 2u);
  const auto& r0 = loads["loads"][0];
  EXPECT_EQ(r0["num_running_reqs"], 4);
  EXPECT_EQ(r0["num_waiting_reqs"], 2);
  EXPECT_EQ(r0["num_total_reqs"], 6);
  EXPECT_EQ(r0["num_used_tokens"], 1600);
  EXPECT_EQ(r0["max_total_num_tokens"], 16000);
  EXPECT_DOUBLE_EQ(r0["token_usage"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(r0["cache_hit_rate"].get<double>(), 0.75);
  EXPECT_EQ(r0["max_running_requests"], 4);
}

TEST(WorkerApi, ServerAndModelInfoNameTheModelButNoPathARouterWouldDownload) {
  auto s = two_ranks();
  auto info = json::parse(cmax::endpoint::server_info_json(s));
  EXPECT_EQ(info["served_model_name"], "cmax-sim");
  EXPECT_EQ(info["dp_size"], 2);
  EXPECT_EQ(info["max_running_requests"], 8);
  EXPECT_EQ(info["max_total_num_tokens"], 32000);
  EXPECT_EQ(info["page_size"], 16);
  EXPECT_FALSE(info.contains("model_path"));
  EXPECT_FALSE(info.contains("tokenizer_path"));
  auto model = json::parse(cmax::endpoint::model_info_json(s));
  EXPECT_EQ(model["is_generation"], true);
  EXPECT_FALSE(model.contains("model_path"));
}

TEST(WorkerApi, MetricsCarryVllmsBothNameGenerationsAndSglangsFamilies) {
  auto s = two_ranks();
  s.model = "org/model \"q\"";
  const auto text = cmax::endpoint::metrics_text(s);
  auto m = samples(text);
  const std::string model = R"(model_name="org/model \"q\"")";
  EXPECT_EQ(m.at(R"(vllm:num_requests_running{engine="0",)" + model + "}"), 4);
  EXPECT_EQ(m.at(R"(vllm:num_requests_waiting{engine="0",)" + model + "}"), 2);
  EXPECT_EQ(m.at(R"(vllm:num_requests_running{engine="1",)" + model + "}"), 1);
  EXPECT_DOUBLE_EQ(m.at(R"(vllm:kv_cache_usage_perc{engine="0",)" + model + "}"), 0.1);
  EXPECT_DOUBLE_EQ(m.at(R"(vllm:gpu_cache_usage_perc{engine="0",)" + model + "}"), 0.1);
  EXPECT_EQ(m.at(R"(vllm:prefix_cache_queries_total{engine="0",)" + model + "}"), 4000);
  EXPECT_EQ(m.at(R"(vllm:prefix_cache_hits_total{engine="0",)" + model + "}"), 3000);
  EXPECT_EQ(m.at(R"(vllm:gpu_prefix_cache_hits_total{engine="0",)" + model + "}"), 3000);
  EXPECT_EQ(m.at(R"(sglang:num_running_reqs{dp_rank="0",)" + model + "}"), 4);
  EXPECT_EQ(m.at(R"(sglang:num_queue_reqs{dp_rank="0",)" + model + "}"), 2);
  EXPECT_DOUBLE_EQ(m.at(R"(sglang:token_usage{dp_rank="0",)" + model + "}"), 0.1);
  EXPECT_DOUBLE_EQ(m.at("sglang:cache_hit_rate{" + model + "}"), 0.75);
  EXPECT_EQ(m.at("sglang:cache_config_info{" + model + R"(,num_pages="2000",page_size="16"})"), 1);
  // Every family is declared once, with its type, before its samples.
  EXPECT_EQ(text.find("# TYPE vllm:prefix_cache_hits_total counter"), text.rfind("# TYPE vllm:prefix_cache_hits_total"));
  EXPECT_LT(text.find("# TYPE sglang:num_queue_reqs gauge"), text.find("sglang:num_queue_reqs{"));
}

}  // namespace
