// kube_view: a Kubernetes Node and its pods folded into the state the drill's timeline reads.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drill/kube_view.h"

using cmax::drill::kube_view;
using json = nlohmann::json;

namespace {

json node(json spec = json::object(), json conditions = json::array({{{"type", "Ready"}, {"status", "True"}}})) {
  return {{"kind", "Node"}, {"metadata", {{"name", "k1"}}}, {"spec", spec}, {"status", {{"conditions", conditions}}}};
}

json pods(std::vector<json> items = {}) { return {{"kind", "PodList"}, {"items", items}}; }

json pod(const std::string& phase, const std::string& owner = "", bool mirror = false) {
  json p{{"metadata", {{"name", "p"}}}, {"status", {{"phase", phase}}}};
  if (!owner.empty()) p["metadata"]["ownerReferences"] = json::array({{{"kind", owner}, {"name", "x"}}});
  if (mirror) p["metadata"]["annotations"] = {{"kubernetes.io/config.mirror", "abc"}};
  return p;
}

cmax::drill::KubeView view(const json& n, const json& p, std::vector<std::string> before = {}) {
  auto v = kube_view(n.dump(), p.dump(), before);
  EXPECT_TRUE(v) << v.error().message;
  return v ? *v : cmax::drill::KubeView{};
}

}  // namespace

TEST(KubeView, AHealthyNodeIsIdleOrAllocatedByItsWorkloadPodsOnly) {
  auto idle = view(node(), pods({pod("Running", "DaemonSet"), pod("Running", "", true), pod("Succeeded", "Job")}));
  EXPECT_EQ(idle.state.name, "k1");
  EXPECT_EQ(idle.state.state, "IDLE");
  EXPECT_EQ(idle.state.reason, "");
  EXPECT_EQ(idle.workload_pods, 0);
  auto busy = view(node(), pods({pod("Running", "ReplicaSet"), pod("Pending", "Job"), pod("Failed", "Job")}));
  EXPECT_EQ(busy.state.state, "ALLOCATED");
  EXPECT_EQ(busy.workload_pods, 2);
}

TEST(KubeView, CordonAndNewTaintsDrainAndSayWhat) {
  json spec{{"unschedulable", true},
            {"taints", json::array({{{"key", "cmax.io/unhealthy"}, {"value", "xid-79"}, {"effect", "NoSchedule"}}})}};
  auto v = view(node(spec), pods({pod("Running", "ReplicaSet")}));
  EXPECT_EQ(v.state.state, "ALLOCATED+DRAIN");
  EXPECT_TRUE(v.state.draining());
  EXPECT_EQ(v.state.reason, "cordoned; taint cmax.io/unhealthy=xid-79:NoSchedule");
  auto empty = view(node(spec), pods());
  EXPECT_TRUE(empty.state.drained());
  EXPECT_EQ(empty.taint_keys, (std::vector<std::string>{"cmax.io/unhealthy"}));
}

TEST(KubeView, ATaintTheNodeCarriedBeforeTheDrillIsNotADrain) {
  json spec{{"taints", json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}},
                                    {{"key", "example.com/soft"}, {"effect", "PreferNoSchedule"}}})}};
  auto before = view(node(spec), pods(), {"nvidia.com/gpu"});
  EXPECT_EQ(before.state.state, "IDLE");
  EXPECT_EQ(before.state.reason, "taint example.com/soft:PreferNoSchedule");  // a mark, not a drain
  auto not_ignored = view(node(spec), pods());
  EXPECT_TRUE(not_ignored.state.drain_flag());
}

TEST(KubeView, ProblemConditionsAreAReasonAndNotReadyIsDown) {
  auto npd = view(node(json::object(), json::array({{{"type", "Ready"}, {"status", "True"}},
                                                    {{"type", "MemoryPressure"}, {"status", "False"}},
                                                    {{"type", "GPUProblem"}, {"status", "True"}, {"reason", "XidError"}},
                                                    {{"type", "CmaxHealthy"}, {"status", "False"}, {"reason", "CmaxFault"}}})),
                  pods());
  EXPECT_EQ(npd.state.state, "IDLE");
  EXPECT_EQ(npd.state.reason, "condition GPUProblem=True (XidError); condition CmaxHealthy=False (CmaxFault)");
  auto down = view(node(json::object(), json::array({{{"type", "Ready"}, {"status", "False"}, {"reason", "KubeletNotReady"}}})), pods());
  EXPECT_TRUE(down.state.down());
  EXPECT_EQ(down.state.reason, "condition Ready=False (KubeletNotReady)");
  auto unknown = view(node(json::object(), json::array({{{"type", "Ready"}, {"status", "Unknown"}}})), pods());
  EXPECT_EQ(unknown.state.state, "DOWN+NOT_RESPONDING");
}

TEST(KubeView, WhatIsNotANodeOrAPodListIsAnError) {
  EXPECT_FALSE(kube_view("", pods().dump(), {}));
  EXPECT_FALSE(kube_view(R"({"kind":"Status","message":"nodes \"k9\" not found"})", pods().dump(), {}));
  EXPECT_FALSE(kube_view(node().dump(), R"({"kind":"PodList"})", {}));
  EXPECT_FALSE(kube_view(R"({"kind":"Node","metadata":{}})", pods().dump(), {}));
  // Odd but well-formed shapes are read, not crashed on.
  auto odd = kube_view(R"({"kind":"Node","metadata":{"name":"k1"},"spec":{"unschedulable":"yes","taints":[1,"x",{}]},"status":{"conditions":[null]}})",
                       R"({"kind":"PodList","items":[1,null,{"status":3}]})", {});
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_TRUE(odd->state.down());  // no Ready condition: never reported
}
