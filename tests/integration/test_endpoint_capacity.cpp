// `cmax endpoint bench --capacity` against `cmax endpoint serve`, whose model has an analytic
// answer: where the TPOT SLO breaks. The model slows decode by batch_slowdown per extra sequence
// in a replica's batch, fixed at admission: TPOT(b) = (1 + 0.02 (b - 1)) / 60 s. An SLO of 26 ms
// holds up to b* = 29 sequences a replica. Two replicas, routed to the less loaded (prompts share
// nothing, so cache_aware falls back to it), 64 slots each (no queueing below 128), 0.2 wall
// seconds per model second (the SLO given in wall time: 5.2 ms).
//  - Concurrency (closed loop): every replica holds n/2, so the edge is n* = 2 b* = 58.
//  - Rate (open-loop Poisson): the requests in the system are Poisson with mean m = lambda S (an
//    M/G/inf system: no slot is ever waited for); an arrival is admitted beside floor(N/2) others on
//    the less loaded replica, so it meets the SLO when N <= 2 b* - 1. With 90% of requests to meet
//    it, m is the largest mean with P(N <= 57) >= 0.9, and lambda = m / S, S being prefill plus 31
//    intervals at the mean batch m/2 + 1.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "endpoint_serve_fixture.h"

namespace {

using json = nlohmann::json;

constexpr double kScale = 0.2;          // wall seconds per model second
constexpr double kSloModelS = 0.026;    // TPOT bound, model seconds
constexpr double kDecode = 60, kSlowdown = 0.02, kPrefill = 20000;
constexpr int kReplicas = 2, kInput = 64, kOutput = 32;

int batch_limit() { return static_cast<int>(std::floor(1 + (kSloModelS * kDecode - 1) / kSlowdown + 1e-9)); }

double poisson_cdf(int k, double m) {
  double term = std::exp(-m), sum = term;
  for (int i = 1; i <= k; ++i) sum += (term *= m / i);
  return sum;
}

// Requests per wall second at which 90% of arrivals still meet the SLO.
double analytic_rate() {
  const int most = kReplicas * batch_limit() - 1;
  double m = 0;
  while (poisson_cdf(most, m + 0.01) >= 0.9) m += 0.01;
  const double batch = m / kReplicas + 1;
  const double s = kInput / kPrefill + (kOutput - 1) * (1 + kSlowdown * (batch - 1)) / kDecode;
  return m / s / kScale;
}

json capacity(const cmax::test::ServeProcess& serve, const std::vector<std::string>& flags, double* wall_s) {
  std::vector<std::string> argv = {CMAX_BIN, "endpoint", "bench", "--base-url", serve.base_url(), "--model", "cmax-sim",
                                   "--fixed", "--input-tokens", std::to_string(kInput), "--output-tokens",
                                   std::to_string(kOutput), "--ignore-eos", "--slo-tpot-ms",
                                   std::to_string(kSloModelS * 1000 * kScale), "--json", "--out",
                                   (serve.dir() / "capacity").string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = cmax::core::run_process({argv, std::chrono::seconds(300)});
  *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->err : r.error().message);
  if (!r || r->exit_code != 0) return json{};
  return json::parse(r->out);
}

std::vector<std::string> serve_flags() {
  return {"--replicas", std::to_string(kReplicas), "--max-concurrent", "64", "--time-scale", std::to_string(kScale)};
}

TEST(EndpointCapacity, TheConcurrencyWhereTheTpotSloBreaksIsTheModelsAnalyticAnswer) {
  cmax::test::ServeProcess serve(serve_flags());
  ASSERT_GT(serve.port(), 0) << serve.error();
  double wall = 0;
  const json doc = capacity(serve, {"--capacity", "concurrency"}, &wall);
  ASSERT_FALSE(doc.empty());
  const double analytic = kReplicas * batch_limit();
  const double edge = doc["edge"].get<double>();
  std::printf("[ measure  ] capacity by concurrency: edge %g streams (first missed %s), analytic %g, %zu measurements, "
              "%.1f s\n",
              edge, doc["first_fail"].dump().c_str(), analytic, doc["probes"].size(), wall);
  EXPECT_EQ(doc["schema"], "cmax.endpoint.capacity/1");
  EXPECT_NEAR(edge, analytic, 0.10 * analytic);
  EXPECT_LT(wall, 180);
  std::ifstream in(serve.dir() / "capacity" / "capacity.json");
  EXPECT_TRUE(in.good()) << "capacity.json in the run directory";
}

TEST(EndpointCapacity, TheRateWhereTheTpotSloBreaksIsTheModelsAnalyticAnswer) {
  cmax::test::ServeProcess serve(serve_flags());
  ASSERT_GT(serve.port(), 0) << serve.error();
  double wall = 0;
  const json doc = capacity(serve, {"--capacity", "rate", "--capacity-start", "32"}, &wall);
  ASSERT_FALSE(doc.empty());
  const double analytic = analytic_rate();
  const double edge = doc["edge"].get<double>();
  std::printf("[ measure  ] capacity by rate: edge %.1f requests/s (first missed %s), analytic %.1f, %zu measurements, "
              "%.1f s\n",
              edge, doc["first_fail"].dump().c_str(), analytic, doc["probes"].size(), wall);
  EXPECT_NEAR(edge, analytic, 0.10 * analytic);
  EXPECT_LT(wall, 180);
}

TEST(EndpointCapacity, NeedsAnSloAndRefusesASchedule) {
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {CMAX_BIN, "endpoint", "bench", "--model", "m", "--fixed", "--capacity", "rate"},
           {CMAX_BIN, "endpoint", "bench", "--model", "m", "--fixed", "--capacity", "rate", "--slo-ttft-ms", "100",
            "--concurrency", "4"},
           {CMAX_BIN, "endpoint", "bench", "--model", "m", "--fixed", "--capacity", "speed", "--slo-ttft-ms", "100"}}) {
    auto r = cmax::core::run_process({argv, std::chrono::seconds(20)});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 3) << r->err;
    EXPECT_NE(r->err.find("--capacity"), std::string::npos) << r->err;
  }
}

}  // namespace
