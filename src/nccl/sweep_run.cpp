#include "nccl/sweep_run.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "core/text_file.h"
#include "nccl/parse.h"

namespace cmax::nccl {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
constexpr std::size_t kMaxLogBytes = 64u << 20;  // far above any nccl-tests log; a bound, not a limit

bool stopped(const SweepRunOptions& o) { return o.stop && o.stop->load(); }

// --resume: the steps an earlier sweep into this directory finished (no error, exit 0), by name.
std::map<std::string, json> finished_steps(const std::string& dir) {
  std::map<std::string, json> finished;
  auto prev = core::read_text_file((fs::path(dir) / "nccl.json").string(), kMaxLogBytes);
  if (!prev) return finished;
  auto doc = json::parse(*prev, nullptr, false);
  if (doc.is_object() && doc.contains("sweep") && doc["sweep"].is_object() && doc["sweep"].contains("steps") &&
      doc["sweep"]["steps"].is_array())
    for (const auto& sj : doc["sweep"]["steps"])
      if (sj.is_object() && !sj.contains("error") && sj.value("exit_code", -1) == 0 && sj.contains("step") &&
          sj["step"].is_string())
        finished[sj["step"].get<std::string>()] = sj;
  return finished;
}

AnalysedRun step_run(const fs::path& log, std::size_t k, Run run, const std::string& name, const SweepStep& s) {
  AnalysedRun a{log.string(), k, std::move(run)};
  a.label = name;
  a.nodes_hint = s.nodes;
  a.variant = s.variant;
  if (a.run.nodes == 0) a.run.nodes = s.nodes;
  return a;
}

// The step's record from the earlier sweep when it finished with the same argv and its log still
// parses; its runs are appended to `runs`.
std::optional<json> keep_finished(const std::map<std::string, json>& finished, const SweepStep& s,
                                  const std::string& name, const fs::path& log, std::vector<AnalysedRun>& runs) {
  auto it = finished.find(name);
  if (it == finished.end() || it->second.value("argv", json::array()) != json(s.argv)) return std::nullopt;
  auto text = core::read_text_file(log.string(), kMaxLogBytes);
  if (!text) return std::nullopt;
  auto parsed = parse_nccl_tests(*text);
  if (!parsed || parsed->runs.empty()) return std::nullopt;
  for (std::size_t k = 0; k < parsed->runs.size(); ++k) runs.push_back(step_run(log, k, std::move(parsed->runs[k]), name, s));
  json sj = it->second;
  sj["kept"] = true;
  return sj;
}

struct StepState {
  bool partial = false, interrupted = false;
};

// Runs step `s` and records it into `sj`; its runs are appended to `runs`. False when the launcher
// could not start (recorded, no log written).
bool measure_step(const SweepRunOptions& o, const SweepStep& s, const std::string& name, const fs::path& log,
                  const StepLauncher& launch, const SweepHooks& hooks, json& sj, std::vector<AnalysedRun>& runs,
                  StepState& st) {
  core::ProcessSpec spec{s.argv, o.step_timeout, kMaxLogBytes, s.env};
  auto outcome = launch(spec);
  if (!outcome) {
    sj["error"] = outcome.error().message;
    st.partial = true;
    return false;
  }
  const core::ProcessResult* r = &outcome->result;
  if (outcome->interrupted) {
    st.interrupted = true;
    sj["interrupted"] = true;
  }
  std::ofstream(log) << r->out;
  if (!r->err.empty()) std::ofstream(fs::path(o.dir) / (s.log_name + ".stderr")) << r->err;
  sj["exit_code"] = r->exit_code;
  sj["wall_s"] = static_cast<double>(r->wall.count()) / 1e6;
  // The launcher's own words, whenever the step did not give a table: they say why.
  const std::string said = core::trim(r->err).empty()
                               ? std::string()
                               : fmt::format("; {} said: {}", s.argv.front(), core::clip(core::trim(r->err), 400));
  if (outcome->interrupted)
    sj["error"] = "interrupted (Ctrl-C or SIGTERM): the step's processes were stopped";
  else if (r->timed_out || r->exit_code != 0)
    sj["error"] = r->timed_out ? fmt::format("timed out after {} s (--step-timeout-s){}", o.step_timeout.count(), said)
                               : fmt::format("exited {}{}", r->exit_code,
                                             said.empty() ? std::string(" and printed nothing on stderr") : said);
  auto parsed = parse_nccl_tests(r->out);
  if (!parsed) {
    if (!sj.contains("error")) sj["error"] = parsed.error().message + said;
    st.partial = true;
    return true;
  }
  for (std::size_t k = 0; k < parsed->runs.size(); ++k) {
    AnalysedRun a = step_run(log, k, std::move(parsed->runs[k]), name, s);
    // Where the ranks really ran: a "4-node" step whose Rank lines name one host is a one-host
    // run, and scaling is judged on the hosts the log shows (run.nodes), not on the step's name.
    if (!a.run.hosts.empty() && static_cast<int>(a.run.hosts.size()) != s.nodes && k == 0) {
      std::string hosts;
      for (const auto& h : a.run.hosts) hosts += (hosts.empty() ? "" : ",") + h;
      sj["ran_on_hosts"] = a.run.hosts;
      sj["warning"] = fmt::format("asked for {} node(s), the ranks ran on {} host(s) ({}): judged as {} node(s)",
                                  s.nodes, a.run.hosts.size(), core::clip(hosts, 200), a.run.hosts.size());
      if (hooks.on_warning) hooks.on_warning(name, sj["warning"].get<std::string>());
    }
    runs.push_back(std::move(a));
  }
  if (sj.contains("error")) st.partial = true;
  return true;
}

SweepStepRecord record_of(const json& sj) {
  auto str = [&](const char* k) { return sj.contains(k) && sj[k].is_string() ? sj[k].get<std::string>() : std::string(); };
  return {str("step"), str("error"), sj.contains("wall_s") && sj["wall_s"].is_number() ? sj["wall_s"].get<double>() : 0.0,
          sj.contains("kept")};
}

}  // namespace

SweepRunResult run_sweep(const SweepRunOptions& o, const std::vector<Reference>& refs, const StepLauncher& launch,
                         const SweepHooks& hooks) {
  SweepRunResult res;
  json steps_json = json::array();
  StepState st;
  const std::map<std::string, json> finished = o.resume ? finished_steps(o.dir) : std::map<std::string, json>{};
  const std::size_t n = o.steps.size();
  for (std::size_t i = 0; i < n && !stopped(o); ++i) {
    const auto& s = o.steps[i];
    const fs::path log = fs::path(o.dir) / s.log_name;
    const std::string name = s.log_name.substr(0, s.log_name.size() - 4);
    if (auto sj = keep_finished(finished, s, name, log, res.runs)) {
      steps_json.push_back(*sj);
      res.steps.push_back(record_of(*sj));
      ++res.kept;
      if (hooks.on_done) hooks.on_done(i, n, res.steps.back());
      continue;
    }
    if (hooks.on_start) hooks.on_start(i, n, s);
    json sj{{"step", name}, {"test", s.test}, {"nodes", s.nodes},
            {"variant", s.variant}, {"argv", s.argv}, {"env", s.env}, {"log", log.string()}};
    const bool ran = measure_step(o, s, name, log, launch, hooks, sj, res.runs, st);
    res.steps.push_back(record_of(sj));
    steps_json.push_back(sj);
    if (ran && hooks.on_done) hooks.on_done(i, n, res.steps.back());
  }
  res.interrupted = st.interrupted || stopped(o);
  const bool anomaly = analyse_runs(res.runs, refs, o.dir, o.charts, res.scaling);
  res.exit_code = anomaly ? kSweepAnomaly : kSweepClean;
  if (st.partial && res.exit_code == kSweepClean) res.exit_code = kSweepPartial;
  if (res.interrupted) res.exit_code = kSweepPartial;  // a verdict on part of a sweep is no verdict on the sweep
  json recipe_json = json::array();
  for (const auto& fi : o.findings)
    recipe_json.push_back({{"level", fi.level}, {"variable", fi.variable}, {"message", fi.message}});
  const auto& p = o.plan;
  json report{{"schema", "cmax.nccl/1"},
              {"sweep",
               {{"launcher", p.launcher == Launcher::kSrun ? "srun" : "mpirun"},
                {"node_counts", p.node_counts},
                {"ranks_per_node", p.ranks_per_node},
                {"hosts", p.hosts},
                {"reservation", p.reservation},
                {"steps", steps_json}}},
              {"recipe", recipe_json},
              {"runs", json::array()},
              {"scaling", scaling_json(res.scaling)},
              {"exit_code", res.exit_code},
              {"run_dir", o.dir},
              {"interrupted", res.interrupted},
              {"notes", o.notes},
              {"kept_steps", res.kept}};
  for (const auto& a : res.runs) report["runs"].push_back(run_json(a));
  res.report = report.dump(2);
  std::ofstream(fs::path(o.dir) / "nccl.json") << res.report << "\n";
  return res;
}

StepLauncher process_launcher(const std::atomic<bool>* stop) {
  return [stop](const core::ProcessSpec& spec) { return run_step_process(spec, stop); };
}

}  // namespace cmax::nccl
