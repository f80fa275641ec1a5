#include "agent/metrics.h"

#include "agent/device_series.h"

#include <fmt/format.h>

namespace cmax::agent {
namespace {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t value) {
  fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
}

// Per device: every fault line (repeats counted) and every incident opened, by kind, code and
// device; whether the node is held for an incident on the device (0 again once it is back).
void render_device_series(std::string& out, const AgentStats& s, const std::string& n) {
  const auto snap = s.devices.snapshot();
  auto keyed = [&](const DeviceKey& k) {
    return fmt::format("{},kind=\"{}\",code=\"{}\",device=\"{}\"", n, escape_label(k.kind), escape_label(k.code),
                       escape_label(k.device));
  };
  family(out, "cmaxd_incident_lines_total", "counter",
         "Fault lines and probe findings that joined an incident, by kind, code and device; every repeat counts.");
  for (const auto& [k, v] : snap.lines) sample(out, "cmaxd_incident_lines_total", keyed(k), v);
  family(out, "cmaxd_device_incidents_total", "counter", "Incidents opened, by kind, code and device.");
  for (const auto& [k, v] : snap.incidents) sample(out, "cmaxd_device_incidents_total", keyed(k), v);
  family(out, "cmaxd_incident_open", "gauge",
         "1 while cmax holds the node for an incident on this device; 0 once the node is back in service, "
         "the fault resolved, or cmaxd clear ran.");
  for (const auto& [k, open] : snap.open)
    sample(out, "cmaxd_incident_open",
           fmt::format("{},kind=\"{}\",device=\"{}\"", n, escape_label(k.first), escape_label(k.second)), open ? 1 : 0);
}

void render_state(std::string& out, const AgentStats& s, const std::string& n) {
  auto one = [&](std::string_view name, std::string_view type, std::string_view help, std::uint64_t v) {
    family(out, name, type, help);
    sample(out, name, n, v);
  };
  one("cmaxd_node_held", "gauge", "1 while this agent's drain or reboot holds the node out of scheduling.", s.held ? 1 : 0);
  one("cmaxd_last_incident_timestamp_seconds", "gauge", "Unix time the last incident opened; 0: none since the agent started.",
      s.last_incident_unix);
  one("cmaxd_resumes_observed_total", "counter", "Resumes of the held node made by someone else (an operator, a drill's cleanup).",
      s.resumes_observed);
  one("cmaxd_scheduler_errors_total", "counter", "Scheduler calls (drain, resume, state reads) that failed.",
      s.scheduler_errors);
  one("cmaxd_boot_deferred_total", "counter", "Incidents not acted on because they were printed inside the boot grace.",
      s.boot_deferred);
  one("cmaxd_boot_grace", "gauge", "1 while the node's uptime is inside --boot-grace-s.", s.in_boot_grace ? 1 : 0);
  one("cmaxd_clears_total", "counter", "cmaxd clear requests taken (incidents forgotten after a repair).", s.clears);
  one("cmaxd_start_time_seconds", "gauge", "Unix time the agent started.", s.start_unix);
  one("cmaxd_heartbeat_timestamp_seconds", "gauge",
      "Unix time of the kernel-log loop's last turn (about every second, even on a quiet log).", s.heartbeat_unix);
  family(out, "cmaxd_node_actions_total", "counter", "Node actions by verb and how they ended.");
  for (std::size_t v = 0; v < std::size(AgentStats::kVerbs); ++v)
    for (std::size_t st = 0; st < std::size(AgentStats::kStatuses); ++st)
      sample(out, "cmaxd_node_actions_total",
             fmt::format("{},verb=\"{}\",status=\"{}\"", n, AgentStats::kVerbs[v], AgentStats::kStatuses[st]),
             s.node_actions[v][st]);
  family(out, "cmaxd_build_info", "gauge", "Always 1; the version in a label.");
  fmt::format_to(std::back_inserter(out), "cmaxd_build_info{{{},version=\"{}\"}} 1\n", n, CMAX_VERSION);
}

}  // namespace

std::string render_metrics(const AgentStats& s, const std::string& node) {
  std::string out;
  const std::string n = fmt::format("node=\"{}\"", node);  // node names are [A-Za-z0-9._-] (sched::check_node_name)
  auto counter = [&](std::string_view name, std::string_view help, std::uint64_t v) {
    family(out, name, "counter", help);
    sample(out, name, n, v);
  };
  counter("cmaxd_kmsg_records_total", "Kernel log records read from /dev/kmsg.", s.records);
  counter("cmaxd_kmsg_lost_records_total", "Records overwritten before cmaxd read them (sequence gaps).", s.lost);
  family(out, "cmaxd_kmsg_last_seq", "gauge", "Sequence number of the last record read.");
  sample(out, "cmaxd_kmsg_last_seq", n, s.last_seq);
  family(out, "cmaxd_kmsg_lag_seconds", "gauge",
         "How far behind cmaxd read the last kernel record: read time minus the record's timestamp.");
  fmt::format_to(std::back_inserter(out), "cmaxd_kmsg_lag_seconds{{{}}} {}\n", n,
                 static_cast<double>(s.kmsg_lag_us.load()) / 1e6);
  if (const std::size_t probes = s.probe_count.load()) {
    family(out, "cmaxd_probe_polls_total", "counter", "Probe readings taken (NVML, InfiniBand sysfs, mounts).");
    for (std::size_t i = 0; i < probes; ++i)
      sample(out, "cmaxd_probe_polls_total", fmt::format("{},probe=\"{}\"", n, s.probes[i].name), s.probes[i].polls);
    family(out, "cmaxd_probe_errors_total", "counter", "Probe readings that failed as a whole.");
    for (std::size_t i = 0; i < probes; ++i)
      sample(out, "cmaxd_probe_errors_total", fmt::format("{},probe=\"{}\"", n, s.probes[i].name), s.probes[i].errors);
    family(out, "cmaxd_probe_findings_total", "counter", "Faults and recoveries the probes reported.");
    for (std::size_t i = 0; i < probes; ++i)
      sample(out, "cmaxd_probe_findings_total", fmt::format("{},probe=\"{}\"", n, s.probes[i].name),
             s.probes[i].findings);
    family(out, "cmaxd_probe_last_duration_seconds", "gauge", "How long the last reading took.");
    for (std::size_t i = 0; i < probes; ++i)
      fmt::format_to(std::back_inserter(out), "cmaxd_probe_last_duration_seconds{{{},probe=\"{}\"}} {}\n", n,
                     s.probes[i].name, static_cast<double>(s.probes[i].last_duration_us.load()) / 1e6);
  }
  family(out, "cmaxd_signals_total", "counter", "Fault lines by kind and by the action of the incident they joined.");
  for (int k = 0; k < signals::kKindCount; ++k)
    for (int a = 0; a < signals::kActionCount; ++a)
      if (auto v = s.by_kind_action[k][a].load())
        sample(out, "cmaxd_signals_total",
               fmt::format("{},kind=\"{}\",action=\"{}\"", n, signals::to_string(static_cast<signals::Kind>(k)),
                           signals::to_string(static_cast<signals::Action>(a))),
               v);
  counter("cmaxd_incidents_total", "Incidents opened (repeats of one fault on one device fold into one).", s.incidents);
  counter("cmaxd_userspace_ignored_total", "Incidents not acted on because their line came from userspace (--act-on kernel).",
          s.userspace_ignored);
  family(out, "cmaxd_actions_total", "counter", "Node actions by outcome.");
  sample(out, "cmaxd_actions_total", n + ",status=\"requested\"", s.actions_requested);
  sample(out, "cmaxd_actions_total", n + ",status=\"done\"", s.actions_done);
  sample(out, "cmaxd_actions_total", n + ",status=\"failed\"", s.actions_failed);
  sample(out, "cmaxd_actions_total", n + ",status=\"refused\"", s.actions_refused);
  sample(out, "cmaxd_actions_total", n + ",status=\"deduplicated\"", s.actions_deduplicated);
  family(out, "cmaxd_action_latency_seconds", "histogram", "Record read -> scheduler call returned, per action.");
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b <= kLatencyBucketCount; ++b) {
    cumulative += s.latency_buckets[b];
    std::string le = b < kLatencyBucketCount ? fmt::format("{}", kLatencyBuckets[b]) : "+Inf";
    sample(out, "cmaxd_action_latency_seconds_bucket", fmt::format("{},le=\"{}\"", n, le), cumulative);
  }
  fmt::format_to(std::back_inserter(out), "cmaxd_action_latency_seconds_sum{{{}}} {}\n", n,
                 static_cast<double>(s.latency_sum_us.load()) / 1e6);
  sample(out, "cmaxd_action_latency_seconds_count", n, cumulative);
  render_device_series(out, s, n);
  render_state(out, s, n);
  return out;
}

}  // namespace cmax::agent
