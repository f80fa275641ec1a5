#pragma once
// One table of checks per ClusterMAX category that the node-level audit covers; all_checks()
// concatenates them in this order.

#include <span>

#include "audit/check.h"

namespace cmax::audit::checks {

std::span<const Check> security_checks();
std::span<const Check> lifecycle_checks();
std::span<const Check> orchestration_checks();
std::span<const Check> storage_checks();
std::span<const Check> networking_checks();
std::span<const Check> reliability_checks();
std::span<const Check> monitoring_checks();
std::span<const Check> isolation_checks();
std::span<const Check> software_checks();
std::span<const Check> platform_checks();
std::span<const Check> access_checks();

}  // namespace cmax::audit::checks
