#pragma once
// cmaxd's core: follows /dev/kmsg through the signal engine, keeps incidents, and drains (or
// reboots) this node through a Scheduler when an incident's action reaches the configured level.
// Detection and action run on separate threads joined by a bounded queue, so a slow or unreachable
// controller never delays reading the log. Every incident and every intended action is written to
// the event log before the action is taken.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/device_series.h"
#include "agent/event_log.h"
#include "agent/kmsg_follow.h"
#include "probes/probe.h"
#include "sched/scheduler.h"
#include "signals/catalog.h"
#include "signals/correlate.h"
#include "signals/drill_marker.h"
#include "signals/signal.h"

namespace cmax::agent {

/// Which kmsg records may trigger an action. Userspace can write kernel-looking lines to
/// /dev/kmsg (root only); "kernel" ignores them for actions, "any" acts on them too (drills).
enum class Origins { kernel, any };

struct AgentOptions {
  std::string node;                        ///< this node's name in the scheduler
  std::string kmsg_path = "/dev/kmsg";
  std::string boot_id;                     ///< this boot (kmsg seq restarts at each boot)
  int driver_branch = -1;                  ///< NVIDIA driver branch (Xid 144-150 decode); -1: read /proc
  Origins act_on = Origins::any;
  bool from_now = false;                   ///< with no resume point for this boot, skip the records there now
  signals::Action drain_at = signals::Action::drain;  ///< incidents at or above drain the node
  bool reboot = false;                     ///< reboot_node incidents: `scontrol reboot ASAP` instead of drain
  bool dry_run = false;                    ///< decide and record, change nothing
  std::chrono::seconds dedup_window{3600}; ///< an incident key acted on within this is not acted on again
  int breaker_max_actions = 3;             ///< at most this many node actions by this agent ...
  std::chrono::seconds breaker_window{3600};  ///< ... per window; past it, actions are refused and recorded
  std::chrono::milliseconds poll{1000};    ///< longest wait for a record before housekeeping (a record wakes it at once)
  std::chrono::milliseconds flush{1000};   ///< how often repeats and the resume point are written
  std::size_t queue_max = 1024;            ///< pending actions; past it new ones are refused (and recorded)
  std::chrono::seconds retry_max{60};      ///< backoff cap when the scheduler is unreachable
  /// While this agent holds the node out, how often it reads the node's state: a node someone
  /// else resumed (an operator, cmax drill cleanup) is recorded as resumed then, so that SLA
  /// accounting from the event log ends the outage there. Zero: never. A scheduler that watches
  /// (Kubernetes) is not polled: any non-zero value watches the held node instead.
  std::chrono::milliseconds resume_watch{10000};
  /// A hold longer than resume_watch_steady (a drill, a reboot and an operator's quick resume are
  /// shorter) is read at twice the last wait each time the node is still out, up to
  /// resume_watch_max: a long hold (an RMA) costs the controller one read per resume_watch_max, not
  /// one per resume_watch, and a short one is seen at resume_watch as before. A fault the agent
  /// already acted on that recurs while it holds is read at once (the node may be back).
  std::chrono::milliseconds resume_watch_steady{300000};
  std::chrono::milliseconds resume_watch_max{300000};
  int retries = 8;                         ///< attempts per action before it is recorded as failed
  /// Fleet-wide breaker, read from the scheduler before each drain or reboot: cmax may hold at
  /// most this percentage of the node's pool (Slurm: its partitions), never less than one node ...
  double fleet_max_percent = 10;
  int fleet_max_nodes = 0;                 ///< ... and at most this many nodes (0: no count limit)
  bool fleet_breaker = true;               ///< false: skip the pool read (one scontrol call less)
  /// A node still booting is not taken out for what its boot printed (NVSentinel #1423): a line
  /// stamped (kmsg time since boot) or a probe finding seen before this much uptime is recorded and
  /// counted but not acted on; the same fault seen again after it acts as usual. Zero: off.
  std::chrono::seconds boot_grace{300};
};

/// Why the fleet breaker refuses to take one more node out of `pool`, or nullopt when it may.
std::optional<std::string> fleet_refusal(const sched::PoolCount& pool, double max_percent, int max_nodes);
/// How many nodes of `pool` cmax may hold: `max_percent` of it (at least one), at most
/// `max_nodes` when that is set; `why` (optional) says how it was reached.
int fleet_limit(const sched::PoolCount& pool, double max_percent, int max_nodes, std::string* why);

/// Upper bounds (seconds) of the action-latency histogram's buckets; +Inf is implied.
inline constexpr double kLatencyBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
inline constexpr std::size_t kLatencyBucketCount = std::size(kLatencyBuckets);

/// Counters for the metrics endpoint and the logs. Written by the agent, read from any thread.
struct AgentStats {
  std::atomic<std::uint64_t> records{0}, signals{0}, incidents{0}, userspace_ignored{0}, lost{0};
  /// Drill lines (signals/drill_marker.h): acted on while their drill is live; after it ended, skipped.
  std::atomic<std::uint64_t> drill_lines{0}, drill_lines_ended{0};
  std::atomic<std::uint64_t> actions_requested{0}, actions_done{0}, actions_failed{0}, actions_refused{0};
  std::atomic<std::uint64_t> actions_deduplicated{0}, last_seq{0};
  std::atomic<std::uint64_t> resumes_observed{0};  ///< resumes someone else made, seen by resume_watch
  std::atomic<std::uint64_t> scheduler_errors{0};  ///< scheduler calls (act, read) that failed
  std::atomic<std::uint64_t> boot_deferred{0};     ///< incidents not acted on: seen inside boot_grace
  std::atomic<std::uint64_t> clears{0};            ///< `cmaxd clear` requests taken
  std::atomic<std::uint64_t> last_incident_unix{0};  ///< when the last incident opened; 0: none since start
  std::atomic<std::uint64_t> start_unix{0};
  /// The kernel-log loop's last turn (it turns at least every poll and flush, about a second, even on
  /// a quiet log): a reader stuck anywhere stops it.
  std::atomic<std::uint64_t> heartbeat_unix{0};
  std::atomic<bool> held{false};        ///< this agent's drain or reboot holds the node
  std::atomic<bool> in_boot_grace{false};  ///< the node's uptime is still inside boot_grace
  /// Node actions by verb (drain, reboot, resume) and how they ended (done, unchanged, failed,
  /// refused, dry_run).
  static constexpr std::string_view kVerbs[] = {"drain", "reboot", "resume"};
  static constexpr std::string_view kStatuses[] = {"done", "unchanged", "failed", "refused", "dry_run"};
  std::atomic<std::uint64_t> node_actions[3][5]{};
  void count_action(std::string_view verb, std::string_view status);
  /// Fault lines and incidents per device, and the open-incident gauge.
  DeviceSeries devices;
  /// Read -> written of the last kmsg record (how far behind the agent reads), microseconds.
  std::atomic<std::uint64_t> kmsg_lag_us{0};
  /// Per probe, in the order added: name (fixed before run()), polls, failed polls, findings,
  /// and the last poll's duration.
  struct ProbeSlot {
    std::string name;
    std::atomic<std::uint64_t> polls{0}, errors{0}, findings{0}, last_duration_us{0};
  };
  static constexpr std::size_t kMaxProbes = 8;
  ProbeSlot probes[kMaxProbes];
  std::atomic<std::size_t> probe_count{0};
  std::atomic<std::uint64_t> last_action_latency_us{0};  ///< record read -> scheduler call returned
  /// Signal lines by kind and by the action of the incident they joined.
  std::atomic<std::uint64_t> by_kind_action[signals::kKindCount][signals::kActionCount]{};
  /// Record read -> scheduler call returned, per finished action: counts per bucket (not
  /// cumulative), the +Inf bucket last, and the sum in microseconds.
  std::atomic<std::uint64_t> latency_buckets[kLatencyBucketCount + 1]{};
  std::atomic<std::uint64_t> latency_sum_us{0};
  void observe_latency(double seconds);
};

class Agent {
 public:
  /// `log` and `scheduler` must outlive the agent; `catalog` too.
  Agent(AgentOptions options, const signals::Catalog& catalog, EventLog& log, sched::Scheduler& scheduler);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// Adds a probe to poll every `interval` on its own thread while run() runs, each poll bounded
  /// by `budget`. Call before run(); at most AgentStats::kMaxProbes.
  Result<void> add_probe(std::unique_ptr<probes::Probe> probe, std::chrono::milliseconds interval,
                         std::chrono::milliseconds budget);
  /// Runs until `stop` is requested; returns an error only when /dev/kmsg cannot be read.
  Result<void> run(std::stop_token stop);
  /// Takes one probe finding as a signal, like a kernel line (thread-safe; the probe threads
  /// call it). `probe` names the source ("nvml"); the event's origin is "probe:<probe>".
  void observe(std::string_view probe, const probes::Finding& finding);
  const AgentStats& stats() const { return stats_; }
  /// Forgets every incident this agent holds or remembers for this node (after a repair): the
  /// next fault acts again at once, the open-incident gauge returns to 0. The running agent calls
  /// it when `cmaxd clear` has recorded a clear in its event log (seen within one flush).
  void clear(const std::string& why);

 private:
  struct Request {
    std::int64_t action_id;
    std::string incident, verb, reason;
    std::chrono::steady_clock::time_point detected;
  };
  struct ProbeEntry {
    std::unique_ptr<probes::Probe> probe;
    std::chrono::milliseconds interval, budget;
    AgentStats::ProbeSlot* slot;
  };
  void process(const KmsgRecord& rec);
  // One classified signal from the log or a probe; call with detect_mu_ held.
  void handle(const signals::Signal& sig, const signals::LineInfo& info, std::string_view line,
              std::optional<std::uint64_t> seq, const std::string& origin, bool from_kernel,
              std::chrono::steady_clock::time_point detected, std::string_view drill = {});
  void probe_loop(ProbeEntry& entry, std::stop_token stop);
  void act_on(const signals::Incident& inc, std::size_t index, std::int64_t event_id,
              std::chrono::steady_clock::time_point detected);
  void flush();
  void worker(std::stop_token stop);
  struct Attempt {
    sched::Action action;
    std::optional<std::string> refusal;  ///< the fleet breaker said no; nothing was asked
  };
  Result<Attempt> attempt_action(const Request& r);
  void execute(const Request& r, std::stop_token stop);
  // Called by the worker when idle: records a resume made by someone else (see resume_watch),
  // for a scheduler without a watch.
  void watch_resume();
  // While the agent holds the node, waits on the scheduler's watch for it to be back in service.
  void resume_loop(std::stop_token stop);
  // Records a resume someone else made, once, unless this agent is resuming the node itself.
  /// `late`: the resume happened at most this long before it was seen (the wait since the last
  /// read that found the node out); zero for a watch.
  void record_observed_resume(const sched::NodeState& st, std::chrono::milliseconds late = {});
  double now_unix() const;

  AgentOptions options_;
  const signals::Catalog& catalog_;
  EventLog& log_;
  sched::Scheduler& scheduler_;
  std::vector<ProbeEntry> probes_;
  std::mutex detect_mu_;  ///< the correlator and the maps below: kmsg and probe threads share them
  std::unique_ptr<signals::Correlator> correlator_;
  int driver_branch_ = -1;  ///< this host's NVIDIA driver branch (/proc/driver/nvidia/version), -1 unknown
  signals::DrillTracker drills_;  ///< drill markers seen in the log (with detect_mu_)
  /// Drill lines read while catching up with the log written before the agent started: judged
  /// once the backlog is read, when each drill's end marker (which follows its lines) has been seen.
  struct DeferredDrillLine {
    std::string drill, line;
    std::uint64_t seq = 0;
    bool from_kernel = false;
  };
  std::vector<DeferredDrillLine> deferred_;
  bool catching_up_ = false;  ///< reading what the ring buffer held at the start (kmsg thread only)
  void replay_deferred();
  std::unordered_map<std::size_t, std::int64_t> event_of_;  ///< incident index -> event row
  std::unordered_map<std::size_t, std::uint64_t> repeats_;  ///< incident index -> lines not yet written
  std::unordered_map<std::size_t, bool> acted_;             ///< incident index -> action requested
  std::mutex log_mu_;                                       ///< the event log is shared by both threads
  std::mutex mu_;
  std::condition_variable_any cv_;        ///< the action queue's
  std::mutex probe_mu_;
  std::condition_variable_any probe_cv_;  ///< probe threads sleep on it between polls
  std::deque<Request> queue_;
  AgentStats stats_;
  std::optional<std::uint64_t> last_seq_, saved_seq_;
  std::atomic<bool> holding_{false};  ///< this agent's drain or reboot took the node out
  std::chrono::milliseconds resume_poll_{0};  ///< the worker's next wait before reading a held node
  std::chrono::steady_clock::time_point last_out_read_{};  ///< the worker's last read that found the node out
  std::chrono::steady_clock::time_point held_since_{};     ///< when this agent's hold began (the worker's view)
  std::atomic<bool> resume_check_now_{false};  ///< a fault it acted on recurred while held: read now
  bool self_resuming_ = false;         ///< execute() is resuming the node (with hold_mu_)
  std::mutex hold_mu_;                 ///< holding_'s changes, and the resume watch's wait for them
  std::condition_variable_any hold_cv_;
  std::atomic<bool> breaker_not_exact_said_{false};  ///< the fleet breaker fell back to read-then-act (said once)
  // `cmaxd clear`: the newest clear row taken (run thread), and when the last clear was (with
  // log_mu_ or detect_mu_): an action before it never deduplicates a new one.
  std::int64_t clears_seen_ = 0;
  double last_clear_unix_ = 0;
  bool in_boot_grace(double seconds_since_boot) const;
  // Starts the incidents over (the cap, a clear); call with detect_mu_ held. The event log keeps
  // the history.
  void forget_incidents();
  void take_clear();  // a clear `cmaxd clear` wrote since the last look: clear()
};

/// One log record on stderr as a JSON line ({"level":..., "msg":...}); cmaxd's only log format.
void log_line(std::string_view level, std::string_view msg);

/// What every drain or reboot reason of an incident a drill caused ends with: " [drill 1a2b]".
/// `cmax sla` and `cmax drill` find drills' actions by it.
std::string drill_reason_suffix(std::string_view drill);

/// "node|kind|code|device" ("|drill-ID" added for a drill's incident): the key an action is
/// deduplicated by.
std::string incident_key(const signals::Incident& inc);

/// This boot's id from /proc/sys/kernel/random/boot_id (or `path`).
Result<std::string> read_boot_id(const std::string& path = "/proc/sys/kernel/random/boot_id");

}  // namespace cmax::agent
