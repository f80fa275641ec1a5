#pragma once
// `cmax check --submit [--wait]` as one flow: wait for an earlier cmax-check job of ours still
// queued, submit a job per scope (the free idle nodes, each --reservation), then with `wait` wait
// for every job under one deadline (a stop request cancels them) and merge the nodes' results.
// Slurm and time come through a SubmitBackend, so tests fake both.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "health/submit.h"

namespace cmax::health {

/// The Slurm calls and the clock of the flow. The real one is SlurmSubmitBackend.
class SubmitBackend {
 public:
  virtual ~SubmitBackend() = default;
  /// As health::queued_check_jobs.
  virtual Result<std::vector<std::string>> queued_check_jobs(const SubmitOptions& o) = 0;
  /// As health::submit_active.
  virtual Result<SubmitOutcome> submit_active(const SubmitOptions& o) = 0;
  /// As health::wait_for_job (cancels the job at `timeout` or on `*stop`).
  virtual Result<std::string> wait_for_job(const SubmitOptions& o, std::string_view job_id,
                                           std::chrono::seconds timeout, const std::atomic<bool>* stop) = 0;
  /// As health::read_node_results.
  virtual std::vector<NodeResultFile> read_node_results(const std::string& output_dir, std::string_view job_id) = 0;
  /// The clock the wait's deadline is measured on.
  virtual std::chrono::steady_clock::time_point now() const = 0;
};

/// sinfo, squeue, sbatch and scancel through health/submit.h; the steady clock.
class SlurmSubmitBackend final : public SubmitBackend {
 public:
  Result<std::vector<std::string>> queued_check_jobs(const SubmitOptions& o) override;
  Result<SubmitOutcome> submit_active(const SubmitOptions& o) override;
  Result<std::string> wait_for_job(const SubmitOptions& o, std::string_view job_id, std::chrono::seconds timeout,
                                   const std::atomic<bool>* stop) override;
  std::vector<NodeResultFile> read_node_results(const std::string& output_dir, std::string_view job_id) override;
  std::chrono::steady_clock::time_point now() const override;
};

struct SubmitFlowOptions {
  SubmitOptions submit;             ///< for every job; `reservation` is set per scope
  std::vector<std::string> scopes;  ///< in order: "" the free idle nodes, else a reservation's name
  bool wait = false;                ///< wait for the jobs and merge their nodes' results
  std::chrono::seconds wait_timeout{3600};  ///< each earlier job's wait; one deadline for all of ours
  const std::atomic<bool>* stop = nullptr;  ///< set (from a signal handler) to cancel the jobs waited for
};

/// A job submitted (or, in a dry run, planned) for one scope.
struct SubmittedJob {
  SubmitOutcome outcome;
  std::string scope;  ///< "" the free idle nodes, else the reservation
};

/// Progress callbacks, each optional, on the calling thread, in this order.
struct SubmitFlowHooks {
  std::function<void(const std::string& job_id)> on_queued;  ///< an earlier job of ours: waited for first
  std::function<void(const SubmittedJob&)> on_planned;       ///< dry run: a scope's plan
  std::function<void(const SubmittedJob&)> on_submitted;     ///< a scope's job was submitted
  std::function<void(const std::vector<std::string>& notes)> on_scopes_done;  ///< why scopes submitted nothing
  std::function<void()> before_wait;  ///< about to wait for the submitted jobs
};

struct SubmitFlowResult {
  std::vector<SubmittedJob> jobs;    ///< submitted (none in a dry run)
  std::vector<std::string> notes;    ///< why a scope submitted nothing
  std::vector<JobResults> parts;     ///< with wait: each job's nodes, result files and end
  std::optional<MergedResults> merged;  ///< with wait and a job submitted: check-active.json
};

/// The active-check settings the nodes run with.
struct NodeChecks {
  std::vector<std::string> groups;  ///< "storage", "memory", "cpu", "gpu"
  double check_timeout_s = 60;
  std::string path;  ///< absolute; "" without the storage checks
  std::size_t metadata_files = 2000;
  std::uint64_t seq_mib = 256;
  int fsync_count = 200;
  std::string thresholds;  ///< absolute; "" for the built-in table
};

/// The nodes' arguments after `cmax check --active --json` (SubmitOptions::check_args): --checks,
/// --check-timeout-s, the storage settings with --path, --thresholds when named. Pure.
std::vector<std::string> node_check_args(const NodeChecks& n);

/// The job's --time for the checks of `groups` at `per_check` each, and the GPU run at
/// `gpu_timeout` when gpu is among them (job_time_limit).
std::chrono::minutes job_time_for_groups(const std::vector<std::string>& groups, std::chrono::milliseconds per_check,
                                         std::chrono::milliseconds gpu_timeout);

/// A dry run's plan as printed: "# <note>", the sbatch argv (shell-quoted), "# <script path>:", the script.
std::string describe_plan(const SubmitOutcome& planned);

/// "job 12 on 2 idle nodes of reservation trial (n1,n2); results in DIR/cmax-check-<host>-12-<task>.out". Pure.
std::string describe_submitted(const SubmittedJob& job, std::string_view output_dir);

/// "12 COMPLETED, 13 CANCELLED ...": each job's id and end. Pure.
std::string describe_job_ends(const std::vector<JobResults>& parts);

/// Runs the flow. Errors: no scope, a Slurm call that fails, a wait that fails (each says what),
/// and with `wait` nothing submitted (no results to wait for). Without `wait` nothing submitted
/// is not an error: `jobs` is empty and `notes` says why.
Result<SubmitFlowResult> run_submit_flow(const SubmitFlowOptions& o, SubmitBackend& backend,
                                         const SubmitFlowHooks& hooks = {});

}  // namespace cmax::health
