#include "audit/checks/generic.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {

Verdict verdict(Outcome outcome, std::string observed, std::string expected, std::string reason) {
  Verdict v;
  v.outcome = outcome;
  v.observed = std::move(observed);
  v.expected = std::move(expected);
  v.reason = std::move(reason);
  return v;
}

std::optional<Verdict> unverified_if_not_present(const CheckContext& ctx, std::string_view key) {
  const Fact* f = ctx.facts.find(key);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", key));
  if (f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not read {}: {}", f->source, f->detail));
  if (f->status == FactStatus::absent) return verdict(Outcome::not_applicable, {}, {}, f->detail);
  return std::nullopt;
}

std::optional<Verdict> guard_fact(const CheckContext& ctx, const Check& check) {
  if (check.fact.empty()) return std::nullopt;
  return unverified_if_not_present(ctx, check.fact);
}

bool has_nvidia_gpu(const CheckContext& ctx) {
  auto n = core::parse_uint(ctx.facts.value_or("gpu.nvidia.count", "0"));
  return n && *n > 0;
}

std::optional<Verdict> guard_gpu(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  return guard_fact(ctx, check);
}

std::optional<Verdict> guard_gpu_only(const CheckContext& ctx, const Check&) {
  const Fact* count = ctx.facts.find("gpu.nvidia.count");
  if (count && count->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, {}, fmt::format("could not list PCI devices: {}", count->detail));
  if (!has_nvidia_gpu(ctx))
    return verdict(Outcome::not_applicable, "no NVIDIA GPU", {},
                   "no NVIDIA GPU on this host (no PCI display/3D controller with vendor 0x10de)");
  return std::nullopt;
}

Verdict pred_int_bound(const CheckContext& ctx, const Check& check) {
  std::string_view raw = ctx.facts.value_or(check.fact);
  auto value = core::parse_int(raw);
  if (!value) return verdict(Outcome::unverified, std::string(raw), {}, fmt::format("'{}' is not an integer", raw));
  std::string_view p = check.param;
  auto colon = p.find(':');
  auto bound = colon == std::string_view::npos ? std::nullopt : core::parse_int(p.substr(colon + 1));
  if (!bound) return verdict(Outcome::unverified, std::string(raw), {}, fmt::format("bad check parameter '{}'", p));
  std::string_view op = p.substr(0, colon);
  bool ok = false;
  std::string expected;
  if (op == "min") {
    ok = *value >= *bound;
    expected = fmt::format(">= {}", *bound);
  } else if (op == "max") {
    ok = *value <= *bound;
    expected = fmt::format("<= {}", *bound);
  } else if (op == "eq") {
    ok = *value == *bound;
    expected = fmt::format("= {}", *bound);
  } else if (op == "not") {
    ok = *value != *bound;
    expected = fmt::format("not {}", *bound);
  } else {
    return verdict(Outcome::unverified, std::string(raw), {}, fmt::format("bad check parameter '{}'", p));
  }
  return verdict(ok ? Outcome::pass : (check.security ? Outcome::fail : Outcome::warn), std::string(raw), expected);
}

std::optional<Verdict> guard_slurm(const CheckContext& ctx, const Check& check) {
  if (!ctx.facts.is_present("slurm.conf.path")) {
    const Fact* f = ctx.facts.find("slurm.conf.path");
    if (f && f->status == FactStatus::error)
      return verdict(Outcome::unverified, {}, {}, fmt::format("could not read slurm.conf: {}", f->detail));
    return verdict(Outcome::not_applicable, "no slurm.conf", {}, "no slurm.conf on this host (not a Slurm node)");
  }
  return guard_fact(ctx, check);
}

std::optional<Verdict> guard_rdma(const CheckContext& ctx, const Check& check) {
  auto n = core::parse_uint(ctx.facts.value_or("rdma.device_count", "0"));
  if (!n || *n == 0) {
    const Fact* f = ctx.facts.find("rdma.device_count");
    if (f && f->status == FactStatus::error)
      return verdict(Outcome::unverified, {}, {}, fmt::format("could not list RDMA devices: {}", f->detail));
    return verdict(Outcome::not_applicable, "no RDMA device", {}, "no RDMA device in /sys/class/infiniband");
  }
  return guard_fact(ctx, check);
}

Verdict pred_version_floor(const CheckContext& ctx, const Check& check) {
  const Fact* fact = ctx.facts.find(check.fact);
  if (!fact || fact->status != FactStatus::present)
    return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  // A distro package's epoch and revision are its packager's: the release it carries is what an
  // upstream floor is compared with ("5:24.0.7-1~ubuntu.22.04~jammy" is Docker 24.0.7).
  const bool distro = fact->detail == "distro package";
  auto version = distro ? core::parse_package_upstream(fact->value) : core::parse_version(fact->value);
  if (!version)
    return verdict(Outcome::unverified, fact->value, {},
                   fmt::format("cannot compare '{}' from {}: {}", core::clip(fact->value, 60), fact->source,
                               version.error().message));
  const ComponentFloor* floor = ctx.floors.find(check.component);
  if (!floor)
    return verdict(Outcome::unverified, fact->value, {},
                   fmt::format("no floor for '{}' in {}", check.component, ctx.floors.origin));
  FloorVerdict fv = evaluate_floor(*floor, *version);
  Verdict v;
  v.observed = fact->value;
  v.cves = fv.cves;
  if (!floor->source.empty()) v.links.push_back(floor->source);
  const std::string upstream = distro ? fmt::format(" (upstream {})", core::split_package_version(fact->value).upstream)
                                      : std::string();
  // The distro's own fixed package, where its tracker says the fixes were backported.
  const std::string distro_name(ctx.facts.value_or("os.distro"));
  const auto backport = distro && !distro_name.empty() ? floor->distros.find(distro_name) : floor->distros.end();
  if (fv.status != FloorVerdict::Status::ok && backport != floor->distros.end()) {
    if (!floor->distros_source.empty()) v.links.push_back(floor->distros_source);
    v.expected = fmt::format(">= {} ({}'s fixed package)", backport->second, distro_name);
    if (core::dpkg_compare(fact->value, backport->second) >= 0) {
      v.outcome = Outcome::warn;
      v.reason = fmt::format(
          "{}{} is below the upstream floor {}, but {}'s tracker says the fixes are backported to {}: patched by "
          "the distro, on an upstream release that receives no fixes of its own",
          fact->value, upstream, fv.floor.empty() ? fv.supported : fv.floor, distro_name, backport->second);
    } else {
      v.outcome = Outcome::fail;
      v.reason = fmt::format("{} is below {}'s fixed package {}{}", fact->value, distro_name, backport->second,
                             fv.cves.empty() ? std::string() : fmt::format(" ({})", fmt::join(fv.cves, ", ")));
    }
    return v;
  }
  const std::string no_backport =
      distro ? fmt::format("; no fix backported to this package is recorded for {} (the floors file's 'distros'), so "
                           "it counts as unpatched",
                           distro_name.empty() ? std::string("this distro") : distro_name)
             : std::string();
  switch (fv.status) {
    case FloorVerdict::Status::ok:
      v.outcome = Outcome::pass;
      v.expected = fv.floor.empty() ? "a supported release" : fmt::format(">= {}", fv.floor);
      v.cves.clear();
      if (!fv.train.empty()) v.reason = fmt::format("train {} floor {}", fv.train, fv.floor);
      if (distro) v.reason += (v.reason.empty() ? "" : "; ") + fmt::format("{}{}", fact->value, upstream);
      break;
    case FloorVerdict::Status::below:
      v.expected = fmt::format(">= {}", fv.floor);
      v.outcome = Outcome::fail;
      v.reason = fmt::format("{}{} is below the floor {}{} ({} {}){}", fact->value, upstream, fv.floor,
                             fv.train.empty() ? "" : fmt::format(" of train {}", fv.train), floor->kind, floor->date,
                             no_backport);
      // The rollout window: a fix released days ago is not yet a failure to patch.
      if (auto age = core::days_since(floor->fix_available, ctx.clock.now());
          age && *age >= 0 && *age < ctx.floors.grace_days) {
        v.outcome = Outcome::warn;
        v.reason += fmt::format("; the fix was released {} on {}, inside the {}-day rollout window (grace_days): "
                                "a fail from {} days after", *age == 0 ? std::string("today") :
                                *age == 1 ? std::string("1 day ago") : fmt::format("{} days ago", *age),
                                floor->fix_available, ctx.floors.grace_days, ctx.floors.grace_days);
      }
      break;
    case FloorVerdict::Status::unsupported_train:
      v.outcome = Outcome::fail;
      v.expected = fmt::format("a supported train ({})", fv.supported);
      v.reason = fmt::format("{}{} is on a train with no security fixes listed; supported trains: {}{}", fact->value,
                             upstream, fv.supported, no_backport);
      break;
  }
  return v;
}

Verdict pred_present(const CheckContext& ctx, const Check& check) {
  const Fact* fact = ctx.facts.find(check.fact);
  if (!fact) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  switch (fact->status) {
    case FactStatus::present:
      return verdict(Outcome::pass, core::clip(fact->value, 120), "present");
    case FactStatus::absent:
      return verdict(check.param == "fail" ? Outcome::fail : Outcome::warn, "missing", "present", fact->detail);
    case FactStatus::error:
      break;
  }
  return verdict(Outcome::unverified, {}, "present", fmt::format("could not check {}: {}", fact->source, fact->detail));
}

}  // namespace cmax::audit::checks
