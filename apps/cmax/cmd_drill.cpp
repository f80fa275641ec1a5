// cmax drill: inject a synthetic GPU or node failure (the exact kernel lines, data/drills.json) and
// time, black-box through Slurm, how the provider's stack reacts: detected -> drained -> replaced
// -> returned. Nothing is injected without --nodes and --yes; the default prints the plan.
// Exit codes: 0 every awaited stage within its threshold; 1 a stage slow or never reached; 3 usage
// or environment error (nothing was injected).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/command.h"
#include "audit/audit.h"
#include "audit/parse/health_check.h"
#include "core/clock.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/text_file.h"
#include "drill/inject.h"
#include "drill/reservation_restore.h"
#include "signals/drill_marker.h"
#include "sched/slurm_reservation.h"
#include "sched/slurm_topology.h"
#include "drill/scenario.h"
#include "drill/slurm_objects.h"
#include "drill/stuck.h"
#include "drill/timeline.h"
#include "drill/watch.h"
#include "html/charts.h"
#include "html/views.h"
#include "report/run_dir.h"
#include "sched/policy.h"
#include "sched/kubernetes.h"
#include "sched/kubernetes_parse.h"
#include "sched/slurm.h"
#include "sched/slurm_parse.h"

namespace cmax::app {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kExitOk = 0, kExitStageFailed = 1, kExitEnv = audit::kExitUsage;

struct DrillFlags {
  std::string scenario, nodes, slurm_conf, reservation, partition, job, inject = "auto", out, gpu, kmsg = "/dev/kmsg", run_dir;
  std::string workload;  ///< --workload SELECTOR (Kubernetes): pods whose rescheduling is the replacement
  std::string rack;      ///< --rack: a Slurm topology switch or block, or (Kubernetes) a node label selector
  bool yes = false, json = false, wait_return = false, provider_runs_cmax = false;
  bool reboot = false;        ///< --reboot: once drained, the drill requests the reboot (scontrol reboot nextstate=RESUME)
  bool await_reboot = false;  ///< --await-reboot: time the provider's own reboot flow
  double until_unix = 0;  ///< drill inject: the marker's until
  bool end_marker = false;  ///< drill inject --end
  int max_nodes = 2, poll_ms = 5, scontrol_timeout_ms = 5000;
  int parallel = 8;  ///< targets drilled at once
  int detect_timeout_s = 900, drain_timeout_s = 1800, replace_timeout_s = 1800, return_timeout_s = 3600;
  int detect_threshold_s = 60, drain_threshold_s = 300, replace_threshold_s = 900;
  std::string drill_id;
  std::string scheduler = "slurm", kube_api, kube_token, kube_ca;
  bool kubernetes() const { return scheduler == "kubernetes"; }
};

Result<sched::KubernetesOptions> kube_options(const DrillFlags& f, bool dry_run) {
  sched::KubernetesOptions ko;
  if (f.kube_api.empty()) {
    auto in = sched::KubernetesOptions::in_cluster();
    if (!in) return fail("{} (or give --kube-api)", in.error().message);
    ko = *in;
  } else {
    ko.api_url = f.kube_api;
  }
  if (!f.kube_token.empty()) ko.token_path = f.kube_token;
  if (!f.kube_ca.empty()) ko.ca_path = f.kube_ca;
  ko.timeout = std::chrono::milliseconds(f.scontrol_timeout_ms);
  ko.dry_run = dry_run;
  return ko;
}

// The scheduler a drill watches and cleanup resumes through, and a poller of it.
struct Backend {
  std::unique_ptr<sched::Scheduler> scheduler;
  std::unique_ptr<drill::Poller> poller;
};

Result<Backend> make_backend(const DrillFlags& f, bool dry_run) {
  Backend b;
  if (f.kubernetes()) {
    auto ko = kube_options(f, dry_run);
    if (!ko) return Unexpected<Error>{ko.error()};
    b.scheduler = std::make_unique<sched::KubernetesScheduler>(*ko);
    b.poller = std::make_unique<drill::KubePoller>(*ko);
  } else {
    sched::SlurmOptions so{f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), dry_run};
    b.scheduler = std::make_unique<sched::SlurmScheduler>(so);
    b.poller = std::make_unique<drill::SlurmPoller>(so);
  }
  return b;
}

int env_error(const std::string& msg) {
  fmt::print(stderr, "cmax drill: {}\n", msg);
  return kExitEnv;
}

std::string short_hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

std::string new_drill_id() {
  std::random_device rd;
  return fmt::format("{:04x}", rd() & 0xffff);
}

Result<drill::Scenario> load_scenario(const std::string& id) {
  auto all = drill::builtin_scenarios();
  if (!all) return Unexpected<Error>{all.error()};
  const drill::Scenario* s = drill::find_scenario(*all, id);
  if (!s) {
    std::string ids;
    for (const auto& x : *all) ids += (ids.empty() ? "" : ", ") + x.id;
    return fail("no scenario \"{}\": one of {} (cmax drill list)", id, ids);
  }
  return *s;
}

drill::Targets targets_for(const DrillFlags& f) {
  drill::Targets t;
  t.drill_id = f.drill_id;
  if (!f.gpu.empty()) t.gpu = f.gpu;
  return t;
}

std::vector<drill::KmsgLine> to_kmsg(const std::vector<drill::Step>& steps) {
  std::vector<drill::KmsgLine> out;
  for (const auto& s : steps) out.push_back({s.after_ms, s.level, s.line});
  return out;
}

json state_json(const sched::NodeState& s) {
  return {{"state", s.state}, {"reason", s.reason}};
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The marker line a drill writes before its fault lines (signals/drill_marker.h).
drill::KmsgLine begin_marker(const DrillFlags& f, const std::string& node, const std::vector<drill::Step>& steps) {
  std::vector<std::string> texts;
  for (const auto& s : steps) texts.push_back(s.line);
  return {0, 6, signals::format_drill_begin(f.drill_id, f.scenario, node, f.until_unix, texts)};
}

// The active reservation holding `node`, or empty: an srun to a reserved node must name it, or it
// queues behind it.
std::string reservation_of(const std::vector<sched::Reservation>& all, const std::string& node) {
  for (const auto& r : all)
    if (r.state == "ACTIVE" && r.contains(node)) return r.name;
  return {};
}

std::vector<std::string> srun_to(const DrillFlags& f, const std::string& node, const std::string& reservation,
                                 std::string_view job_name) {
  std::vector<std::string> argv = {"srun", "--nodelist=" + node, "-N1", "-n1", "--quiet", "--immediate=10",
                                   fmt::format("--job-name={}", job_name)};
  if (!reservation.empty()) argv.push_back("--reservation=" + reservation);
  (void)f;
  return argv;
}

// Runs an srun to one node, bounded; on any failure cancels its job by name, so nothing of the
// drill stays queued to run later on a node someone has resumed.
Result<core::ProcessResult> srun_bounded(const DrillFlags& f, std::vector<std::string> argv, std::string_view job_name,
                                         std::string_view what) {
  core::ProcessSpec spec{std::move(argv), std::chrono::seconds(60), 1u << 20};
  if (!f.slurm_conf.empty()) spec.extra_env.push_back("SLURM_CONF=" + f.slurm_conf);
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

// Injects on `node`: locally (this machine's /dev/kmsg) or through srun on the node itself, the
// drill's marker first.
// `devkmsg` gets what was done to printk_devkmsg around the writes (DevkmsgGuard::note), for the
// audit record.
Result<std::vector<drill::Injected>> inject_on(const DrillFlags& f, const std::string& node,
                                               const std::vector<drill::Step>& steps, Clock::time_point t0,
                                               bool local, const std::string& reservation, std::string& devkmsg_note) {
  std::vector<drill::Injected> done;
  if (local) {
    std::vector<drill::KmsgLine> lines = {begin_marker(f, node, steps)};
    auto faults = to_kmsg(steps);
    lines.insert(lines.end(), faults.begin(), faults.end());
    auto devkmsg = drill::DevkmsgGuard::raise();
    devkmsg_note = devkmsg.note();
    if (auto r = drill::inject_kmsg(lines, f.kmsg, t0, done); !r)
      return fail("inject on {}: {} ({} of {} lines written)", node, r.error().message, done.size(), lines.size());
    done.erase(done.begin());  // the marker is no fault line
    return done;
  }
  char self[4096] = {0};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string cmax = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : "cmax";
  const std::string job = "cmaxdrill-" + f.drill_id;
  auto argv = srun_to(f, node, reservation, job);
  argv.insert(argv.end(), {cmax, "drill", "inject", "--scenario", f.scenario, "--drill-id", f.drill_id, "--node", node,
                           "--until", fmt::format("{:.0f}", f.until_unix)});
  if (!f.gpu.empty()) argv.insert(argv.end(), {"--gpu", f.gpu});
  auto r = srun_bounded(f, std::move(argv), job, fmt::format("inject on {}", node));
  if (!r) return Unexpected<Error>{r.error()};
  // The remote side prints one JSON object per line written; its times are its own clock's.
  std::istringstream in(r->out);
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("devkmsg") && j["devkmsg"].is_string()) devkmsg_note = j["devkmsg"].get<std::string>();
    if (j.value("marker", false) || !j.contains("text")) continue;
    done.push_back({j.value("t_unix", 0.0), std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count(),
                    j.value("level", 4), j.value("text", "")});
  }
  return done;
}

// Ends the drill in the node's kernel log (signals/drill_marker.h), so that detectors reading the
// log later do not act on its lines again. Best effort: what happened is returned for the output.
std::string write_end_marker(const DrillFlags& f, const std::string& node, bool local, const std::string& reservation) {
  const drill::KmsgLine end{0, 6, signals::format_drill_end(f.drill_id)};
  if (local) {
    auto devkmsg = drill::DevkmsgGuard::raise();
    std::vector<drill::Injected> done;
    auto r = drill::inject_kmsg({end}, f.kmsg, Clock::now(), done);
    return r ? "end marker written" : "end marker not written: " + r.error().message;
  }
  char self[4096] = {0};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string cmax = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : "cmax";
  const std::string job = "cmaxdrill-" + f.drill_id + "-end";
  auto argv = srun_to(f, node, reservation, job);
  argv.insert(argv.end(), {cmax, "drill", "inject", "--end", "--drill-id", f.drill_id});
  auto r = srun_bounded(f, std::move(argv), job, fmt::format("end marker on {}", node));
  return r ? "end marker written" : "end marker not written: " + r.error().message;
}

// Who took the node out, from the reason the first detecting poll saw.
json detector_of(const std::vector<drill::Observation>& seen, const sched::NodeState& before, bool provider_runs_cmax) {
  for (const auto& o : seen) {
    const auto& t = o.target;
    if (!(t.drain_flag() || t.down()) || (t.reason == before.reason && t.state == before.state)) continue;
    std::string by = "the provider's stack";
    std::string owner = "provider";
    const std::string cmaxd_prefix(sched::kReasonPrefix);
    const std::string check_prefix = cmaxd_prefix + "healthcheck: ";
    if (t.reason.rfind(check_prefix, 0) == 0) by = "cmax check (HealthCheckProgram)";
    else if (t.reason.rfind(cmaxd_prefix, 0) == 0) by = "cmaxd";
    if (by != "the provider's stack" && !provider_runs_cmax) owner = "rater";
    return {{"by", by}, {"owner", owner}, {"reason", t.reason}, {"reason_user", t.reason_user}, {"state", t.state}};
  }
  return {{"by", "none"}, {"owner", nullptr}, {"reason", ""}};
}

// Idle nodes in service outside every active reservation: what a REPLACE_DOWN reservation can swap
// in. nullopt when the nodes or the reservations could not be read.
std::optional<std::vector<std::string>> idle_outside_reservations(const sched::SlurmOptions& so) {
  auto nodes_text = sched::run_scontrol(so, {so.scontrol, "-o", "show", "nodes"}, 64u << 20);
  auto res_text = sched::run_scontrol(so, {so.scontrol, "-o", "show", "reservation"}, 16u << 20);
  if (!nodes_text || !res_text) return std::nullopt;
  auto nodes = sched::parse_scontrol_nodes(*nodes_text);
  auto reservations = sched::parse_scontrol_reservations(*res_text);
  if (!nodes || !reservations) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& n : *nodes) {
    if (n.base != "IDLE" || !n.flags.empty()) continue;
    const bool reserved = std::any_of(reservations->begin(), reservations->end(), [&](const sched::Reservation& r) {
      return r.state == "ACTIVE" && r.contains(n.name);
    });
    if (!reserved) out.push_back(n.name);
  }
  return out;
}

// The numbers a rater quotes for a drill of several nodes at once: how many reached each stage, and
// when (on the fleet's clock: ms after the first injection) the first and the last one did;
// which were not replaced; the spares there were.
json fleet_summary(const json& nodes, const std::vector<std::string>& spares_before) {
  double first_injection = -1;
  for (const auto& n : nodes)
    if (n.contains("injected_at_ms")) {
      const double t = n["injected_at_ms"].get<double>();
      first_injection = first_injection < 0 ? t : std::min(first_injection, t);
    }
  json stages = json::object();
  for (std::string_view name : {"detected", "drained", "replaced", "returned"}) {
    std::vector<double> at;
    std::vector<std::string> missing;
    bool awaited = false;
    for (const auto& n : nodes) {
      if (!n.contains("stages")) continue;
      for (const auto& st : n["stages"]) {
        if (st["stage"] != name) continue;
        awaited = awaited || st["awaited"].get<bool>();
        if (st["reached"].get<bool>())
          at.push_back(n["injected_at_ms"].get<double>() - first_injection + st["at_ms"].get<double>());
        else
          missing.push_back(n["node"].get<std::string>());
      }
    }
    if (!awaited) continue;
    std::sort(at.begin(), at.end());
    stages[std::string(name)] = {{"reached", at.size()},
                                 {"of", at.size() + missing.size()},
                                 {"at_ms", at},
                                 {"first_ms", at.empty() ? json(nullptr) : json(at.front())},
                                 {"all_ms", missing.empty() && !at.empty() ? json(at.back()) : json(nullptr)},
                                 {"not_reached", missing}};
  }
  return {{"nodes", nodes.size()}, {"stages", stages}, {"spares_before", spares_before},
          {"spares_before_count", spares_before.size()}};
}

// The nodes of --rack: on Slurm a switch or block of the topology (`scontrol show topology NAME`:
// SwitchName= or BlockName= with Nodes=), on Kubernetes the nodes a label selector names
// (topology.kubernetes.io/zone=..., a rack label).
Result<std::vector<std::string>> rack_nodes(const DrillFlags& f) {
  if (f.kubernetes()) {
    auto options = kube_options(f, true);
    if (!options) return Unexpected<Error>{options.error()};
    sched::KubernetesScheduler api(*options);
    auto text = api.get("/api/v1/nodes?labelSelector=" + sched::kube::encode_query_value(f.rack));
    if (!text) return fail("--rack {}: list the nodes: {}", f.rack, text.error().message);
    auto page = sched::kube::parse_node_list(*text);
    if (!page) return fail("--rack {}: {}", f.rack, page.error().message);
    std::vector<std::string> out;
    for (const auto& n : page->nodes) out.push_back(n.name);
    return out;
  }
  const sched::SlurmOptions so{f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), false};
  auto text = sched::run_scontrol(so, {so.scontrol, "show", "topology", f.rack});
  if (!text) return fail("--rack {}: {}", f.rack, text.error().message);
  for (const auto& unit : sched::parse_scontrol_topology(*text)) {
    if (unit.name != f.rack) continue;
    if (unit.nodes.empty()) return fail("--rack {}: the {} lists no node", f.rack, unit.block ? "block" : "switch");
    return sched::expand_hostlist(unit.nodes);
  }
  return fail("--rack {}: no switch or block of that name in Slurm's topology (scontrol show topology; "
              "TopologyPlugin topology/tree or topology/block)",
              f.rack);
}

// --reboot: waits (bounded by the drain timeout) until `node` is drained, then asks Slurm to reboot
// it and return it: `scontrol reboot nextstate=RESUME reason="cmax drill ID: reboot" NODE`. What
// was sent, when (ms after the injection) and what came back.
json request_reboot(const sched::SlurmOptions& so, const DrillFlags& f, const std::string& node, Clock::time_point t0,
                    std::chrono::milliseconds bound) {
  const auto deadline = t0 + bound;
  bool drained = false;
  while (!drained && Clock::now() < deadline) {
    auto out = sched::run_scontrol(so, {so.scontrol, "-o", "show", "node", node});
    if (out)
      if (auto n = sched::parse_scontrol_node(*out); n && n->drained()) drained = true;
    if (!drained) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!drained) return {{"requested", false}, {"result", "not drained within the drain timeout: no reboot requested"}};
  const std::vector<std::string> argv = {so.scontrol, "reboot", "nextstate=RESUME",
                                         fmt::format("reason=cmax drill {}: reboot", f.drill_id), node};
  const double at_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double t_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto r = sched::run_scontrol(so, argv);
  return {{"requested", r.has_value()},
          {"requested_ms", at_ms},
          {"t_unix", t_unix},
          {"command", fmt::format("{}", fmt::join(argv, " "))},
          {"result", r ? std::string("accepted") : r.error().message}};
}

// Why an awaited stage did not complete (drill/stuck.h): the node as last seen, the controller's
// health-check setup (scontrol show config), the program itself when it is on this host, the
// node's slurmd log when the node is this machine, and the reservations holding it. Read once the
// watch has given up; reads only.
json stuck_report(const sched::SlurmOptions& so, const std::string& stage, const sched::NodeState& node, bool local,
                  const std::vector<sched::Reservation>& reservations, const std::string& watched_reservation,
                  const std::vector<std::string>& spares_before) {
  drill::StuckEvidence ev;
  ev.stage = stage;
  ev.node = node;
  if (stage == "replaced" && !watched_reservation.empty()) {
    ev.reservation = watched_reservation;
    for (const auto& r : reservations)
      if (r.name == watched_reservation) ev.reservation_replaces = r.has_flag("REPLACE_DOWN");
    ev.spares_before = spares_before;
    ev.spares_now = idle_outside_reservations(so);
  }
  auto config_text = sched::run_scontrol(so, {so.scontrol, "show", "config"}, 4u << 20);
  std::map<std::string, std::string, std::less<>> config;
  if (config_text) config = drill::parse_scontrol_config(*config_text);
  ev.setup = drill::remediation_setup(config);
  if (!ev.setup.health_check_program.empty()) {
    auto text = core::read_text_file(ev.setup.health_check_program, 1u << 20);
    if (!text) ev.setup.program_note = fmt::format("not read here ({})", text.error().message);
    else if (auto a = audit::classify_health_script(*text)) ev.setup.program = *a;
    else ev.setup.program_note = "not a script: what it does to the node is not read";
  }
  if (local) {
    // SlurmdLogFile may name the node (%n) or the host (%h).
    auto it = config.find("SlurmdLogFile");
    std::string log = it == config.end() ? std::string() : it->second;
    for (std::string_view pat : {"%n", "%h"})
      for (auto at = log.find(pat); at != std::string::npos; at = log.find(pat)) log.replace(at, 2, node.name);
    if (!log.empty() && log != "(null)")
      if (auto text = core::read_text_file(log, 64u << 20)) ev.health_check_log = drill::health_check_log_lines(*text);
  }
  for (const auto& r : reservations)
    if (r.contains(node.name))
      ev.reservations.push_back(r.flags.empty() ? r.name : fmt::format("{} ({})", r.name, fmt::join(r.flags, ",")));
  const auto d = drill::diagnose_stuck(ev);
  return {{"stage", d.stage},
          {"evidence", d.evidence},
          {"loop", d.loop.empty() ? json(nullptr) : json(d.loop)},
          {"next", d.next},
          {"config_read", ev.setup.config_read}};
}

int run_drill(const DrillFlags& f0) {
  DrillFlags f = f0;
  if (f.drill_id.empty()) f.drill_id = new_drill_id();
  if (!f.kubernetes()) {
    // The slurm.conf every child reads: the flag, else the exported SLURM_CONF; a named file that
    // is missing is said at once, not after scontrol's minute of retries.
    auto conf = sched::effective_slurm_conf(f.slurm_conf);
    if (!conf) return env_error(conf.error().message);
    f.slurm_conf = *conf;
  }
  auto scenario = load_scenario(f.scenario);
  if (!scenario) return env_error(scenario.error().message);
  auto steps = drill::render(*scenario, targets_for(f));
  if (!steps) return env_error(steps.error().message);
  if (f.nodes.empty() && f.rack.empty())
    return env_error("--nodes or --rack is required: name the nodes to drill (nothing is chosen for you)");
  if (!f.nodes.empty() && !f.rack.empty()) return env_error("give --nodes or --rack, not both");
  auto nodes = f.rack.empty() ? sched::expand_hostlist(f.nodes) : rack_nodes(f);
  if (!nodes) return env_error(f.rack.empty() ? fmt::format("--nodes {}: {}", f.nodes, nodes.error().message)
                                              : nodes.error().message);
  if (nodes->empty()) return env_error(f.rack.empty() ? "--nodes names no node" : "--rack " + f.rack + " holds no node");
  if (f.nodes.empty()) f.nodes = fmt::format("{}", fmt::join(*nodes, ","));
  if (static_cast<int>(nodes->size()) > f.max_nodes)
    return env_error(fmt::format("{} {} nodes; one drill may touch at most {} (--max-nodes)",
                                 f.rack.empty() ? std::string("--nodes names") : "--rack " + f.rack + " holds",
                                 nodes->size(), f.max_nodes));
  if (!f.kubernetes() && !f.workload.empty())
    return env_error("--workload is Kubernetes' (a label selector of pods); on Slurm watch a --job, --reservation or "
                     "--partition");
  if (f.kubernetes() && (f.reboot || f.await_reboot))
    return env_error("--reboot and --await-reboot time Slurm's reboot flow (scontrol reboot, BootTime); on Kubernetes "
                     "the drill times detected, drained and returned");
  if (f.reboot && f.await_reboot) return env_error("give --reboot (the drill requests it) or --await-reboot (the provider does), not both");
  if (nodes->size() > 1 && !f.partition.empty())
    return env_error("--partition with several --nodes: a node joining the partition cannot be told apart as one "
                     "target's replacement; watch a --reservation (a target leaving it is its own replacement) or "
                     "drill the nodes one at a time");
  for (const auto& n : *nodes) {
    auto r = f.kubernetes() ? sched::kube::check_node_name(n) : sched::check_node_name(n);
    if (!r) return env_error(fmt::format("--nodes: {}", r.error().message));
  }
  const std::string here = short_hostname();
  if (f.kubernetes()) {
    if (!f.reservation.empty() || !f.partition.empty() || !f.job.empty())
      return env_error("--reservation, --partition and --job are Slurm's; on Kubernetes the replacement is the "
                       "workload's pods rescheduled (--workload SELECTOR)");
    if (f.inject == "srun") return env_error("--inject srun needs Slurm; on Kubernetes run cmax drill on the node itself");
    for (const auto& n : *nodes)
      if (f.inject == "auto" && n != here)
        return env_error(fmt::format(
            "on Kubernetes the injection is local: run cmax drill on node {} itself (a privileged pod or kubectl debug "
            "node/{}), or pass --inject local if this machine ({}) is that node under another name",
            n, n, here));
  }
  auto backend = make_backend(f, false);
  if (!backend) return env_error(backend.error().message);
  auto is_local = [&](const std::string& node) {
    return f.inject == "local" || (f.inject == "auto" && (node == here || f.kubernetes()));
  };

  {
    // The drill is over, for detectors reading the marker, once every awaited stage has timed out.
    long long total = static_cast<long long>(f.detect_timeout_s) + f.drain_timeout_s;
    if (!f.reservation.empty() || !f.partition.empty() || !f.job.empty()) total += f.replace_timeout_s;
    if (f.wait_return) total += f.return_timeout_s;
    f.until_unix = unix_now() + static_cast<double>(total) + 60;
  }
  // The plan, always; without --yes it is all that happens.
  if (!f.yes || !f.json) {
    fmt::print("drill {} ({}): {} on {}{}\n", f.drill_id, scenario->id, scenario->title, fmt::join(*nodes, ", "),
               f.yes ? "" : " -- plan only; add --yes to inject");
    for (const auto& n : *nodes) {
      // The marker first: readers of the log tell the drill's lines from a real fault by it.
      fmt::print("  {} +0 ms <6> {}  (marker)\n", n, begin_marker(f, n, *steps).text);
      for (const auto& s : *steps)
        fmt::print("  {} +{} ms <{}> {}  ({})\n", n, s.after_ms, s.level, s.line, is_local(n) ? "local /dev/kmsg" : "srun");
    }
    std::vector<std::string> replaced_by;
    if (!f.reservation.empty()) replaced_by.push_back("a spare joins reservation " + f.reservation);
    if (!f.partition.empty()) replaced_by.push_back("a node joins partition " + f.partition);
    if (!f.job.empty()) replaced_by.push_back("job " + f.job + " runs again elsewhere");
    fmt::print("  then watch {} every {} ms: detected (threshold {} s), drained ({} s){}{}\n",
               f.kubernetes() ? "Kubernetes" : "Slurm", f.poll_ms,
               f.detect_threshold_s, f.drain_threshold_s,
               replaced_by.empty() ? "" : fmt::format(", replaced when {} ({} s)", fmt::join(replaced_by, " or "), f.replace_threshold_s),
               f.wait_return ? ", returned to service" : "");
  }
  if (!f.yes) return kExitOk;

  // Everything is checked before anything is injected: a drill changes nothing when it cannot run.
  std::vector<sched::NodeState> before;
  for (const auto& n : *nodes) {
    // On Kubernetes also the drill's own view: any cordon, a NotReady node (cmax's node_state sees
    // only cmax's own marks, which the drill's view takes for the node's own taints).
    auto s = backend->scheduler->node_state(n);
    if (s && f.kubernetes() && !s->drain_flag()) {
      drill::WatchOptions wo;
      wo.node = n;
      auto o = backend->poller->another()->observe(wo, Clock::now());
      if (o) s = o->target;
      else s = Unexpected<Error>{o.error()};
    }
    if (!s) return env_error(fmt::format("{}; nothing was injected", s.error().message));
    if (s->drain_flag() || s->down())
      return env_error(fmt::format("node {} is already out of service ({}{}): a drill there measures nothing; "
                                   "nothing was injected",
                                   n, s->state, s->reason.empty() ? "" : ", reason \"" + s->reason + "\""));
    before.push_back(*s);
  }
  const sched::SlurmOptions slurm_options{f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), false};
  if (!f.reservation.empty())
    if (auto r = drill::read_reservation(slurm_options, f.reservation); !r)
      return env_error(fmt::format("{}; nothing was injected", r.error().message));
  // Every active reservation, as it is now: an srun to a reserved target must run inside its
  // reservation, and cleanup puts back any reservation that held a target (REPLACE_DOWN swaps a
  // spare in for it).
  std::vector<sched::Reservation> reservations;
  if (!f.kubernetes()) {
    auto out = sched::run_scontrol(slurm_options, {slurm_options.scontrol, "-o", "show", "reservation"}, 16u << 20);
    auto all = out ? sched::parse_scontrol_reservations(*out) : Result<std::vector<sched::Reservation>>(Unexpected<Error>{out.error()});
    if (!all) return env_error(fmt::format("read reservations: {}; nothing was injected", all.error().message));
    reservations = std::move(*all);
  }
  if (!f.partition.empty()) {
    auto out = sched::run_scontrol(slurm_options, {slurm_options.scontrol, "-o", "show", "partition", f.partition});
    auto p = out ? drill::parse_scontrol_partition(*out) : Result<drill::Partition>(Unexpected<Error>{out.error()});
    if (!p) return env_error(fmt::format("read partition {}: {}; nothing was injected", f.partition, p.error().message));
  }
  if (!f.job.empty()) {
    auto out = sched::run_scontrol(slurm_options, {slurm_options.scontrol, "-o", "show", "job", f.job});
    auto j = out ? drill::parse_scontrol_job(*out) : Result<drill::Job>(Unexpected<Error>{out.error()});
    if (!j) return env_error(fmt::format("read job {}: {}; nothing was injected", f.job, j.error().message));
    for (const auto& n : *nodes)
      if (!j->running() || !j->contains(n))
        return env_error(fmt::format("job {} is {} on {}, not running on {}: its requeue could not be seen; nothing was "
                                     "injected",
                                     f.job, j->state, j->nodes.empty() ? "no node" : fmt::format("{}", fmt::join(j->nodes, ",")), n));
  }
  // printk_devkmsg's rate limit is lifted around each write of the drill's lines (DevkmsgGuard).

  const std::string dir = f.out.empty()
                              ? report::default_run_dir(core::format_utc_compact(core::SystemClock().now()) + "-drill")
                              : f.out;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return env_error(fmt::format("create {}: {}", dir, ec.message()));
  std::ofstream audit_log(std::filesystem::path(dir) / "injected.jsonl", std::ios::app);
  if (!audit_log) return env_error(fmt::format("open {}/injected.jsonl: cannot write the audit record", dir));

  drill::StageThresholds thresholds;
  thresholds.detected = std::chrono::seconds(f.detect_threshold_s);
  thresholds.drained = std::chrono::seconds(f.drain_threshold_s);
  thresholds.replaced = std::chrono::seconds(f.replace_threshold_s);
  drill::StageTimeouts timeouts{std::chrono::seconds(f.detect_timeout_s), std::chrono::seconds(f.drain_timeout_s),
                                std::chrono::seconds(f.replace_timeout_s), std::chrono::seconds(f.return_timeout_s)};

  // The spares a REPLACE_DOWN reservation could swap in, before the drill (targets excluded).
  std::vector<std::string> spares_before;
  if (!f.kubernetes() && !f.reservation.empty())
    if (auto idle = idle_outside_reservations(slurm_options))
      for (auto& n : *idle)
        if (std::find(nodes->begin(), nodes->end(), n) == nodes->end()) spares_before.push_back(std::move(n));
  json held_before = json::array();
  for (const auto& r : reservations)
    if (r.state == "ACTIVE" && std::any_of(nodes->begin(), nodes->end(), [&](const std::string& n) { return r.contains(n); }))
      held_before.push_back(drill::reservation_to_json(r));

  json report{{"schema", "cmax.drill/1"},
              {"drill_id", f.drill_id},
              {"scenario", scenario->id},
              {"title", scenario->title},
              {"expect", signals::to_string(scenario->expect)},
              {"poll_ms", f.poll_ms},
              {"scheduler", f.scheduler},
              {"reservation", f.reservation.empty() ? json(nullptr) : json(f.reservation)},
              {"partition", f.partition.empty() ? json(nullptr) : json(f.partition)},
              {"job", f.job.empty() ? json(nullptr) : json(f.job)},
              {"reservations_before", held_before},
              {"provider_runs_cmax", f.provider_runs_cmax},
              {"nodes", json::array()}};
  // Before anything is injected: the record cleanup needs (the targets and their state before),
  // so that a drill killed mid-way can still be reverted (cmax drill cleanup --run DIR). Replaced
  // by the full report at the end ("complete": true).
  {
    json pending = report;
    pending["complete"] = false;
    for (std::size_t i = 0; i < nodes->size(); ++i)
      pending["nodes"].push_back(
          {{"node", (*nodes)[i]}, {"inject", is_local((*nodes)[i]) ? "local" : "srun"}, {"before", state_json(before[i])}});
    if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "drill.json").string(), pending.dump(2) + "\n");
        !w)
      return env_error(fmt::format("{}; nothing was injected", w.error().message));
  }
  // One target's drill: baseline, injection, watch, stages, and (when a stage never came) why.
  // Targets run side by side, at most --parallel at once; each has its own clock (t = 0 at its own
  // injection) and its own scontrol sessions. Injections are serialized (printk_devkmsg is raised
  // and put back around each) and so are writes to the audit record.
  std::mutex inject_mu, audit_mu;
  const auto drill_start = Clock::now();
  struct NodeOutcome {
    json node_json;
    int exit_code = kExitOk;
  };
  auto run_one = [&](std::size_t i) -> NodeOutcome {
    int exit_code = kExitOk;
    const std::string& node = (*nodes)[i];
    auto optional = [](const std::string& v) { return v.empty() ? std::nullopt : std::optional<std::string>(v); };
    drill::WatchOptions wo;
    wo.node = node;
    wo.reservation = optional(f.reservation);
    wo.partition = optional(f.partition);
    wo.job = optional(f.job);
    wo.workload = optional(f.workload);
    wo.poll = std::chrono::milliseconds(f.poll_ms);
    wo.timeouts = timeouts;
    wo.wait_return = f.wait_return;
    wo.shared_watch = nodes->size() > 1;
    wo.reboot_flow = f.reboot || f.await_reboot;
    auto poller_ptr = backend->poller->another();
    drill::Poller& poller = *poller_ptr;
    auto t0 = Clock::now();
    auto baseline = poller.observe(wo, t0);
    if (baseline && wo.workload && !baseline->workload)
      baseline = fail("read the pods of {}: the API server did not answer a PodList", *wo.workload);
    if (baseline && baseline->workload && baseline->workload->on_target == 0)
      baseline = fail("no Running pod of {} is on {}: its rescheduling could not be seen; drill a node it runs on",
                      *wo.workload, node);
    if (!baseline) {
      fmt::print(stderr, "cmax drill: {}: {}; nothing was injected there\n", node, baseline.error().message);
      return {json{{"node", node}, {"error", baseline.error().message}}, kExitEnv};
    }
    // The injection's own time is t = 0 for every stage. The watch starts with it, so polls during
    // the injection bound a fast detector's reaction from below. One target injects at a time.
    std::unique_lock inject_lock(inject_mu);
    t0 = Clock::now();
    baseline->t_start = baseline->t_end = std::chrono::microseconds(0);
    int failed_polls = 0;
    std::vector<drill::Observation> seen;
    std::stop_source stop_watch;
    std::jthread watcher([&] { seen = drill::watch(poller, wo, *baseline, t0, stop_watch.get_token(), failed_polls); });
    const std::string node_reservation = reservation_of(reservations, node);
    std::string devkmsg_note;
    auto injected = inject_on(f, node, *steps, t0, is_local(node), node_reservation, devkmsg_note);
    inject_lock.unlock();
    json node_json{{"node", node}, {"inject", is_local(node) ? "local" : "srun"}, {"before", state_json(before[i])}};
    if (!node_reservation.empty()) node_json["reservation"] = node_reservation;
    if (!injected) {
      stop_watch.request_stop();
      watcher.join();
      node_json["error"] = injected.error().message;
      return {node_json, kExitEnv};
    }
    {
      std::lock_guard lock(audit_mu);
      // What the drill did to the kernel's rate limit, then each line it wrote.
      if (!devkmsg_note.empty()) {
        audit_log << json{{"drill_id", f.drill_id}, {"node", node}, {"sysctl", "kernel.printk_devkmsg"},
                          {"did", devkmsg_note}}.dump()
                  << "\n";
        node_json["devkmsg"] = devkmsg_note;
      }
      for (const auto& l : *injected) {
        json a{{"drill_id", f.drill_id}, {"node", node}, {"t_unix", l.t_unix}, {"level", l.level}, {"text", l.text}};
        audit_log << a.dump() << "\n";
        node_json["injected"].push_back({{"t_us", l.t_us}, {"t_unix", l.t_unix}, {"level", l.level}, {"text", l.text}});
      }
      audit_log.flush();
    }
    node_json["injected_at_ms"] = std::chrono::duration<double, std::milli>(t0 - drill_start).count();
    if (f.reboot) {
      // The remediation the scenario asks for, as a provider's automation would request it: once
      // the node is drained, scontrol reboot with nextstate=RESUME (the node returns on its own
      // when slurmd registers after the new boot). Recorded in the audit record before it is sent.
      json r = request_reboot(slurm_options, f, node, t0, timeouts.drained);
      std::lock_guard lock(audit_mu);
      audit_log << json{{"drill_id", f.drill_id}, {"node", node}, {"t_unix", r.value("t_unix", 0.0)},
                        {"action", "reboot"}, {"command", r.value("command", "")}, {"result", r.value("result", "")}}
                       .dump()
                << "\n";
      audit_log.flush();
      node_json["reboot"] = std::move(r);
    }
    watcher.join();
    auto stages = drill::compute_stages(*baseline, seen, thresholds, timeouts, wo.shared_watch, wo.reboot_flow);
    if (!stages) {
      node_json["error"] = stages.error().message;
      return {node_json, kExitEnv};
    }
    double worst_uncertainty = 0;
    for (const auto& st : *stages) {
      const bool awaited = wo.awaits(st.stage);
      json sj{{"stage", st.name},     {"reached", st.reached}, {"at_ms", st.at_ms}, {"lower_ms", st.lower_ms},
              {"uncertainty_ms", st.uncertainty_ms}, {"verdict", drill::verdict_name(st.verdict)},
              {"threshold_ms", st.threshold_ms ? json(*st.threshold_ms) : json(nullptr)}, {"awaited", awaited},
              {"how", st.how}};
      node_json["stages"].push_back(sj);
      if (st.reached) worst_uncertainty = std::max(worst_uncertainty, st.uncertainty_ms);
      if (awaited && st.verdict != drill::Verdict::kOk && exit_code == kExitOk) exit_code = kExitStageFailed;
    }
    node_json["polls"] = seen.size();
    node_json["failed_polls"] = failed_polls;
    node_json["max_uncertainty_ms"] = worst_uncertainty;
    node_json["after"] = seen.empty() ? json(nullptr) : state_json(seen.back().target);
    node_json["detector"] = detector_of(seen, before[i], f.provider_runs_cmax);
    if (!f.kubernetes()) {
      std::string stuck;
      for (const auto& st : *stages) {
        if (st.stage != drill::Stage::kDetected && wo.awaits(st.stage) && !st.reached &&
            st.verdict != drill::Verdict::kSkipped) {
          stuck = st.name;
          break;
        }
      }
      if (!stuck.empty())
        node_json["stuck"] = stuck_report(slurm_options, stuck, seen.empty() ? before[i] : seen.back().target,
                                          is_local(node), reservations, f.reservation, spares_before);
    }
    // A drill on this machine ends its lines at once; one through srun ends them at cleanup (the
    // node is drained now, so no srun reaches it).
    if (is_local(node)) node_json["end_marker"] = write_end_marker(f, node, true, node_reservation);
    return {node_json, exit_code};
  };
  std::vector<NodeOutcome> outcomes(nodes->size());
  {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i = next++; i < nodes->size(); i = next++) outcomes[i] = run_one(i);
    };
    const std::size_t width = std::min<std::size_t>(nodes->size(), static_cast<std::size_t>(std::max(f.parallel, 1)));
    std::vector<std::jthread> workers;
    for (std::size_t w = 1; w < width; ++w) workers.emplace_back(worker);
    worker();
  }
  int exit_code = kExitOk;
  for (auto& o : outcomes) {
    report["nodes"].push_back(std::move(o.node_json));
    if (o.exit_code == kExitEnv) exit_code = kExitEnv;
    else if (o.exit_code != kExitOk && exit_code == kExitOk) exit_code = o.exit_code;
  }
  report["parallel"] = std::min<std::size_t>(nodes->size(), static_cast<std::size_t>(std::max(f.parallel, 1)));
  if (nodes->size() > 1) report["fleet"] = fleet_summary(report["nodes"], spares_before);
  report["exit_code"] = exit_code;
  report["complete"] = true;
  if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "drill.json").string(), report.dump(2) + "\n");
      !w)
    return env_error(w.error().message);
  // The timeline as a chart beside it (the one cmax report shows): each stage's dot, its
  // uncertainty band, the thresholds missed, "never" marks.
  if (auto view = html::drill_view(report)) {
    if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "timeline.svg").string(),
                                              html::svg_drill_timeline(*view));
        !w)
      fmt::print(stderr, "cmax drill: {}\n", w.error().message);
  } else {
    fmt::print(stderr, "cmax drill: timeline.svg not drawn: {}\n", view.error().message);
  }
  if (f.json) {
    fmt::print("{}\n", report.dump(2));
  } else {
    for (const auto& n : report["nodes"]) {
      fmt::print("{}:\n", n["node"].get<std::string>());
      if (n.contains("error")) {
        fmt::print("  error: {}\n", n["error"].get<std::string>());
        continue;
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
  return exit_code;
}

// The node-side injector srun runs: writes the scenario's lines and prints each as JSON.
int run_inject(const DrillFlags& f) {
  std::vector<drill::Injected> done;
  auto devkmsg = drill::DevkmsgGuard::raise();
  if (f.end_marker) {
    auto r = drill::inject_kmsg({{0, 6, signals::format_drill_end(f.drill_id)}}, f.kmsg, Clock::now(), done);
    if (!r) return env_error(r.error().message);
    return kExitOk;
  }
  auto scenario = load_scenario(f.scenario);
  if (!scenario) return env_error(scenario.error().message);
  auto steps = drill::render(*scenario, targets_for(f));
  if (!steps) return env_error(steps.error().message);
  std::vector<drill::KmsgLine> lines = {begin_marker(f, f.nodes.empty() ? short_hostname() : f.nodes, *steps)};
  auto faults = to_kmsg(*steps);
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
int run_cleanup(const DrillFlags& f0) {
  DrillFlags f = f0;
  std::ifstream in(std::filesystem::path(f.run_dir) / "drill.json");
  if (!in) return env_error(fmt::format("open {}/drill.json: not a drill's run directory", f.run_dir));
  auto report = json::parse(in, nullptr, false);
  if (report.is_discarded() || report.value("schema", "") != "cmax.drill/1")
    return env_error(fmt::format("{}/drill.json: not a cmax.drill/1 report", f.run_dir));
  f.scheduler = report.value("scheduler", "slurm");
  f.drill_id = report.value("drill_id", "");
  if (!f.kubernetes()) {
    auto conf = sched::effective_slurm_conf(f.slurm_conf);
    if (!conf) return env_error(conf.error().message);
    f.slurm_conf = *conf;
  }
  auto backend = make_backend(f, !f.yes);
  if (!backend) return env_error(backend.error().message);
  sched::Scheduler& scheduler = *backend->scheduler;
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
    const auto path = std::filesystem::path(f.run_dir) / "drill.json";
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
    const sched::SlurmOptions so{f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), !f.yes};
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
    if (!f.kubernetes()) {
      const sched::SlurmOptions so{f.slurm_conf, std::chrono::milliseconds(f.scontrol_timeout_ms), false};
      if (auto out = sched::run_scontrol(so, {so.scontrol, "-o", "show", "reservation"}, 16u << 20))
        if (auto all = sched::parse_scontrol_reservations(*out)) reservations = std::move(*all);
    }
    for (const auto& n : report["nodes"]) {
      if (n.contains("end_marker") && n["end_marker"].get<std::string>() == "end marker written") continue;
      const std::string node = n.value("node", "");
      const bool local = n.value("inject", "") == "local";
      fmt::print("{}: {}\n", node, write_end_marker(f, node, local, reservation_of(reservations, node)));
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
    c->add_option("--slurm-conf", f->slurm_conf, "slurm.conf for scontrol and srun (SLURM_CONF)");
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
  run->add_option("--scenario", f->scenario, "Scenario id (cmax drill list)")->required();
  run->add_option("--scheduler", f->scheduler,
                  "What to watch: 'slurm' (scontrol) or 'kubernetes' (the Node and its pods through the API: a\n"
                  "cordon, any new NoSchedule/NoExecute taint, a problem condition, NotReady)")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  run->add_option("--nodes", f->nodes, "Target nodes, a Slurm hostlist (n1,n2 or n[1-2])");
  run->add_flag("--yes", f->yes, "Inject for real (without it: print the plan)");
  run->add_option("--max-nodes", f->max_nodes, "The most nodes one drill may touch")->capture_default_str();
  run->add_option("--rack", f->rack,
                  "Drill every node of a rack at once (with --parallel): on Slurm a switch or block of the topology "
                  "(scontrol show topology NAME), on Kubernetes a node label selector (e.g. rack=r07)");
  run->add_option("--workload", f->workload,
                  "Kubernetes: a label selector (app=train) of the workload's pods; replaced is when the pods that ran "
                  "on the target run again, Running, on other nodes");
  run->add_flag("--reboot", f->reboot,
                "The remediation is a reboot, requested by the drill: once the node is drained, scontrol reboot "
                "nextstate=RESUME (recorded in injected.jsonl); times reboot_requested, down, rebooted (a new "
                "BootTime) and returned");
  run->add_flag("--await-reboot", f->await_reboot,
                "The remediation is a reboot the provider's own flow requests: time reboot_requested, down, rebooted "
                "and returned without requesting anything");
  run->add_option("--parallel", f->parallel,
                  "Targets drilled at once (each with its own clock and scontrol sessions; injections one at a "
                  "time); the report adds the fleet's numbers: how many were detected, drained and replaced, and "
                  "when the last one was")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  run->add_option("--reservation", f->reservation,
                  "A reservation to watch for the replacement (e.g. Flags=REPLACE_DOWN with spares)");
  run->add_option("--partition", f->partition, "A partition to watch for the replacement: a node added to it");
  run->add_option("--job", f->job,
                  "A job running on the target to watch for the replacement: requeued and running on other\n"
                  "nodes (Slurm holds a requeued job 121 s unless the site's automation starts it sooner)");
  run->add_option("--inject", f->inject,
                  "'local' (this machine's /dev/kmsg), 'srun' (srun --nodelist on the node), or 'auto' (local for\n"
                  "this host's own name, else srun)")
      ->check(CLI::IsMember({"auto", "local", "srun"}))
      ->capture_default_str();
  run->add_option("--gpu", f->gpu, "The GPU's PCI function to name in the lines (default 0000:3b:00.0)");
  run->add_option("--drill-id", f->drill_id, "Names this drill in lines that carry a process name (default: random)");
  run->add_option("--poll-ms", f->poll_ms, "Pause between polls of the scheduler")->capture_default_str();
  run->add_option("--detect-threshold-s", f->detect_threshold_s, "Detected within this is ok")->capture_default_str();
  run->add_option("--drain-threshold-s", f->drain_threshold_s, "Drained within this is ok")->capture_default_str();
  run->add_option("--replace-threshold-s", f->replace_threshold_s, "Replaced within this is ok")->capture_default_str();
  run->add_option("--detect-timeout-s", f->detect_timeout_s, "Not detected by then: never")->capture_default_str();
  run->add_option("--drain-timeout-s", f->drain_timeout_s, "Not drained by then: never")->capture_default_str();
  run->add_option("--replace-timeout-s", f->replace_timeout_s, "Not replaced by then: never")->capture_default_str();
  run->add_flag("--wait-return", f->wait_return, "Also wait for the node to return to service (an operator's resume)");
  run->add_option("--return-timeout-s", f->return_timeout_s, "Not returned by then: never")->capture_default_str();
  run->add_option("--out", f->out, "Run directory (default ~/.cmax/runs/<UTC timestamp>-drill/)");
  run->add_flag("--provider-runs-cmax", f->provider_runs_cmax,
                "The provider runs cmaxd or cmax check as its own detector: credit it with detections they make\n"
                "(without it a cmax detector is taken for the rater's own, and only the rest is the provider's)");
  run->add_option("--kmsg", f->kmsg, "Kernel log device for local injection")->capture_default_str();
  run->add_flag("--json", f->json, "Print {\"schema\": \"cmax.drill/1\", ...} (docs/drills.md)");
  common(run);
  auto* inject = sub.add_subcommand("inject", "Write a scenario's lines into this machine's /dev/kmsg (what srun runs)");
  inject->add_option("--scenario", f->scenario, "Scenario id (not with --end)");
  inject->add_option("--drill-id", f->drill_id, "Drill id")->required();
  inject->add_option("--gpu", f->gpu, "The GPU's PCI function");
  inject->add_option("--kmsg", f->kmsg, "Kernel log device")->capture_default_str();
  inject->add_option("--node", f->nodes, "The node's name, for the drill's marker line (default: this host's)");
  inject->add_option("--until", f->until_unix, "Unix time after which the drill is over, for the marker line");
  inject->add_flag("--end", f->end_marker, "Write only the drill's end marker (cmax drill cleanup runs this)");
  auto* cleanup = sub.add_subcommand(
      "cleanup", "Return the nodes a drill took out of service, restore the reservations that held them, and end the\n"
                 "drill's lines in the nodes' kernel logs (--yes to do it)");
  cleanup->add_option("--run", f->run_dir, "The drill's run directory")->required();
  cleanup->add_flag("--yes", f->yes, "Resume for real (without it: print what would be resumed)");
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
