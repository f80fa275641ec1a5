#include "health/submit_flow.h"

#include <algorithm>

#include <fmt/format.h>

#include "health/active.h"

namespace cmax::health {

Result<std::vector<std::string>> SlurmSubmitBackend::queued_check_jobs(const SubmitOptions& o) {
  return health::queued_check_jobs(o);
}
Result<SubmitOutcome> SlurmSubmitBackend::submit_active(const SubmitOptions& o) { return health::submit_active(o); }
Result<std::string> SlurmSubmitBackend::wait_for_job(const SubmitOptions& o, std::string_view job_id,
                                                     std::chrono::seconds timeout, const std::atomic<bool>* stop) {
  return health::wait_for_job(o, job_id, timeout, stop);
}
std::vector<NodeResultFile> SlurmSubmitBackend::read_node_results(const std::string& output_dir,
                                                                  std::string_view job_id) {
  return health::read_node_results(output_dir, job_id);
}
std::chrono::steady_clock::time_point SlurmSubmitBackend::now() const { return std::chrono::steady_clock::now(); }

std::vector<std::string> node_check_args(const NodeChecks& n) {
  std::string csv;
  for (const auto& g : n.groups) csv += (csv.empty() ? "" : ",") + g;
  std::vector<std::string> args = {"--checks", csv, "--check-timeout-s", fmt::format("{}", n.check_timeout_s)};
  if (!n.path.empty())
    args.insert(args.end(), {"--path", n.path, "--metadata-files", std::to_string(n.metadata_files), "--seq-mib",
                             std::to_string(n.seq_mib), "--fsync-count", std::to_string(n.fsync_count)});
  if (!n.thresholds.empty()) args.insert(args.end(), {"--thresholds", n.thresholds});
  return args;
}

std::chrono::minutes job_time_for_groups(const std::vector<std::string>& groups, std::chrono::milliseconds per_check,
                                         std::chrono::milliseconds gpu_timeout) {
  auto has = [&](std::string_view g) { return std::find(groups.begin(), groups.end(), g) != groups.end(); };
  std::size_t checks = 0;
  for (const auto& c : all_active_checks())
    if (has(c.group)) ++checks;
  return job_time_limit(checks, per_check, has("gpu") ? gpu_timeout : std::chrono::milliseconds(0));
}

std::string describe_plan(const SubmitOutcome& planned) {
  std::string argv;
  for (const auto& w : planned.plan.sbatch_argv) argv += (argv.empty() ? "" : " ") + shell_quote(w);
  return fmt::format("# {}\n{}\n# {}:\n{}", planned.note, argv, planned.plan.script_path, planned.plan.script);
}

std::string describe_submitted(const SubmittedJob& job, std::string_view output_dir) {
  const auto& out = job.outcome;
  std::string nodes;
  for (const auto& n : out.nodes) nodes += (nodes.empty() ? "" : ",") + n;
  return fmt::format("job {} on {} idle node{}{} ({}); results in {}/cmax-check-<host>-{}-<task>.out", out.job_id,
                     out.nodes.size(), out.nodes.size() == 1 ? "" : "s",
                     job.scope.empty() ? std::string() : " of reservation " + job.scope, nodes, output_dir, out.job_id);
}

std::string describe_job_ends(const std::vector<JobResults>& parts) {
  std::string ends;
  for (const auto& p : parts) ends += fmt::format("{}{} {}", ends.empty() ? "" : ", ", p.job_id, p.job_end);
  return ends;
}

namespace {

// Until every job leaves the queue, one deadline for all, then each job's nodes' results.
Result<std::vector<JobResults>> wait_for_jobs(const SubmitFlowOptions& o, SubmitBackend& backend,
                                              const std::vector<SubmittedJob>& jobs) {
  const auto deadline = backend.now() + o.wait_timeout;
  std::vector<JobResults> parts;
  for (const auto& j : jobs) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - backend.now());
    auto end = backend.wait_for_job(o.submit, j.outcome.job_id, std::max(left, std::chrono::seconds(1)), o.stop);
    if (!end) return Unexpected<Error>{end.error()};
    parts.push_back({j.outcome.job_id, j.scope, j.outcome.nodes,
                     backend.read_node_results(o.submit.output_dir, j.outcome.job_id), *end});
  }
  return parts;
}

}  // namespace

Result<SubmitFlowResult> run_submit_flow(const SubmitFlowOptions& o, SubmitBackend& backend,
                                         const SubmitFlowHooks& hooks) {
  const SubmitOptions& s = o.submit;
  if (o.wait && !s.dry_run && !s.force) {
    // A cmax-check job of ours still in the queue (an earlier, interrupted run's; also one still
    // completing, whose nodes are not idle yet) ends first, then ours is submitted.
    auto queued = backend.queued_check_jobs(s);
    if (!queued) return Unexpected<Error>{queued.error()};
    for (const auto& id : *queued) {
      if (hooks.on_queued) hooks.on_queued(id);
      if (auto e = backend.wait_for_job(s, id, o.wait_timeout, nullptr); !e) return Unexpected<Error>{e.error()};
    }
  }
  if (o.scopes.empty()) return fail("--no-free-nodes without --reservation NAME: no node to check");
  SubmitFlowResult res;
  for (const auto& scope : o.scopes) {
    SubmitOptions so = s;
    so.reservation = scope;
    so.force = s.force || !res.jobs.empty();  // our own first job is not a reason to refuse the second
    auto out = backend.submit_active(so);
    if (!out) return Unexpected<Error>{out.error()};
    if (out->plan.sbatch_argv.empty()) {
      res.notes.push_back(out->note);
      if (!out->existing.empty()) break;  // a job of ours already queued: nothing more either
      continue;
    }
    SubmittedJob job{std::move(*out), scope};
    if (s.dry_run) {
      if (hooks.on_planned) hooks.on_planned(job);
      continue;
    }
    if (hooks.on_submitted) hooks.on_submitted(job);
    res.jobs.push_back(std::move(job));
  }
  if (hooks.on_scopes_done) hooks.on_scopes_done(res.notes);
  if (s.dry_run || !o.wait) return res;
  if (res.jobs.empty()) {
    // --wait promised a result: nothing to wait for is not a healthy cluster.
    std::string why;
    for (const auto& n : res.notes) why += (why.empty() ? "" : "; ") + n;
    return fail("--wait: nothing was submitted, so there are no results: {}", why);
  }
  if (hooks.before_wait) hooks.before_wait();
  auto parts = wait_for_jobs(o, backend, res.jobs);
  if (!parts) return Unexpected<Error>{parts.error()};
  res.parts = std::move(*parts);
  res.merged = merge_active_jobs(res.parts);
  return res;
}

}  // namespace cmax::health
