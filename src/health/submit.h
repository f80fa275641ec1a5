#pragma once
// `cmax check --submit`: the active checks as a low-priority, preemptible Slurm batch job on the
// nodes that are idle now, one task per node, each writing its cmax.check.active/1 JSON to a file
// of its own. The argv and the batch script are built by pure functions (tested without Slurm);
// submit_active() asks sinfo and squeue, writes the script and runs sbatch, each call bounded.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::health {

inline constexpr std::string_view kSubmitJobName = "cmax-check";

struct SubmitOptions {
  std::string cmax_bin;                 ///< absolute path of cmax, the same on every node
  std::vector<std::string> check_args;  ///< after `cmax check --active --json`: --checks, --path ...
  std::string output_dir;               ///< absolute; created if missing; script and outputs go here
  std::string partition;                ///< empty: every partition (sinfo) and the default (sbatch)
  /// Run inside this ACTIVE reservation, on its idle nodes (a trial's nodes are held in one); empty:
  /// the idle nodes outside every active reservation (the free ones, such as hot spares).
  std::string reservation;
  std::string qos;                      ///< a preemptible QOS of the site's; empty: none given
  std::string slurm_conf;               ///< SLURM_CONF for sinfo, squeue, sbatch; empty: Slurm's own
  std::size_t max_nodes = 0;            ///< 0: every idle node
  std::chrono::minutes time_limit{30};  ///< the job's --time
  int nice = 10000;                     ///< --nice: behind every other pending job
  bool force = false;                   ///< submit even with a cmax-check job pending or running
  bool dry_run = false;                 ///< build and return the plan; write and submit nothing
  std::chrono::milliseconds slurm_timeout{10000};  ///< per sinfo, squeue and sbatch call
};

/// What would be (or was) submitted.
struct SubmitPlan {
  std::vector<std::string> sbatch_argv;  ///< ends with the script's path
  std::string script_path;
  std::string script;  ///< the batch script's text (POSIX sh, every word single-quoted)
};

/// `word` as one POSIX sh word: unchanged when it holds only safe characters, else in single
/// quotes with each ' written as '\''.
std::string shell_quote(std::string_view word);

/// Node names from `sinfo -h -N -o '%N %T'`: those whose state is exactly "idle" (not drained,
/// not powered down, not unreachable), each once, in sinfo's order. Pure.
std::vector<std::string> parse_idle_nodes(std::string_view sinfo_out);

/// The nodes that are not idle in `sinfo -h -N -o '%N %T'`, with their state ("n1 completing,
/// spare2 down*"), at most `max` named and "and N more". "" when every node is idle. Pure.
std::string describe_not_idle(std::string_view sinfo_out, std::size_t max = 8);

/// From `squeue -h -t COMPLETING -o '%i|%j|%N'`: each job still completing and its nodes, with
/// why that holds nodes ("job 7 (cmax-collect) still completing on n[1-2]: ..."); "" when none. Pure.
std::string describe_completing(std::string_view squeue_out);

/// Job ids, one a line, from `squeue -h -o %i`. Pure.
std::vector<std::string> parse_job_ids(std::string_view squeue_out);

/// argv of the sinfo call that lists node states (in `partition` when given).
std::vector<std::string> sinfo_argv(std::string_view partition);
/// argv of the squeue call that lists `user`'s pending and running cmax-check jobs.
std::vector<std::string> squeue_argv(std::string_view user);

/// The sbatch argv and script for `nodes` (non-empty; names without ',' or blanks), the script
/// written to `script_path`. Errors name the option at fault. Pure.
Result<SubmitPlan> build_submit(const SubmitOptions& o, std::span<const std::string> nodes,
                                std::string_view script_path);

/// The job's --time for `checks` checks of `per_check` each (bounded in a child each), plus the
/// GPU run and a margin for srun and the job's start: whole minutes, at least 5.
std::chrono::minutes job_time_limit(std::size_t checks, std::chrono::milliseconds per_check,
                                    std::chrono::milliseconds gpu_timeout);

struct SubmitOutcome {
  bool submitted = false;
  std::string job_id;                  ///< when submitted
  std::vector<std::string> nodes;      ///< idle nodes chosen (not those of an active reservation)
  std::size_t held_by_reservations = 0;  ///< idle nodes left out: an active reservation holds them
  std::vector<std::string> existing;   ///< pending or running cmax-check jobs found (not forced)
  SubmitPlan plan;                     ///< empty when there was nothing to submit
  std::string note;                    ///< why nothing was submitted, for the operator
};

/// One node's result file of a submitted job, as read back.
struct NodeResultFile {
  std::string file;   ///< its path
  std::string text;   ///< its bytes ("" when unreadable)
  std::string error;  ///< why it could not be read; "" when read
};

/// The nodes' cmax.check.active/1 results merged into one document for the run directory
/// (check-active.json): every result with its node in `target` ("n1" or "n1:/scratch"), a node
/// entry each, and for every node of `nodes` with no readable result an `unverified` result saying
/// so (a check that did not report never passes). `healthy` only when no result failed and every
/// node reported. Pure.
struct MergedResults {
  std::string document;  ///< check-active.json's text
  bool healthy = false;  ///< the document's `healthy`
};
MergedResults merge_active_results(std::string_view job_id, const std::vector<std::string>& nodes,
                                   const std::vector<NodeResultFile>& files, std::string_view job_end);

/// One submitted job's part of a merge: a job inside a reservation and one on the free nodes.
struct JobResults {
  std::string job_id;
  std::string reservation;  ///< "" for the free nodes
  std::vector<std::string> nodes;
  std::vector<NodeResultFile> files;
  std::string job_end;
};
/// Several jobs' results as one check-active.json: `job` lists their ids ("12,13"), `jobs` each
/// job with its reservation, nodes and end; nodes and results as merge_active_results gives them.
/// One job gives the same document as merge_active_results plus `jobs`. Pure.
MergedResults merge_active_jobs(const std::vector<JobResults>& jobs);

/// Waits until `job_id` has left the queue (squeue lists it no more), polling every `poll`, up to
/// `timeout` or until `*stop` is set (Ctrl-C); then cancels it (scancel, bounded) and says so.
/// Returns the job's last state seen ("COMPLETED" when squeue lost it, or the state it was
/// cancelled in).
Result<std::string> wait_for_job(const SubmitOptions& o, std::string_view job_id, std::chrono::seconds timeout,
                                 const std::atomic<bool>* stop = nullptr,
                                 std::chrono::milliseconds poll = std::chrono::milliseconds(1000));

/// This user's cmax-check jobs still in the queue in any state squeue lists (pending, running,
/// completing: a cancelled job's nodes are busy until it has left). For --wait, before submitting.
Result<std::vector<std::string>> queued_check_jobs(const SubmitOptions& o);

/// Reads back the per-node result files of `job_id` in `output_dir` (cmax-check-*-JOB-*.out).
std::vector<NodeResultFile> read_node_results(const std::string& output_dir, std::string_view job_id);

/// Lists idle nodes (those of `reservation`, else leaving out those of active reservations), refuses when a cmax-check job of this user is pending or running (unless
/// force), then writes the script and runs sbatch (unless dry_run). Errors: a Slurm command that
/// fails or times out, an output directory that cannot be written.
Result<SubmitOutcome> submit_active(const SubmitOptions& o);

}  // namespace cmax::health
