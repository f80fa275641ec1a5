#pragma once
// One field of a JSON document whose shape nobody promised (a file a node wrote, a record a user
// edited, an API answer): a field that is missing or of another type reads as the fallback, never
// as an exception that loses the run. Works for nlohmann::json and nlohmann::ordered_json.

#include <string>

#include <nlohmann/json.hpp>

namespace cmax::core {

template <class Json>
std::string string_field(const Json& j, const char* key, std::string fallback = {}) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->template get<std::string>() : fallback;
}

}  // namespace cmax::core
