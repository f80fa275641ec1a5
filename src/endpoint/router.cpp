#include "endpoint/router.h"

#include <algorithm>
#include <limits>

namespace cmax::endpoint {

int jump_consistent_hash(std::uint64_t key, int buckets) {
  std::int64_t b = -1, j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ull + 1;
    j = static_cast<std::int64_t>(static_cast<double>(b + 1) *
                                  (static_cast<double>(1ll << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int>(b);
}

std::uint64_t session_hash(std::string_view session) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : session) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

bool load_imbalanced(std::span<const int> load, int abs_threshold, double rel_threshold) {
  if (load.empty()) return false;
  const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
  return *hi - *lo > abs_threshold && static_cast<double>(*hi) > rel_threshold * static_cast<double>(*lo);
}

int least_loaded(std::span<const int> load, int start) {
  const int n = static_cast<int>(load.size());
  int best = start % n;
  for (int k = 1; k < n; ++k) {
    const int i = (start + k) % n;
    if (load[i] < load[best]) best = i;
  }
  return best;
}

Router::Router(const FleetConfig& config) : config_(config), rng_(config.seed) {
  if (config_.policy == Policy::kCacheAware) {
    const std::size_t cap = config_.router_cache_blocks ? config_.router_cache_blocks : config_.cache_blocks;
    approx_.reserve(static_cast<std::size_t>(config_.replicas));
    for (int i = 0; i < config_.replicas; ++i) approx_.emplace_back(cap);
  }
}

Route Router::pick(std::span<const std::uint64_t> blocks, std::string_view session,
                   std::span<const int> load, std::span<const PrefixCache> caches) {
  const int n = config_.replicas;
  switch (config_.policy) {
    case Policy::kRoundRobin: {
      const int r = next_;
      next_ = (next_ + 1) % n;
      return {r};
    }
    case Policy::kRandom:
      return {static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng_))};
    case Policy::kLeastLoaded: {
      const int r = least_loaded(load, next_);
      next_ = (r + 1) % n;
      return {r};
    }
    case Policy::kConsistentHash: {
      // Without a session key the first block stands in for one: a prompt family shares it.
      const std::uint64_t key = !session.empty() ? session_hash(session) : blocks.empty() ? 0 : blocks[0];
      return {jump_consistent_hash(key, n)};
    }
    case Policy::kPowerOfTwo: {
      // The routers' power_of_two: two distinct replicas drawn at random, the less loaded wins
      // (the first drawn on a tie).
      if (n == 1) return {0};
      const int a = std::uniform_int_distribution<int>(0, n - 1)(rng_);
      int b = std::uniform_int_distribution<int>(0, n - 2)(rng_);
      if (b >= a) ++b;
      return {load[b] < load[a] ? b : a};
    }
    case Policy::kCacheAware:
      return cache_aware(blocks, load);
    case Policy::kPrecise:
      return precise(blocks, load, caches);
  }
  return {0};
}

// The SGLang router's cache_aware (sglang-router 0.3.2; vllm-router 0.1.17 is the same lineage):
// imbalance first, then the best approximate match if its ratio is above the threshold, else the
// least loaded. The real routers match characters of the request text; this matches blocks, which
// is the same ratio when blocks are of equal length. smg 1.13 gates the spill on the fleet mean
// instead (a worker above rel x mean and abs above it); with the loads a replay of a trace sees,
// neither gate fires.
Route Router::cache_aware(std::span<const std::uint64_t> blocks, std::span<const int> load) {
  const int n = config_.replicas;
  if (load_imbalanced(load, config_.balance_abs_threshold, config_.balance_rel_threshold)) {
    const int r = least_loaded(load, next_);
    next_ = (r + 1) % n;
    return {r, RouteReason::kImbalance};
  }
  int best = -1;
  std::size_t best_match = 0;
  for (int i = 0; i < n; ++i) {
    const std::size_t m = approx_[static_cast<std::size_t>(i)].match(blocks);
    // Ties between equal matches go to the less loaded replica.
    if (best < 0 || m > best_match || (m == best_match && load[i] < load[best])) {
      best = i;
      best_match = m;
    }
  }
  const double ratio = blocks.empty() ? 0 : static_cast<double>(best_match) / static_cast<double>(blocks.size());
  // The routers follow a match only above the threshold (match_rate > cache_threshold).
  if (best_match > 0 && ratio > config_.cache_threshold) return {best, RouteReason::kCacheMatch, best_match};
  const int r = least_loaded(load, next_);
  next_ = (r + 1) % n;
  return {r, RouteReason::kCacheMiss, approx_[static_cast<std::size_t>(r)].match(blocks)};
}

// Dynamo's KV router: the index is exact (here: the replicas' caches themselves, as if KV events
// arrived with no lag); cost = overlap_weight x blocks to prefill + load, lowest wins.
Route Router::precise(std::span<const std::uint64_t> blocks, std::span<const int> load,
                      std::span<const PrefixCache> caches) {
  const int n = config_.replicas;
  int best = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  std::size_t best_match = 0;
  for (int k = 0; k < n; ++k) {
    const int i = (next_ + k) % n;  // fair ties, as least_loaded
    const std::size_t m = caches.empty() ? 0 : caches[static_cast<std::size_t>(i)].match(blocks);
    const double cost = config_.overlap_weight * static_cast<double>(blocks.size() - m) + load[i];
    if (cost < best_cost) {
      best = i;
      best_cost = cost;
      best_match = m;
    }
  }
  next_ = (best + 1) % n;
  return {best, best_match > 0 ? RouteReason::kCacheMatch : RouteReason::kPolicy, best_match};
}

void Router::routed(int replica, std::span<const std::uint64_t> blocks, std::uint64_t tick) {
  if (!approx_.empty()) approx_[static_cast<std::size_t>(replica)].insert(blocks, tick);
}

}  // namespace cmax::endpoint
