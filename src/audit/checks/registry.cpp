#include <vector>

#include "audit/check.h"
#include "audit/checks/tables.h"

namespace cmax::audit {

std::span<const Check> all_checks() {
  static const std::vector<Check> kAll = [] {
    std::vector<Check> all;
    for (auto table : {checks::security_checks(), checks::lifecycle_checks(), checks::orchestration_checks(),
                       checks::storage_checks(), checks::networking_checks(), checks::reliability_checks(),
                       checks::monitoring_checks(), checks::isolation_checks(), checks::software_checks(),
                       checks::platform_checks(), checks::access_checks()})
      all.insert(all.end(), table.begin(), table.end());
    return all;
  }();
  return kAll;
}

}  // namespace cmax::audit
