#pragma once
// The audit's vocabulary: ClusterMAX categories, results, severities, harnesses, findings.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// The ten ClusterMAX categories, in the order the rating lists them.
enum class Category : std::uint8_t {
  security,
  lifecycle,
  orchestration,
  storage,
  networking,
  reliability,
  monitoring,
  pricing,
  partnerships,
  availability,
};
inline constexpr int kCategoryCount = 10;

/// pass, warn, fail; not_applicable (the criterion does not apply here, with why);
/// unverified (evidence is missing or unreadable: never a pass, never a fail).
enum class Outcome : std::uint8_t { pass, warn, fail, not_applicable, unverified };

/// ClusterMAX's finding kinds: something missing, a version below its floor, a configuration.
enum class Severity : std::uint8_t { missing, version, config };

/// Where a check applies. A bit set.
enum Harness : std::uint8_t { kStandalone = 1, kSlurm = 2, kKubernetes = 4, kAnyHarness = 7 };

std::string_view to_string(Category c);
std::string_view category_title(Category c);
std::string_view to_string(Outcome o);
std::string_view to_string(Severity s);
std::string_view harness_name(Harness h);
std::optional<Category> parse_category(std::string_view s);
std::optional<Outcome> parse_outcome(std::string_view s);
std::optional<Severity> parse_severity(std::string_view s);

/// What a check concluded, with the evidence it rests on.
struct Finding {
  std::string check_id;
  Category category = Category::security;
  Severity severity = Severity::config;
  bool security = false;  ///< a fail here is a security fail (exit code 2, SARIF)
  std::string title;
  Outcome outcome = Outcome::unverified;
  std::string observed;         ///< what was seen, in the check's words ("550.54.14")
  std::string expected;         ///< what passes (">= 550.144.03")
  std::string evidence_source;  ///< the file or command the value came from
  std::string evidence_value;   ///< the raw value there, clipped
  std::string criterion;        ///< the ClusterMAX criterion this maps to
  std::vector<std::string> cves;
  std::vector<std::string> links;
  std::string reason;       ///< why this result (always set for not_applicable and unverified)
  std::string description;  ///< what the check looks at and why it matters
  std::string remediation;  ///< what to do about a warn or fail
  /// Where the ClusterMAX CLI's policy gives another verdict on the same facts: its check key, its
  /// result (PASS, WARNING, FAIL, SKIPPED) and why cmax differs. Empty when they agree or cannot
  /// be predicted (data/peers/clustermax.json).
  std::string peer_check, peer_result, peer_why;
};

}  // namespace cmax::audit
