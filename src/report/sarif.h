#pragma once
// SARIF 2.1.0 for the security findings (warn and fail), for code-scanning dashboards.

#include <string>

#include "audit/audit.h"

namespace cmax::report {

std::string render_sarif(const audit::AuditReport& report);

}  // namespace cmax::report
