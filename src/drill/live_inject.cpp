#include "drill/live_inject.h"

#include <unistd.h>

#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/strings.h"
#include "drill/marker.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::vector<std::string> srun_to(const std::string& node, const std::string& reservation, std::string_view job_name) {
  std::vector<std::string> argv = {"srun", "--nodelist=" + node, "-N1", "-n1", "--quiet", "--immediate=10",
                                   fmt::format("--job-name={}", job_name)};
  if (!reservation.empty()) argv.push_back("--reservation=" + reservation);
  return argv;
}

// Runs an srun to one node, bounded; on any failure cancels its job by name, so nothing of the
// drill stays queued to run later on a node someone has resumed.
Result<core::ProcessResult> srun_bounded(const std::string& slurm_conf, std::vector<std::string> argv,
                                         std::string_view job_name, std::string_view what) {
  core::ProcessSpec spec{std::move(argv), std::chrono::seconds(60), 1u << 20};
  if (!slurm_conf.empty()) spec.extra_env.push_back("SLURM_CONF=" + slurm_conf);
  auto r = core::run_process(spec);
  if (!r) return fail("{} through srun: {}", what, r.error().message);
  if (r->timed_out || r->exit_code != 0) {
    core::ProcessSpec cancel{{"scancel", "--name", std::string(job_name)}, std::chrono::seconds(10), 1u << 16, spec.extra_env};
    (void)core::run_process(cancel);
    return fail("{} through srun: {} ({}); srun said: {}", what,
                r->timed_out ? "timed out after 60 s" : fmt::format("exit {}", r->exit_code), core::describe_argv(spec.argv),
                core::clip(core::trim(r->err.empty() ? r->out : r->err), 400));
  }
  return r;
}

std::string self_exe() {
  char self[4096] = {0};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<std::size_t>(n)) : "cmax";
}

Result<std::vector<Injected>> inject_local(const InjectRequest& q, std::string& devkmsg_note) {
  std::vector<Injected> done;
  std::vector<KmsgLine> lines = {begin_marker(q.options, q.node, q.steps)};
  auto faults = to_kmsg(q.steps);
  lines.insert(lines.end(), faults.begin(), faults.end());
  auto devkmsg = DevkmsgGuard::raise();
  devkmsg_note = devkmsg.note();
  if (auto r = inject_kmsg(lines, q.options.kmsg, q.t0, done); !r)
    return fail("inject on {}: {} ({} of {} lines written)", q.node, r.error().message, done.size(), lines.size());
  done.erase(done.begin());  // the marker is no fault line
  return done;
}

}  // namespace

Result<std::vector<Injected>> inject_lines(const InjectRequest& q, const std::string& slurm_conf,
                                           std::string& devkmsg_note) {
  if (q.local) return inject_local(q, devkmsg_note);
  const RunOptions& f = q.options;
  const std::string job = "cmaxdrill-" + f.drill_id;
  auto argv = srun_to(q.node, q.reservation, job);
  argv.insert(argv.end(), {self_exe(), "drill", "inject", "--scenario", f.scenario, "--drill-id", f.drill_id, "--node",
                           q.node, "--until", fmt::format("{:.0f}", f.until_unix)});
  if (!f.gpu.empty()) argv.insert(argv.end(), {"--gpu", f.gpu});
  auto r = srun_bounded(slurm_conf, std::move(argv), job, fmt::format("inject on {}", q.node));
  if (!r) return Unexpected<Error>{r.error()};
  // The remote side prints one JSON object per line written; its times are its own clock's.
  std::vector<Injected> done;
  std::istringstream in(r->out);
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("devkmsg") && j["devkmsg"].is_string()) devkmsg_note = j["devkmsg"].get<std::string>();
    if (j.value("marker", false) || !j.contains("text")) continue;
    done.push_back({j.value("t_unix", 0.0),
                    std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - q.t0).count(),
                    j.value("level", 4), j.value("text", "")});
  }
  return done;
}

std::string write_end_marker(const RunOptions& f, const std::string& slurm_conf, const std::string& node, bool local,
                             const std::string& reservation) {
  if (local) {
    auto devkmsg = DevkmsgGuard::raise();
    std::vector<Injected> done;
    auto r = inject_kmsg({end_marker_line(f.drill_id)}, f.kmsg, SteadyClock::now(), done);
    return r ? "end marker written" : "end marker not written: " + r.error().message;
  }
  const std::string job = "cmaxdrill-" + f.drill_id + "-end";
  auto argv = srun_to(node, reservation, job);
  argv.insert(argv.end(), {self_exe(), "drill", "inject", "--end", "--drill-id", f.drill_id});
  auto r = srun_bounded(slurm_conf, std::move(argv), job, fmt::format("end marker on {}", node));
  return r ? "end marker written" : "end marker not written: " + r.error().message;
}

}  // namespace cmax::drill
