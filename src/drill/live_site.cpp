#include "drill/live_site.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/parse/health_check.h"
#include "core/text_file.h"
#include "drill/live_inject.h"
#include "drill/stuck.h"
#include "sched/kubernetes_parse.h"
#include "sched/slurm_parse.h"
#include "sched/slurm_topology.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Slurm's answers to `scontrol -o show reservation`, or why not.
Result<std::vector<sched::Reservation>> read_reservations(const sched::SlurmOptions& so) {
  auto out = sched::run_scontrol(so, {so.scontrol, "-o", "show", "reservation"}, 16u << 20);
  if (!out) return Unexpected<Error>{out.error()};
  return sched::parse_scontrol_reservations(*out);
}

class LiveSite final : public Site {
 public:
  LiveSite(RunOptions options, KubeFlags kube, int timeout_ms, bool dry_run)
      : options_(std::move(options)), kube_(std::move(kube)), timeout_ms_(timeout_ms), dry_run_(dry_run),
        slurm_{options_.slurm_conf, std::chrono::milliseconds(timeout_ms), false} {}

  std::string here() override { return short_hostname(); }

  Result<std::vector<std::string>> rack_nodes(const std::string& rack) override {
    return options_.kubernetes() ? kube_rack(rack) : slurm_rack(rack);
  }

  Result<void> connect() override {
    if (options_.kubernetes()) {
      auto ko = kube_options(kube_, timeout_ms_, dry_run_);
      if (!ko) return Unexpected<Error>{ko.error()};
      scheduler_ = std::make_unique<sched::KubernetesScheduler>(*ko);
      poller_ = std::make_unique<KubePoller>(*ko);
    } else {
      sched::SlurmOptions so{options_.slurm_conf, std::chrono::milliseconds(timeout_ms_), dry_run_};
      scheduler_ = std::make_unique<sched::SlurmScheduler>(so);
      poller_ = std::make_unique<SlurmPoller>(so);
    }
    return ok();
  }
  sched::Scheduler& scheduler() override { return *scheduler_; }
  const Poller& poller() override { return *poller_; }

  Result<void> check_reservation(const std::string& name) override {
    auto r = read_reservation(slurm_, name);
    if (!r) return Unexpected<Error>{r.error()};
    return ok();
  }
  Result<std::vector<sched::Reservation>> reservations() override {
    if (options_.kubernetes()) return std::vector<sched::Reservation>{};
    return read_reservations(slurm_);
  }
  Result<Partition> partition(const std::string& name) override {
    auto out = sched::run_scontrol(slurm_, {slurm_.scontrol, "-o", "show", "partition", name});
    if (!out) return Unexpected<Error>{out.error()};
    return parse_scontrol_partition(*out);
  }
  Result<Job> job(const std::string& id) override {
    auto out = sched::run_scontrol(slurm_, {slurm_.scontrol, "-o", "show", "job", id});
    if (!out) return Unexpected<Error>{out.error()};
    return parse_scontrol_job(*out);
  }
  std::optional<std::vector<std::string>> idle_outside_reservations() override;

  Result<std::vector<Injected>> inject(const InjectRequest& request, std::string& devkmsg_note) override {
    return inject_lines(request, options_.slurm_conf, devkmsg_note);
  }
  std::string end_marker(const RunOptions& options, const std::string& node, bool local,
                         const std::string& reservation) override {
    return write_end_marker(options, options_.slurm_conf, node, local, reservation);
  }
  json request_reboot(const RunOptions& options, const std::string& node, SteadyClock::time_point t0,
                      std::chrono::milliseconds bound) override;
  json stuck_report(const StuckQuery& query) override;

 private:
  Result<std::vector<std::string>> kube_rack(const std::string& rack);
  Result<std::vector<std::string>> slurm_rack(const std::string& rack);

  RunOptions options_;
  KubeFlags kube_;
  int timeout_ms_;
  bool dry_run_;
  sched::SlurmOptions slurm_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::unique_ptr<Poller> poller_;
};

std::optional<std::vector<std::string>> LiveSite::idle_outside_reservations() {
  const auto& so = slurm_;
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

// On Kubernetes the nodes a label selector names (topology.kubernetes.io/zone=..., a rack label).
Result<std::vector<std::string>> LiveSite::kube_rack(const std::string& rack) {
  auto options = kube_options(kube_, timeout_ms_, true);
  if (!options) return Unexpected<Error>{options.error()};
  sched::KubernetesScheduler api(*options);
  auto text = api.get("/api/v1/nodes?labelSelector=" + sched::kube::encode_query_value(rack));
  if (!text) return fail("--rack {}: list the nodes: {}", rack, text.error().message);
  auto page = sched::kube::parse_node_list(*text);
  if (!page) return fail("--rack {}: {}", rack, page.error().message);
  std::vector<std::string> out;
  for (const auto& n : page->nodes) out.push_back(n.name);
  return out;
}

// On Slurm a switch or block of the topology (`scontrol show topology NAME`: SwitchName= or
// BlockName= with Nodes=).
Result<std::vector<std::string>> LiveSite::slurm_rack(const std::string& rack) {
  const auto& so = slurm_;
  auto text = sched::run_scontrol(so, {so.scontrol, "show", "topology", rack});
  if (!text) return fail("--rack {}: {}", rack, text.error().message);
  for (const auto& unit : sched::parse_scontrol_topology(*text)) {
    if (unit.name != rack) continue;
    if (unit.nodes.empty()) return fail("--rack {}: the {} lists no node", rack, unit.block ? "block" : "switch");
    return sched::expand_hostlist(unit.nodes);
  }
  return fail("--rack {}: no switch or block of that name in Slurm's topology (scontrol show topology; "
              "TopologyPlugin topology/tree or topology/block)",
              rack);
}

// `scontrol reboot nextstate=RESUME reason="cmax drill ID: reboot" NODE` once the node is drained.
json LiveSite::request_reboot(const RunOptions& options, const std::string& node, SteadyClock::time_point t0,
                              std::chrono::milliseconds bound) {
  const auto& so = slurm_;
  const auto deadline = t0 + bound;
  bool drained = false;
  while (!drained && SteadyClock::now() < deadline) {
    auto out = sched::run_scontrol(so, {so.scontrol, "-o", "show", "node", node});
    if (out)
      if (auto n = sched::parse_scontrol_node(*out); n && n->drained()) drained = true;
    if (!drained) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!drained) return {{"requested", false}, {"result", "not drained within the drain timeout: no reboot requested"}};
  const std::vector<std::string> argv = {so.scontrol, "reboot", "nextstate=RESUME",
                                         fmt::format("reason=cmax drill {}: reboot", options.drill_id), node};
  const double at_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
  const double t_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto r = sched::run_scontrol(so, argv);
  return {{"requested", r.has_value()},
          {"requested_ms", at_ms},
          {"t_unix", t_unix},
          {"command", fmt::format("{}", fmt::join(argv, " "))},
          {"result", r ? std::string("accepted") : r.error().message}};
}

// The controller's health-check setup (scontrol show config), the program itself when it is on
// this host, the node's slurmd log when the node is this machine, and the reservations holding
// it. Reads only.
json LiveSite::stuck_report(const StuckQuery& q) {
  const auto& so = slurm_;
  StuckEvidence ev;
  ev.stage = q.stage;
  ev.node = q.node;
  if (q.stage == "replaced" && !q.watched_reservation.empty()) {
    ev.reservation = q.watched_reservation;
    for (const auto& r : q.reservations)
      if (r.name == q.watched_reservation) ev.reservation_replaces = r.has_flag("REPLACE_DOWN");
    ev.spares_before = q.spares_before;
    ev.spares_now = idle_outside_reservations();
  }
  auto config_text = sched::run_scontrol(so, {so.scontrol, "show", "config"}, 4u << 20);
  std::map<std::string, std::string, std::less<>> config;
  if (config_text) config = parse_scontrol_config(*config_text);
  ev.setup = remediation_setup(config);
  if (!ev.setup.health_check_program.empty()) {
    auto text = core::read_text_file(ev.setup.health_check_program, 1u << 20);
    if (!text) ev.setup.program_note = fmt::format("not read here ({})", text.error().message);
    else if (auto a = audit::classify_health_script(*text)) ev.setup.program = *a;
    else ev.setup.program_note = "not a script: what it does to the node is not read";
  }
  if (q.local) {
    // SlurmdLogFile may name the node (%n) or the host (%h).
    auto it = config.find("SlurmdLogFile");
    std::string log = it == config.end() ? std::string() : it->second;
    for (std::string_view pat : {"%n", "%h"})
      for (auto at = log.find(pat); at != std::string::npos; at = log.find(pat)) log.replace(at, 2, q.node.name);
    if (!log.empty() && log != "(null)")
      if (auto text = core::read_text_file(log, 64u << 20)) ev.health_check_log = health_check_log_lines(*text);
  }
  for (const auto& r : q.reservations)
    if (r.contains(q.node.name))
      ev.reservations.push_back(r.flags.empty() ? r.name : fmt::format("{} ({})", r.name, fmt::join(r.flags, ",")));
  const auto d = diagnose_stuck(ev);
  return {{"stage", d.stage},
          {"evidence", d.evidence},
          {"loop", d.loop.empty() ? json(nullptr) : json(d.loop)},
          {"next", d.next},
          {"config_read", ev.setup.config_read}};
}

}  // namespace

std::string short_hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

Result<sched::KubernetesOptions> kube_options(const KubeFlags& flags, int timeout_ms, bool dry_run) {
  sched::KubernetesOptions ko;
  if (flags.api.empty()) {
    auto in = sched::KubernetesOptions::in_cluster();
    if (!in) return fail("{} (or give --kube-api)", in.error().message);
    ko = *in;
  } else {
    ko.api_url = flags.api;
  }
  if (!flags.token.empty()) ko.token_path = flags.token;
  if (!flags.ca.empty()) ko.ca_path = flags.ca;
  ko.timeout = std::chrono::milliseconds(timeout_ms);
  ko.dry_run = dry_run;
  return ko;
}

Result<std::unique_ptr<Site>> make_live_site(const RunOptions& options, const KubeFlags& kube,
                                             int scontrol_timeout_ms, bool dry_run) {
  RunOptions resolved = options;
  if (!resolved.kubernetes()) {
    auto conf = sched::effective_slurm_conf(resolved.slurm_conf);
    if (!conf) return Unexpected<Error>{conf.error()};
    resolved.slurm_conf = *conf;
  }
  return std::unique_ptr<Site>(std::make_unique<LiveSite>(std::move(resolved), kube, scontrol_timeout_ms, dry_run));
}

}  // namespace cmax::drill
