#pragma once
// The report's own charts as inline SVG (no scripts, no external references, text XML-escaped),
// each tagged data-chart="NAME" so a reader (and the Chromium test) can find it. Pure.

#include <string>
#include <string_view>
#include <vector>

#include "audit/model.h"
#include "html/views.h"
#include "score/rubric.h"
#include "score/scorer.h"

namespace cmax::html {

/// Category scores as horizontal bars, one bar per run in a fixed palette, the tiers' min_total as
/// dashed lines; a category not evaluated is written as such, never drawn as 0. data-chart="scorecard".
std::string svg_scorecard(const std::vector<const score::ScoreCard*>& cards, const score::Rubric& rubric);

/// Findings per category by outcome (fail, warn, unverified, pass, not applicable) as stacked
/// bars of counts. data-chart="findings".
std::string svg_findings(const std::vector<audit::Finding>& findings);

/// One row per drilled node: when each stage was first seen after the injection, the interval it
/// happened in (lower_ms, at_ms], thresholds, and stages never reached. data-chart="drill".
std::string svg_drill_timeline(const DrillView& drill);

/// A calendar of months: the total and the worst entities, each month coloured by availability
/// against the target, credits and cancellation months marked. data-chart="availability".
std::string svg_availability(const SlaView& sla);

/// The endpoints' prefix-cache hit rate: per run a bar measured (cached / prompt tokens) and one
/// theoretical (an ideal cache over the prompts sent), each kind in one colour that its legend
/// swatch repeats (class "bar measured" / "swatch measured", "bar theoretical" / "swatch
/// theoretical"); a measured rate above the theoretical one is outlined red and said so.
/// data-chart="endpoint-hit-rate".
std::string svg_hit_rate(const std::vector<const loadgen::RunView*>& runs);

/// A chart written by `cmax nccl` made to show what was measured: its legend's fit entry ("fit
/// (peak N GB/s)": the model's parameter, often extrapolated past the data) becomes "fit (model
/// curve)" and a line "measured peak P GB/s" (class "measured-peak") is added. A chart whose legend
/// is not that one is returned unchanged.
std::string nccl_measured_legend(std::string_view svg, double measured_peak_gbps);

/// `svg` (an <svg ...> element) with data-chart="NAME" added to its root element.
std::string tag_chart(std::string_view svg, std::string_view name);

}  // namespace cmax::html
