#pragma once
// A rating campaign's plan as data (schema cmax.plan/1, docs/plan.md): the ordered stages, each
// with its kind, time budget, the least time it is worth running in, and extra arguments for the
// command that runs it. Presets `quick`, `standard`, `full` (data/plans/*.json, embedded); a
// user's own with --plan FILE. Pure: text in, Plan out.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::campaign {

/// What a stage does; each kind has one command (decide.h) and one document in the run directory.
enum class Kind { audit, isolation, scan, active, nccl, drill, endpoint, sla, score, report };

std::string_view to_string(Kind k);
/// nullopt-like: false when `name` is not a kind.
bool parse_kind(std::string_view name, Kind* out);

struct StageSpec {
  std::string id;  ///< unique in the plan: [a-z0-9_-]+, names the log and the state entry
  Kind kind = Kind::audit;
  int budget_s = 60;  ///< the most it may take; the stage is stopped after it
  int min_s = 1;      ///< below this (when the plan is fitted into --budget) it is skipped, not run short
  std::vector<std::string> args;  ///< appended to the stage's command (decide.h), as given
};

struct Plan {
  std::string name;
  std::string about;
  std::string origin;  ///< "preset standard" or the file's path
  std::vector<StageSpec> stages;
};

/// The presets' names, in order of scope.
inline constexpr std::string_view kPresets[] = {"quick", "standard", "full"};

/// Parses a cmax.plan/1 document. Errors name `origin`, the stage and the field, and what to change.
Result<Plan> parse_plan(std::string_view json, std::string_view origin);

/// A preset by name, or a plan file when `name_or_path` names none (read, bounded, parsed).
Result<Plan> load_plan(std::string_view name_or_path);

}  // namespace cmax::campaign
