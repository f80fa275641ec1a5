// The Kubernetes cluster view's judges (src/cluster/kube_view.h) on API answers shaped as the real
// server gives them (tests/kube checks the same against a running kube-apiserver).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/audit.h"
#include "cluster/kube_view.h"
#include "core/clock.h"

namespace {

using cmax::audit::Outcome;
using cmax::cluster::KubeViewAnswers;
using cmax::sched::KubeReply;
using json = nlohmann::json;

KubeReply ok(const json& items) { return {200, "OK", json{{"kind", "List"}, {"items", items}}.dump()}; }
KubeReply not_found() { return {404, "Not Found", R"({"kind":"Status","code":404})"}; }
KubeReply forbidden() { return {403, "Forbidden", R"({"kind":"Status","code":403,"message":"forbidden"})"}; }

json node(const std::string& name, const json& labels) { return {{"metadata", {{"name", name}, {"labels", labels}}}}; }

json exporter(const std::string& image, int desired, int ready) {
  json ds = {{"metadata", {{"name", "nvidia-dcgm-exporter"}, {"namespace", "gpu-operator"}}},
             {"spec", {{"template", {{"spec", {{"containers", json::array({{{"name", "x"}, {"image", image}}})}}}}}}}};
  if (desired >= 0) ds["status"] = {{"desiredNumberScheduled", desired}, {"numberReady", ready}};
  return ds;
}

KubeViewAnswers answers(json nodes, json daemonsets = json::array(), json roles = json::array(),
                        json bindings = json::array()) {
  return {ok(nodes), not_found(), not_found(), ok(daemonsets), ok(roles), ok(bindings)};
}

TEST(KubeView, DcgmExporterTagFollowsNvidiasGrammarOrSaysNothing) {
  using cmax::cluster::dcgm_exporter_tag_versions;
  auto v = dcgm_exporter_tag_versions("nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->first, "4.2.3");
  EXPECT_EQ(v->second, "4.1.3");
  // DCGM ahead of or behind the exporter: position decides, never magnitude.
  v = dcgm_exporter_tag_versions("nvcr.io/nvidia/k8s/dcgm-exporter:4.4.0-4.5.0-ubi9");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->second, "4.5.0");
  EXPECT_FALSE(dcgm_exporter_tag_versions("nvcr.io/nvidia/k8s/dcgm-exporter:latest"));
  EXPECT_FALSE(dcgm_exporter_tag_versions("nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.1"));  // no OS: truncated
  EXPECT_FALSE(dcgm_exporter_tag_versions("nvcr.io/nvidia/k8s/dcgm-exporter@sha256:0123abcd"));
  EXPECT_FALSE(dcgm_exporter_tag_versions("registry.local:5000/dcgm-exporter"));  // a port is not a tag
}

// Published image references (tests/golden/kube_view/images.tsv, each with its source).
TEST(KubeView, PublishedDcgmExporterImagesReadAsTheirReleases) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/golden/kube_view/images.tsv");
  ASSERT_TRUE(in);
  int cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cols(line);
    std::string image, exporter;
    std::getline(cols, image, '\t');
    std::getline(cols, exporter, '\t');
    auto v = cmax::cluster::dcgm_exporter_tag_versions(image);
    if (exporter == "-") {
      EXPECT_FALSE(v) << image;
    } else {
      ASSERT_TRUE(v) << image;
      EXPECT_EQ(v->second, exporter) << image;
    }
    ++cases;
  }
  EXPECT_GE(cases, 5);
}

TEST(KubeView, TopologyPassesOnlyWhenEverySelectedNodeCarriesItsPosition) {
  auto a = answers(json::array({node("g1", {{"cloud.google.com/gce-topology-block", "b1"}}),
                                node("g2", {{"cloud.google.com/gce-topology-block", "b2"}}),
                                node("cpu", json::object())}));
  EXPECT_EQ(cmax::cluster::judge_kube_topology(a, {"g1", "g2"}).outcome, Outcome::pass);
  auto partial = cmax::cluster::judge_kube_topology(a, {"g1", "g2", "cpu"});
  EXPECT_EQ(partial.outcome, Outcome::warn);
  EXPECT_NE(partial.reason.find("cpu"), std::string::npos) << partial.reason;

  auto zones = answers(json::array({node("g1", {{"topology.kubernetes.io/zone", "us-east-1a"}})}));
  auto z = cmax::cluster::judge_kube_topology(zones, {"g1"});
  EXPECT_EQ(z.outcome, Outcome::warn);
  EXPECT_NE(z.observed.find("zone/region labels only"), std::string::npos) << z.observed;

  auto clique = answers(json::array({node("gb1", {{"nvidia.com/gpu.clique", "cluster-uuid.1"}})}));
  EXPECT_EQ(cmax::cluster::judge_kube_topology(clique, {"gb1"}).outcome, Outcome::pass);

  // Kueue TAS objects are enough without labels.
  auto kueue = zones;
  kueue.kueue_topologies = ok(json::array({{{"metadata", {{"name", "default"}}}}}));
  EXPECT_EQ(cmax::cluster::judge_kube_topology(kueue, {"g1"}).outcome, Outcome::pass);

  // Nothing found, and the Kueue list was refused: absence is not proven.
  auto refused = zones;
  refused.kueue_topologies = forbidden();
  EXPECT_EQ(cmax::cluster::judge_kube_topology(refused, {"g1"}).outcome, Outcome::unverified);
  auto unread = zones;
  unread.nodes = forbidden();
  EXPECT_EQ(cmax::cluster::judge_kube_topology(unread, {"g1"}).outcome, Outcome::unverified);
}

TEST(KubeView, DcgmExporterDaemonSetMustBeReadyOnTheGpuNodes) {
  using cmax::cluster::judge_dcgm_exporter_daemonset;
  const std::string img = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04";
  EXPECT_EQ(judge_dcgm_exporter_daemonset(answers(json::array(), json::array({exporter(img, 4, 4)})), 4).outcome,
            Outcome::pass);
  auto short_ = judge_dcgm_exporter_daemonset(answers(json::array(), json::array({exporter(img, 4, 3)})), 4);
  EXPECT_EQ(short_.outcome, Outcome::warn);
  EXPECT_EQ(judge_dcgm_exporter_daemonset(answers(json::array(), json::array({exporter(img, 4, 0)})), 4).outcome,
            Outcome::fail);
  EXPECT_EQ(judge_dcgm_exporter_daemonset(answers(json::array(), json::array({exporter(img, -1, 0)})), 4).outcome,
            Outcome::unverified);
  auto none = judge_dcgm_exporter_daemonset(
      answers(json::array(), json::array({exporter("registry.k8s.io/kube-proxy:v1.37.2", 4, 4)})), 4);
  EXPECT_EQ(none.outcome, Outcome::fail);
  auto refused = answers(json::array());
  refused.daemonsets = forbidden();
  EXPECT_EQ(judge_dcgm_exporter_daemonset(refused, 4).outcome, Outcome::unverified);
}

TEST(KubeView, DcgmExporterImageIsJudgedByTheHostChecksFloor) {
  cmax::audit::AuditOptions o;
  auto floors = cmax::audit::load_floors(o);
  ASSERT_TRUE(floors) << floors.error().message;
  cmax::core::SystemClock clock;
  auto judge = [&](const std::string& image) {
    return cmax::cluster::judge_dcgm_exporter_floor(answers(json::array(), json::array({exporter(image, 1, 1)})),
                                                    *floors, clock);
  };
  auto old = judge("nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04");
  EXPECT_EQ(old.outcome, Outcome::fail) << old.reason;
  EXPECT_TRUE(old.security);
  EXPECT_EQ(judge("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04").outcome, Outcome::pass);
  EXPECT_EQ(judge("nvcr.io/nvidia/k8s/dcgm-exporter:latest").outcome, Outcome::unverified);
  EXPECT_EQ(cmax::cluster::judge_dcgm_exporter_floor(answers(json::array()), *floors, clock).outcome,
            Outcome::not_applicable);
}

TEST(KubeView, NodesProxyHoldersOutsideTheControlPlaneFail) {
  using cmax::cluster::judge_nodes_proxy_holders;
  json roles = json::array(
      {{{"metadata", {{"name", "cluster-admin"}}},
        {"rules", json::array({{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}}})}},
       {{"metadata", {{"name", "prometheus"}}},
        {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"nodes/proxy", "nodes/metrics"}}, {"verbs", {"get", "list"}}}})}},
       {{"metadata", {{"name", "metrics-only"}}},
        {"rules", json::array({{{"apiGroups", {""}}, {"resources", {"nodes/metrics"}}, {"verbs", {"get"}}}})}}});
  json system_only = json::array(
      {{{"metadata", {{"name", "cluster-admin"}}},
        {"roleRef", {{"kind", "ClusterRole"}, {"name", "cluster-admin"}}},
        {"subjects", json::array({{{"kind", "Group"}, {"name", "system:masters"}}})}},
       {{"metadata", {{"name", "metrics"}}},
        {"roleRef", {{"kind", "ClusterRole"}, {"name", "metrics-only"}}},
        {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "monitoring"}}})}}});
  auto clean = judge_nodes_proxy_holders(answers(json::array(), json::array(), roles, system_only));
  EXPECT_EQ(clean.outcome, Outcome::pass) << clean.reason;
  EXPECT_NE(clean.observed.find("system:masters"), std::string::npos);

  json with_prometheus = system_only;
  with_prometheus.push_back({{"metadata", {{"name", "prometheus"}}},
                             {"roleRef", {{"kind", "ClusterRole"}, {"name", "prometheus"}}},
                             {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "monitoring"}}})}});
  auto bad = judge_nodes_proxy_holders(answers(json::array(), json::array(), roles, with_prometheus));
  EXPECT_EQ(bad.outcome, Outcome::fail);
  EXPECT_NE(bad.reason.find("ServiceAccount monitoring/prometheus (ClusterRole prometheus via ClusterRoleBinding prometheus)"),
            std::string::npos)
      << bad.reason;

  auto refused = answers(json::array(), json::array(), roles, with_prometheus);
  refused.clusterrolebindings = forbidden();
  EXPECT_EQ(judge_nodes_proxy_holders(refused).outcome, Outcome::unverified);
}

}  // namespace
