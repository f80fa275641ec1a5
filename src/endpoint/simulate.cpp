#include "endpoint/simulate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "endpoint/prefix_cache.h"

namespace cmax::endpoint {
namespace {

struct Finish {
  double at_s;
  int replica;
  bool operator>(const Finish& o) const { return at_s > o.at_s; }
};

double max_over_mean(const auto& v) {
  if (v.empty()) return 0;
  const double sum = std::accumulate(v.begin(), v.end(), 0.0);
  if (sum <= 0) return 1;
  return static_cast<double>(*std::max_element(v.begin(), v.end())) / (sum / static_cast<double>(v.size()));
}

}  // namespace

Percentiles percentiles(std::vector<double>& values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) {
    const auto n = values.size();
    auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return values[std::clamp<std::size_t>(k, 1, n) - 1];
  };
  return {rank(0.50), rank(0.90), rank(0.99)};
}

double theoretical_hit_rate(const Trace& trace) {
  PrefixCache all(PrefixCache::kUnbounded);
  std::uint64_t blocks = 0, hits = 0, tick = 0;
  for (const auto& r : trace.requests) {
    blocks += r.block_count;
    hits += all.insert(trace.blocks(r), ++tick);
  }
  return blocks ? static_cast<double>(hits) / static_cast<double>(blocks) : 0.0;
}

SteadyState steady_state(const Trace& trace, double tolerance) {
  SteadyState out;
  if (trace.requests.empty()) return out;
  PrefixCache all(PrefixCache::kUnbounded);
  std::uint64_t blocks = 0, hits = 0, tick = 0;
  std::vector<double> running;
  running.reserve(trace.requests.size());
  for (const auto& r : trace.requests) {
    blocks += r.block_count;
    hits += all.insert(trace.blocks(r), ++tick);
    running.push_back(blocks ? static_cast<double>(hits) / static_cast<double>(blocks) : 0.0);
  }
  out.whole_rate = running.back();
  out.requests = 1;
  for (std::size_t i = running.size(); i-- > 0;) {
    if (std::abs(running[i] - out.whole_rate) > tolerance * out.whole_rate) {
      out.requests = i + 2 <= running.size() ? i + 2 : running.size();
      break;
    }
  }
  out.prefix_rate = running[out.requests - 1];
  return out;
}

Cost price(std::uint64_t input_tokens, std::uint64_t cached_tokens, std::uint64_t output_tokens, const PriceSheet& p) {
  Cost c;
  const double in = static_cast<double>(input_tokens), cached = static_cast<double>(cached_tokens);
  c.input_usd = (in - cached) * p.input_per_mtok / 1e6;
  c.cached_input_usd = cached * p.cached_input_per_mtok / 1e6;
  c.output_usd = static_cast<double>(output_tokens) * p.output_per_mtok / 1e6;
  c.total_usd = c.input_usd + c.cached_input_usd + c.output_usd;
  const double h = in > 0 ? cached / in : 0.0;
  c.input_per_mtok_effective = (1 - h) * p.input_per_mtok + h * p.cached_input_per_mtok;
  c.total_usd_no_cache = in * p.input_per_mtok / 1e6 + c.output_usd;
  return c;
}

PolicyResult simulate(const Trace& trace, const SimConfig& config, double theoretical) {
  Fleet fleet(config.fleet);
  const int replicas = fleet.config().replicas;
  const double scale = config.time_scale > 0 ? config.time_scale : 1.0;
  PolicyResult out;
  out.policy = fleet.config().policy;
  out.theoretical_hit_rate = theoretical;
  out.replica_requests.assign(static_cast<std::size_t>(replicas), 0);
  out.replica_busy_s.assign(static_cast<std::size_t>(replicas), 0.0);
  std::vector<double> ttft, e2e, queue;
  ttft.reserve(trace.requests.size());
  e2e.reserve(trace.requests.size());
  queue.reserve(trace.requests.size());

  // Finishes at or before an arrival's time are applied first, so the router sees the slots free.
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
  for (const auto& r : trace.requests) {
    const double now = r.arrival_s / scale;
    while (!finishes.empty() && finishes.top().at_s <= now) {
      fleet.finish(finishes.top().replica, finishes.top().at_s);
      finishes.pop();
    }
    // Mooncake carries no session; the synthetic trace does (consistent_hash keys on it).
    char key[16];
    std::size_t key_len = 0;
    if (r.session != 0) {
      for (std::uint32_t s = r.session; s != 0; s /= 10) key[key_len++] = static_cast<char>('0' + s % 10);
    }
    const Admission a = fleet.admit(trace.blocks(r), r.input_tokens, r.output_tokens, std::string_view(key, key_len), now);
    finishes.push({a.finish_s, a.replica});
    const auto ri = static_cast<std::size_t>(a.replica);
    ++out.replica_requests[ri];
    out.replica_busy_s[ri] += a.first_token_s - a.start_s;
    ++out.requests;
    out.prompt_blocks += a.prompt_blocks;
    out.cached_blocks += a.cached_blocks;
    out.input_tokens += r.input_tokens;
    out.cached_tokens += a.cached_tokens;
    out.output_tokens += r.output_tokens;
    ttft.push_back(a.first_token_s - now);
    e2e.push_back(a.finish_s - now);
    queue.push_back(a.start_s - now);
    out.makespan_s = std::max(out.makespan_s, a.finish_s);
  }
  while (!finishes.empty()) {
    fleet.finish(finishes.top().replica, finishes.top().at_s);
    finishes.pop();
  }
  for (int i = 0; i < replicas; ++i) out.evictions += fleet.cache(i).counters().evictions;
  out.hit_rate = out.prompt_blocks ? static_cast<double>(out.cached_blocks) / static_cast<double>(out.prompt_blocks) : 0.0;
  out.token_hit_rate = out.input_tokens ? static_cast<double>(out.cached_tokens) / static_cast<double>(out.input_tokens) : 0.0;
  out.ttft_s = percentiles(ttft);
  out.e2e_s = percentiles(e2e);
  out.queue_s = percentiles(queue);
  out.load_imbalance = max_over_mean(out.replica_requests);
  out.busy_imbalance = max_over_mean(out.replica_busy_s);
  out.cost = price(out.input_tokens, out.cached_tokens, out.output_tokens, config.prices);
  return out;
}

}  // namespace cmax::endpoint
