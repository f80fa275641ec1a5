#pragma once
// A replica's KV prefix cache, modelled over block hashes: a radix tree whose nodes are blocks
// (block i of a prompt is a child of block i-1), with a capacity in blocks and LRU eviction of
// leaf blocks only, so a cached block's whole prefix is always cached too (a KV cache can reuse a
// block only with everything before it).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cmax::endpoint {

/// What a cache has seen; blocks, not requests.
struct CacheCounters {
  std::uint64_t lookups = 0;    ///< blocks offered to insert()
  std::uint64_t hits = 0;       ///< of them, already cached (the matched prefix)
  std::uint64_t evictions = 0;  ///< leaf blocks evicted to make room
};

/// A radix tree over block hashes in flat storage: node slots in a vector, an open-addressing
/// table from (parent node, block hash) to node, and one intrusive recency list over all nodes in
/// which every node is more recent than all of its descendants, so the least recent node is
/// always a leaf and eviction is O(1). Lookups do not allocate. Not thread-safe.
class PrefixCache {
 public:
  /// `capacity_blocks` = 0 caches nothing; kUnbounded never evicts.
  explicit PrefixCache(std::size_t capacity_blocks);
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

  /// Blocks of `blocks` cached as a prefix (0..blocks.size()). Changes nothing, counts nothing.
  std::size_t match(std::span<const std::uint64_t> blocks) const;
  /// Uses the chain: touches the cached prefix, inserts the rest (evicting least recently used
  /// leaves past capacity; when the chain alone exceeds capacity its first `capacity` blocks are
  /// kept) and returns how many blocks were cached before the call. `tick` is the caller's clock,
  /// kept per block for last_used().
  std::size_t insert(std::span<const std::uint64_t> blocks, std::uint64_t tick);

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  const CacheCounters& counters() const { return counters_; }
  /// The tick of the last insert() that touched the chain's last cached block; 0 when not cached.
  std::uint64_t last_used(std::span<const std::uint64_t> blocks) const;

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct Node {
    std::uint64_t hash = 0;
    std::uint64_t tick = 0;
    std::uint32_t parent = kNone;
    std::uint32_t children = 0;
    std::uint32_t newer = kNone, older = kNone;  // recency list links
  };
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t parent = 0;
    std::uint32_t node = kNone;  // kNone = empty
  };

  std::uint32_t find(std::uint32_t parent, std::uint64_t hash) const;
  void table_put(std::uint32_t parent, std::uint64_t hash, std::uint32_t node);
  void table_erase(std::uint32_t parent, std::uint64_t hash);
  void grow_table();
  void unlink(std::uint32_t n);
  void push_newest(std::uint32_t n);
  void evict_oldest();

  std::size_t capacity_;
  std::size_t size_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> free_;
  std::vector<Slot> table_;  // power-of-two size, at most half full
  std::size_t mask_ = 0;
  std::uint32_t newest_ = kNone, oldest_ = kNone;
  std::vector<std::uint32_t> path_;  // insert()'s scratch, kept to avoid allocating per call
  CacheCounters counters_;
};

}  // namespace cmax::endpoint
