#pragma once
// A chart of one run: busbw over message size, both placements, the fitted curve, the flagged
// sizes and the reference peak, as one self-contained SVG (no scripts, no external fonts or
// files; text XML-escaped), for reports and `cmax nccl analyze --svg`. Pure: values in, text out.

#include <string>

#include "nccl/analyze.h"
#include "nccl/run.h"

namespace cmax::nccl {

/// The chart of `run` with the findings of `analysis` (analyze_run(run, ...)). x: log2 of the
/// size, labelled B/KiB/MiB/GiB; y: busbw in GB/s from 0. Out-of-place points are filled
/// circles (class "pt oop"), in-place hollow ones (class "pt ip"), one per row and placement;
/// each flagged size gets a red ring (class "flag") and its kind as a label.
std::string render_svg(const Run& run, const RunAnalysis& analysis);

}  // namespace cmax::nccl
