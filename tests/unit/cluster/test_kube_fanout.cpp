// kube_fanout against the contract test's other side (tests/support/fake_kube_api): the requests it
// sends, what it makes of each pod's fate, that every pod it created is deleted, and its errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/kube_fanout.h"
#include "support/fake_kube_api.h"

using namespace cmax::cluster;
using namespace std::chrono_literals;
using cmax::test::FakeKubeApi;
using cmax::test::make_node;
using cmax::test::PodFate;
using nlohmann::json;

namespace {

std::string document(const std::string& node) {
  return json{{"schema", "cmax.collect/1"}, {"node", node}}.dump();
}

/// Pods succeed after two polls with a collect document behind a stderr line.
PodFate succeed(const json& pod) {
  auto node = pod["spec"]["nodeName"].get<std::string>();
  PodFate f;
  f.polls = 2;
  f.log = "cmax collect: reading /host/proc\n" + document(node) + "\n";
  return f;
}

/// Nodes n1..n4 labelled pool=gpu (n1 is the fake's own) and c1, a CPU node.
void four_gpu_nodes(FakeKubeApi& api) {
  for (const char* n : {"n2", "n3", "n4"}) api.add_node(make_node(n, {{"pool", "gpu"}}));
  api.add_node(make_node("c1", {{"pool", "cpu"}}));
}

KubeFanoutOptions options(const FakeKubeApi& api) {
  KubeFanoutOptions o;
  o.api.api_url = api.url();
  o.api.token_path.clear();
  o.api.timeout = 2s;
  o.pod.run_id = "t1";
  o.pod.image = "cmax:test";
  o.node_selector = "pool=gpu";
  o.node_timeout = 1500ms;
  o.deadline = 30s;
  return o;
}

struct Calls {
  std::mutex mu;
  std::vector<NodeOutput> seen;
  NodeCallback callback() {
    return [this](const NodeOutput& o) {
      std::lock_guard lock(mu);
      seen.push_back(o);
    };
  }
};

std::vector<std::string> with_prefix(const std::vector<std::string>& all, std::string_view p) {
  std::vector<std::string> out;
  for (const auto& r : all)
    if (r.rfind(p, 0) == 0) out.push_back(r);
  return out;
}

const NodeOutput& of(const std::vector<NodeOutput>& outs, const std::string& node) {
  auto it = std::find_if(outs.begin(), outs.end(), [&](const auto& o) { return o.node == node; });
  EXPECT_NE(it, outs.end()) << node;
  return *it;
}

}  // namespace

TEST(KubeFanout, ThreeAnswerOneNeverStartsAndEveryPodIsDeleted) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  api.set_pod_hook([](const json& pod) {
    if (pod["spec"]["nodeName"] != "n3") return succeed(pod);
    PodFate never;
    never.end = PodFate::End::stay_pending;
    return never;
  });
  Calls calls;
  auto t0 = std::chrono::steady_clock::now();
  auto r = kube_fanout(options(api), calls.callback());
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r) << r.error().message;

  ASSERT_EQ(r->size(), 4u);
  std::vector<std::string> names;
  for (const auto& o : *r) names.push_back(o.node);
  EXPECT_EQ(names, (std::vector<std::string>{"n1", "n2", "n3", "n4"})) << "c1 is not pool=gpu";
  for (const char* n : {"n1", "n2", "n4"}) {
    const auto& o = of(*r, n);
    EXPECT_EQ(o.status, NodeStatus::ok) << n << ": " << o.detail;
    EXPECT_EQ(o.payload, document(n)) << "the stderr line is not part of the document";
    EXPECT_GT(o.seconds, 0);
  }
  const auto& late = of(*r, "n3");
  EXPECT_EQ(late.status, NodeStatus::timeout);
  EXPECT_NE(late.detail.find("ContainerCreating"), std::string::npos) << late.detail;
  EXPECT_GE(late.seconds, 1.4);
  EXPECT_LT(took, 1500ms + 1000ms) << "the nodes run side by side, bounded by the node timeout";

  EXPECT_EQ(calls.seen.size(), 4u);
  EXPECT_EQ(calls.seen.back().node, "n3") << "the timeout comes last, the others as they finish";

  EXPECT_TRUE(api.live_pods().empty());
  auto deletes = with_prefix(api.pod_requests(), "DELETE ");
  std::sort(deletes.begin(), deletes.end());
  EXPECT_EQ(deletes, (std::vector<std::string>{
                         "DELETE /api/v1/namespaces/default/pods/cmax-collect-t1-n1",
                         "DELETE /api/v1/namespaces/default/pods/cmax-collect-t1-n2",
                         "DELETE /api/v1/namespaces/default/pods/cmax-collect-t1-n3",
                         "DELETE /api/v1/namespaces/default/pods/cmax-collect-t1-n4",
                     }));
}

TEST(KubeFanout, ForbiddenCreateIsOneErrorAndNoNodeResults) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  api.set_pod_hook([](const json&) {
    PodFate f;
    f.create_status = 403;
    f.message =
        "pods is forbidden: User \"system:serviceaccount:ops:cmax\" cannot create resource "
        "\"pods\" in API group \"\" in the namespace \"default\"";
    return f;
  });
  Calls calls;
  auto r = kube_fanout(options(api), calls.callback());
  ASSERT_FALSE(r);
  const auto& m = r.error().message;
  EXPECT_NE(m.find("POST /api/v1/namespaces/default/pods: 403 Forbidden: pods is forbidden"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("give the credentials create on pods in namespace default"), std::string::npos)
      << m;
  EXPECT_NE(m.find("pods/log get"), std::string::npos) << m;
  EXPECT_NE(m.find("nodes list"), std::string::npos) << m;
  EXPECT_TRUE(calls.seen.empty());
  EXPECT_TRUE(api.live_pods().empty());
}

TEST(KubeFanout, DryRunCreatesNothing) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  auto o = options(api);
  o.dry_run = true;
  std::vector<KubeRequest> planned;
  o.on_dry_run = [&](const KubeRequest& req) { planned.push_back(req); };
  Calls calls;
  auto r = kube_fanout(o, calls.callback());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  for (const auto& out : *r) {
    EXPECT_EQ(out.status, NodeStatus::not_scheduled);
    EXPECT_NE(out.detail.find("dry run"), std::string::npos) << out.detail;
  }
  EXPECT_EQ(calls.seen.size(), 4u);
  EXPECT_EQ(api.pod_requests(), (std::vector<std::string>{"GET /api/v1/nodes"}));

  ASSERT_EQ(planned.size(), 16u);
  int posts = 0, deletes = 0;
  for (const auto& req : planned) {
    if (req.method == "POST") {
      ++posts;
      EXPECT_EQ(req.path, "/api/v1/namespaces/default/pods");
      auto pod = json::parse(req.body);
      EXPECT_EQ(pod["kind"], "Pod");
      EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 2) << "1.5 s rounded up";
    }
    if (req.method == "DELETE") ++deletes;
  }
  EXPECT_EQ(posts, 4);
  EXPECT_EQ(deletes, 4);
}

TEST(KubeFanout, NodesBySelectorOrByName) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  api.set_pod_hook(succeed);
  auto o = options(api);
  o.node_selector = "pool=cpu";
  auto by_label = kube_fanout(o, {});
  ASSERT_TRUE(by_label) << by_label.error().message;
  ASSERT_EQ(by_label->size(), 1u);
  EXPECT_EQ((*by_label)[0].node, "c1");
  EXPECT_EQ((*by_label)[0].status, NodeStatus::ok) << (*by_label)[0].detail;

  o.nodes = {"n4", "ghost", "c1", "n4"};
  auto by_name = kube_fanout(o, {});
  ASSERT_TRUE(by_name) << by_name.error().message;
  ASSERT_EQ(by_name->size(), 3u) << "in the order given, without repeats";
  EXPECT_EQ((*by_name)[0].node, "n4");
  EXPECT_EQ((*by_name)[0].status, NodeStatus::ok);
  EXPECT_EQ((*by_name)[1].node, "ghost");
  EXPECT_EQ((*by_name)[1].status, NodeStatus::unreachable);
  EXPECT_NE((*by_name)[1].detail.find("no node ghost"), std::string::npos);
  EXPECT_EQ((*by_name)[2].node, "c1");
  EXPECT_TRUE(api.live_pods().empty());

  o.nodes.clear();
  o.node_selector = "pool=tpu";
  auto none = kube_fanout(o, {});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no node matches \"pool=tpu\""), std::string::npos)
      << none.error().message;
}

TEST(KubeFanout, NotReadySkippedCordonedTried) {
  FakeKubeApi api("n1");
  api.add_node(make_node("n2", {{"pool", "gpu"}}, "False"));
  api.add_node(make_node("n3", {{"pool", "gpu"}}, "True", /*unschedulable=*/true));
  api.set_pod_hook(succeed);
  auto r = kube_fanout(options(api), {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(of(*r, "n2").status, NodeStatus::not_scheduled);
  EXPECT_NE(of(*r, "n2").detail.find("NotReady"), std::string::npos) << of(*r, "n2").detail;
  EXPECT_EQ(of(*r, "n3").status, NodeStatus::ok) << of(*r, "n3").detail;
  EXPECT_NE(of(*r, "n3").detail.find("spec.nodeName bypasses"), std::string::npos);
  auto posts = with_prefix(api.pod_requests(), "POST ");
  EXPECT_EQ(posts.size(), 2u) << "no pod for the NotReady node";
}

TEST(KubeFanout, FailedRejectedAndUnschedulablePods) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  api.set_pod_hook([](const json& pod) {
    PodFate f;
    auto node = pod["spec"]["nodeName"].get<std::string>();
    if (node == "n1") {
      f.end = PodFate::End::fail;
      f.exit_code = 3;
      f.reason = "Error";
      f.message = "nvml: driver not loaded";
    } else if (node == "n2") {
      f.end = PodFate::End::reject;
      f.reason = "OutOfcpu";
      f.message = "Node didn't have enough resource: cpu";
    } else if (node == "n3") {
      f.end = PodFate::End::unschedulable;
      f.message = "0/4 nodes are available";
    } else {
      f.log = "no document here\n";
    }
    return f;
  });
  auto r = kube_fanout(options(api), {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(of(*r, "n1").status, NodeStatus::failed);
  EXPECT_NE(of(*r, "n1").detail.find("exited with code 3 (Error): nvml: driver not loaded"),
            std::string::npos)
      << of(*r, "n1").detail;
  EXPECT_EQ(of(*r, "n2").status, NodeStatus::unreachable);
  EXPECT_NE(of(*r, "n2").detail.find("OutOfcpu"), std::string::npos) << of(*r, "n2").detail;
  EXPECT_EQ(of(*r, "n3").status, NodeStatus::unreachable);
  EXPECT_NE(of(*r, "n3").detail.find("Unschedulable"), std::string::npos);
  EXPECT_EQ(of(*r, "n4").status, NodeStatus::failed);
  EXPECT_NE(of(*r, "n4").detail.find("no JSON document"), std::string::npos);
  EXPECT_TRUE(api.live_pods().empty());
}

TEST(KubeFanout, PodsInFlightAreBounded) {
  FakeKubeApi api("n1");
  four_gpu_nodes(api);
  api.set_pod_hook(succeed);
  auto o = options(api);
  o.max_in_flight = 1;
  auto r = kube_fanout(o, {});
  ASSERT_TRUE(r) << r.error().message;
  // One at a time: each POST is followed by its pod's DELETE before the next POST.
  int alive = 0;
  for (const auto& req : api.pod_requests()) {
    if (req.rfind("POST ", 0) == 0) ++alive;
    if (req.rfind("DELETE ", 0) == 0) --alive;
    EXPECT_LE(alive, 1) << req;
  }
}

TEST(KubeFanout, BadOptionsAreRefusedBeforeAnyRequest) {
  FakeKubeApi api("n1");
  auto o = options(api);
  o.pod.image.clear();
  auto r = kube_fanout(o, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--image"), std::string::npos);
  o = options(api);
  o.pod.run_id = "Bad_Id";
  EXPECT_FALSE(kube_fanout(o, {}));
  EXPECT_TRUE(api.pod_requests().empty());
}

TEST(KubeFanout, DocumentFromLog) {
  EXPECT_EQ(document_from_log("  {\"a\":1}\n"), "{\"a\":1}");
  EXPECT_EQ(document_from_log("warn: x\n{\n  \"a\": 1\n}\n"), "{\n  \"a\": 1\n}");
  EXPECT_EQ(document_from_log("{\"a\":1}\nwarn: after\n"), "{\"a\":1}");
  EXPECT_EQ(document_from_log("{not json\n{\"b\":2}\n"), "{\"b\":2}");
  EXPECT_EQ(document_from_log("[1,2]"), std::nullopt);
  EXPECT_EQ(document_from_log(""), std::nullopt);
  EXPECT_EQ(document_from_log("only words\n"), std::nullopt);
}
