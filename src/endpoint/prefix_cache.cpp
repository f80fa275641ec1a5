#include "endpoint/prefix_cache.h"

#include <algorithm>

namespace cmax::endpoint {
namespace {

// splitmix64's finalizer: block hashes from a trace are small sequential integers, so the
// table's index must mix them.
std::uint64_t mix(std::uint64_t parent, std::uint64_t hash) {
  std::uint64_t z = hash ^ (parent * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::size_t kInitialTable = 64;
// Beyond this many blocks the table and node pool grow on demand instead of being reserved.
constexpr std::size_t kMaxReserve = std::size_t{1} << 22;

}  // namespace

PrefixCache::PrefixCache(std::size_t capacity_blocks) : capacity_(capacity_blocks) {
  std::size_t want = kInitialTable;
  // Reserve for a bounded cache up front (twice its capacity keeps the table at most half full);
  // an unbounded one grows.
  const std::size_t reserve = capacity_ == kUnbounded ? 0 : std::min(capacity_, kMaxReserve);
  while (want < 2 * reserve) want <<= 1;
  table_.assign(want, Slot{});
  mask_ = want - 1;
  nodes_.reserve(reserve);
}

std::uint32_t PrefixCache::find(std::uint32_t parent, std::uint64_t hash) const {
  for (std::size_t i = mix(parent, hash) & mask_;; i = (i + 1) & mask_) {
    const Slot& s = table_[i];
    if (s.node == kNone) return kNone;
    if (s.hash == hash && s.parent == parent) return s.node;
  }
}

void PrefixCache::table_put(std::uint32_t parent, std::uint64_t hash, std::uint32_t node) {
  if (2 * (size_ + 1) > table_.size()) grow_table();
  std::size_t i = mix(parent, hash) & mask_;
  while (table_[i].node != kNone) i = (i + 1) & mask_;
  table_[i] = Slot{hash, parent, node};
}

// Backward-shift deletion keeps linear probing's chains intact without tombstones.
void PrefixCache::table_erase(std::uint32_t parent, std::uint64_t hash) {
  std::size_t i = mix(parent, hash) & mask_;
  while (!(table_[i].hash == hash && table_[i].parent == parent)) i = (i + 1) & mask_;
  for (std::size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    if (table_[j].node == kNone) break;
    const std::size_t home = mix(table_[j].parent, table_[j].hash) & mask_;
    // Move j into the hole at i unless j's home lies cyclically in (i, j].
    const bool stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      table_[i] = table_[j];
      i = j;
    }
  }
  table_[i] = Slot{};
}

void PrefixCache::grow_table() {
  std::vector<Slot> old = std::move(table_);
  table_.assign(old.size() * 2, Slot{});
  mask_ = table_.size() - 1;
  for (const Slot& s : old) {
    if (s.node == kNone) continue;
    std::size_t i = mix(s.parent, s.hash) & mask_;
    while (table_[i].node != kNone) i = (i + 1) & mask_;
    table_[i] = s;
  }
}

void PrefixCache::unlink(std::uint32_t n) {
  Node& x = nodes_[n];
  if (x.newer != kNone) nodes_[x.newer].older = x.older; else newest_ = x.older;
  if (x.older != kNone) nodes_[x.older].newer = x.newer; else oldest_ = x.newer;
  x.newer = x.older = kNone;
}

void PrefixCache::push_newest(std::uint32_t n) {
  Node& x = nodes_[n];
  x.older = newest_;
  x.newer = kNone;
  if (newest_ != kNone) nodes_[newest_].newer = n; else oldest_ = n;
  newest_ = n;
}

void PrefixCache::evict_oldest() {
  const std::uint32_t n = oldest_;
  unlink(n);
  Node& x = nodes_[n];
  table_erase(x.parent, x.hash);
  if (x.parent != kNone) --nodes_[x.parent].children;
  free_.push_back(n);
  --size_;
  ++counters_.evictions;
}

std::size_t PrefixCache::match(std::span<const std::uint64_t> blocks) const {
  std::uint32_t parent = kNone;
  std::size_t k = 0;
  for (; k < blocks.size(); ++k) {
    const std::uint32_t n = find(parent, blocks[k]);
    if (n == kNone) break;
    parent = n;
  }
  return k;
}

std::uint64_t PrefixCache::last_used(std::span<const std::uint64_t> blocks) const {
  std::uint32_t parent = kNone;
  for (std::uint64_t h : blocks) {
    const std::uint32_t n = find(parent, h);
    if (n == kNone) break;
    parent = n;
  }
  return parent == kNone ? 0 : nodes_[parent].tick;
}

std::size_t PrefixCache::insert(std::span<const std::uint64_t> blocks, std::uint64_t tick) {
  counters_.lookups += blocks.size();
  path_.clear();
  std::uint32_t parent = kNone;
  for (std::uint64_t h : blocks) {
    const std::uint32_t n = find(parent, h);
    if (n == kNone) break;
    path_.push_back(n);
    parent = n;
  }
  const std::size_t matched = path_.size();
  counters_.hits += matched;
  if (capacity_ == 0) return matched;
  // Make the cached prefix the most recent first, so that evictions below take other leaves
  // (only needed when some eviction will happen).
  const bool evicting = size_ + (blocks.size() - matched) > capacity_;
  for (std::size_t i = evicting ? matched : 0; i-- > 0;) {
    unlink(path_[i]);
    push_newest(path_[i]);
  }
  for (std::size_t k = matched; k < blocks.size(); ++k) {
    if (size_ >= capacity_) {
      // Everything cached is this chain: keep its prefix rather than evict its own blocks.
      if (size_ == path_.size()) break;
      evict_oldest();
    }
    std::uint32_t n;
    if (!free_.empty()) {
      n = free_.back();
      free_.pop_back();
    } else {
      n = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[n] = Node{blocks[k], tick, parent, 0, kNone, kNone};
    if (parent != kNone) ++nodes_[parent].children;
    table_put(parent, blocks[k], n);
    ++size_;
    push_newest(n);
    path_.push_back(n);
    parent = n;
  }
  // Restore the invariant: descendants older than ancestors (leaf first, root last).
  for (std::size_t i = path_.size(); i-- > 0;) {
    nodes_[path_[i]].tick = tick;
    unlink(path_[i]);
    push_newest(path_[i]);
  }
  return matched;
}

}  // namespace cmax::endpoint
