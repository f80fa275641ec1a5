#include "sla/events.h"

#include "core/strings.h"

namespace cmax::sla {

std::int32_t EventSet::node(std::string_view name) {
  // Rows of one node usually come together: skip the hash for a repeat.
  if (last_node_index_ >= 0 && name == last_node_) return last_node_index_;
  auto it = node_index_.find(name);
  std::int32_t index;
  if (it != node_index_.end()) {
    index = it->second;
  } else {
    index = static_cast<std::int32_t>(node_names.size());
    node_names.emplace_back(name);
    node_index_.emplace(std::string(name), index);
  }
  last_node_.assign(name);
  last_node_index_ = index;
  return index;
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
