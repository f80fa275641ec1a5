#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/metrics.h"

namespace cmax::loadgen {
namespace {

using nlohmann::json;

std::size_t idx(ErrorClass c) { return static_cast<std::size_t>(c); }

// A successful streamed request; times in seconds.
RequestRecord ok_request(std::uint64_t index, double sent, double ttft, double e2e, double tpot = -1) {
  RequestRecord r;
  r.index = index;
  r.sent_s = r.first_sent_s = sent;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.tpot_s = tpot;
  r.http_status = 200;
  return r;
}

RequestRecord failed_request(std::uint64_t index, ErrorClass error, double sent = -1) {
  RequestRecord r;
  r.index = index;
  r.sent_s = r.first_sent_s = sent;
  r.error = error;
  return r;
}

Usage usage(std::uint64_t prompt, std::uint64_t completion, std::uint64_t cached, CacheSource source) {
  Usage u;
  u.present = true;
  u.prompt_tokens = prompt;
  u.completion_tokens = completion;
  u.cached_tokens = cached;
  u.cache_source = source;
  return u;
}

LatencyStats stats_of(std::initializer_list<double> seconds) {
  Histogram h;
  for (double s : seconds) h.record_s(s);
  return latency_stats(h);
}

void expect_lat_eq(const LatencyStats& a, const LatencyStats& b, const char* what) {
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_DOUBLE_EQ(a.mean_ms, b.mean_ms) << what;
  EXPECT_DOUBLE_EQ(a.p50_ms, b.p50_ms) << what;
  EXPECT_DOUBLE_EQ(a.p90_ms, b.p90_ms) << what;
  EXPECT_DOUBLE_EQ(a.p95_ms, b.p95_ms) << what;
  EXPECT_DOUBLE_EQ(a.p99_ms, b.p99_ms) << what;
  EXPECT_DOUBLE_EQ(a.max_ms, b.max_ms) << what;
}

void expect_summary_eq(const Summary& a, const Summary& b) {
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.succeeded, b.succeeded);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.errors, b.errors);
  EXPECT_EQ(a.retries, b.retries);
  EXPECT_DOUBLE_EQ(a.duration_s, b.duration_s);
  EXPECT_DOUBLE_EQ(a.request_throughput, b.request_throughput);
  EXPECT_DOUBLE_EQ(a.output_tokens_per_s, b.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(a.total_tokens_per_s, b.total_tokens_per_s);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.cached_tokens, b.cached_tokens);
  EXPECT_EQ(a.cache_creation_tokens, b.cache_creation_tokens);
  EXPECT_EQ(a.completion_tokens, b.completion_tokens);
  EXPECT_EQ(a.requests_with_usage, b.requests_with_usage);
  EXPECT_EQ(a.requests_without_cache_field, b.requests_without_cache_field);
  EXPECT_DOUBLE_EQ(a.cache_hit_rate, b.cache_hit_rate);
  EXPECT_EQ(a.cache_source, b.cache_source);
  expect_lat_eq(a.ttft, b.ttft, "ttft");
  expect_lat_eq(a.ttft_incl_queue, b.ttft_incl_queue, "ttft_incl_queue");
  expect_lat_eq(a.tpot, b.tpot, "tpot");
  expect_lat_eq(a.itl, b.itl, "itl");
  expect_lat_eq(a.e2e, b.e2e, "e2e");
  expect_lat_eq(a.queue, b.queue, "queue");
  EXPECT_EQ(a.good_requests, b.good_requests);
  EXPECT_DOUBLE_EQ(a.goodput_rps, b.goodput_rps);
  EXPECT_DOUBLE_EQ(a.goodput_share, b.goodput_share);
}

// A run with something in every field.
std::vector<RequestRecord> mixed_run() {
  std::vector<RequestRecord> v;
  auto a = ok_request(0, 0.0, 0.050, 0.610, 0.0088);
  a.usage = usage(1200, 64, 800, CacheSource::kOpenAi);
  a.usage.cache_creation_tokens = 16;
  a.queue_s = 0.002;
  a.first_sent_s = 0.0;
  v.push_back(a);
  auto b = ok_request(1, 0.1, 0.080, 0.900, 0.012);
  b.usage = usage(1000, 70, 0, CacheSource::kOpenAi);
  v.push_back(b);
  auto c = ok_request(2, 0.2, 0.030, 0.030);  // one token: no tpot
  c.usage = usage(500, 1, 100, CacheSource::kNone);
  v.push_back(c);
  auto d = failed_request(3, ErrorClass::kHttp5xx, 0.3);
  d.queue_s = 0.5;
  d.http_status = 503;
  d.error_detail = "upstream overloaded";
  v.push_back(d);
  v.push_back(failed_request(4, ErrorClass::kTimeout, 0.4));
  v.push_back(failed_request(5, ErrorClass::kCanceled));  // never sent
  return v;
}

TEST(LatencyStats, EmptyHistogramHasNoSample) {
  const LatencyStats l = latency_stats(Histogram{});
  EXPECT_EQ(l.count, 0u);
  EXPECT_EQ(l.mean_ms, 0.0);
  EXPECT_EQ(l.max_ms, 0.0);
}

TEST(LatencyStats, MillisecondsFromMicroseconds) {
  Histogram h;
  for (std::uint64_t us = 1; us <= 100; ++us) h.record_us(us * 10);  // 10 us .. 1 ms, all exact
  const LatencyStats l = latency_stats(h);
  EXPECT_EQ(l.count, 100u);
  EXPECT_DOUBLE_EQ(l.mean_ms, 0.505);
  EXPECT_DOUBLE_EQ(l.p50_ms, 0.5);
  EXPECT_DOUBLE_EQ(l.p90_ms, 0.9);
  EXPECT_DOUBLE_EQ(l.p95_ms, 0.95);
  EXPECT_DOUBLE_EQ(l.p99_ms, 0.99);
  EXPECT_DOUBLE_EQ(l.max_ms, 1.0);
}

TEST(Summarize, EmptyRun) {
  const Summary s = summarize({}, Histogram{}, 0, Slo{});
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.succeeded, 0u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.duration_s, 0.0);
  EXPECT_EQ(s.request_throughput, 0.0);
  EXPECT_EQ(s.goodput_share, 0.0);
  EXPECT_EQ(s.goodput_rps, 0.0);
  EXPECT_LT(s.cache_hit_rate, 0);
  EXPECT_EQ(s.cache_source, CacheSource::kNone);
  EXPECT_EQ(s.ttft.count, 0u);
  EXPECT_EQ(s.queue.count, 0u);
}

TEST(Summarize, CountsAndErrorClasses) {
  const auto run = mixed_run();
  std::array<std::uint64_t, kErrorClassCount> retries{};
  retries[idx(ErrorClass::kHttp429)] = 3;
  const Summary s = summarize(run, Histogram{}, 2.0, Slo{}, retries);
  EXPECT_EQ(s.requests, 6u);
  EXPECT_EQ(s.succeeded, 3u);
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.errors[idx(ErrorClass::kNone)], 0u);
  EXPECT_EQ(s.errors[idx(ErrorClass::kHttp5xx)], 1u);
  EXPECT_EQ(s.errors[idx(ErrorClass::kTimeout)], 1u);
  EXPECT_EQ(s.errors[idx(ErrorClass::kCanceled)], 1u);
  EXPECT_EQ(s.errors[idx(ErrorClass::kHttp429)], 0u);
  EXPECT_EQ(s.retries, retries);
}

// Issue 35: what cmax canceled when it stopped is counted apart and is not an endpoint failure.
TEST(Summarize, RequestsCmaxCanceledAreCountedApartFromTheEndpointsFailures) {
  const Summary s = summarize(mixed_run(), Histogram{}, 2.0, Slo{});
  EXPECT_EQ(s.failed, 3u) << "failed keeps its meaning: every request that did not succeed";
  EXPECT_EQ(s.client_canceled, 1u);
  EXPECT_DOUBLE_EQ(success_rate(s), 3.0 / 5) << "3 succeeded of the 5 the endpoint was judged on";
  std::vector<RequestRecord> stopped = {ok_request(0, 0.0, 0.01, 0.1), failed_request(1, ErrorClass::kCanceled),
                                        failed_request(2, ErrorClass::kCanceled)};
  EXPECT_DOUBLE_EQ(success_rate(summarize(stopped, Histogram{}, 1.0, Slo{})), 1.0);
  std::vector<RequestRecord> none = {failed_request(0, ErrorClass::kCanceled)};
  EXPECT_LT(success_rate(summarize(none, Histogram{}, 1.0, Slo{})), 0) << "nothing judged";
  const auto back = summary_from_json(summary_to_json(s));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->client_canceled, 1u);
}

TEST(Summarize, LatenciesOverSuccessesAndQueueOverEverySentRequest) {
  const auto run = mixed_run();
  Histogram itl;
  itl.record_us(8000);
  itl.record_us(9000);
  const Summary s = summarize(run, itl, 2.0, Slo{});
  expect_lat_eq(s.ttft, stats_of({0.050, 0.080, 0.030}), "ttft");
  expect_lat_eq(s.ttft_incl_queue, stats_of({0.052, 0.080, 0.030}), "ttft_incl_queue");
  expect_lat_eq(s.tpot, stats_of({0.0088, 0.012}), "tpot");
  expect_lat_eq(s.e2e, stats_of({0.610, 0.900, 0.030}), "e2e");
  // The 5xx waited 0.5 s in the client's queue; the canceled one was never sent.
  expect_lat_eq(s.queue, stats_of({0.002, 0.0, 0.0, 0.5, 0.0}), "queue");
  expect_lat_eq(s.itl, latency_stats(itl), "itl");
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft.max_ms, 80.0);
  EXPECT_DOUBLE_EQ(s.ttft.mean_ms, 160.0 / 3);
  EXPECT_DOUBLE_EQ(s.queue.max_ms, 500.0);
}

TEST(Summarize, TokensAndCacheHitRate) {
  const auto run = mixed_run();
  auto failed_with_usage = failed_request(6, ErrorClass::kApiError, 0.5);
  failed_with_usage.usage = usage(99999, 5, 99999, CacheSource::kAnthropic);
  std::vector<RequestRecord> all = run;
  all.push_back(failed_with_usage);
  const Summary s = summarize(all, Histogram{}, 2.0, Slo{});
  EXPECT_EQ(s.prompt_tokens, 2700u);
  EXPECT_EQ(s.completion_tokens, 135u);
  EXPECT_EQ(s.cached_tokens, 900u);
  EXPECT_EQ(s.cache_creation_tokens, 16u);
  EXPECT_EQ(s.requests_with_usage, 3u);
  EXPECT_EQ(s.requests_without_cache_field, 1u);
  EXPECT_DOUBLE_EQ(s.cache_hit_rate, 900.0 / 2700.0);
  EXPECT_EQ(s.cache_source, CacheSource::kOpenAi);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 135.0 / 2.0);
  EXPECT_DOUBLE_EQ(s.total_tokens_per_s, 2835.0 / 2.0);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
}

TEST(Summarize, CacheHitRateIsUnknownWithoutUsage) {
  std::vector<RequestRecord> run = {ok_request(0, 0, 0.01, 0.1), ok_request(1, 0, 0.01, 0.1)};
  Summary s = summarize(run, Histogram{}, 1, Slo{});
  EXPECT_LT(s.cache_hit_rate, 0);
  EXPECT_EQ(s.requests_with_usage, 0u);
  EXPECT_EQ(s.cache_source, CacheSource::kNone);
  // Usage reported but no prompt tokens at all: still no rate to speak of.
  run[0].usage = usage(0, 5, 0, CacheSource::kOpenAi);
  s = summarize(run, Histogram{}, 1, Slo{});
  EXPECT_EQ(s.requests_with_usage, 1u);
  EXPECT_LT(s.cache_hit_rate, 0);
  EXPECT_EQ(s.cache_source, CacheSource::kOpenAi);
  // A real 0%.
  run[0].usage = usage(100, 5, 0, CacheSource::kOpenAi);
  s = summarize(run, Histogram{}, 1, Slo{});
  EXPECT_EQ(s.cache_hit_rate, 0.0);
}

TEST(Summarize, CacheSourceIsTheMostCommonConvention) {
  std::vector<RequestRecord> run;
  for (int i = 0; i < 5; ++i) {
    auto r = ok_request(i, 0, 0.01, 0.1);
    r.usage = usage(10, 1, 0, i < 3 ? CacheSource::kNone : (i < 4 ? CacheSource::kDeepSeek : CacheSource::kAnthropic));
    run.push_back(r);
  }
  // None is the most common, but it is "no field", not a convention; deepseek and anthropic tie
  // and the tie goes to the earlier in the enum.
  Summary s = summarize(run, Histogram{}, 1, Slo{});
  EXPECT_EQ(s.cache_source, CacheSource::kAnthropic);
  EXPECT_EQ(s.requests_without_cache_field, 3u);
  run[0].usage.cache_source = CacheSource::kDeepSeek;
  s = summarize(run, Histogram{}, 1, Slo{});
  EXPECT_EQ(s.cache_source, CacheSource::kDeepSeek);
}

TEST(Summarize, GoodputUnderSlo) {
  std::vector<RequestRecord> run;
  auto fast = ok_request(0, 0, 0.100, 1.0, 0.020);
  run.push_back(fast);
  auto queued = ok_request(1, 0, 0.100, 1.0, 0.020);
  queued.queue_s = 0.950;  // TTFT incl. queue 1.05 s
  run.push_back(queued);
  auto slow_tokens = ok_request(2, 0, 0.100, 1.0, 0.060);
  run.push_back(slow_tokens);
  auto one_token = ok_request(3, 0, 0.200, 0.200);  // no tpot: passes the tpot bound
  run.push_back(one_token);
  auto slow_e2e = ok_request(4, 0, 0.100, 3.5, 0.020);
  run.push_back(slow_e2e);
  auto at_bound = ok_request(5, 0, 1.0, 3.0, 0.050);  // exactly on every bound: good
  run.push_back(at_bound);
  run.push_back(failed_request(6, ErrorClass::kTimeout, 0));

  Slo slo{.ttft_ms = 1000, .tpot_ms = 50, .e2e_ms = 3000};
  Summary s = summarize(run, Histogram{}, 4.0, slo);
  EXPECT_EQ(s.good_requests, 3u);  // fast, one_token, at_bound
  EXPECT_DOUBLE_EQ(s.goodput_rps, 0.75);
  EXPECT_DOUBLE_EQ(s.goodput_share, 3.0 / 7.0);
  EXPECT_EQ(s.slo.ttft_ms, 1000);

  // 0 = unbounded: every success is good, failures never are.
  s = summarize(run, Histogram{}, 4.0, Slo{});
  EXPECT_EQ(s.good_requests, 6u);
  s = summarize(run, Histogram{}, 4.0, Slo{.tpot_ms = 50});
  EXPECT_EQ(s.good_requests, 5u);
  s = summarize(run, Histogram{}, 4.0, Slo{.ttft_ms = 1000});
  EXPECT_EQ(s.good_requests, 5u);
  s = summarize(run, Histogram{}, 4.0, Slo{.e2e_ms = 3000});
  EXPECT_EQ(s.good_requests, 5u);
}

TEST(Summarize, DurationFromRecordsWhenNotGiven) {
  std::vector<RequestRecord> run;
  auto a = ok_request(0, 1.5, 0.1, 2.0);
  a.first_sent_s = 1.0;  // retried: the run began with its first attempt
  run.push_back(a);
  run.push_back(ok_request(1, 2.0, 0.1, 4.5));  // ends at 6.5
  auto t = failed_request(2, ErrorClass::kTimeout, 3.0);
  t.ttft_s = 0.2;  // no e2e; its last known moment is 3.2
  run.push_back(t);
  run.push_back(failed_request(3, ErrorClass::kCanceled));  // never sent: no part of the window
  Summary s = summarize(run, Histogram{}, 0, Slo{});
  EXPECT_DOUBLE_EQ(s.duration_s, 5.5);
  EXPECT_DOUBLE_EQ(s.request_throughput, 2.0 / 5.5);
  s = summarize(run, Histogram{}, -1, Slo{});
  EXPECT_DOUBLE_EQ(s.duration_s, 5.5);
  s = summarize(run, Histogram{}, 10.0, Slo{});
  EXPECT_DOUBLE_EQ(s.duration_s, 10.0);
  EXPECT_DOUBLE_EQ(s.request_throughput, 0.2);
}

TEST(Summarize, NoSendsMeansNoRates) {
  std::vector<RequestRecord> run = {failed_request(0, ErrorClass::kConnect), failed_request(1, ErrorClass::kConnect)};
  const Summary s = summarize(run, Histogram{}, 0, Slo{});
  EXPECT_EQ(s.duration_s, 0.0);
  EXPECT_EQ(s.request_throughput, 0.0);
  EXPECT_EQ(s.goodput_rps, 0.0);
  EXPECT_EQ(s.goodput_share, 0.0);
  EXPECT_EQ(s.errors[idx(ErrorClass::kConnect)], 2u);
  EXPECT_FALSE(std::isnan(s.output_tokens_per_s));
}

TEST(SummaryJson, Shape) {
  std::array<std::uint64_t, kErrorClassCount> retries{};
  retries[idx(ErrorClass::kHttp429)] = 3;
  const Summary s = summarize(mixed_run(), Histogram{}, 2.0, Slo{}, retries);
  const json j = summary_to_json(s);
  for (const char* key :
       {"requests", "succeeded", "failed", "errors", "retries", "duration_s", "request_throughput",
        "output_tokens_per_s", "total_tokens_per_s", "prompt_tokens", "cached_tokens", "cache_creation_tokens",
        "completion_tokens", "requests_with_usage", "requests_without_cache_field", "cache_hit_rate", "cache_source",
        "ttft_ms", "ttft_incl_queue_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms", "goodput", "client_canceled",
        "success_rate"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 26u);
  EXPECT_EQ(j["client_canceled"], 1);
  EXPECT_DOUBLE_EQ(j["success_rate"].get<double>(), 3.0 / 5);
  EXPECT_EQ(j["requests"], 6);
  EXPECT_EQ(j["cache_source"], "openai");
  EXPECT_DOUBLE_EQ(j["cache_hit_rate"].get<double>(), 900.0 / 2700.0);
  for (const char* key : {"errors", "retries"}) {
    const json& e = j[key];
    EXPECT_EQ(e.size(), 9u) << key;
    EXPECT_FALSE(e.contains("ok")) << key;
    for (const char* name :
         {"http_429", "http_4xx", "http_5xx", "timeout", "connect", "dropped", "protocol", "api_error", "canceled"}) {
      EXPECT_TRUE(e[name].is_number_unsigned()) << key << "." << name;
    }
  }
  EXPECT_EQ(j["errors"]["http_5xx"], 1);
  EXPECT_EQ(j["retries"]["http_429"], 3);
  const json& ttft = j["ttft_ms"];
  EXPECT_EQ(ttft.size(), 7u);
  EXPECT_EQ(ttft["count"], 3);
  EXPECT_DOUBLE_EQ(ttft["max"].get<double>(), 80.0);
  for (const char* f : {"mean", "p50", "p90", "p95", "p99", "max"}) EXPECT_TRUE(ttft[f].is_number()) << f;
  // No ITL samples: count 0 and nulls.
  const json& itl = j["itl_ms"];
  EXPECT_EQ(itl["count"], 0);
  for (const char* f : {"mean", "p50", "p90", "p95", "p99", "max"}) EXPECT_TRUE(itl[f].is_null()) << f;
  EXPECT_EQ(j["goodput"], (json{{"requests", 3}, {"share", 0.5}, {"requests_per_s", 1.5}}));
}

TEST(SummaryJson, UnknownHitRateIsNull) {
  Summary s;
  s.cache_hit_rate = -1;
  EXPECT_TRUE(summary_to_json(s)["cache_hit_rate"].is_null());
  EXPECT_EQ(summary_to_json(s)["cache_source"], "none");
  auto back = summary_from_json(summary_to_json(s));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_LT(back->cache_hit_rate, 0);
}

TEST(SummaryJson, RoundTrip) {
  std::array<std::uint64_t, kErrorClassCount> retries{};
  retries[idx(ErrorClass::kHttp429)] = 3;
  retries[idx(ErrorClass::kDropped)] = 1;
  Histogram itl;
  for (std::uint64_t us = 5000; us < 20000; us += 37) itl.record_us(us);
  const Summary s = summarize(mixed_run(), itl, 0, Slo{.ttft_ms = 60}, retries);
  const json j = summary_to_json(s);
  // Through text, as a reader of bench.json sees it.
  auto back = summary_from_json(json::parse(j.dump()));
  ASSERT_TRUE(back) << back.error().message;
  expect_summary_eq(*back, s);
  EXPECT_EQ(summary_to_json(*back), j);
}

TEST(SummaryJson, MissingFieldsTakeDefaults) {
  auto s = summary_from_json(json::object());
  ASSERT_TRUE(s) << s.error().message;
  expect_summary_eq(*s, Summary{});
  s = summary_from_json(json{{"requests", 4},
                             {"errors", {{"timeout", 2}, {"ok", 2}, {"some_future_class", 1}}},
                             {"ttft_ms", nullptr},
                             {"e2e_ms", {{"count", 0}}},
                             {"cache_hit_rate", 0.25},
                             {"an_unknown_field", "ignored"},
                             {"duration_s", 3}});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->requests, 4u);
  EXPECT_EQ(s->errors[idx(ErrorClass::kTimeout)], 2u);
  EXPECT_EQ(s->errors[idx(ErrorClass::kNone)], 0u);
  EXPECT_EQ(s->ttft.count, 0u);
  EXPECT_DOUBLE_EQ(s->cache_hit_rate, 0.25);
  EXPECT_DOUBLE_EQ(s->duration_s, 3.0);
}

TEST(SummaryJson, IllTypedFieldsAreNamed) {
  const json good = summary_to_json(summarize(mixed_run(), Histogram{}, 2.0, Slo{}));
  struct Case {
    json::json_pointer where;
    json value;
    std::string field;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/requests"), "six", "\"requests\""},
      {json::json_pointer("/requests"), -6, "\"requests\""},
      {json::json_pointer("/requests"), 6.5, "\"requests\""},
      {json::json_pointer("/duration_s"), "2", "\"duration_s\""},
      {json::json_pointer("/errors"), json::array(), "\"errors\""},
      {json::json_pointer("/errors/timeout"), true, "\"errors.timeout\""},
      {json::json_pointer("/retries/http_429"), -1, "\"retries.http_429\""},
      {json::json_pointer("/ttft_ms"), 12, "\"ttft_ms\""},
      {json::json_pointer("/ttft_ms/p50"), "fast", "\"ttft_ms.p50\""},
      {json::json_pointer("/queue_ms/count"), "3", "\"queue_ms.count\""},
      {json::json_pointer("/cache_hit_rate"), "36%", "\"cache_hit_rate\""},
      {json::json_pointer("/cache_source"), 1, "\"cache_source\""},
      {json::json_pointer("/cache_source"), "mistral", "\"cache_source\""},
      {json::json_pointer("/goodput"), "none", "\"goodput\""},
      {json::json_pointer("/goodput/share"), json::object(), "\"goodput.share\""},
  };
  for (const Case& c : cases) {
    json bad = good;
    bad[c.where] = c.value;
    auto s = summary_from_json(bad);
    ASSERT_FALSE(s) << c.where.to_string();
    EXPECT_NE(s.error().message.find(c.field), std::string::npos) << s.error().message;
    EXPECT_EQ(s.error().message.rfind("read summary: ", 0), 0u) << s.error().message;
  }
  EXPECT_FALSE(summary_from_json(json::array()));
  EXPECT_FALSE(summary_from_json(json("summary")));
}

TEST(SummaryJson, ReadsTheSchemaExample) {
  const char* text = R"({
    "requests": 500, "succeeded": 498, "failed": 2,
    "errors":  {"http_429": 0, "http_4xx": 0, "http_5xx": 1, "timeout": 0, "connect": 0,
                "dropped": 1, "protocol": 0, "api_error": 0, "canceled": 0},
    "retries": {"http_429": 3},
    "duration_s": 12.5, "request_throughput": 39.8, "output_tokens_per_s": 2540.0,
    "total_tokens_per_s": 51000.0,
    "prompt_tokens": 600000, "cached_tokens": 216000, "cache_creation_tokens": 0, "completion_tokens": 31750,
    "requests_with_usage": 498, "requests_without_cache_field": 0,
    "cache_hit_rate": 0.36, "cache_source": "openai",
    "ttft_ms": {"count": 498, "mean": 52.1, "p50": 50.0, "p90": 70.0, "p95": 80.0, "p99": 120.5, "max": 300.0},
    "ttft_incl_queue_ms": {"count": 0, "mean": null, "p50": null, "p90": null, "p95": null, "p99": null, "max": null},
    "goodput": {"requests": 470, "share": 0.94, "requests_per_s": 37.6}
  })";
  auto s = summary_from_json(json::parse(text));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->succeeded, 498u);
  EXPECT_EQ(s->errors[idx(ErrorClass::kDropped)], 1u);
  EXPECT_EQ(s->retries[idx(ErrorClass::kHttp429)], 3u);
  EXPECT_EQ(s->cache_source, CacheSource::kOpenAi);
  EXPECT_DOUBLE_EQ(s->ttft.p99_ms, 120.5);
  EXPECT_EQ(s->ttft_incl_queue.count, 0u);
  EXPECT_EQ(s->good_requests, 470u);
  EXPECT_DOUBLE_EQ(s->goodput_rps, 37.6);
}

RequestRecord full_record() {
  RequestRecord r;
  r.index = 12345678901234ull;
  r.session = 7;
  r.turn = 2;
  r.concurrency = 16;
  r.scheduled_s = 1.25;
  r.first_sent_s = 1.2500001;
  r.sent_s = 2.0000123456789;
  r.queue_s = 0.0000001;
  r.ttft_s = 0.052;
  r.e2e_s = 0.61;
  r.tpot_s = 0.1 / 3;
  r.attempts = 3;
  r.http_status = 200;
  r.error = ErrorClass::kNone;
  r.error_detail = "";
  r.usage = usage(1200, 64, 800, CacheSource::kAnthropic);
  r.usage.cache_creation_tokens = 33;
  r.content_chunks = 64;
  r.expected_prompt_tokens = 1199;
  r.max_tokens = 64;
  r.response_id = "chatcmpl-abc\"123\"";
  return r;
}

void expect_record_eq(const RequestRecord& a, const RequestRecord& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.session, b.session);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.concurrency, b.concurrency);
  // Exactly: the writer prints doubles so they read back bit for bit.
  EXPECT_EQ(a.scheduled_s, b.scheduled_s);
  EXPECT_EQ(a.sent_s, b.sent_s);
  EXPECT_EQ(a.first_sent_s, b.first_sent_s);
  EXPECT_EQ(a.queue_s, b.queue_s);
  EXPECT_EQ(a.ttft_s, b.ttft_s);
  EXPECT_EQ(a.e2e_s, b.e2e_s);
  EXPECT_EQ(a.tpot_s, b.tpot_s);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.http_status, b.http_status);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.error_detail, b.error_detail);
  EXPECT_EQ(a.usage.present, b.usage.present);
  EXPECT_EQ(a.usage.prompt_tokens, b.usage.prompt_tokens);
  EXPECT_EQ(a.usage.completion_tokens, b.usage.completion_tokens);
  EXPECT_EQ(a.usage.cached_tokens, b.usage.cached_tokens);
  EXPECT_EQ(a.usage.cache_creation_tokens, b.usage.cache_creation_tokens);
  EXPECT_EQ(a.usage.cache_source, b.usage.cache_source);
  EXPECT_EQ(a.content_chunks, b.content_chunks);
  EXPECT_EQ(a.expected_prompt_tokens, b.expected_prompt_tokens);
  EXPECT_EQ(a.max_tokens, b.max_tokens);
  EXPECT_EQ(a.response_id, b.response_id);
}

TEST(RecordJsonl, RoundTrip) {
  const RequestRecord r = full_record();
  const std::string line = record_to_jsonl(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = record_from_jsonl(line);
  ASSERT_TRUE(back) << back.error().message;
  expect_record_eq(*back, r);
  EXPECT_EQ(record_to_jsonl(*back), line);
}

TEST(RecordJsonl, FailedRecordRoundTrip) {
  RequestRecord r;
  r.index = 9;
  r.error = ErrorClass::kHttp4xx;
  r.http_status = 401;
  r.error_detail = "Incorrect API key provided: sk-...; check --api-key";
  r.sent_s = r.first_sent_s = 0.5;
  r.concurrency = -3;  // nonsense, but the format carries what it is given
  auto back = record_from_jsonl(record_to_jsonl(r));
  ASSERT_TRUE(back) << back.error().message;
  expect_record_eq(*back, r);
}

TEST(RecordJsonl, Fields) {
  RequestRecord r = full_record();
  r.scheduled_s = -1;
  r.ttft_s = -1;
  r.e2e_s = -1;
  r.tpot_s = -1;
  r.error = ErrorClass::kDropped;
  r.usage = Usage{};
  const json j = json::parse(record_to_jsonl(r));
  EXPECT_EQ(j.size(), 20u);
  for (const char* key : {"scheduled_s", "ttft_s", "e2e_s", "tpot_s", "usage"}) {
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["error"], "dropped");
  EXPECT_EQ(j["index"], 12345678901234ull);
  EXPECT_DOUBLE_EQ(j["sent_s"].get<double>(), 2.0000123456789);
  EXPECT_EQ(j["queue_s"], 0.0000001);
  // In the schema's order.
  const std::string line = record_to_jsonl(r);
  EXPECT_EQ(line.rfind("{\"index\":", 0), 0u) << line;
  EXPECT_LT(line.find("\"ttft_s\""), line.find("\"usage\""));
  EXPECT_LT(line.find("\"usage\""), line.find("\"response_id\""));

  r.usage = usage(10, 2, 0, CacheSource::kNone);
  const json u = json::parse(record_to_jsonl(r))["usage"];
  EXPECT_EQ(u, (json{{"prompt_tokens", 10}, {"completion_tokens", 2}, {"cached_tokens", 0},
                     {"cache_creation_tokens", 0}, {"cache_source", "none"}}));
}

TEST(RecordJsonl, NullTimesReadAsNever) {
  RequestRecord r = full_record();
  r.sent_s = r.first_sent_s = r.scheduled_s = r.ttft_s = r.e2e_s = r.tpot_s = -1;
  auto back = record_from_jsonl(record_to_jsonl(r));
  ASSERT_TRUE(back) << back.error().message;
  expect_record_eq(*back, r);
}

TEST(RecordJsonl, ReadsTheSchemaExample) {
  auto r = record_from_jsonl(
      R"({"index": 0, "session": 0, "turn": 0, "concurrency": 4, "scheduled_s": null, "sent_s": 0.0012,)"
      R"( "first_sent_s": 0.0012, "queue_s": 0, "ttft_s": 0.052, "e2e_s": 0.61, "tpot_s": 0.0088,)"
      R"( "attempts": 1, "http_status": 200, "error": "ok", "error_detail": "",)"
      R"( "usage": {"prompt_tokens": 1200, "completion_tokens": 64, "cached_tokens": 800,)"
      R"( "cache_creation_tokens": 0, "cache_source": "openai"},)"
      R"( "content_chunks": 64, "expected_prompt_tokens": 1200, "max_tokens": 64, "response_id": "chatcmpl-..."})"
      "\r\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->concurrency, 4);
  EXPECT_EQ(r->scheduled_s, -1);
  EXPECT_DOUBLE_EQ(r->sent_s, 0.0012);
  EXPECT_EQ(r->queue_s, 0.0);
  EXPECT_TRUE(r->ok());
  EXPECT_TRUE(r->usage.present);
  EXPECT_EQ(r->usage.cached_tokens, 800u);
  EXPECT_EQ(r->usage.cache_source, CacheSource::kOpenAi);
  EXPECT_EQ(r->response_id, "chatcmpl-...");
}

TEST(RecordJsonl, MissingFieldsTakeDefaults) {
  auto r = record_from_jsonl("{\"index\": 3}");
  ASSERT_TRUE(r) << r.error().message;
  expect_record_eq(*r, [] {
    RequestRecord d;
    d.index = 3;
    return d;
  }());
}

TEST(RecordJsonl, TruncatedLineFailsCleanly) {
  const std::string line = record_to_jsonl(full_record());
  for (std::size_t n = 0; n < line.size(); ++n) {
    auto r = record_from_jsonl(std::string_view(line).substr(0, n));
    ASSERT_FALSE(r) << n;
    EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(record_from_jsonl("{\"index\": 1}{\"index\": 2}"));  // two lines glued together
}

TEST(RecordJsonl, IllTypedFieldsAreNamed) {
  const json good = json::parse(record_to_jsonl(full_record()));
  struct Case {
    json::json_pointer where;
    json value;
    std::string field;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/index"), "0", "\"index\""},
      {json::json_pointer("/session"), 4294967296ull, "\"session\""},
      {json::json_pointer("/turn"), -1, "\"turn\""},
      {json::json_pointer("/concurrency"), 1.5, "\"concurrency\""},
      {json::json_pointer("/concurrency"), 3000000000ull, "\"concurrency\""},
      {json::json_pointer("/sent_s"), "0.5", "\"sent_s\""},
      {json::json_pointer("/attempts"), true, "\"attempts\""},
      {json::json_pointer("/http_status"), "200", "\"http_status\""},
      {json::json_pointer("/error"), "teapot", "\"error\""},
      {json::json_pointer("/error"), 0, "\"error\""},
      {json::json_pointer("/error_detail"), json::array(), "\"error_detail\""},
      {json::json_pointer("/usage"), 5, "\"usage\""},
      {json::json_pointer("/usage/cached_tokens"), -800, "\"usage.cached_tokens\""},
      {json::json_pointer("/usage/cache_source"), "gemini", "\"usage.cache_source\""},
      {json::json_pointer("/content_chunks"), 1e12, "\"content_chunks\""},
      {json::json_pointer("/response_id"), 17, "\"response_id\""},
  };
  for (const Case& c : cases) {
    json bad = good;
    bad[c.where] = c.value;
    auto r = record_from_jsonl(bad.dump());
    ASSERT_FALSE(r) << c.where.to_string();
    EXPECT_NE(r.error().message.find(c.field), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(record_from_jsonl("[1, 2, 3]"));
  EXPECT_FALSE(record_from_jsonl(""));
}

TEST(RecordJsonl, InvalidUtf8FromTheEndpointDoesNotThrow) {
  RequestRecord r;
  r.error = ErrorClass::kProtocol;
  r.error_detail = std::string("bad byte \xff\xfe here");
  r.response_id = std::string("id-\xc3");
  std::string line;
  ASSERT_NO_THROW(line = record_to_jsonl(r));
  auto back = record_from_jsonl(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->error, ErrorClass::kProtocol);
  EXPECT_EQ(back->error_detail.rfind("bad byte ", 0), 0u);
  EXPECT_NE(back->error_detail.find(" here"), std::string::npos);
}

}  // namespace
}  // namespace cmax::loadgen

TEST(SummariesCsv, AHeaderAndARowPerScopeWithEmptyForAHitRateNotReported) {
  cmax::loadgen::Summary a;
  a.requests = 10;
  a.succeeded = 9;
  a.failed = 1;
  a.ttft.p50_ms = 26.5;
  a.cache_hit_rate = 0.25;
  cmax::loadgen::Summary b;
  b.requests = 4;
  const std::string csv = cmax::loadgen::summaries_csv({{"overall", a}, {"c=4", b}, {"a,\"b\"", b}});
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < csv.size();) {
    const auto nl = csv.find('\n', at);
    lines.push_back(csv.substr(at, nl - at));
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 4u);
  const auto columns = [](const std::string& l) { return std::count(l.begin(), l.end(), ',') + 1; };
  EXPECT_EQ(columns(lines[0]), 26);
  EXPECT_EQ(lines[0].rfind("scope,requests,succeeded,failed,", 0), 0u);
  EXPECT_EQ(lines[1].rfind("overall,10,9,1,", 0), 0u);
  EXPECT_NE(lines[1].find(",26.500,"), std::string::npos);
  EXPECT_NE(lines[1].find(",0.250000,"), std::string::npos);
  EXPECT_EQ(columns(lines[2]), 26);
  EXPECT_NE(lines[2].find(",,"), std::string::npos) << "no usage reported: an empty cell, not 0";
  EXPECT_EQ(lines[3].rfind("\"a,\"\"b\"\"\",4,", 0), 0u) << "a name with a comma or a quote is quoted";
}
