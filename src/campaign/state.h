#pragma once
// A campaign's state on disk (campaign.json in the run directory, schema cmax.campaign/1,
// docs/schemas/campaign.md): the plan, the facts it was decided on, each stage's decision and
// what became of it. Written after every stage (atomically), read by --resume and by cmax report.

#include <string>
#include <string_view>
#include <vector>

#include "campaign/decide.h"
#include "core/result.h"

namespace cmax::campaign {

/// What became of a stage.
enum class Status { pending, running, done, failed, timed_out, interrupted, skipped };
std::string_view to_string(Status s);

struct StageState {
  Decision decision;
  Status status = Status::pending;
  int exit_code = -1;        ///< the child's exit code (done/failed); -1 when none
  double seconds = 0;        ///< the last attempt's
  double interrupted_s = 0;  ///< time spent in earlier attempts that were interrupted (--resume)
  int attempts = 0;          ///< how many times it was started
  std::string last_line;     ///< the last line the stage printed
  std::string started_at;    ///< UTC, ISO 8601; "" when not started
  std::string log;           ///< relative to the run directory: "logs/nccl.log"
  std::string error;         ///< failed/timed_out/interrupted: why, with the log's last line
};

struct Campaign {
  std::string plan_name, plan_origin, plan_about;
  Facts facts;
  std::vector<StageState> stages;
  std::string started_at, finished_at;
  bool interrupted = false;
  int resumes = 0;  ///< how many times --resume continued it
};

inline constexpr std::string_view kCampaignFile = "campaign.json";

/// The document (cmax.campaign/1). Pure.
std::string campaign_to_json(const Campaign& c);
/// Parses a campaign.json; errors name `origin` and what is wrong. Pure.
Result<Campaign> campaign_from_json(std::string_view text, std::string_view origin);

/// Writes DIR/campaign.json atomically (a temporary file renamed over it).
Result<void> save_campaign(const Campaign& c, const std::string& dir);
/// Reads DIR/campaign.json.
Result<Campaign> load_campaign(const std::string& dir);

}  // namespace cmax::campaign
