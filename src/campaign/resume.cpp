#include "campaign/resume.h"

#include <algorithm>
#include <utility>

namespace cmax::campaign {

std::vector<bool> reopen_stages(Campaign& c) {
  std::vector<bool> finished;
  for (auto& st : c.stages) {
    if (st.status != Status::skipped && (st.status != Status::done || st.decision.in_process)) {
      // A sweep interrupted part-way keeps the steps it finished (cmax nccl sweep --resume).
      if (st.decision.kind == Kind::nccl && st.status == Status::interrupted &&
          std::find(st.decision.argv.begin(), st.decision.argv.end(), "--resume") == st.decision.argv.end())
        st.decision.argv.push_back("--resume");
      st.status = Status::pending;
    }
    finished.push_back(st.status == Status::done);
  }
  return finished;
}

void refit_stages(Campaign& c, int budget_s, const std::vector<bool>& finished) {
  c.facts.budget_s = budget_s;
  std::vector<Decision> ds;
  for (const auto& st : c.stages) ds.push_back(st.decision);
  fit_budget(ds, budget_s, &finished);
  for (std::size_t i = 0; i < ds.size(); ++i) {
    auto& st = c.stages[i];
    const bool revived = ds[i].run && !st.decision.run;
    st.decision = std::move(ds[i]);
    if (revived) st.status = Status::pending;
    if (!st.decision.run && st.status == Status::pending) st.status = Status::skipped;
  }
}

}  // namespace cmax::campaign
