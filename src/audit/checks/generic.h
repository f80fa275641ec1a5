#pragma once
// Guards and predicates that many rows of the check table share. A row names its primary fact,
// floor component or parameter; these read them.

#include <optional>
#include <string_view>

#include "audit/check.h"

namespace cmax::audit::checks {

// Guards.
/// The primary fact: absent -> not_applicable (its detail says why), error/missing -> unverified.
std::optional<Verdict> guard_fact(const CheckContext& ctx, const Check& check);
/// Needs an NVIDIA GPU on the host, then guard_fact.
std::optional<Verdict> guard_gpu(const CheckContext& ctx, const Check& check);
/// Needs a slurm.conf, then guard_fact.
std::optional<Verdict> guard_slurm(const CheckContext& ctx, const Check& check);
/// Needs at least one RDMA device in /sys/class/infiniband, then guard_fact.
std::optional<Verdict> guard_rdma(const CheckContext& ctx, const Check& check);

// Predicates.
/// The primary fact is a version; judged against the floors of `check.component`.
Verdict pred_version_floor(const CheckContext& ctx, const Check& check);
/// The primary fact must be present: pass when present; absent -> fail when check.param is
/// "fail", else warn; error -> unverified.
Verdict pred_present(const CheckContext& ctx, const Check& check);

/// The primary fact is an integer judged by check.param: "min:N" passes N or more, "max:N" N or
/// less, "eq:N" exactly N, "not:N" anything but N. A miss fails security checks and warns others.
Verdict pred_int_bound(const CheckContext& ctx, const Check& check);
/// Needs an NVIDIA GPU on the host; does not look at the primary fact (for presence checks).
std::optional<Verdict> guard_gpu_only(const CheckContext& ctx, const Check& check);

// Building blocks for the checks' own predicates.
std::optional<Verdict> unverified_if_not_present(const CheckContext& ctx, std::string_view key);
Verdict verdict(Outcome outcome, std::string observed, std::string expected, std::string reason = {});
bool has_nvidia_gpu(const CheckContext& ctx);

}  // namespace cmax::audit::checks
