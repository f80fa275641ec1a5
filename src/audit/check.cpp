#include "audit/check.h"

#include <exception>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::audit {
namespace {

std::string harness_list(std::uint8_t mask) {
  std::string out;
  for (Harness h : {kStandalone, kSlurm, kKubernetes})
    if (mask & h) out += (out.empty() ? "" : "/") + std::string(harness_name(h));
  return out;
}

}  // namespace

Finding run_check(const Check& check, const CheckContext& ctx) {
  Finding f;
  f.check_id = std::string(check.id);
  f.category = check.category;
  f.severity = check.severity;
  f.security = check.security;
  f.title = std::string(check.title);
  f.criterion = std::string(check.criterion);
  f.description = std::string(check.description);
  f.remediation = std::string(check.remediation);
  Verdict v;
  if (!(check.harnesses & ctx.harness)) {
    v.outcome = Outcome::not_applicable;
    v.reason = fmt::format("applies to {} harnesses; this run is {}", harness_list(check.harnesses),
                           harness_name(ctx.harness));
  } else {
    try {
      std::optional<Verdict> guarded = check.guard ? check.guard(ctx, check) : std::nullopt;
      v = guarded ? std::move(*guarded) : check.predicate(ctx, check);
    } catch (const std::exception& e) {
      v = Verdict{};
      v.outcome = Outcome::unverified;
      v.reason = fmt::format("internal error in check {}: {}; please report it", check.id, e.what());
    }
  }
  if (!check.fact.empty()) {
    if (const Fact* fact = ctx.facts.find(check.fact)) {
      if (v.evidence_source.empty()) v.evidence_source = fact->source;
      if (v.evidence_value.empty())
        v.evidence_value = core::clip(fact->status == FactStatus::present ? fact->value : fact->detail, 300);
    } else if (v.evidence_source.empty()) {
      v.evidence_source = fmt::format("cmax: fact {} (not collected)", check.fact);
    }
  }
  if (!check.link.empty() && v.links.empty()) v.links.emplace_back(check.link);
  f.outcome = v.outcome;
  f.observed = std::move(v.observed);
  f.expected = std::move(v.expected);
  f.reason = std::move(v.reason);
  f.cves = std::move(v.cves);
  f.links = std::move(v.links);
  f.evidence_source = std::move(v.evidence_source);
  f.evidence_value = std::move(v.evidence_value);
  return f;
}

std::vector<Finding> run_checks(std::span<const Check> checks, const CheckContext& ctx) {
  std::vector<Finding> out;
  out.reserve(checks.size());
  for (const auto& c : checks) out.push_back(run_check(c, ctx));
  return out;
}

}  // namespace cmax::audit
