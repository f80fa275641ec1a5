// cmax score: the ten ClusterMAX categories scored from the evidence in one or more run
// directories, by the rubric in data/rubric.json (or --rubric FILE); a tier with its reasons and
// what would move the cluster up a tier; several directories side by side with a ranking.

#include <fmt/format.h>

#include "apps/cmax/command.h"
#include "audit/audit.h"
#include "score/compare.h"
#include "score/evidence.h"
#include "score/render.h"
#include "score/rubric.h"
#include "score/scorer.h"

namespace cmax::app {
namespace {

struct ScoreFlags {
  std::vector<std::string> dirs;
  std::string rubric;
  bool json = false;
  bool verbose = false;
};

int usage(std::string_view message) {
  fmt::print(stderr, "cmax score: {}\n", message);
  return audit::kExitUsage;
}

int run_score(const ScoreFlags& f) {
  auto rubric = score::load_rubric(f.rubric.empty() ? std::nullopt : std::optional<std::string>(f.rubric));
  if (!rubric) return usage(rubric.error().message);
  std::vector<score::ScoreCard> cards;
  for (const auto& dir : f.dirs) {
    auto ev = score::read_evidence(dir);
    if (!ev) return usage(ev.error().message);
    cards.push_back(score::score_run(*rubric, *ev));
  }
  auto ranking = score::rank_runs(cards);
  if (f.json) {
    fmt::print("{}", score::score_to_json(*rubric, cards, ranking));
    return 0;
  }
  fmt::print("cmax score: rubric {} {} ({})\n\n", rubric->name, rubric->version, rubric->origin);
  for (std::size_t i = 0; i < cards.size(); ++i)
    fmt::print("{}{}", i ? "\n" : "", score::render_card(cards[i], f.verbose || cards.size() == 1));
  if (cards.size() > 1) fmt::print("\nSide by side (score and confidence; ranked by total):\n{}",
                                   score::render_side_by_side(cards, ranking));
  return 0;
}

}  // namespace

Runner setup_score(CLI::App& sub) {
  auto f = std::make_shared<ScoreFlags>();
  sub.description(
      "Score the ten ClusterMAX categories from the evidence in run directories (results.json and the stage\n"
      "documents beside it: cluster.json, drill.json, nccl.json, bench.json, sla.json, scan.json,\n"
      "check-active.json, attestations.json) by cmax's published rubric (data/rubric.json; docs/score.md).\n"
      "Missing evidence lowers the confidence, never the score. Prints a tier with its reasons and what\n"
      "would move the cluster up a tier; several directories are shown side by side and ranked.\n"
      "Exit codes: 0 scored; 3 usage (a directory without results.json, an invalid rubric).");
  sub.add_option("RUN_DIR", f->dirs, "Run directories (cmax run --out DIR)")->required();
  sub.add_option("--rubric", f->rubric, "A cmax.rubric/1 file instead of the built-in data/rubric.json");
  sub.add_flag("--json", f->json, "Print {\"schema\": \"cmax.score/1\", ...} (docs/schemas/score.md)");
  sub.add_flag("--verbose,-v", f->verbose, "Show every evidence item also when scoring several directories");
  return [f] { return run_score(*f); };
}

}  // namespace cmax::app
