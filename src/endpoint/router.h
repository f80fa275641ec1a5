#pragma once
// The seven routing policies of fleet.h as one table-driven router: given a request's block chain,
// its session key and each replica's load, pick a replica. Pure helpers (jump consistent hash, the
// SGLang imbalance test, least-loaded with fair ties) are exposed for tests.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "endpoint/fleet.h"
#include "endpoint/prefix_cache.h"

namespace cmax::endpoint {

/// Why a replica was picked (for tests and the simulator's breakdown).
enum class RouteReason { kPolicy, kCacheMatch, kCacheMiss, kImbalance };

struct Route {
  int replica = 0;
  RouteReason reason = RouteReason::kPolicy;
  std::size_t matched_blocks = 0;  ///< the router's belief (cache_aware, precise); 0 otherwise
};

/// Lamping & Veach's jump consistent hash: `key` -> [0, buckets); moving from n to n+1 buckets
/// moves only 1/(n+1) of the keys.
int jump_consistent_hash(std::uint64_t key, int buckets);
/// FNV-1a of a session key, for jump_consistent_hash.
std::uint64_t session_hash(std::string_view session);
/// SGLang's test: max - min > abs and max > rel x min.
bool load_imbalanced(std::span<const int> load, int abs_threshold, double rel_threshold);
/// The replica with the least load; ties go to the first at or after `start` (cyclically), so
/// an idle fleet is filled evenly rather than replica 0 first.
int least_loaded(std::span<const int> load, int start);

/// Not thread-safe. cache_aware keeps its own approximate trees (what it sent where), one per
/// replica with `router_cache_blocks` capacity each; precise reads the replicas' real caches.
class Router {
 public:
  explicit Router(const FleetConfig& config);

  /// Picks a replica for `blocks`/`session` given each replica's `load` (requests admitted and
  /// not finished) and, for precise, the replicas' real caches.
  Route pick(std::span<const std::uint64_t> blocks, std::string_view session,
             std::span<const int> load, std::span<const PrefixCache> caches);
  /// Tells the router where it sent `blocks` (cache_aware learns its trees from this).
  void routed(int replica, std::span<const std::uint64_t> blocks, std::uint64_t tick);

 private:
  Route cache_aware(std::span<const std::uint64_t> blocks, std::span<const int> load);
  Route precise(std::span<const std::uint64_t> blocks, std::span<const int> load,
                std::span<const PrefixCache> caches);

  FleetConfig config_;
  int next_ = 0;  // round_robin's cursor and least_loaded's tie start
  std::mt19937_64 rng_;
  std::vector<PrefixCache> approx_;  // cache_aware only
};

}  // namespace cmax::endpoint
