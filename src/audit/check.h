#pragma once
// The declarative check table: each row names a check, its ClusterMAX category and criterion,
// where it applies, a guard (when it cannot be judged here) and a predicate (the judgement).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audit/facts.h"
#include "audit/floors.h"
#include "audit/model.h"
#include "core/clock.h"

namespace cmax::audit {

/// Everything a check may look at. Read-only; shared across checks.
struct CheckContext {
  const Facts& facts;
  const Floors& floors;
  Harness harness = kStandalone;
  const core::Clock& clock;
};

/// A check's conclusion before the engine adds the table's static fields.
struct Verdict {
  Outcome outcome = Outcome::unverified;
  std::string observed;
  std::string expected;
  std::string reason;
  std::vector<std::string> cves;
  std::vector<std::string> links;
  std::string evidence_source;  ///< defaults to the check's primary fact's source
  std::string evidence_value;   ///< defaults to the primary fact's value
};

struct Check;
/// Returns a verdict (not_applicable or unverified, with reason) when the check cannot be judged.
using Guard = std::optional<Verdict> (*)(const CheckContext&, const Check&);
/// Judges the check. Called only when the guard let it through.
using Predicate = Verdict (*)(const CheckContext&, const Check&);

struct Check {
  std::string_view id;
  Category category;
  Severity severity;
  bool security;            ///< a fail is a security fail
  std::uint8_t harnesses;   ///< Harness bits where it applies
  std::string_view title;
  std::string_view criterion;
  std::string_view description;
  std::string_view remediation;
  Guard guard;              ///< may be nullptr
  Predicate predicate;
  std::string_view fact = {};       ///< primary fact (evidence and generic guards/predicates)
  std::string_view component = {};  ///< version-floor component for floor checks
  std::string_view param = {};      ///< a parameter for generic predicates
  std::string_view link = {};       ///< a reference URL
};

/// Every check, in report order. Defined by the tables in checks/.
std::span<const Check> all_checks();

/// Runs one check: harness filter, guard, predicate; fills evidence defaults; never throws.
Finding run_check(const Check& check, const CheckContext& ctx);
/// Runs every check in `checks`.
std::vector<Finding> run_checks(std::span<const Check> checks, const CheckContext& ctx);

}  // namespace cmax::audit
