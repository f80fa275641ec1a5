#include "audit/facts.h"

namespace cmax::audit {

std::string_view to_string(FactStatus s) {
  switch (s) {
    case FactStatus::present: return "present";
    case FactStatus::absent: return "absent";
    case FactStatus::error: return "error";
  }
  return "error";
}

void Facts::present(std::string key, std::string value, std::string source, std::string detail) {
  put({std::move(key), FactStatus::present, std::move(value), std::move(source), std::move(detail)});
}
void Facts::absent(std::string key, std::string source, std::string detail) {
  put({std::move(key), FactStatus::absent, {}, std::move(source), std::move(detail)});
}
void Facts::error(std::string key, std::string source, std::string detail) {
  put({std::move(key), FactStatus::error, {}, std::move(source), std::move(detail)});
}
void Facts::put(Fact fact) {
  std::string key = fact.key;
  facts_.insert_or_assign(std::move(key), std::move(fact));
}

void Facts::merge(Facts&& other) {
  for (auto& [key, fact] : other.facts_) {
    auto it = facts_.find(key);
    if (it == facts_.end()) {
      facts_.emplace(key, std::move(fact));
    } else if (it->second.status == FactStatus::absent && fact.status != FactStatus::absent) {
      it->second = std::move(fact);
    }
  }
}

const Fact* Facts::find(std::string_view key) const {
  auto it = facts_.find(key);
  return it == facts_.end() ? nullptr : &it->second;
}

std::string_view Facts::value_or(std::string_view key, std::string_view fallback) const {
  const Fact* f = find(key);
  return f && f->status == FactStatus::present ? std::string_view(f->value) : fallback;
}

bool Facts::is_present(std::string_view key) const {
  const Fact* f = find(key);
  return f && f->status == FactStatus::present;
}

std::vector<const Fact*> Facts::with_prefix(std::string_view prefix) const {
  std::vector<const Fact*> out;
  for (auto it = facts_.lower_bound(prefix); it != facts_.end() && it->first.starts_with(prefix); ++it)
    out.push_back(&it->second);
  return out;
}

std::vector<const Fact*> Facts::all() const {
  std::vector<const Fact*> out;
  out.reserve(facts_.size());
  for (const auto& [k, f] : facts_) out.push_back(&f);
  return out;
}

}  // namespace cmax::audit
