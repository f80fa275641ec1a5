// cmaxd: the passive node agent. Follows this node's kernel log through the signal engine and
// drains (or reboots) the node in Slurm when an incident needs it. Links no fault-injection code.
// Exit codes: 0 stopped by SIGTERM/SIGINT; 2 usage error; 3 cannot start (kmsg, database, catalog).

#include <algorithm>
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stop_token>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "agent/agent.h"
#include "agent/event_log.h"
#include "agent/metrics.h"
#include "probes/probe_set.h"
#include "sched/policy.h"
#include "sched/kubernetes.h"
#include "sched/slurm.h"
#include "signals/catalog.h"

namespace {

using namespace cmax;

constexpr int kExitStartup = 3;

std::string short_hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h = buf;
  return h.substr(0, h.find('.'));
}

int start_error(const std::string& msg) {
  fmt::print(stderr, "cmaxd: {}\n", msg);
  return kExitStartup;
}

// `cmaxd clear`: after a repair, an audited row in the event log that tells the running agent (within
// one flush, about a second) or the next start to forget this node's incidents. The node's drain is
// not touched: resume it with the scheduler as usual.
int run_clear(const std::string& db_path, const std::string& node, const std::string& reason) {
  if (reason.empty()) {
    fmt::print(stderr, "cmaxd clear: --reason is required (what was repaired: it is the audit record)\n");
    return 2;
  }
  if (!std::filesystem::exists(db_path)) return start_error(fmt::format("clear: {} does not exist: is --db the agent's?", db_path));
  auto log = agent::EventLog::open(db_path);
  if (!log) return start_error(log.error().message);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto id = log->record_clear(node, reason, now);
  if (!id) return start_error(id.error().message);
  fmt::print("cmaxd clear: recorded as action {} in {} for {}: {}\n", *id, db_path, node, reason);
  return 0;
}

// Every flag's value as given, before validation turns them into the agent's options.
struct DaemonFlags {
  agent::AgentOptions opt;
  std::string db_path = "/var/lib/cmax/cmaxd.db", slurm_conf, act_on = "any", drain_at = "drain", config;
  std::string metrics_listen = "127.0.0.1:9479";
  probes::ProbeConfig probe_config;
  std::string scheduler_kind = "slurm", kube_api, kube_token, kube_ca, kube_pool;
  int kube_timeout_ms = 5000;
  bool no_nvml = false, no_ib = false, no_fleet_breaker = false;
  int mount_timeout_ms = 5000, probe_interval_ms = 5000, mount_interval_ms = 30000;
  int timeout_ms = 5000;
  long long breaker_window_s = 3600, dedup_window_s = 3600, resume_watch_ms = 10000, resume_watch_max_ms = 300000;
  std::string breaker_license = "cmax_breaker";
  long long boot_grace_s = 300;
  std::string clear_reason;
};

constexpr const char* kDescription =
    "cmaxd: the passive node agent. Follows /dev/kmsg live through cmax's signal engine (every Xid, SXid,\n"
    "lockup, MCE, EDAC, AER, NVMe, filesystem, NFS, Lustre, IB and OOM fault), polls NVML (when the driver's\n"
    "library loads), the InfiniBand ports and the --mount points, keeps incidents, and takes this node out of\n"
    "scheduling when an incident's action reaches --drain-at: a Slurm drain with reason 'cmax: ...', or in\n"
    "Kubernetes a cordon, taint cmax.io/unhealthy and condition CmaxHealthy=False. Every incident and every\n"
    "intended action is written to --db before the action runs; a restart resumes after the last record read,\n"
    "never drains twice for one incident, and carries out actions left pending by a crash. It resumes a node\n"
    "only when the incident it acted on resolves (Link is Up after Link is Down, a port back to ACTIVE, a mount\n"
    "answering again) and only when the hold is its own. A per-node and a fleet circuit breaker bound what it\n"
    "takes out. Logs are JSON lines on stderr; metrics on --metrics-listen. docs/cmaxd.md says more.\n"
    "Exit codes: 0 stopped by SIGTERM/SIGINT; 2 usage error; 3 cannot start (kmsg, database, catalog, probe\n"
    "configuration, Kubernetes service account).";

void add_scheduler_flags(CLI::App& app, DaemonFlags& f) {
  app.add_option("--scheduler", f.scheduler_kind,
                 "Where to hold the node: 'slurm' (scontrol update State=DRAIN, reason 'cmax: ...') or\n"
                 "'kubernetes' (cordon, taint cmax.io/unhealthy, condition CmaxHealthy=False, through the\n"
                 "API with the pod's service account; deploy/kubernetes/cmaxd.yaml)")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  app.add_option("--kube-api", f.kube_api,
                 "API server URL (default: in-cluster, from KUBERNETES_SERVICE_HOST/PORT; plain http only to\n"
                 "loopback)");
  app.add_option("--kube-token-file", f.kube_token, "Bearer token file (default: the pod's service account token)");
  app.add_option("--kube-ca-file", f.kube_ca, "CA bundle for the API server (default: the service account's ca.crt)");
  app.add_option("--kube-pool-selector", f.kube_pool,
                 "Label selector of the nodes the fleet breaker counts (default: every node)");
  app.add_option("--kube-timeout-ms", f.kube_timeout_ms, "Deadline of each API request")->capture_default_str();
  app.add_option("--slurm-conf", f.slurm_conf, "slurm.conf for scontrol (SLURM_CONF); default: Slurm's own");
  app.add_option("--scontrol-timeout-ms", f.timeout_ms, "Deadline of each scontrol call")->capture_default_str();
  app.add_option("--slurm-breaker-license", f.breaker_license,
                 "Slurm: the license whose count is the fleet breaker's exact limit (slurm.conf\n"
                 "Licenses=NAME:L); each held node takes a unit through a license-only reservation\n"
                 "cmax_hold_NODE, so agents faulting at once never pass L ('' or no such license:\n"
                 "read-then-act only, said once)")
      ->capture_default_str();
}

void add_action_flags(CLI::App& app, DaemonFlags& f) {
  agent::AgentOptions& opt = f.opt;
  app.add_option("--act-on", f.act_on,
                 "Records that may trigger actions: 'kernel' (kernel facility only; a line written to /dev/kmsg\n"
                 "from userspace is recorded but never acted on) or 'any' (fault drills inject from userspace)")
      ->check(CLI::IsMember({"kernel", "any"}))
      ->capture_default_str();
  app.add_option("--drain-at", f.drain_at, "Drain when an incident's action is at least this")
      ->check(CLI::IsMember({"restart_app", "reset_gpu", "drain", "reboot_node", "replace"}))
      ->capture_default_str();
  app.add_flag("--reboot", opt.reboot, "reboot_node incidents: scontrol reboot ASAP nextstate=RESUME instead of drain");
  app.add_flag("--from-now", opt.from_now,
               "On a first start in this boot (no resume point in --db), ignore the records already in the\n"
               "ring buffer; by default they are read, so a fault logged before cmaxd started is acted on");
  app.add_flag("--dry-run", opt.dry_run, "Decide and record every action, change nothing in Slurm");
  app.add_option("--breaker-max", opt.breaker_max_actions, "At most this many drains (and reboots) per window")
      ->capture_default_str();
  app.add_option("--breaker-window", f.breaker_window_s, "The circuit breaker's window, seconds")->capture_default_str();
  app.add_option("--dedup-window", f.dedup_window_s, "One action per incident within this many seconds")
      ->capture_default_str();
  app.add_option("--resume-watch-ms", f.resume_watch_ms,
                 "While cmaxd holds the node out, read its state this often; a resume someone else made (an\n"
                 "operator, cmax drill cleanup) is then recorded, so SLA accounting ends the outage there (0: off).\n"
                 "On Kubernetes the held node is watched instead (one request per 10 minutes, none when idle)")
      ->capture_default_str();
  app.add_option("--resume-watch-max-ms", f.resume_watch_max_ms,
                 "Slurm: after the first 5 minutes of a hold, each read that finds the node still out doubles\n"
                 "the wait to the next, up to this; a fault already acted on that recurs while held is read at\n"
                 "once. 1,000 nodes held for days then cost slurmctld about 3 reads a second, not 100")
      ->capture_default_str();
  app.add_option("--fleet-max-percent", opt.fleet_max_percent,
                 "Fleet breaker: before each drain or reboot, read the node's partitions from Slurm and refuse\n"
                 "when cmax already holds this percentage of their nodes (never fewer than one node)")
      ->capture_default_str();
  app.add_option("--fleet-max-nodes", opt.fleet_max_nodes, "Fleet breaker: and at most this many nodes (0: no count limit)")
      ->capture_default_str();
  app.add_flag("--no-fleet-breaker", f.no_fleet_breaker, "Skip the fleet breaker's read (one scontrol call per action)");
}

void add_probe_flags(CLI::App& app, DaemonFlags& f) {
  probes::ProbeConfig& pc = f.probe_config;
  app.add_option("--nvml-lib", pc.nvml_lib,
                 "NVML library: Xid events, ECC, row remaps, retired pages, throttling, PCIe link, stalls\n"
                 "(a bare name may be absent, NVML is then off; a path must load)")
      ->capture_default_str();
  app.add_flag("--no-nvml", f.no_nvml, "Do not load NVML");
  app.add_option("--ib-root", pc.ib_root, "Where InfiniBand devices are listed")->capture_default_str();
  app.add_option("--ib-expect", pc.ib_expect,
                 "A port that must be up from the start, DEVICE/PORT (mlx5_0/1); repeatable. Other ports count\n"
                 "only when they go down after being up");
  app.add_flag("--no-ib", f.no_ib, "Do not read InfiniBand ports");
  app.add_option("--mount", pc.mounts,
                 "A mount point that must answer stat/statfs within --mount-timeout-ms (checked in a child\n"
                 "process, so a hung Lustre never hangs cmaxd); repeatable");
  app.add_option("--mount-timeout-ms", f.mount_timeout_ms, "A mount that takes longer is hung")->capture_default_str();
  app.add_option("--probe-interval-ms", f.probe_interval_ms,
                 "How often NVML and the InfiniBand ports are read (Xids also arrive at once through the\n"
                 "kernel log)")
      ->capture_default_str();
  app.add_option("--mount-interval-ms", f.mount_interval_ms,
                 "How often each --mount is checked (each check forks a small child: the main idle cost)")
      ->capture_default_str();
}

// Every flag and the `clear` subcommand, in the order --help lists them; returns `clear`.
CLI::App* define_flags(CLI::App& app, DaemonFlags& f) {
  f.opt.node = short_hostname();
  app.add_option("--node", f.opt.node, "This node's name in Slurm")->capture_default_str();
  app.add_option("--db", f.db_path, "Event log (SQLite, WAL)")->capture_default_str();
  app.add_option("--kmsg", f.opt.kmsg_path, "Kernel log device")->capture_default_str();
  add_scheduler_flags(app, f);
  add_action_flags(app, f);
  add_probe_flags(app, f);
  app.add_option("--config", f.config, "Signal overrides: actions, ignore lists, thresholds (docs/signals-config.md)");
  app.add_option("--boot-grace-s", f.boot_grace_s,
                 "A fault line stamped (or a probe finding seen) less than this many seconds after boot is recorded\n"
                 "but not acted on; the same fault after it acts (0: off). Boot-time link flaps and driver loading\n"
                 "must not drain a node that is still coming up")
      ->capture_default_str();
  auto* clear = app.add_subcommand("clear", "After a repair: record (audited, in --db) that this node's incidents are over; "
                                            "the running cmaxd forgets them within a second and the next fault acts at "
                                            "once. The node's drain is left to you");
  clear->fallthrough();  // cmaxd clear --db PATH --node NAME --reason TEXT
  clear->add_option("--reason", f.clear_reason, "What was repaired (\"GPU 3 replaced, RMA 1234\"); required");
  app.add_option("--metrics-listen", f.metrics_listen,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics ('' to disable; port 0 picks a free one,\n"
                 "logged at start). Loopback by default: expose it on purpose")
      ->capture_default_str();
  return clear;
}

// Checks the flags and turns them into f.opt and f.probe_config; false (usage error, said on
// stderr) when they cannot run.
bool validate(DaemonFlags& f) {
  agent::AgentOptions& opt = f.opt;
  opt.boot_grace = std::chrono::seconds(std::max<long long>(0, f.boot_grace_s));
  if (auto r = sched::check_node_name(opt.node); !r) {
    fmt::print(stderr, "cmaxd: --node {}: {}\n", opt.node, r.error().message);
    return false;
  }
  opt.act_on = f.act_on == "kernel" ? agent::Origins::kernel : agent::Origins::any;
  for (int a = 0; a <= static_cast<int>(signals::Action::replace); ++a)
    if (signals::to_string(static_cast<signals::Action>(a)) == f.drain_at) opt.drain_at = static_cast<signals::Action>(a);
  opt.breaker_window = std::chrono::seconds(f.breaker_window_s);
  opt.fleet_breaker = !f.no_fleet_breaker;
  f.probe_config.nvml = !f.no_nvml;
  f.probe_config.ib = !f.no_ib;
  f.probe_config.mount_timeout = std::chrono::milliseconds(f.mount_timeout_ms);
  if (f.probe_interval_ms < 10 || f.mount_interval_ms < 10) {
    fmt::print(stderr, "cmaxd: --probe-interval-ms and --mount-interval-ms: use 10 or more\n");
    return false;
  }
  opt.dedup_window = std::chrono::seconds(f.dedup_window_s);
  opt.resume_watch = std::chrono::milliseconds(std::max<long long>(0, f.resume_watch_ms));
  opt.resume_watch_max = std::chrono::milliseconds(std::max<long long>(0, f.resume_watch_max_ms));
  return true;
}

// The built-in signal catalog with the --config overrides applied.
Result<signals::Catalog> load_catalog(const std::string& config) {
  auto catalog = signals::Catalog::builtin();
  if (!catalog || config.empty()) return catalog;
  std::ifstream in(config, std::ios::binary);
  if (!in) return fail("open {}: cannot read the --config file", config);
  std::stringstream ss;
  ss << in.rdbuf();
  if (auto r = catalog->apply_config(ss.str(), config); !r) return Unexpected<Error>{r.error()};
  return catalog;
}

Result<std::unique_ptr<sched::Scheduler>> make_scheduler(const DaemonFlags& f) {
  if (f.scheduler_kind == "kubernetes") {
    sched::KubernetesOptions ko;
    if (f.kube_api.empty()) {
      auto in = sched::KubernetesOptions::in_cluster();
      if (!in) return Unexpected<Error>{in.error()};
      ko = *in;
    } else {
      ko.api_url = f.kube_api;
    }
    if (!f.kube_token.empty()) ko.token_path = f.kube_token;
    if (!f.kube_ca.empty()) ko.ca_path = f.kube_ca;
    ko.pool_selector = f.kube_pool;
    ko.timeout = std::chrono::milliseconds(f.kube_timeout_ms);
    ko.dry_run = f.opt.dry_run;
    ko.user_agent = fmt::format("cmaxd/{} node/{}", CMAX_VERSION, f.opt.node);
    return std::unique_ptr<sched::Scheduler>(std::make_unique<sched::KubernetesScheduler>(ko));
  }
  sched::SlurmOptions so;
  so.conf_path = f.slurm_conf;
  so.timeout = std::chrono::milliseconds(f.timeout_ms);
  so.dry_run = f.opt.dry_run;
  so.breaker_license = f.breaker_license;
  return std::unique_ptr<sched::Scheduler>(std::make_unique<sched::SlurmScheduler>(so));
}

// SIGTERM and SIGINT stop the agent: blocked here, taken by the returned thread with sigwait.
std::jthread watch_stop_signals(std::stop_source& stop) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return std::jthread([stop_signals, &stop](std::stop_token st) {
    timespec tick{0, 200'000'000};
    while (!st.stop_requested()) {
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) {
        stop.request_stop();
        return;
      }
    }
  });
}

Result<void> add_probes(agent::Agent& agent, const DaemonFlags& f) {
  auto probe_set = probes::make_probes(f.probe_config);
  if (!probe_set) return Unexpected<Error>{probe_set.error()};
  for (const auto& note : probe_set->notes)
    agent::log_line("info", "probe " + note);
  for (auto& p : probe_set->probes) {
    const auto interval = std::chrono::milliseconds(p->name() == "fs" ? f.mount_interval_ms : f.probe_interval_ms);
    if (auto r = agent.add_probe(std::move(p), interval, std::min(interval, std::chrono::milliseconds(1000))); !r)
      return r;
  }
  return {};
}

// Starts the metrics server of --metrics-listen into `metrics` (left empty when '' or when it
// cannot start: metrics are a convenience); false (usage error, said on stderr) for a bad HOST:PORT.
bool start_metrics(const DaemonFlags& f, agent::Agent& agent, std::unique_ptr<agent::MetricsServer>& metrics) {
  if (f.metrics_listen.empty()) return true;
  const std::string& listen = f.metrics_listen;
  auto colon = listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos) port = std::atoi(listen.c_str() + colon + 1);
  if (colon == std::string::npos || port < 0 || port > 65535) {
    fmt::print(stderr, "cmaxd: --metrics-listen {}: use HOST:PORT, e.g. 127.0.0.1:9479\n", listen);
    return false;
  }
  // Metrics are a convenience: a port in use is reported and detection goes on without them.
  auto m = agent::MetricsServer::start(listen.substr(0, colon), port, agent.stats(), f.opt.node);
  if (m) {
    metrics = std::move(*m);
    agent::log_line("info", fmt::format("metrics on http://{}:{}/metrics", listen.substr(0, colon), metrics->port()));
  } else {
    agent::log_line("warn", "metrics off: " + m.error().message);
  }
  return true;
}

// Opens what the agent needs and runs it until SIGTERM/SIGINT; the exit code.
int run_agent(DaemonFlags& f) {
  auto boot = agent::read_boot_id();
  if (!boot) return start_error(boot.error().message);
  f.opt.boot_id = *boot;
  auto catalog = load_catalog(f.config);
  if (!catalog) return start_error(catalog.error().message);
  if (auto dir = std::filesystem::path(f.db_path).parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  auto log = agent::EventLog::open(f.db_path);
  if (!log) return start_error(log.error().message);
  auto scheduler = make_scheduler(f);
  if (!scheduler) return start_error(scheduler.error().message);

  std::stop_source stop;
  std::jthread signal_thread = watch_stop_signals(stop);
  agent::Agent agent(f.opt, *catalog, *log, **scheduler);
  if (auto r = add_probes(agent, f); !r) return start_error(r.error().message);
  std::unique_ptr<agent::MetricsServer> metrics;
  if (!start_metrics(f, agent, metrics)) return 2;
  auto r = agent.run(stop.get_token());
  signal_thread.request_stop();
  if (!r) return start_error(r.error().message);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // An API server that answers and closes before reading the whole request (a 401 over TLS) must be
  // a failed request, never a dead agent.
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{kDescription, "cmaxd"};
  DaemonFlags flags;
  CLI::App* clear = define_flags(app, flags);
  CLI11_PARSE(app, argc, argv);
  if (clear->parsed()) return run_clear(flags.db_path, flags.opt.node, flags.clear_reason);
  if (!validate(flags)) return 2;
  return run_agent(flags);
}
