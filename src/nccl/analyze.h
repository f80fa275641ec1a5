#pragma once
// Judges one nccl-tests run (or several runs of one collective over node counts): fits the curve
// of busbw over message size and names the sizes that fall off it. Pure: values in, findings out.
//
// The curve. busbw of a healthy run is a logistic in x = log2(size):
//   busbw(x) = peak / (1 + exp(-slope * (x - mid_log2)))
// (time = latency + size / bandwidth gives exactly this shape with slope ln 2; real runs bend more
// slowly near the top as NCCL switches protocol and algorithm, so slope is fitted). The fit:
//   - points: every row, out-of-place and in-place together; sizes whose busbw is under 1% of the
//     run's peak (latency-bound, printed as 0.00) carry no information and are left out;
//   - residuals: ln(measured) - ln(fit), i.e. relative, so 5 GB/s at 1 MiB weighs like 50 GB/s
//     at 1 GiB;
//   - robust: Levenberg-Marquardt inside iteratively reweighted least squares, Huber weights for
//     the first rounds (the start may be far off), then Tukey's biweight (c = 4.685 scales), so a
//     dip or a cliff gets weight 0 instead of pulling the curve down;
//   - start: peak = the largest busbw among the 3 largest sizes, mid = where busbw first crosses
//     half of it, slope = ln 2; a weak prior holds slope near ln 2 (sd 0.25) when the data cannot
//     tell (runs that start on the plateau);
//   - a point below a smaller size's busbw (same placement) by more than 7.5% starts with weight 0
//     (the first, least robust rounds), so a dip or a cliff does not pull the start;
//   - noise = 1.4826 x MAD of the relative residuals, floored at 3%;
//   - fewer than 4 sizes, or a run whose busbw never rises (smallest >= 80% of largest), gets a
//     plateau only (the median), said in notes;
//   - at most 50 solver steps over at most 8 reweighting rounds; no allocation inside them.
//
// The findings (kind, with its rule). thr = max(4.5 x noise, 15%); a placement "falls" at a size
// when it is below the fit by more than thr, or below the same placement at the next smaller size
// by more than max(4.5 x placement noise, 15%) while also 7.5% under the fit (busbw never falls as
// size grows on a healthy run; this catches dips the fit cannot, e.g. a 6-size partial run).
// Placement noise is the spread between out-of-place and in-place of the same size.
//   "dip"        a fall in both placements, or in one with the other below by more than half of
//                its threshold (judged together: placement "both", or the one that falls), at
//                1 to 3 consecutive sizes, with a larger size not falling (reported at the first).
//                The local view finds dips the fit's noise hides (a curve a logistic fits to 4%
//                hides a 13% dip under its 18% threshold): e = ln(busbw / fit), r = e at a size minus
//                the interpolation of e at its two neighbours (so the fit's misfit cancels); local
//                noise = 1.4826 x MAD(r) / sqrt(1.5), floored at 2%, or the placements'
//                disagreement when both were measured and it is smaller (issue 37: the bends of a
//                curve are misfit, not noise; floored at 0.5%); a dip when r < -max(4.5 x
//                sqrt(1.5) x local noise, 10%) in the larger placement and by half that in each,
//                busbw is not above the smaller size's (a size still rising is a late switch), both
//                neighbours are on the curve, and the size is outside 256 KiB - 4 MiB and is
//                neither the first nor the last. 2 runs in 5,000 with 2% size-to-size noise shared
//                by both placements get a false one; a healthy plateau varies ~1% (issue 309).
//                In a dense sweep (-i: consecutive sizes under 1.5x apart) a dip must fall below
//                the smaller size by 2% (or the noise): a stretch that holds one protocol's level
//                and then steps up to a higher one that stays is a note, not a dip or a cliff.
//   "cliff"      the same fall lasting to the last size, or for 4 sizes or more.
//   "placement_disagreement"  one placement falls while the other is within half of its
//                threshold of the curve, and the two differ by more than thr.
//   "below_reference"  the measured peak under the reference's pass bar, or more than 10% under
//                its expected busbw; judged only when the run reaches 1 GiB (the plateau).
//   "wrong_results"    #wrong > 0 in a row (new format) or a footer "Out of bounds values" > 0
//                (old builds print a float error, not a count: a note when it reaches 1e-3).
//   "poor_scaling"     see analyze_scaling().
// The protocol switch (LL/LL128 -> Simple, Ring -> NVLS/Tree, in 256 KiB - 4 MiB) often comes a
// size late, so one size there lags the curve by up to ~30% on clean runs (issue 309, 2 nodes:
// 512 KiB at -29%) while busbw still rises. In that zone a lag below the fit is a finding only
// when busbw also falls below the smaller size's, or lags by more than 50%; else it is a note.
// Verdicts: "fail" for wrong results or below reference, "warn" for the others, else "pass".

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/reference.h"
#include "nccl/run.h"

namespace cmax::nccl {

/// One size (or run, for size_bytes 0) that is not what it should be.
struct Anomaly {
  std::uint64_t size_bytes = 0;  ///< the (first) size concerned; 0 for the whole run
  std::string kind;              ///< "dip", "cliff", "collapse" (time or busbw far off the sizes
                                 ///< around it, below the fit's reach), "placement_disagreement",
                                 ///< "below_reference", "poor_scaling", "wrong_results"
  std::string placement;         ///< "out_of_place", "in_place", "both"; "" when it does not apply
  double measured_gbps = 0;      ///< busbw measured (the lower placement for dips)
  double expected_gbps = 0;      ///< what the fit, the reference or the scaling rule expected
  std::string detail;            ///< one sentence for an operator
  int nodes = 0;                 ///< the run's node count (poor_scaling: the count that fell short)
};

/// The fitted curve busbw(x) = peak / (1 + exp(-slope * (x - mid_log2))), x = log2(size).
struct Fit {
  double peak_gbps = 0;
  double mid_log2 = 0;
  double slope = 0;           ///< per doubling of size
  double noise = 0;           ///< robust scale of the relative residuals, >= 0.03
  bool ok = false;            ///< false when no size carries information
  bool plateau_only = false;  ///< too few sizes or no rise: busbw(x) = peak
  std::size_t points = 0;     ///< points used (both placements)
  int iterations = 0;         ///< solver steps taken
};

/// The fitted busbw at `size_bytes` (GB/s); 0 when !fit.ok.
double fit_busbw_gbps(const Fit& fit, double size_bytes);

/// The robust fit of `run`'s rows (see the top of this file).
Fit fit_run(const Run& run);

struct RunAnalysis {
  Fit fit;
  double peak_busbw_gbps = 0;  ///< max busbw over rows and both placements
  double avg_busbw_gbps =
      0;  ///< mean over rows and both placements (nccl-tests' "Avg bus bandwidth")
  std::vector<Anomaly> anomalies;      ///< in order of size; run-level ones last
  std::vector<std::string> notes;      ///< what the analysis assumed or could not judge
  std::optional<Reference> reference;  ///< the entry the run was judged against
  /// The fitted plateau where the measured sizes reach it (the fit at the largest size is within
  /// 10% of it); nullopt when the curve is still rising at its largest size: a plateau is never
  /// extrapolated past the data, and never above the measured peak. `plateau_not_reached_by` is
  /// then that size.
  std::optional<double> plateau_gbps;
  std::uint64_t plateau_not_reached_by = 0;
  /// "pass" (no anomaly), "warn" (dips, cliffs, disagreements), "fail" (wrong results, below the
  /// reference), "incomplete" (no anomaly, but nothing to judge: one rank, every size latency-bound,
  /// or a table cut off before its footer), "no_data" (no rows).
  std::string verdict;
};

/// Analyses one run against the reference table (`refs` may be empty), using the entries of
/// `variant` ("default"; a sweep's "ring" run against the ring numbers; "network" has none).
RunAnalysis analyze_run(const Run& run, const std::vector<Reference>& refs,
                        std::string_view variant = "default");

/// Runs of one collective at different node counts (same GPU and fabric; the caller groups them).
/// Rule: per node count the best peak busbw; single-node runs are left out (NVLink, not the
/// fabric). Going from n to m > n nodes may cost at most 25% per doubling: peak(m) >=
/// peak(n) x 0.75^log2(m/n) against every smaller count (nccl-tests issue 309: 466 -> 365.8 ->
/// 320.7 GB/s over 2, 4, 8 nodes keeps >= 0.78 per doubling); and a count may not be more than
/// 10% below a larger count (non-monotone: the smaller count is the odd one). One "poor_scaling"
/// anomaly per failing node count, with `nodes` set.
std::vector<Anomaly> analyze_scaling(const std::vector<const Run*>& runs_of_one_collective);

}  // namespace cmax::nccl
