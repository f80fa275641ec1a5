#pragma once
// The contract between the endpoint model (src/endpoint: prefix caches, timing, routing; used by
// `cmax endpoint simulate`) and `cmax endpoint serve`: a fleet of replicas behind a router, which
// admits a request (its prompt as a chain of block hashes) and says where it ran, how much of its
// prompt was cached, and when its tokens come. Times are seconds on the caller's clock (simulated
// or steady). Not thread-safe: serve wraps it in a mutex.
//
// The timing model is a simple analytic one, not a GPU. Each replica has max_concurrent decode
// slots and one prefill engine. An admitted request takes the slot that frees first (it queues
// until then), then waits for the prefill engine, which spends (prompt tokens - cached tokens) /
// prefill_tokens_per_s on it: cached blocks skip prefill, so a cache hit shortens TTFT and frees the
// engine for others. Its first token is out when prefill ends. It then decodes at a fixed interval
// set by the batch at that moment (the replica's other busy slots plus itself; see TimingModel)
// and holds its slot until first_token + (output - 1) x interval. The batch is not re-evaluated as
// others come and go, there is no chunked prefill, no preemption, no KV memory limit beyond the
// cache's block capacity, and cached blocks are inserted when the request is admitted. It ranks
// routing policies by queueing and prefill work; it does not predict a real server's latencies.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::endpoint {

class PrefixCache;

/// How the router picks a replica (CONTEXT.md section 5).
enum class Policy { kRoundRobin, kRandom, kLeastLoaded, kConsistentHash, kCacheAware, kPrecise, kPowerOfTwo };
/// "round_robin", "random", "least_loaded", "consistent_hash", "cache_aware", "precise",
/// "power_of_two".
std::string_view policy_name(Policy p);
/// The inverse; false when `name` is none of them.
bool policy_from_name(std::string_view name, Policy& out);
/// All seven, in the order above.
std::span<const Policy> all_policies();

/// One replica's speed.
struct TimingModel {
  double prefill_tokens_per_s = 20000;  ///< uncached prompt tokens per second, one at a time
  double decode_tokens_per_s = 60;      ///< per sequence when it runs alone
  /// Decode slows with the batch: per-sequence rate = decode / (1 + batch_slowdown x (batch - 1)).
  double batch_slowdown = 0.02;
  int max_concurrent = 64;  ///< sequences decoding at once; later requests queue
};

struct FleetConfig {
  int replicas = 4;
  std::size_t cache_blocks = 4096;  ///< per replica; 0 = no cache
  int block_tokens = 512;           ///< as the Mooncake traces
  Policy policy = Policy::kCacheAware;
  TimingModel timing;
  std::uint64_t seed = 1;  ///< for kRandom and kPowerOfTwo
  /// cache_aware: route by the best match when its match ratio is above this ...
  double cache_threshold = 0.3;
  /// ... unless load is imbalanced: max - min running > abs and max > rel x min. The defaults are
  /// what users of the SGLang router (smg 1.13, sglang-router 0.3.2) and vllm-router 0.1.17 get
  /// from their command lines: 0.3, 64, 1.5 (docs/endpoint-serve.md).
  int balance_abs_threshold = 64;
  double balance_rel_threshold = 1.5;
  /// cache_aware: capacity of the router's own approximate tree per replica, in blocks
  /// (0 = cache_blocks). It learns only from what the router sent where.
  std::size_t router_cache_blocks = 0;
  /// precise (Dynamo): cost = overlap_weight x prefill blocks + requests running on the replica.
  double overlap_weight = 1.0;
};

/// What the fleet did with one request.
struct Admission {
  int replica = 0;
  std::size_t prompt_blocks = 0;  ///< full blocks in the prompt's hash chain
  std::size_t cached_blocks = 0;  ///< of them, found in the replica's cache (a prefix)
  std::uint32_t cached_tokens = 0;  ///< cached_blocks x block_tokens, at most the prompt's tokens
  double start_s = 0;       ///< when it left the queue and began prefill
  double first_token_s = 0; ///< when its first output token is out (TTFT = first_token_s - arrival)
  double per_token_s = 0;   ///< the decode interval it gets at admission (batch size then)
  double finish_s = 0;      ///< estimated end: first_token_s + (output_tokens - 1) x per_token_s
};

class Fleet {
 public:
  explicit Fleet(FleetConfig config);
  ~Fleet();
  Fleet(Fleet&&) noexcept;
  Fleet& operator=(Fleet&&) noexcept;

  /// Routes and admits a request arriving at `now_s` whose prompt is `prompt_tokens` tokens with
  /// block hash chain `blocks` (block i's hash covers tokens [0, (i+1) x block_tokens): equal
  /// hashes mean equal prefixes). `session` is the consistent-hash key ("" = the first block's
  /// hash). The replica's cache then holds the whole chain (LRU eviction past capacity).
  Admission admit(std::span<const std::uint64_t> blocks, std::uint32_t prompt_tokens,
                  std::uint32_t output_tokens, std::string_view session, double now_s);
  /// The request admitted on `replica` ended at `now_s` (its decode slot frees).
  void finish(int replica, double now_s);

  const FleetConfig& config() const;
  /// Sequences running (prefilling or decoding) per replica now. Counts every request admitted
  /// and not yet finished, including those the model queued for a free decode slot.
  std::vector<int> running() const;
  /// Empties every replica's prefix cache (an engine's /flush_cache); the router's own view and the
  /// requests running stay.
  void flush_caches();
  /// Replica `replica`'s prefix cache (0 <= replica < replicas), for counters and tests.
  const PrefixCache& cache(int replica) const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace cmax::endpoint
