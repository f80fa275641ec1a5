#include "sla/events.h"

#include "core/strings.h"

namespace cmax::sla {

namespace {

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h ^ (h >> 29);
}

}  // namespace

void EventSet::grow() {
  std::vector<std::int32_t> slots(slots_.empty() ? 1024 : slots_.size() * 2, -1);
  const std::size_t mask = slots.size() - 1;
  for (std::size_t i = 0; i < node_names.size(); ++i) {
    std::size_t at = fnv1a(node_names[i]) & mask;
    while (slots[at] >= 0) at = (at + 1) & mask;
    slots[at] = static_cast<std::int32_t>(i);
  }
  slots_ = std::move(slots);
}

std::int32_t EventSet::node(std::string_view name) {
  // Rows of one node often come together: skip the hash for a repeat.
  if (last_node_index_ >= 0 && name == node_names[static_cast<std::size_t>(last_node_index_)]) return last_node_index_;
  if ((node_names.size() + 1) * 2 > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = fnv1a(name) & mask;
  while (slots_[at] >= 0 && node_names[static_cast<std::size_t>(slots_[at])] != name) at = (at + 1) & mask;
  if (slots_[at] < 0) {
    slots_[at] = static_cast<std::int32_t>(node_names.size());
    node_names.emplace_back(name);
  }
  last_node_index_ = slots_[at];
  return last_node_index_;
}

std::int32_t EventSet::state(std::string_view state) {
  for (std::size_t i = 0; i < state_names.size(); ++i) {
    const std::string& s = state_names[i];
    if (s.size() == state.size()) {
      bool same = true;
      for (std::size_t k = 0; k < s.size() && same; ++k)
        same = s[k] == ((state[k] >= 'A' && state[k] <= 'Z') ? static_cast<char>(state[k] - 'A' + 'a') : state[k]);
      if (same) return static_cast<std::int32_t>(i);
    }
  }
  state_names.push_back(core::to_lower(state));
  return static_cast<std::int32_t>(state_names.size() - 1);
}

}  // namespace cmax::sla
