#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/pricing.h"

namespace cmax::loadgen {
namespace {

bool has_line(const Bill& b, std::string_view needle) {
  return std::any_of(b.arithmetic.begin(), b.arithmetic.end(),
                     [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

std::string all_lines(const Bill& b) {
  std::string out;
  for (const auto& l : b.arithmetic) out += l + "\n";
  return out;
}

PriceSheet token_sheet(double input, double cached, double write, double output) {
  PriceSheet s;
  s.provider = "p";
  s.input_per_mtok = input, s.cached_input_per_mtok = cached, s.cache_write_per_mtok = write;
  s.output_per_mtok = output;
  return s;
}

TEST(PriceSheet, TokenSheetDefaultsCachedAndWriteToInput) {
  auto s = parse_price_sheet(R"({"input_per_mtok": 0.25, "output_per_mtok": 1})", "deepinfra");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->provider, "deepinfra");
  EXPECT_FALSE(s->per_gpu_hour);
  EXPECT_DOUBLE_EQ(s->input_per_mtok, 0.25);
  EXPECT_DOUBLE_EQ(s->cached_input_per_mtok, 0.25);
  EXPECT_DOUBLE_EQ(s->cache_write_per_mtok, 0.25);
  EXPECT_DOUBLE_EQ(s->output_per_mtok, 1.0);

  auto full = parse_price_sheet(
      R"({"input_per_mtok": 3, "cached_input_per_mtok": 0.3, "cache_write_per_mtok": 3.75,
          "output_per_mtok": 15, "note": "list prices, 2026-12"})",
      "");
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_DOUBLE_EQ(full->cached_input_per_mtok, 0.3);
  EXPECT_DOUBLE_EQ(full->cache_write_per_mtok, 3.75);
}

TEST(PriceSheet, GpuHourSheet) {
  auto s = parse_price_sheet(R"({"usd_per_gpu_hour": 2.5, "gpus": 8})", "self");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->per_gpu_hour);
  EXPECT_DOUBLE_EQ(s->usd_per_gpu_hour, 2.5);
  EXPECT_EQ(s->gpus, 8);
  auto one = parse_price_sheet(R"({"usd_per_gpu_hour": 4})", "");
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->gpus, 1);
}

TEST(PriceSheet, ProviderMap) {
  const std::string file = R"({"schema": "cmax.prices/1", "providers": {
      "deepinfra": {"input_per_mtok": 0.25, "cached_input_per_mtok": 0.025, "output_per_mtok": 1.0},
      "self": {"usd_per_gpu_hour": 2.5, "gpus": 8}}})";
  auto d = parse_price_sheet(file, "deepinfra");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->provider, "deepinfra");
  EXPECT_DOUBLE_EQ(d->cached_input_per_mtok, 0.025);
  auto g = parse_price_sheet(file, "self");
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_TRUE(g->per_gpu_hour);

  auto unknown = parse_price_sheet(file, "acme");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("acme"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("deepinfra, self"), std::string::npos)
      << unknown.error().message;

  auto ambiguous = parse_price_sheet(file, "");
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find("--provider"), std::string::npos)
      << ambiguous.error().message;
  EXPECT_NE(ambiguous.error().message.find("deepinfra, self"), std::string::npos);

  auto only = parse_price_sheet(
      R"({"schema": "cmax.prices/1", "providers": {"solo": {"usd_per_gpu_hour": 1}}})", "");
  ASSERT_TRUE(only) << only.error().message;
  EXPECT_EQ(only->provider, "solo");
}

TEST(PriceSheet, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* needle;
  };
  const Case cases[] = {
      {R"({"input_per_mtok": -1, "output_per_mtok": 1})", "input_per_mtok"},
      {R"({"input_per_mtok": "0.25", "output_per_mtok": 1})", "input_per_mtok"},
      {R"({"input_per_mtok": 1, "output_per_mtok": true})", "output_per_mtok"},
      {R"({"input_per_mtok": 1})", "output_per_mtok"},
      {R"({"input_per_mtok": 1, "output_per_mtok": 1, "cached_input_per_mtok": null})",
       "cached_input_per_mtok"},
      {R"({"input_per_mtok": 1, "output_per_mtok": 1, "cache_input_per_mtok": 0.1})",
       "cache_input_per_mtok"},
      {R"({"input_per_mtok": 1, "output_per_mtok": 1, "usd_per_gpu_hour": 2})", "both"},
      {R"({"note": "nothing"})", "no prices"},
      {R"({"usd_per_gpu_hour": 2, "gpus": 0})", "gpus"},
      {R"({"usd_per_gpu_hour": 2, "gpus": 1.5})", "gpus"},
      {R"({"gpus": 4})", "usd_per_gpu_hour"},
      {R"({"input_per_mtok": 1, )", "not JSON"},
      {R"([1, 2])", "object"},
      {R"({"schema": "cmax.prices/2", "providers": {}})", "cmax.prices/2"},
      {R"({"schema": "cmax.prices/1", "providers": {"a": 1}})", "object"},
  };
  for (const auto& c : cases) {
    auto r = parse_price_sheet(c.text, "a");
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos)
        << c.text << " -> " << r.error().message;
  }
}

TEST(Bill, HeaderExampleLine) {
  BillInput in;
  in.prompt_tokens = 10'000, in.cached_tokens = 7'500, in.completion_tokens = 100,
  in.duration_s = 10;
  Bill b = compute_bill(token_sheet(0.25, 0.025, 0.25, 1.0), in);
  EXPECT_TRUE(has_line(b, "input: (10,000 - 7,500 cached) x $0.25/Mtok = $0.000625"))
      << all_lines(b);
}

TEST(Bill, SchemaExampleTokens) {
  BillInput in;
  in.prompt_tokens = 600'000, in.cached_tokens = 216'000, in.completion_tokens = 31'750,
  in.duration_s = 12.5;
  Bill b = compute_bill(token_sheet(0.25, 0.025, 0.25, 1.0), in);
  EXPECT_DOUBLE_EQ(b.measured_hit_rate, 0.36);
  // 384,000 x 0.25 + 216,000 x 0.025 + 31,750 x 1 (per million).
  EXPECT_NEAR(b.run_usd, 0.096 + 0.0054 + 0.03175, 1e-12);
  EXPECT_NEAR(b.run_usd_no_cache, 0.15 + 0.03175, 1e-12);
  EXPECT_NEAR(b.input_usd_per_mtok_effective, 0.64 * 0.25 + 0.36 * 0.025, 1e-12);
  EXPECT_NEAR(b.usd_per_mtok, b.run_usd / 631'750 * 1e6, 1e-12);
  EXPECT_NEAR(b.usd_per_mtok_output, b.run_usd / 31'750 * 1e6, 1e-12);
  EXPECT_NEAR(b.monthly_usd, b.run_usd * 30 * 86400 / 12.5, 1e-9);
  // Reference 99%: 594,000 cached, 6,000 uncached.
  EXPECT_NEAR(b.run_usd_at_reference, 0.0015 + 0.01485 + 0.03175, 1e-12);
  EXPECT_NEAR(b.monthly_usd_at_reference, b.run_usd_at_reference * 30 * 86400 / 12.5, 1e-9);
  EXPECT_NEAR(b.ratio_to_reference, b.run_usd / b.run_usd_at_reference, 1e-12);

  EXPECT_TRUE(has_line(b, "input: (600,000 - 216,000 cached) x $0.25/Mtok = $0.096000"))
      << all_lines(b);
  EXPECT_TRUE(has_line(b, "cached input: 216,000 x $0.025/Mtok = $0.005400")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "output: 31,750 x $1/Mtok = $0.031750")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "= $0.133150")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "round(0.99 x 600,000) = 594,000")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "cache writes unchanged")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "2,592,000 s / 12.5 s = $27,609.98")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "measured / reference: $0.133150 / $0.048100 = 2.77x")) << all_lines(b);
  for (const auto& l : b.arithmetic) {
    EXPECT_EQ(l.find("nan"), std::string::npos) << l;
    EXPECT_EQ(l.find("inf"), std::string::npos) << l;
  }
}

// CONTEXT.md section 5: with cached input at 0.1x the input price, input costs 0.109 per token at
// 99% and 0.325 at 75%, about 2.98x on input.
TEST(Bill, ContextExampleSeventyFiveVersusNinetyNine) {
  PriceSheet s = token_sheet(1.0, 0.1, 1.0, 0.0);
  BillInput at75, at99;
  at75.prompt_tokens = at99.prompt_tokens = 100'000;
  at75.cached_tokens = 75'000, at99.cached_tokens = 99'000;
  at75.duration_s = at99.duration_s = 60;
  Bill b75 = compute_bill(s, at75), b99 = compute_bill(s, at99);
  EXPECT_NEAR(b99.input_usd_per_mtok_effective, 0.109, 1e-12);
  EXPECT_NEAR(b75.input_usd_per_mtok_effective, 0.325, 1e-12);
  EXPECT_NEAR(b75.input_usd_per_mtok_effective / b99.input_usd_per_mtok_effective, 2.98, 0.005);
  // The reference at 99% prices the 75% run's prompt as the 99% run's.
  EXPECT_NEAR(b75.run_usd_at_reference, b99.run_usd, 1e-12);
  EXPECT_NEAR(b75.ratio_to_reference, 0.325 / 0.109, 1e-9);
  EXPECT_TRUE(has_line(b75, "(1 - 0.7500) x $1 + 0.7500 x $0.1 = $0.325000/Mtok"))
      << all_lines(b75);
  EXPECT_TRUE(has_line(b75, "= 2.98x")) << all_lines(b75);
}

TEST(Bill, CacheWritesAndClamping) {
  PriceSheet s = token_sheet(3.0, 0.3, 3.75, 15.0);
  BillInput in;
  in.prompt_tokens = 10'000, in.cached_tokens = 6'000, in.cache_creation_tokens = 3'000,
  in.completion_tokens = 500;
  in.duration_s = 1;
  Bill b = compute_bill(s, in);
  EXPECT_NEAR(b.run_usd, (1'000 * 3.0 + 6'000 * 0.3 + 3'000 * 3.75 + 500 * 15.0) / 1e6, 1e-12);
  EXPECT_TRUE(
      has_line(b, "input: (10,000 - 6,000 cached - 3,000 cache writes) x $3/Mtok = $0.003000"))
      << all_lines(b);
  EXPECT_TRUE(has_line(b, "cache writes: 3,000 x $3.75/Mtok = $0.011250")) << all_lines(b);
  // Reference 99%: 9,900 cached, writes unchanged at 3,000, so uncached clamps at 0.
  EXPECT_NEAR(b.run_usd_at_reference, (9'900 * 0.3 + 3'000 * 3.75 + 500 * 15.0) / 1e6, 1e-12);
  EXPECT_TRUE(has_line(b, "cache writes unchanged at 3,000")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "(clamped at 0)")) << all_lines(b);
}

TEST(Bill, MonthlyProjection) {
  PriceSheet s = token_sheet(1.0, 0.1, 1.0, 2.0);
  BillInput in;
  in.prompt_tokens = 1'000'000, in.cached_tokens = 500'000, in.completion_tokens = 1'000'000;
  in.duration_s = 0;
  Bill none = compute_bill(s, in);
  EXPECT_EQ(none.monthly_usd, 0);
  EXPECT_EQ(none.monthly_usd_at_reference, 0);
  EXPECT_TRUE(has_line(none, "duration is 0")) << all_lines(none);

  in.monthly_mtok = 1'000;
  Bill vol = compute_bill(s, in);
  // run = 0.5 + 0.05 + 2 = $2.55 over 2 Mtok = $1.275/Mtok; x 1,000 Mtok.
  EXPECT_NEAR(vol.usd_per_mtok, 1.275, 1e-12);
  EXPECT_NEAR(vol.monthly_usd, 1'275, 1e-9);
  EXPECT_NEAR(vol.monthly_usd_at_reference, vol.run_usd_at_reference / 2 * 1'000, 1e-9);
  EXPECT_TRUE(has_line(vol, "x 1,000 Mtok = $1,275.00")) << all_lines(vol);
}

TEST(Bill, NoTokens) {
  Bill b = compute_bill(token_sheet(1, 0.1, 1, 2), BillInput{});
  EXPECT_EQ(b.run_usd, 0);
  EXPECT_EQ(b.usd_per_mtok, 0);
  EXPECT_EQ(b.usd_per_mtok_output, 0);
  EXPECT_EQ(b.ratio_to_reference, 1);
  EXPECT_EQ(b.measured_hit_rate, 0);
}

TEST(Bill, GpuHour) {
  PriceSheet s;
  s.provider = "self", s.per_gpu_hour = true, s.usd_per_gpu_hour = 2.5, s.gpus = 8;
  BillInput in;
  in.prompt_tokens = 600'000, in.cached_tokens = 216'000, in.completion_tokens = 31'750,
  in.duration_s = 12.5;
  Bill b = compute_bill(s, in);
  EXPECT_NEAR(b.run_usd, 2.5 * 8 * 12.5 / 3600, 1e-12);
  EXPECT_DOUBLE_EQ(b.run_usd_no_cache, b.run_usd);
  // $/GPU-h / (tok/s/GPU x 3600) x 1e6 with 31,750 / 12.5 / 8 = 317.5 tok/s/GPU.
  EXPECT_NEAR(b.usd_per_mtok_output, 2.5 / (317.5 * 3600) * 1e6, 1e-9);
  EXPECT_NEAR(b.usd_per_mtok_output, b.run_usd / 31'750 * 1e6, 1e-9);
  EXPECT_NEAR(b.usd_per_mtok, b.run_usd / 631'750 * 1e6, 1e-9);
  EXPECT_NEAR(b.monthly_usd, 2.5 * 8 * 720, 1e-9);
  EXPECT_DOUBLE_EQ(b.run_usd_at_reference, b.run_usd);
  EXPECT_DOUBLE_EQ(b.monthly_usd_at_reference, b.monthly_usd);
  EXPECT_EQ(b.ratio_to_reference, 1);
  EXPECT_DOUBLE_EQ(b.measured_hit_rate, 0.36);
  EXPECT_TRUE(has_line(b, "8 GPUs x 12.5 s / 3,600 s/h = 0.027778 GPU-h")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "31,750 completion tokens / 12.5 s / 8 GPUs = 317.5 tok/s/GPU"))
      << all_lines(b);
  EXPECT_TRUE(has_line(b, "$2.5/GPU-h / (317.5 tok/s/GPU x 3,600 s/h) x 1e6 = $2.187227/Mtok"))
      << all_lines(b);
  EXPECT_TRUE(has_line(b, "in throughput, not in the price")) << all_lines(b);
  EXPECT_TRUE(has_line(b, "$14,400.00")) << all_lines(b);
}

TEST(Bill, JsonRoundTrip) {
  PriceSheet s = token_sheet(0.25, 0.025, 0.25, 1.0);
  s.provider = "deepinfra";
  BillInput in;
  in.prompt_tokens = 600'000, in.cached_tokens = 216'000, in.completion_tokens = 31'750,
  in.duration_s = 12.5;
  Bill b = compute_bill(s, in);
  nlohmann::json j = bill_to_json(s, b);
  EXPECT_EQ(j["provider"], "deepinfra");
  EXPECT_EQ(j["kind"], "tokens");
  EXPECT_EQ(j["prices"]["cached_input_per_mtok"], 0.025);
  EXPECT_EQ(j["arithmetic"].size(), b.arithmetic.size());
  // Through text, as compare reads it.
  auto back = bill_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->run_usd, b.run_usd);
  EXPECT_DOUBLE_EQ(back->run_usd_no_cache, b.run_usd_no_cache);
  EXPECT_DOUBLE_EQ(back->monthly_usd, b.monthly_usd);
  EXPECT_DOUBLE_EQ(back->reference_hit_rate, b.reference_hit_rate);
  EXPECT_DOUBLE_EQ(back->run_usd_at_reference, b.run_usd_at_reference);
  EXPECT_DOUBLE_EQ(back->monthly_usd_at_reference, b.monthly_usd_at_reference);
  EXPECT_DOUBLE_EQ(back->ratio_to_reference, b.ratio_to_reference);
  EXPECT_DOUBLE_EQ(back->usd_per_mtok, b.usd_per_mtok);
  EXPECT_DOUBLE_EQ(back->usd_per_mtok_output, b.usd_per_mtok_output);
  EXPECT_DOUBLE_EQ(back->input_usd_per_mtok_effective, b.input_usd_per_mtok_effective);
  EXPECT_DOUBLE_EQ(back->measured_hit_rate, b.measured_hit_rate);
  EXPECT_EQ(back->arithmetic, b.arithmetic);

  PriceSheet g;
  g.provider = "self", g.per_gpu_hour = true, g.usd_per_gpu_hour = 2.5, g.gpus = 8;
  nlohmann::json gj = bill_to_json(g, compute_bill(g, in));
  EXPECT_EQ(gj["kind"], "gpu_hour");
  EXPECT_EQ(gj["prices"]["gpus"], 8);
  EXPECT_TRUE(gj["input_usd_per_mtok_effective"].is_null());
  auto gback = bill_from_json(gj);
  ASSERT_TRUE(gback) << gback.error().message;
  EXPECT_EQ(gback->ratio_to_reference, 1);
}

TEST(Bill, FromJsonErrors) {
  auto not_object = bill_from_json(nlohmann::json::array());
  ASSERT_FALSE(not_object);
  nlohmann::json j =
      bill_to_json(token_sheet(1, 1, 1, 1), compute_bill(token_sheet(1, 1, 1, 1), BillInput{}));
  j.erase("run_usd");
  auto missing = bill_from_json(j);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("run_usd"), std::string::npos) << missing.error().message;
  j["run_usd"] = "cheap";
  auto bad = bill_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("run_usd"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace cmax::loadgen
