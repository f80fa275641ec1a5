// libFuzzer target: cmax run's plan (cmax.plan/1) and state (cmax.campaign/1) parsers, and the
// decisions over a parsed plan. Invariants: no crash on any bytes; a plan that parses has 1-64
// stages with unique ids and 1 <= min_s <= budget_s; a campaign that parses writes back to a
// document that parses to the same text (what --resume relies on); decide() gives one decision a
// stage and never a budget below min_s for a stage it runs.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>
#include <vector>

#include "campaign/decide.h"
#include "campaign/plan.h"
#include "campaign/state.h"
#include "fuzz_check.h"

using cmax::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  using namespace cmax::campaign;
  if (auto p = parse_plan(in, "fuzz")) {
    check(!p->stages.empty() && p->stages.size() <= 64);
    std::set<std::string> ids;
    for (const auto& s : p->stages) {
      check(ids.insert(s.id).second);
      check(s.min_s >= 1 && s.min_s <= s.budget_s);
    }
    Facts f;
    f.harness = size % 2 ? "slurm" : "standalone";
    f.nodes = {"n1", "n2", "n3"};
    f.idle = {"n3"};
    f.cmax = "/cmax";
    f.out = "/out";
    f.collbench = "/collbench";
    if (size % 3 == 0) {  // a trial held in a reservation (issue 35)
      f.trial_nodes = f.trial_nccl_nodes = {"n1", "n2"};
      f.trial_reservations = {"train"};
    }
    f.budget_s = static_cast<int>(size % 5000) + 1;
    auto d = decide(*p, f);
    check(d.size() == p->stages.size());
    for (std::size_t i = 0; i < d.size(); ++i)
      if (d[i].run && !d[i].in_process) check(d[i].budget_s >= p->stages[i].min_s);
    // A resume with another budget: finished stages keep theirs, the rest never below min_s, and
    // a stage left out for the budget keeps its command.
    std::vector<bool> finished(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) finished[i] = (size >> (i % 8)) & 1;
    const auto before = d;
    fit_budget(d, static_cast<int>((size * 7) % 9000) + 1, &finished);
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (finished[i]) check(d[i].budget_s == before[i].budget_s);
      if (d[i].run && !d[i].in_process && !finished[i]) check(d[i].budget_s >= d[i].min_s);
      if (d[i].over_budget) check(!d[i].run && d[i].argv == before[i].argv);
    }
  }
  if (auto c = campaign_from_json(in, "fuzz")) {
    const std::string once = campaign_to_json(*c);
    auto again = campaign_from_json(once, "fuzz");
    check(again.has_value());
    check(campaign_to_json(*again) == once);
  }
  return 0;
}
