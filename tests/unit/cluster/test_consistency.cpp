// Cross-node consistency (cluster/consistency.h): nodes must agree; the outliers are named
// against the majority; unreadable and missing facts are told apart.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/consistency.h"

using namespace cmax::cluster;
using cmax::audit::Facts;
using cmax::audit::Finding;
using cmax::audit::Outcome;

namespace {

constexpr const char* kDriverSource = "/proc/driver/nvidia/version";

Facts driver(const std::string& version) {
  Facts f;
  f.present("gpu.driver.version", version, kDriverSource);
  return f;
}

Finding finding(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.check_id == id; });
  EXPECT_TRUE(it != fs.end()) << id;
  return it == fs.end() ? Finding{} : *it;
}

std::vector<NodeFacts> nodes_of(const std::vector<std::pair<std::string, Facts>>& facts) {
  std::vector<NodeFacts> out;
  for (const auto& [name, f] : facts) out.push_back({name, &f});
  return out;
}

}  // namespace

TEST(ConsistencyRules, TableInReportOrder) {
  const auto rules = consistency_rules();
  ASSERT_EQ(rules.size(), 13u);
  EXPECT_EQ(rules.front().id, "cluster.consistency.gpu_driver");
  EXPECT_EQ(rules.back().id, "cluster.consistency.link_rates");
  for (const auto& r : rules) {
    EXPECT_TRUE(r.id.starts_with("cluster.consistency.")) << r.id;
    EXPECT_FALSE(r.keys.empty()) << r.id;
  }
  std::vector<Facts> none(2);
  const std::vector<NodeFacts> ns = {{"a", &none[0]}, {"b", &none[1]}};
  const auto fs = cross_node_findings(ns);
  ASSERT_EQ(fs.size(), rules.size());
  for (std::size_t i = 0; i < fs.size(); ++i) EXPECT_EQ(fs[i].check_id, rules[i].id);
}

TEST(Consistency, OneOddDriverFailsNamingTheNodeAndTheMajority) {
  const std::vector<std::pair<std::string, Facts>> facts = {{"gpu-01", driver("550.54.15")},
                                                            {"gpu-02", driver("550.54.15")},
                                                            {"gpu-03", driver("535.104.05")},
                                                            {"gpu-04", driver("550.54.15")}};
  const auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.category, cmax::audit::Category::lifecycle);
  EXPECT_EQ(f.severity, cmax::audit::Severity::config);
  EXPECT_EQ(f.title, "GPU driver version agrees across nodes");
  EXPECT_EQ(f.expected, "every node: 550.54.15 (the majority, 3 of 4 nodes)");
  EXPECT_EQ(f.observed, "2 values: 550.54.15 on 3 node(s); 535.104.05 on gpu-03");
  EXPECT_EQ(f.evidence_value, f.observed);
  EXPECT_EQ(f.reason, "nodes disagree: 535.104.05 on gpu-03");
  EXPECT_EQ(f.evidence_source, "facts gpu.driver.version of every node");
}

TEST(Consistency, AllAgreePasses) {
  const std::vector<std::pair<std::string, Facts>> facts = {
      {"gpu-01", driver("550.54.15")}, {"gpu-02", driver("550.54.15")}, {"gpu-03", driver("550.54.15")}};
  const auto fs = cross_node_findings(nodes_of(facts));
  const auto f = finding(fs, "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::pass);
  EXPECT_EQ(f.observed, "3 nodes: 550.54.15");
  EXPECT_EQ(f.expected, "every node: 550.54.15 (the majority, 3 of 3 nodes)");
  EXPECT_EQ(f.evidence_value, "550.54.15");
  EXPECT_EQ(f.reason, "");
  // The rules none of them has facts for are not applicable, with why.
  const auto k = finding(fs, "cluster.consistency.kernel");
  EXPECT_EQ(k.outcome, Outcome::not_applicable);
  EXPECT_EQ(k.reason, "no node has it (kernel.release)");
}

TEST(Consistency, AbsentAmongPresentIsADisagreement) {
  std::vector<std::pair<std::string, Facts>> facts = {
      {"gpu-01", driver("550.54.15")}, {"gpu-02", driver("550.54.15")}, {"gpu-03", Facts{}}};
  facts[2].second.absent("gpu.driver.version", kDriverSource, "no such file");
  auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason, "nodes disagree: (absent) on gpu-03");
  EXPECT_EQ(f.expected, "every node: 550.54.15 (the majority, 2 of 3 nodes)");

  // A fact never collected at all reads the same as an absent one.
  facts[2].second = Facts{};
  f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason, "nodes disagree: (absent) on gpu-03");
}

TEST(Consistency, UnreadableFactIsUnverified) {
  std::vector<std::pair<std::string, Facts>> facts = {
      {"gpu-01", driver("550.54.15")}, {"gpu-02", driver("550.54.15")}, {"gpu-03", Facts{}}};
  facts[2].second.error("gpu.driver.version", kDriverSource, "permission denied");
  auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_EQ(f.reason, "the rest agree; could not be read on gpu-03");
  EXPECT_EQ(f.expected, "every node: 550.54.15 (the majority, 2 of 2 nodes)");

  // Unreadable everywhere: unverified, never not_applicable.
  std::vector<std::pair<std::string, Facts>> errs = {{"a", Facts{}}, {"b", Facts{}}};
  for (auto& [n, fs] : errs) fs.error("gpu.driver.version", kDriverSource, "nvidia-smi timed out");
  f = finding(cross_node_findings(nodes_of(errs)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_EQ(f.reason, "could not be read on a,b");

  // A disagreement among the readable ones is still a fail, and says which could not be read.
  std::vector<std::pair<std::string, Facts>> mixed = {
      {"a", driver("550.54.15")}, {"b", driver("535.104.05")}, {"c", driver("550.54.15")}, {"d", Facts{}}};
  mixed[3].second.error("gpu.driver.version", kDriverSource, "permission denied");
  f = finding(cross_node_findings(nodes_of(mixed)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason, "nodes disagree: 535.104.05 on b (could not be read on d)");
}

TEST(Consistency, OneNodeIsNotApplicable) {
  const std::vector<std::pair<std::string, Facts>> facts = {{"gpu-01", driver("550.54.15")}};
  for (const auto& f : cross_node_findings(nodes_of(facts))) {
    EXPECT_EQ(f.outcome, Outcome::not_applicable) << f.check_id;
    EXPECT_EQ(f.reason, "fewer than two nodes answered: nothing to compare");
  }
  for (const auto& f : cross_node_findings({})) EXPECT_EQ(f.outcome, Outcome::not_applicable) << f.check_id;
}

TEST(Consistency, NoNodeHasTheFactIsNotApplicable) {
  std::vector<std::pair<std::string, Facts>> facts = {{"a", Facts{}}, {"b", Facts{}}, {"c", Facts{}}};
  for (auto& [n, fs] : facts) fs.absent("gpu.driver.version", kDriverSource, "no NVIDIA driver loaded");
  auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_EQ(f.reason, "no node has it (gpu.driver.version)");
  // Null facts (a node without an audit) count as absent.
  const std::vector<NodeFacts> null_facts = {{"x", nullptr}, {"y", nullptr}};
  f = finding(cross_node_findings(null_facts), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
}

TEST(Consistency, CudaFallsBackFromNvccToInstalledCuda) {
  std::vector<std::pair<std::string, Facts>> facts = {{"a", Facts{}}, {"b", Facts{}}, {"c", Facts{}}};
  facts[0].second.present("tool.nvcc.version", "12.4", "nvcc --version");
  facts[1].second.absent("tool.nvcc.version", "nvcc --version", "not on PATH");
  facts[1].second.present("cuda.installed", "12.4", "/usr/local/cuda/version.json");
  facts[2].second.error("tool.nvcc.version", "nvcc --version", "timed out");
  facts[2].second.present("cuda.installed", "12.4", "/usr/local/cuda/version.json");
  auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.cuda");
  EXPECT_EQ(f.outcome, Outcome::pass);
  EXPECT_EQ(f.observed, "3 nodes: 12.4");
  EXPECT_EQ(f.evidence_source, "facts tool.nvcc.version | cuda.installed of every node");

  // nvcc counts first when a node has both.
  facts[0].second.present("cuda.installed", "12.2", "/usr/local/cuda/version.json");
  facts[2].second = Facts{};
  facts[2].second.present("cuda.installed", "12.2", "/usr/local/cuda/version.json");
  f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.cuda");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason, "nodes disagree: 12.2 on c");
}

TEST(Consistency, ATwoTwoTieIsStillAFail) {
  const std::vector<std::pair<std::string, Facts>> facts = {{"n1", driver("550.54.15")},
                                                            {"n2", driver("535.104.05")},
                                                            {"n3", driver("550.54.15")},
                                                            {"n4", driver("535.104.05")}};
  const auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  // Ties go to the value first in order, so the report is the same on every run.
  EXPECT_EQ(f.expected, "every node: 535.104.05 (the majority, 2 of 4 nodes)");
  EXPECT_EQ(f.reason, "nodes disagree: 550.54.15 on n1,n3");
}

TEST(Consistency, ManyOutliersAreListedShort) {
  std::vector<std::pair<std::string, Facts>> facts;
  for (int i = 0; i < 20; ++i) facts.emplace_back(fmt::format("n{:02}", i), driver("550.54.15"));
  for (int i = 20; i < 30; ++i) facts.emplace_back(fmt::format("n{:02}", i), driver("535.104.05"));
  const auto f = finding(cross_node_findings(nodes_of(facts)), "cluster.consistency.gpu_driver");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason, "nodes disagree: 535.104.05 on n20,n21,n22,n23,n24,n25,n26,n27,... (10 nodes)");
}
