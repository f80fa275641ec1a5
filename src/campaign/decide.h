#pragma once
// Which stages of a plan run on this cluster, on which nodes, with which command, and why the
// others do not: a pure function of the plan and the facts found at the start (harness, nodes,
// what is installed, what the user named). `cmax run --dry-run` prints its answer; `cmax run`
// executes it. The plan is fitted into --budget here: each stage gets its min_s, the rest is shared
// in proportion to what each would take beyond that; when even the minimums do not fit, the last
// stages of the plan are skipped (earlier stages are the basics), never run below their min_s.

#include <optional>
#include <string>
#include <vector>

#include "campaign/plan.h"

namespace cmax::campaign {

/// What is known before any stage runs.
struct Facts {
  std::string harness;                 ///< "slurm", "kubernetes", "standalone"
  std::string harness_why;             ///< how it was chosen
  std::vector<std::string> nodes;      ///< the cluster's nodes (Slurm: sinfo), or this host
  std::vector<std::string> idle;       ///< idle now (Slurm) and outside every active reservation: free
  /// The trial's own nodes (Slurm): idle nodes of the ACTIVE reservations this user may use, which
  /// a job outside them never gets; `trial_reservations` names those reservations, the one with
  /// the most idle nodes first (a step can run inside one only: the NCCL sweep uses it).
  std::vector<std::string> trial_nodes;
  std::vector<std::string> trial_reservations;
  std::vector<std::string> trial_nccl_nodes;  ///< the idle nodes of trial_reservations[0]
  std::string storage_path;            ///< --storage-path DIR for the active stage's storage checks
  std::string cmax;                    ///< absolute path of this cmax (the stages' argv[0])
  std::string out;                     ///< the run directory
  bool gpu = false;                    ///< a GPU is visible (an NVIDIA device node, or Gres gpu in sinfo)
  std::string nccl_tests_dir;          ///< --nccl-tests DIR, or where all_reduce_perf was found
  std::string collbench;               ///< cmax-collbench beside cmax, when mpirun is on PATH too
  std::string endpoint;                ///< --endpoint URL
  std::string endpoint_trace;          ///< --trace FILE for the endpoint stage (else --multiturn)
  std::string prices;                  ///< --prices FILE for the endpoint stage (cmax.prices/1)
  std::string contract;                ///< --contract FILE
  std::string events;                  ///< --cmaxd-db FILE (SLA's events)
  std::string drill_node;              ///< --drill-node NODE
  std::string reservation;             ///< --reservation NAME (the drill's spares; the audit's scope)
  std::string partition;               ///< --partition NAME
  bool allow_disruptive = false;       ///< --allow-disruptive
  std::optional<int> budget_s;         ///< --budget
  std::vector<std::string> audit_args; ///< passed through to the audit stage (harness, floors, ...)
  std::vector<std::string> isolation_scopes;  ///< --isolation-scope: probed by the isolation stage
  bool isolation_metadata = false;     ///< --isolation-metadata: the stage also probes 169.254.169.254
};

/// One stage's fate in this run.
struct Decision {
  std::string id;
  Kind kind = Kind::audit;
  bool run = false;
  bool disruptive = false;
  bool in_process = false;        ///< score and report run inside cmax run, not as a child
  int budget_s = 0;               ///< after fitting into --budget
  int plan_budget_s = 0;          ///< the plan's budget_s, before fitting
  int min_s = 0;                  ///< the plan's min_s
  bool over_budget = false;       ///< skipped only because --budget could not hold it (argv kept)
  std::string run_reason;         ///< over_budget: what it would do (its reason when run)
  std::string targets;            ///< "n[1-4]", "this machine", "http://..."
  std::string reason;             ///< skipped: why; run: what it does
  std::string todo;               ///< skipped: what to do to run it ("" when nothing can)
  std::vector<std::string> argv;  ///< the command (children); empty for in-process stages
  /// Run after `argv` whatever became of it (the drill's cleanup: resume the node, restore the
  /// reservation); its failure fails the stage.
  std::vector<std::string> cleanup_argv;
  std::vector<std::string> documents;  ///< what it writes into the run directory
};

/// The decisions, in plan order, fitted into facts.budget_s. Pure.
std::vector<Decision> decide(const Plan& plan, const Facts& facts);

/// Fits the stages that can run (run, or over_budget) into `budget_s` (none: each its plan's
/// budget): each gets its min_s, the rest is shared in proportion to what each would take beyond
/// that; while even the minimums do not fit, the last stage is skipped as over_budget. Used by
/// decide() and by --resume with a new --budget, where `finished` (one flag a decision) marks the
/// stages already done, which keep their budget and take none of the new one. Pure.
void fit_budget(std::vector<Decision>& decisions, std::optional<int> budget_s,
                const std::vector<bool>* finished = nullptr);

/// The least --budget that runs every stage that can run here (the sum of their min_s). Pure.
int minimum_budget_s(const std::vector<Decision>& decisions, const std::vector<bool>* finished = nullptr);

/// The sum of the budgets of the stages that run (the most the run can take).
int planned_seconds(const std::vector<Decision>& decisions);

/// The plan for a person: one line a stage (run or skipped, with targets, budget, reason), the
/// total, and what is not run and why. For `cmax run --dry-run`.
std::string render_decisions(const Plan& plan, const Facts& facts, const std::vector<Decision>& decisions);

}  // namespace cmax::campaign
