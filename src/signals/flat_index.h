#pragma once
// An open-addressing map from 64-bit key hashes to incident numbers, for the correlator's per-line
// lookups. No key is stored: the caller checks a candidate entry against the incident it names
// (which it reads anyway), so a lookup costs one probe run and no allocation, and the table holds
// 16 bytes per incident. Linear probing; erased entries become tombstones until the next rehash.

#include <cstdint>
#include <optional>
#include <vector>

namespace cmax::signals {

class FlatIndex {
 public:
  /// The value of the entry with hash `h` that `same(value)` accepts.
  template <class Same>
  std::optional<std::uint32_t> find(std::uint64_t h, Same&& same) const {
    if (slots_.empty()) return std::nullopt;
    for (std::size_t i = h & mask(); slots_[i].state != kEmpty; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.state == kFull && s.hash == h && same(s.value)) return s.value;
    }
    return std::nullopt;
  }

  /// Points the entry that `same` accepts at `value`, or adds one.
  template <class Same>
  void assign(std::uint64_t h, std::uint32_t value, Same&& same) {
    if (Slot* s = locate(h, same)) {
      s->value = value;
      return;
    }
    if ((used_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = h & mask();
    while (slots_[i].state == kFull) i = (i + 1) & mask();
    if (slots_[i].state == kEmpty) ++used_;
    slots_[i] = Slot{h, value, kFull};
  }

  /// Removes the entry that `same` accepts; false when there is none.
  template <class Same>
  bool erase(std::uint64_t h, Same&& same) {
    Slot* s = locate(h, same);
    if (!s) return false;
    s->state = kTombstone;
    return true;
  }

  void clear() {
    slots_.clear();
    used_ = 0;
  }

 private:
  enum State : std::uint8_t { kEmpty, kFull, kTombstone };
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t value = 0;
    State state = kEmpty;
  };

  std::size_t mask() const { return slots_.size() - 1; }

  template <class Same>
  Slot* locate(std::uint64_t h, Same& same) {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = h & mask(); slots_[i].state != kEmpty; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.state == kFull && s.hash == h && same(s.value)) return &s;
    }
    return nullptr;
  }

  // Doubles (or, when tombstones fill it, just rebuilds) the table; at most half full after.
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    std::size_t full = 0;
    for (const Slot& s : old) full += s.state == kFull;
    std::size_t size = 64;
    while (size < (full + 1) * 4) size *= 2;
    slots_.assign(size, Slot{});
    used_ = full;
    for (const Slot& s : old) {
      if (s.state != kFull) continue;
      std::size_t i = s.hash & mask();
      while (slots_[i].state != kEmpty) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;  // size a power of two, or empty
  std::size_t used_ = 0;     // full slots and tombstones
};

}  // namespace cmax::signals
