#pragma once
// Reading findings out of a cmax.audit/1 document in the integration tests.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace cmax::test {

/// The finding with `id` in a cmax.audit/1 document, or nullptr.
inline const nlohmann::json* audit_finding(const nlohmann::json& report, std::string_view id) {
  for (const auto& f : report["findings"])
    if (f["id"] == id) return &f;
  return nullptr;
}

/// That finding's result ("pass", "fail", ...), or "missing".
inline std::string audit_result(const nlohmann::json& report, std::string_view id) {
  const nlohmann::json* f = audit_finding(report, id);
  return f ? (*f)["result"].get<std::string>() : "missing";
}

}  // namespace cmax::test
