#pragma once
// What every `cmax audit isolation` finding shares: category security, a configuration finding,
// marked security (a fail makes exit code 2 and goes into the SARIF).

#include <string>
#include <string_view>
#include <utility>

#include "audit/model.h"

namespace cmax::isolation {

/// A finding with its id, title and ClusterMAX criterion; the caller fills in the rest.
inline audit::Finding security_finding(std::string check_id, std::string title, std::string_view criterion) {
  audit::Finding f;
  f.check_id = std::move(check_id);
  f.category = audit::Category::security;
  f.severity = audit::Severity::config;
  f.security = true;
  f.title = std::move(title);
  f.criterion = std::string(criterion);
  return f;
}

}  // namespace cmax::isolation
