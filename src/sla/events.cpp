#include "sla/events.h"

#include <algorithm>
#include <cstring>

#include "core/strings.h"
#include "sla/huge_pages.h"

namespace cmax::sla {

void Tally::absorb(Tally&& later) {
  count += later.count;
  for (std::string& e : later.examples) {
    if (examples.size() >= kMaxExamples) break;
    examples.push_back(std::move(e));
  }
}

void Anomalies::absorb(Anomalies&& later) {
  for (Tally Anomalies::*t :
       {&Anomalies::malformed, &Anomalies::open_ended, &Anomalies::inverted, &Anomalies::duplicated,
        &Anomalies::overlapping, &Anomalies::out_of_order, &Anomalies::unknown_node,
        &Anomalies::cluster_events, &Anomalies::unmatched})
    (this->*t).absorb(std::move(later.*t));
  up_intervals += later.up_intervals;
}

std::uint64_t EventSet::node_hash(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h ^ (h >> 29);
}

EventSet::NameKey EventSet::key_of(std::string_view name) {
  NameKey k{};
  k[0] = static_cast<char>(std::min<std::size_t>(name.size(), 255));
  std::memcpy(k.data() + 1, name.data(), std::min(name.size(), k.size() - 1));
  return k;
}

void EventSet::grow() {
  // Huge pages: lookups land at random, and a 4 KiB page per lookup missed the TLB as well.
  std::vector<Slot> slots;
  reserve_huge(slots, slots_.empty() ? 1024 : slots_.size() * 2);
  slots.resize(slots.capacity());
  const std::size_t mask = slots.size() - 1;
  for (std::size_t i = 0; i < node_names.size(); ++i) {
    std::size_t at = node_hash(node_names[i]) & mask;
    while (slots[at].index >= 0) at = (at + 1) & mask;
    slots[at] = Slot{static_cast<std::int32_t>(i), key_of(node_names[i])};
  }
  slots_ = std::move(slots);
  mask_ = mask;
}

namespace {

// Keys compare as words: std::array's operator== is a call to memcmp here.
bool same_key(const std::array<char, 28>& a, const std::array<char, 28>& b) {
  std::uint64_t x[3], y[3];
  std::uint32_t x3, y3;
  std::memcpy(x, a.data(), 24);
  std::memcpy(y, b.data(), 24);
  std::memcpy(&x3, a.data() + 24, 4);
  std::memcpy(&y3, b.data() + 24, 4);
  return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x3 ^ y3)) == 0;
}

}  // namespace

std::int32_t EventSet::node(std::string_view name, std::uint64_t hash) {
  const NameKey key = key_of(name);
  const bool long_name = name.size() >= key.size();  // the key holds a prefix only
  auto is = [&](std::int32_t index, const NameKey& k) {
    return same_key(k, key) && (!long_name || node_names[static_cast<std::size_t>(index)] == name);
  };
  // Rows of one node often come together: skip the table for a repeat.
  if (last_node_index_ >= 0 && is(last_node_index_, last_key_)) return last_node_index_;
  if ((node_names.size() + 1) * 2 > slots_.size()) grow();
  std::size_t at = hash & mask_;
  for (; slots_[at].index >= 0; at = (at + 1) & mask_)
    if (is(slots_[at].index, slots_[at].key)) break;
  if (slots_[at].index < 0) {
    slots_[at] = Slot{static_cast<std::int32_t>(node_names.size()), key};
    node_names.emplace_back(name);
  }
  last_node_index_ = slots_[at].index;
  last_key_ = key;
  return last_node_index_;
}

std::int32_t EventSet::state(std::string_view state) {
  for (std::size_t i = 0; i < state_names.size(); ++i) {
    const std::string& s = state_names[i];
    if (s.size() == state.size()) {
      bool same = true;
      for (std::size_t k = 0; k < s.size() && same; ++k)
        same =
            s[k] == ((state[k] >= 'A' && state[k] <= 'Z') ? static_cast<char>(state[k] - 'A' + 'a')
                                                          : state[k]);
      if (same) return static_cast<std::int32_t>(i);
    }
  }
  state_names.push_back(core::to_lower(state));
  return static_cast<std::int32_t>(state_names.size() - 1);
}

void append_events(EventSet& into, EventSet&& later) {
  // Interning `later`'s names in its own order of first appearance gives them the indices one
  // pass over both inputs would have.
  std::vector<std::int32_t> node_map(later.node_names.size()), state_map(later.state_names.size());
  for (std::size_t i = 0; i < node_map.size(); ++i) node_map[i] = into.node(later.node_names[i]);
  for (std::size_t i = 0; i < state_map.size(); ++i)
    state_map[i] = into.state(later.state_names[i]);
  into.intervals.reserve(into.intervals.size() + later.intervals.size());
  for (const RawInterval& r : later.intervals)
    into.intervals.push_back(RawInterval{r.start_s, r.end_s,
                                         node_map[static_cast<std::size_t>(r.node)],
                                         state_map[static_cast<std::size_t>(r.state)]});
  std::vector<RawInterval>().swap(later.intervals);
  into.records += later.records;
  into.anomalies.absorb(std::move(later.anomalies));
}

}  // namespace cmax::sla
