#include "audit/model.h"

#include <array>

namespace cmax::audit {
namespace {

constexpr std::array<std::string_view, kCategoryCount> kCategoryIds{
    "security",   "lifecycle",   "orchestration", "storage",      "networking",
    "reliability", "monitoring", "pricing",       "partnerships", "availability"};
constexpr std::array<std::string_view, kCategoryCount> kCategoryTitles{
    "Security",    "Lifecycle",  "Orchestration", "Storage",      "Networking",
    "Reliability", "Monitoring", "Pricing",       "Partnerships", "Availability"};
constexpr std::array<std::string_view, 5> kOutcomes{"pass", "warn", "fail", "not_applicable", "unverified"};
constexpr std::array<std::string_view, 3> kSeverities{"missing", "version", "config"};

template <class E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Category c) { return kCategoryIds[static_cast<int>(c)]; }
std::string_view category_title(Category c) { return kCategoryTitles[static_cast<int>(c)]; }
std::string_view to_string(Outcome o) { return kOutcomes[static_cast<int>(o)]; }
std::string_view to_string(Severity s) { return kSeverities[static_cast<int>(s)]; }
std::string_view harness_name(Harness h) {
  switch (h) {
    case kStandalone: return "standalone";
    case kSlurm: return "slurm";
    case kKubernetes: return "kubernetes";
    default: return "any";
  }
}
std::optional<Category> parse_category(std::string_view s) { return find_name<Category>(kCategoryIds, s); }
std::optional<Outcome> parse_outcome(std::string_view s) { return find_name<Outcome>(kOutcomes, s); }
std::optional<Severity> parse_severity(std::string_view s) { return find_name<Severity>(kSeverities, s); }

}  // namespace cmax::audit
