#pragma once
// `cmax run` without --stage: the whole rating, stage by stage, by a plan (src/campaign). The
// flags it reads; the audit stage's own flags are forwarded to `cmax run --stage audit`.

#include <optional>
#include <string>
#include <vector>

namespace cmax::app {

struct CampaignFlags {
  std::string plan = "standard";
  std::string budget;  ///< "90m", "2h", "3600" (seconds)
  bool allow_disruptive = false;
  std::string endpoint, trace, contract, cmaxd_db, drill_node, drill_reservation, nccl_tests;
  std::string prices;        ///< the endpoint stage's price sheet (cmax endpoint bench --prices)
  std::string storage_path;  ///< the active stage's storage checks (default: the run directory's filesystem)
  std::string resume;                   ///< a run directory to continue
  std::vector<std::string> stage_args;  ///< "ID=ARG": one more argument for that stage
  std::string out;
  bool overwrite = false, dry_run = false, json = false;
  std::string slurm_conf, partition;
  std::vector<std::string> forwarded;  ///< the audit stage's arguments, as the user gave them
};

/// The harness cmax run chose and why (cmd_run.cpp decides; the campaign records it).
struct HarnessChoice {
  std::string harness, why;
};

/// Runs (or with dry_run prints) the campaign. Exit codes: docs/run.md.
int run_campaign(const CampaignFlags& f, const HarnessChoice& h);

/// The arguments `cmax run` was given (after "run"), for forwarding; set by main().
void set_invocation(int argc, char** argv);
const std::vector<std::string>& run_arguments();

}  // namespace cmax::app
