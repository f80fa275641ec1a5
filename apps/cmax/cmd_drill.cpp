// cmax drill: inject a synthetic GPU or node failure (the exact kernel lines, data/drills.json) and
// time, black-box through Slurm, how the provider's stack reacts: detected -> drained -> replaced
// -> returned. Nothing is injected without --nodes and --yes; the default prints the plan.
// Exit codes: 0 every awaited stage within its threshold; 1 a stage slow or never reached; 3 usage
// or environment error (nothing was injected).

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/command.h"
#include "core/clock.h"
#include "core/text_file.h"
#include "drill/inject.h"
#include "drill/live_site.h"
#include "drill/marker.h"
#include "drill/record.h"
#include "drill/reservation_restore.h"
#include "drill/run.h"
#include "html/charts.h"
#include "html/views.h"
#include "report/run_dir.h"
#include "sched/slurm.h"
#include "signals/drill_marker.h"

namespace cmax::app {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kExitOk = drill::kDrillOk, kExitEnv = drill::kDrillEnvError;

struct DrillFlags {
  drill::RunOptions o;  ///< drill run's flags (and inject's and cleanup's that share them)
  std::string run_dir;
  bool json = false;
  bool end_marker = false;  ///< drill inject --end
  int scontrol_timeout_ms = 5000;
  std::string kube_api, kube_token, kube_ca;
  drill::KubeFlags kube() const { return {kube_api, kube_token, kube_ca}; }
};

int env_error(const std::string& msg) {
  fmt::print(stderr, "cmax drill: {}\n", msg);
  return kExitEnv;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The plan (always shown unless --yes --json), and targets skipped as the drill goes.
class Printer final : public drill::Progress {
 public:
  explicit Printer(bool json) : json_(json) {}
  void plan(const drill::Plan& p) override {
    const drill::RunOptions& f = p.options;
    if (f.yes && json_) return;
    fmt::print("drill {} ({}): {} on {}{}\n", f.drill_id, p.scenario.id, p.scenario.title, fmt::join(p.nodes, ", "),
               f.yes ? "" : " -- plan only; add --yes to inject");
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      const auto& n = p.nodes[i];
      // The marker first: readers of the log tell the drill's lines from a real fault by it.
      fmt::print("  {} +0 ms <6> {}  (marker)\n", n, drill::begin_marker(f, n, p.steps).text);
      for (const auto& s : p.steps)
        fmt::print("  {} +{} ms <{}> {}  ({})\n", n, s.after_ms, s.level, s.line, p.local[i] ? "local /dev/kmsg" : "srun");
    }
    std::vector<std::string> replaced_by;
    if (!f.reservation.empty()) replaced_by.push_back("a spare joins reservation " + f.reservation);
    if (!f.partition.empty()) replaced_by.push_back("a node joins partition " + f.partition);
    if (!f.job.empty()) replaced_by.push_back("job " + f.job + " runs again elsewhere");
    fmt::print("  then watch {} every {} ms: detected (threshold {} s), drained ({} s){}{}\n",
               f.kubernetes() ? "Kubernetes" : "Slurm", f.poll_ms, f.detect_threshold_s, f.drain_threshold_s,
               replaced_by.empty() ? "" : fmt::format(", replaced when {} ({} s)", fmt::join(replaced_by, " or "), f.replace_threshold_s),
               f.wait_return ? ", returned to service" : "");
  }
  void warn(const std::string& message) override { fmt::print(stderr, "cmax drill: {}\n", message); }

 private:
  bool json_;
};

// The timeline as a chart beside the record (the one cmax report shows): each stage's dot, its
// uncertainty band, the thresholds missed, "never" marks.
void draw_timeline(const json& report, const std::string& dir) {
  if (auto view = html::drill_view(report)) {
    if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "timeline.svg").string(),
                                              html::svg_drill_timeline(*view));
        !w)
      fmt::print(stderr, "cmax drill: {}\n", w.error().message);
  } else {
    fmt::print(stderr, "cmax drill: timeline.svg not drawn: {}\n", view.error().message);
  }
}

void print_node(const json& n) {
  fmt::print("{}:\n", n["node"].get<std::string>());
  if (n.contains("error")) {
    fmt::print("  error: {}\n", n["error"].get<std::string>());
    return;
  }
  for (const auto& st : n["stages"]) {
    if (!st["awaited"].get<bool>()) continue;
    // The event happened after the last poll that did not see it and by the first that did.
    if (st["reached"].get<bool>())
      fmt::print("  {:<9} {:>10.1f} ms  (between {:.1f} and {:.1f} ms)  {}{}\n", st["stage"].get<std::string>(),
                 st["at_ms"].get<double>(), st["lower_ms"].get<double>(), st["at_ms"].get<double>(),
                 st["verdict"].get<std::string>(),
                 st["how"].get<std::string>().empty() ? "" : "  " + st["how"].get<std::string>());
    else
      fmt::print("  {:<9} {:>13}  {}\n", st["stage"].get<std::string>(), "-", st["verdict"].get<std::string>());
  }
  if (!n["after"].is_null())
    fmt::print("  now: {} {}\n", n["after"]["state"].get<std::string>(), n["after"]["reason"].get<std::string>());
  if (const auto& stuck = n.value("stuck", json()); stuck.is_object()) {
    fmt::print("  stuck before \"{}\":\n", stuck["stage"].get<std::string>());
    for (const auto& e : stuck["evidence"]) fmt::print("    {}\n", e.get<std::string>());
    if (!stuck["loop"].is_null()) fmt::print("  loop: {}\n", stuck["loop"].get<std::string>());
    fmt::print("  next: {}\n", stuck["next"].get<std::string>());
  }
  if (const auto& d = n["detector"]; d.is_object() && d.value("by", "none") != "none")
    fmt::print("  detected by {}{}\n", d["by"].get<std::string>(),
               d["owner"] == "rater" ? " (started by the rater, not the provider's: not credited to the provider; "
                                       "--provider-runs-cmax if the provider runs it)"
                                     : "");
}

void print_report(const json& report, const std::string& dir) {
  for (const auto& n : report["nodes"]) print_node(n);
  if (const auto& fleet = report.value("fleet", json()); fleet.is_object()) {
    fmt::print("fleet ({} nodes, {} at once; ms after the first injection):\n", fleet["nodes"].get<std::size_t>(),
               report["parallel"].get<std::size_t>());
    for (const auto& [name, st] : fleet["stages"].items()) {
      std::string line = fmt::format("  {:<9} {}/{}", name, st["reached"].get<std::size_t>(), st["of"].get<std::size_t>());
      if (!st["first_ms"].is_null()) line += fmt::format("  first {:.1f} ms", st["first_ms"].get<double>());
      if (!st["all_ms"].is_null()) line += fmt::format(", all by {:.1f} ms", st["all_ms"].get<double>());
      if (!st["not_reached"].empty())
        line += fmt::format("  not: {}", fmt::join(st["not_reached"].get<std::vector<std::string>>(), ", "));
      fmt::print("{}\n", line);
    }
    if (!report["reservation"].is_null())
      fmt::print("  spares before the drill: {}{}\n", fleet["spares_before_count"].get<std::size_t>(),
                 fleet["spares_before"].empty()
                     ? std::string()
                     : fmt::format(" ({})", fmt::join(fleet["spares_before"].get<std::vector<std::string>>(), ", ")));
  }
  fmt::print("run directory: {} (drill.json, injected.jsonl, timeline.svg); cmax drill cleanup --run {} --yes restores "
             "the nodes\n",
             dir, dir);
}

int run_drill(const DrillFlags& flags) {
  drill::RunOptions o = flags.o;
  if (o.out.empty())
    o.out = report::default_run_dir(core::format_utc_compact(core::SystemClock().now()) + "-drill");
  auto site = drill::make_live_site(o, flags.kube(), flags.scontrol_timeout_ms);
  if (!site) return env_error(site.error().message);
  Printer printer(flags.json);
  auto record = drill::run_drill(o, **site, core::SystemClock(), printer);
  if (!record) return env_error(record.error().message);
  if (!record->injected) return kExitOk;
  draw_timeline(record->report, record->dir);
  if (flags.json) fmt::print("{}\n", record->report.dump(2));
  else print_report(record->report, record->dir);
  return record->exit_code;
}

// The node-side injector srun runs: writes the scenario's lines and prints each as JSON.
int run_inject(const DrillFlags& flags) {
  const drill::RunOptions& f = flags.o;
  std::vector<drill::Injected> done;
  auto devkmsg = drill::DevkmsgGuard::raise();
  if (flags.end_marker) {
    auto r = drill::inject_kmsg({drill::end_marker_line(f.drill_id)}, f.kmsg, Clock::now(), done);
    if (!r) return env_error(r.error().message);
    return kExitOk;
  }
  auto scenario = drill::load_scenario(f.scenario);
  if (!scenario) return env_error(scenario.error().message);
  auto steps = drill::render(*scenario, drill::targets_for(f.drill_id, f.gpu));
  if (!steps) return env_error(steps.error().message);
  std::vector<drill::KmsgLine> lines = {drill::begin_marker(f, f.nodes.empty() ? drill::short_hostname() : f.nodes, *steps)};
  auto faults = drill::to_kmsg(*steps);
  lines.insert(lines.end(), faults.begin(), faults.end());
  auto r = drill::inject_kmsg(lines, f.kmsg, Clock::now(), done);
  fmt::print("{}\n", json{{"devkmsg", devkmsg.note()}}.dump());
  for (std::size_t i = 0; i < done.size(); ++i) {
    json j{{"t_unix", done[i].t_unix}, {"level", done[i].level}, {"text", done[i].text}};
    if (i == 0) j["marker"] = true;
    fmt::print("{}\n", j.dump());
  }
  if (!r) return env_error(r.error().message);
  return kExitOk;
}

// Puts back what a drill changed: nodes in service before it and held now are resumed, the
// reservations that held them are restored as they were (a REPLACE_DOWN reservation's spare goes
// back), and the drill's lines are ended in the nodes' kernel logs.
int run_cleanup(const DrillFlags& flags) {
  drill::RunOptions f = flags.o;
  std::ifstream in(std::filesystem::path(flags.run_dir) / "drill.json");
  if (!in) return env_error(fmt::format("open {}/drill.json: not a drill's run directory", flags.run_dir));
  auto report = json::parse(in, nullptr, false);
  if (report.is_discarded() || report.value("schema", "") != "cmax.drill/1")
    return env_error(fmt::format("{}/drill.json: not a cmax.drill/1 report", flags.run_dir));
  f.scheduler = report.value("scheduler", "slurm");
  f.drill_id = report.value("drill_id", "");
  if (!f.kubernetes()) {
    auto conf = sched::effective_slurm_conf(f.slurm_conf);
    if (!conf) return env_error(conf.error().message);
    f.slurm_conf = *conf;
  }
  auto site = drill::make_live_site(f, flags.kube(), flags.scontrol_timeout_ms, !f.yes);
  if (!site) return env_error(site.error().message);
  if (auto c = (*site)->connect(); !c) return env_error(c.error().message);
  sched::Scheduler& scheduler = (*site)->scheduler();
  int code = kExitOk;
  bool recorded = false;
  for (auto& n : report["nodes"]) {
    const std::string node = n.value("node", "");
    auto now = scheduler.node_state(node);
    if (!now) {
      fmt::print("{}: {}\n", node, now.error().message);
      code = kExitEnv;
      continue;
    }
    if (!now->drain_flag() && !now->down()) {
      fmt::print("{}: in service ({}): nothing to restore\n", node, now->state);
      continue;
    }
    // The drill's detector set the reason, not cmax: resuming needs force, and is what was asked.
    auto r = scheduler.resume(node, sched::Force::kYes);
    if (!r) {
      fmt::print("{}: {}\n", node, r.error().message);
      code = kExitEnv;
      continue;
    }
    if (r->dry_run) {
      fmt::print("{}: {} ({}): plan only; add --yes to resume\n", node, now->state,
                 now->reason.empty() ? "no reason" : now->reason);
      continue;
    }
    // When the drill's outage ended, for SLA accounting (cmax sla --drill).
    n["resumed_unix"] = unix_now();
    recorded = true;
    // What the node is now, read back: not what it was before the drill.
    auto after = scheduler.node_state(node);
    fmt::print("{}: {} -> {} ({}): resumed\n", node, now->state, after ? after->state : "unknown (" + after.error().message + ")",
               now->reason.empty() ? "no reason" : now->reason);
  }
  if (recorded) {
    const auto path = std::filesystem::path(flags.run_dir) / "drill.json";
    auto tmp = path;
    tmp += ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << report.dump(2) << "\n";
    std::error_code ec;
    if (!out.flush() || (out.close(), std::filesystem::rename(tmp, path, ec), ec))
      fmt::print(stderr, "cmax drill: record the resume in {}: cannot write it; cmax sla --drill will count the drill to now\n",
                 path.string());
  }
  if (!f.kubernetes() && report.contains("reservations_before") && report["reservations_before"].is_array()) {
    const sched::SlurmOptions so{f.slurm_conf, std::chrono::milliseconds(flags.scontrol_timeout_ms), !f.yes};
    for (const auto& jr : report["reservations_before"]) {
      auto before = drill::reservation_from_json(jr);
      if (!before) {
        fmt::print("{}\n", before.error().message);
        code = kExitEnv;
        continue;
      }
      auto r = drill::restore_reservation(so, *before);
      if (!r) {
        fmt::print("{}\n", r.error().message);
        code = kExitEnv;
        continue;
      }
      fmt::print("{}\n", r->summary);
    }
  }
  if (f.yes && !f.drill_id.empty()) {
    // The reservations as they are now (restored above): an srun to the node must name the one
    // that holds it now.
    std::vector<sched::Reservation> reservations;
    if (auto all = (*site)->reservations()) reservations = std::move(*all);
    for (const auto& n : report["nodes"]) {
      if (n.contains("end_marker") && n["end_marker"].get<std::string>() == "end marker written") continue;
      const std::string node = n.value("node", "");
      const bool local = n.value("inject", "") == "local";
      fmt::print("{}: {}\n", node, (*site)->end_marker(f, node, local, drill::reservation_of(reservations, node)));
    }
  }
  return code;
}

}  // namespace

Runner setup_drill(CLI::App& sub) {
  auto f = std::make_shared<DrillFlags>();
  sub.description(
      "Fault drills: write into the kernel ring buffer the exact lines a failing GPU or node prints\n"
      "(data/drills.json; docs/drills.md), then time through Slurm or Kubernetes, black-box, how the\n"
      "provider's stack reacts: injected -> detected (DRAIN/DOWN or a new reason) -> drained (nothing\n"
      "running) -> replaced (a spare joined --reservation or --partition, or --job runs again on other\n"
      "nodes) -> returned (back in service, with --wait-return). Each stage has a\n"
      "timeout and a verdict; 'never' is a result. Times carry their uncertainty: the event happened\n"
      "between the last poll that did not see it and the first that did.\n\n"
      "On Kubernetes (--scheduler kubernetes) detected is a cordon, a new NoSchedule/NoExecute taint, a\n"
      "problem condition (node-problem-detector's) or NotReady; drained is that with no workload pod left\n"
      "(DaemonSet and static pods do not count); there is no replaced stage.\n\n"
      "Nothing is injected without --nodes and --yes; without --yes the plan is printed. A drill refuses\n"
      "nodes already out of service, unknown nodes, or an unreachable slurmctld or API server, and then\n"
      "changes nothing.\n"
      "Exit codes: 0 every awaited stage within its threshold; 1 a stage slow or never; 3 usage or\n"
      "environment error.");
  sub.require_subcommand(1);
  auto common = [f](CLI::App* c) {
    c->add_option("--slurm-conf", f->o.slurm_conf, "slurm.conf for scontrol and srun (SLURM_CONF)");
    c->add_option("--scontrol-timeout-ms", f->scontrol_timeout_ms, "Deadline of each scontrol call or API request")
        ->capture_default_str();
    c->add_option("--kube-api", f->kube_api,
                  "Kubernetes API server URL (default: in-cluster, from KUBERNETES_SERVICE_HOST/PORT; plain http\n"
                  "only to loopback)");
    c->add_option("--kube-token-file", f->kube_token, "Bearer token file (default: the pod's service account token)");
    c->add_option("--kube-ca-file", f->kube_ca, "CA bundle for the API server (default: the service account's ca.crt)");
  };
  auto* list = sub.add_subcommand("list", "List the scenarios");
  auto* run = sub.add_subcommand("run", "Inject a scenario on --nodes and time the reaction");
  run->add_option("--scenario", f->o.scenario, "Scenario id (cmax drill list)")->required();
  run->add_option("--scheduler", f->o.scheduler,
                  "What to watch: 'slurm' (scontrol) or 'kubernetes' (the Node and its pods through the API: a\n"
                  "cordon, any new NoSchedule/NoExecute taint, a problem condition, NotReady)")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  run->add_option("--nodes", f->o.nodes, "Target nodes, a Slurm hostlist (n1,n2 or n[1-2])");
  run->add_flag("--yes", f->o.yes, "Inject for real (without it: print the plan)");
  run->add_option("--max-nodes", f->o.max_nodes, "The most nodes one drill may touch")->capture_default_str();
  run->add_option("--rack", f->o.rack,
                  "Drill every node of a rack at once (with --parallel): on Slurm a switch or block of the topology "
                  "(scontrol show topology NAME), on Kubernetes a node label selector (e.g. rack=r07)");
  run->add_option("--workload", f->o.workload,
                  "Kubernetes: a label selector (app=train) of the workload's pods; replaced is when the pods that ran "
                  "on the target run again, Running, on other nodes");
  run->add_flag("--reboot", f->o.reboot,
                "The remediation is a reboot, requested by the drill: once the node is drained, scontrol reboot "
                "nextstate=RESUME (recorded in injected.jsonl); times reboot_requested, down, rebooted (a new "
                "BootTime) and returned");
  run->add_flag("--await-reboot", f->o.await_reboot,
                "The remediation is a reboot the provider's own flow requests: time reboot_requested, down, rebooted "
                "and returned without requesting anything");
  run->add_option("--parallel", f->o.parallel,
                  "Targets drilled at once (each with its own clock and scontrol sessions; injections one at a "
                  "time); the report adds the fleet's numbers: how many were detected, drained and replaced, and "
                  "when the last one was")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  run->add_option("--reservation", f->o.reservation,
                  "A reservation to watch for the replacement (e.g. Flags=REPLACE_DOWN with spares)");
  run->add_option("--partition", f->o.partition, "A partition to watch for the replacement: a node added to it");
  run->add_option("--job", f->o.job,
                  "A job running on the target to watch for the replacement: requeued and running on other\n"
                  "nodes (Slurm holds a requeued job 121 s unless the site's automation starts it sooner)");
  run->add_option("--inject", f->o.inject,
                  "'local' (this machine's /dev/kmsg), 'srun' (srun --nodelist on the node), or 'auto' (local for\n"
                  "this host's own name, else srun)")
      ->check(CLI::IsMember({"auto", "local", "srun"}))
      ->capture_default_str();
  run->add_option("--gpu", f->o.gpu, "The GPU's PCI function to name in the lines (default 0000:3b:00.0)");
  run->add_option("--drill-id", f->o.drill_id, "Names this drill in lines that carry a process name (default: random)");
  run->add_option("--poll-ms", f->o.poll_ms, "Pause between polls of the scheduler")->capture_default_str();
  run->add_option("--detect-threshold-s", f->o.detect_threshold_s, "Detected within this is ok")->capture_default_str();
  run->add_option("--drain-threshold-s", f->o.drain_threshold_s, "Drained within this is ok")->capture_default_str();
  run->add_option("--replace-threshold-s", f->o.replace_threshold_s, "Replaced within this is ok")->capture_default_str();
  run->add_option("--detect-timeout-s", f->o.detect_timeout_s, "Not detected by then: never")->capture_default_str();
  run->add_option("--drain-timeout-s", f->o.drain_timeout_s, "Not drained by then: never")->capture_default_str();
  run->add_option("--replace-timeout-s", f->o.replace_timeout_s, "Not replaced by then: never")->capture_default_str();
  run->add_flag("--wait-return", f->o.wait_return, "Also wait for the node to return to service (an operator's resume)");
  run->add_option("--return-timeout-s", f->o.return_timeout_s, "Not returned by then: never")->capture_default_str();
  run->add_option("--out", f->o.out, "Run directory (default ~/.cmax/runs/<UTC timestamp>-drill/)");
  run->add_flag("--provider-runs-cmax", f->o.provider_runs_cmax,
                "The provider runs cmaxd or cmax check as its own detector: credit it with detections they make\n"
                "(without it a cmax detector is taken for the rater's own, and only the rest is the provider's)");
  run->add_option("--kmsg", f->o.kmsg, "Kernel log device for local injection")->capture_default_str();
  run->add_flag("--json", f->json, "Print {\"schema\": \"cmax.drill/1\", ...} (docs/drills.md)");
  common(run);
  auto* inject = sub.add_subcommand("inject", "Write a scenario's lines into this machine's /dev/kmsg (what srun runs)");
  inject->add_option("--scenario", f->o.scenario, "Scenario id (not with --end)");
  inject->add_option("--drill-id", f->o.drill_id, "Drill id")->required();
  inject->add_option("--gpu", f->o.gpu, "The GPU's PCI function");
  inject->add_option("--kmsg", f->o.kmsg, "Kernel log device")->capture_default_str();
  inject->add_option("--node", f->o.nodes, "The node's name, for the drill's marker line (default: this host's)");
  inject->add_option("--until", f->o.until_unix, "Unix time after which the drill is over, for the marker line");
  inject->add_flag("--end", f->end_marker, "Write only the drill's end marker (cmax drill cleanup runs this)");
  auto* cleanup = sub.add_subcommand(
      "cleanup", "Return the nodes a drill took out of service, restore the reservations that held them, and end the\n"
                 "drill's lines in the nodes' kernel logs (--yes to do it)");
  cleanup->add_option("--run", f->run_dir, "The drill's run directory")->required();
  cleanup->add_flag("--yes", f->o.yes, "Resume for real (without it: print what would be resumed)");
  common(cleanup);
  return [f, list, run, inject, cleanup]() -> int {
    if (list->parsed()) {
      auto all = drill::builtin_scenarios();
      if (!all) return env_error(all.error().message);
      for (const auto& s : *all)
        fmt::print("{:<16} {:<12} {}\n", s.id, signals::to_string(s.expect), s.title);
      return kExitOk;
    }
    if (run->parsed()) return run_drill(*f);
    if (inject->parsed()) return run_inject(*f);
    if (cleanup->parsed()) return run_cleanup(*f);
    return kExitEnv;
  };
}

}  // namespace cmax::app
