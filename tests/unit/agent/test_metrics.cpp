// The Prometheus exposition: every sample belongs to a family announced with HELP and TYPE, names
// and labels are well formed, and the histogram's buckets are cumulative with +Inf equal to _count.

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "agent/metrics.h"

namespace cmax::agent {
namespace {

TEST(Metrics, ExpositionIsWellFormed) {
  AgentStats s;
  s.records = 1200;
  s.signals = 7;
  s.actions_done = 2;
  ++s.by_kind_action[static_cast<int>(signals::Kind::xid)][static_cast<int>(signals::Action::reboot_node)];
  s.observe_latency(0.0004);
  s.observe_latency(0.042);
  s.observe_latency(60);  // past the last bucket: +Inf only
  s.kmsg_lag_us = 1500;
  s.probes[0].name = "nvml";
  s.probes[0].polls = 12;
  s.probes[0].errors = 1;
  s.probes[1].name = "fs";
  s.probes[1].findings = 2;
  s.probe_count = 2;
  std::string text = render_metrics(s, "gpu-07");

  std::set<std::string> typed;
  std::map<std::string, double> buckets;
  double count = -1;
  const std::regex sample_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample_re)) << line;
    std::string name = m[1];
    std::string family = name;
    for (std::string suffix : {"_bucket", "_sum", "_count"})
      if (family.size() > suffix.size() && family.ends_with(suffix) && typed.count(family.substr(0, family.size() - suffix.size())))
        family = family.substr(0, family.size() - suffix.size());
    EXPECT_TRUE(typed.count(family)) << "no TYPE before " << line;
    EXPECT_NE(m[2].str().find("node=\"gpu-07\""), std::string::npos) << line;
    if (name == "cmaxd_action_latency_seconds_bucket") buckets[m[2]] = std::stod(m[3]);
    if (name == "cmaxd_action_latency_seconds_count") count = std::stod(m[3]);
  }
  EXPECT_NE(text.find("cmaxd_kmsg_records_total{node=\"gpu-07\"} 1200\n"), std::string::npos);
  EXPECT_NE(text.find("cmaxd_signals_total{node=\"gpu-07\",kind=\"xid\",action=\"reboot_node\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("cmaxd_kmsg_lag_seconds{node=\"gpu-07\"} 0.0015\n"), std::string::npos);
  EXPECT_NE(text.find("cmaxd_probe_polls_total{node=\"gpu-07\",probe=\"nvml\"} 12\n"), std::string::npos);
  EXPECT_NE(text.find("cmaxd_probe_errors_total{node=\"gpu-07\",probe=\"nvml\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("cmaxd_probe_findings_total{node=\"gpu-07\",probe=\"fs\"} 2\n"), std::string::npos);
  EXPECT_EQ(text.find("probe=\"\""), std::string::npos) << "an unused probe slot was rendered";
  EXPECT_EQ(count, 3);
  EXPECT_EQ(buckets["node=\"gpu-07\",le=\"+Inf\""], 3);
  EXPECT_EQ(buckets["node=\"gpu-07\",le=\"0.001\""], 1);
  EXPECT_EQ(buckets["node=\"gpu-07\",le=\"0.05\""], 2);
  EXPECT_EQ(buckets["node=\"gpu-07\",le=\"10\""], 2);
}

}  // namespace
}  // namespace cmax::agent
