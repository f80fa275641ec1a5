#pragma once
// One node's active-check results as `cmax check --active` reports them: the cmax.check.active/1
// document (printed with --json, written as check-active.json, read back by the --submit merge)
// and the text table. Pure.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "health/result.h"

namespace cmax::health {

/// How many results had each outcome, indexed by audit::Outcome.
struct ActiveCounts {
  std::array<std::size_t, 5> by_outcome{};
  std::size_t failed() const;
  bool healthy() const { return failed() == 0; }  ///< no active check failed
};
ActiveCounts count_outcomes(const std::vector<CheckResult>& results);

/// The cmax.check.active/1 document of `node` (docs/schemas/check-active.md), ending in a newline.
std::string active_document(std::string_view node, const std::vector<std::string>& groups,
                            std::string_view thresholds_origin, double check_timeout_s,
                            const std::vector<CheckResult>& results);

/// The text table: a header naming the node and thresholds, a row per check (ID, TARGET, OUTCOME,
/// SUMMARY), then a line per check that did not pass and says why.
std::string active_table(std::string_view node, std::string_view thresholds_origin,
                         const std::vector<CheckResult>& results);

}  // namespace cmax::health
