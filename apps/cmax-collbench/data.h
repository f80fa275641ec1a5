#pragma once
// Deterministic inputs and expected outputs for checking a collective (-c 1). Values are small
// integers, so sums, products (of 1s and 2s), minima and maxima are exact in every type and in any
// reduction order. Pure functions.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "apps/cmax-collbench/ops.h"

namespace cmax::collbench {

/// What `rank` of `nranks` sends: plan.counts.send elements of plan.dtype.
std::vector<std::byte> make_input(const Plan& plan, int rank, int nranks);
/// What `rank` must hold afterwards: plan.counts.recv elements of plan.dtype.
std::vector<std::byte> make_expected(const Plan& plan, int rank, int nranks);
/// Elements of `got` that differ from `expected` (both of type t; a length mismatch counts the
/// missing elements as wrong).
std::int64_t count_wrong(Dtype t, std::span<const std::byte> got,
                         std::span<const std::byte> expected);

}  // namespace cmax::collbench
