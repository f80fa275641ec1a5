#pragma once
// `cmax run --resume DIR`: what of a saved campaign runs again, and a new --budget for what is left.

#include <vector>

#include "campaign/state.h"

namespace cmax::campaign {

/// Makes every stage that did not finish pending again (score and report always: they describe
/// the whole run; an interrupted NCCL sweep gets --resume, keeping the steps it finished) and
/// returns, one flag a stage, those already done. Pure.
std::vector<bool> reopen_stages(Campaign& c);

/// Fits the stages still to run into `budget_s` (the budget of what is left; fit_budget with
/// `finished`): a stage the new budget brings back is pending, one it leaves out is skipped. Pure.
void refit_stages(Campaign& c, int budget_s, const std::vector<bool>& finished);

}  // namespace cmax::campaign
