#include "agent/metrics.h"

#include <fmt/format.h>

namespace cmax::agent {
namespace {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t value) {
  fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
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
  return out;
}

}  // namespace cmax::agent
