// deploy/helm/cmaxd, cmaxd's Helm chart, with the real Helm v3.22.1 (built from the Go module proxy
// by tests/kube/build_helm.sh into BUILD/kube): the chart lints; its RBAC is
// deploy/kubernetes/cmaxd.yaml's, rule for rule, and its pod is that file's pod; every argument it
// renders is one the cmaxd binary accepts; its values switch what they say; its PrometheusRule
// carries the rules file; and it installs onto a real kube-apiserver (tests/support/kube_cluster.h),
// where the ServiceAccount gets exactly the manifest's permissions, and uninstalls without a trace.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "support/yaml_json.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"
#include "support/kube_cluster.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using cmax::test::KubeCluster;

const fs::path kSource(CMAX_SOURCE_DIR);
const fs::path kChart = kSource / "deploy/helm/cmaxd";
const fs::path kManifest = kSource / "deploy/kubernetes/cmaxd.yaml";

fs::path helm_bin() { return fs::path(CMAX_BINARY_DIR) / "kube" / "helm"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Why Helm cannot run here (build_helm.sh's one line, or not built), or nullopt.
std::optional<std::string> helm_unavailable() {
  auto why = slurp(fs::path(CMAX_BINARY_DIR) / "kube" / "helm.unavailable");
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!why.empty()) return "no helm here: " + why;
  if (::access(helm_bin().c_str(), X_OK) != 0)
    return fmt::format(
        "no helm here: {} is not built (tests/kube/build_helm.sh {} builds it; ctest's kube.build_helm runs it)",
        helm_bin().string(), helm_bin().parent_path().string());
  return std::nullopt;
}

json to_json(const YAML::Node& n) { return cmax::test::yaml_to_json(n); }

/// Every object of a multi-document YAML text.
std::vector<json> objects(const std::string& text) {
  std::vector<json> out;
  for (const auto& d : YAML::LoadAll(text))
    if (d.IsMap()) out.push_back(to_json(d));
  return out;
}

std::vector<json> of_kind(const std::vector<json>& objs, std::string_view kind) {
  std::vector<json> out;
  for (const auto& o : objs)
    if (o.value("kind", "") == kind) out.push_back(o);
  return out;
}

const json* find(const std::vector<json>& objs, std::string_view kind) {
  for (const auto& o : objs)
    if (o.value("kind", "") == kind) return &o;
  return nullptr;
}

/// A copy of the first object of `kind`; null when there is none (reading it then fails, not crashes).
json first(const std::vector<json>& objs, std::string_view kind) {
  const json* o = find(objs, kind);
  return o ? *o : json();
}

std::vector<std::string> args_of(json daemonset) {
  return daemonset["spec"]["template"]["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
}

bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

class FleetViewHelm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "cmax-helm-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp " << tmpl;
    home_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!home_.empty()) fs::remove_all(home_, ec);
  }

  /// Runs helm with its cache, config and data in this test's directory (never the user's).
  cmax::core::ProcessResult helm(std::vector<std::string> args, std::chrono::milliseconds timeout = 120s) const {
    args.insert(args.begin(), helm_bin().string());
    auto r = cmax::core::run_process(
        {args,
         timeout,
         1u << 22,
         {"HELM_CACHE_HOME=" + (home_ / "cache").string(), "HELM_CONFIG_HOME=" + (home_ / "config").string(),
          "HELM_DATA_HOME=" + (home_ / "data").string(), "KUBECONFIG=" + (home_ / "no-kubeconfig").string()}});
    if (!r) {
      ADD_FAILURE() << "start " << helm_bin() << ": " << r.error().message;
      return {};
    }
    return *r;
  }

  /// `helm template cmaxd CHART -n cmax-system --set S...`: the rendered objects, or nullopt (a failure is recorded).
  std::optional<std::vector<json>> render(const std::vector<std::string>& sets,
                                          const std::string& release = "cmaxd") const {
    std::vector<std::string> args = {"template", release, kChart.string(), "--namespace", "cmax-system"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    auto r = helm(args);
    if (r.exit_code != 0) {
      ADD_FAILURE() << "helm " << fmt::format("{}", fmt::join(args, " ")) << ": exit " << r.exit_code << "\n" << r.err;
      return std::nullopt;
    }
    try {
      return objects(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "parse helm template's output: " << e.what() << "\n" << r.out;
      return std::nullopt;
    }
  }

  /// Runs the cmaxd binary with a rendered DaemonSet's arguments ($(NODE_NAME) set, --db in this
  /// test's directory, no in-cluster service account): it must get past its flag parsing and stop
  /// at the missing service account (exit 3), never at a usage error.
  void expect_cmaxd_accepts(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {CMAXD_BIN};
    for (auto a : args) {
      if (a == "--node=$(NODE_NAME)") a = "--node=gpu-1";
      if (a.starts_with("--db=")) a = "--db=" + (home_ / "cmaxd.db").string();
      argv.push_back(a);
    }
    auto r = cmax::core::run_process({argv, 20s, 1u << 16, {"KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT="}});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->exit_code, 3) << "cmaxd must parse the chart's arguments and stop only for want of a service account: "
                               << fmt::format("{}", fmt::join(argv, " ")) << "\n"
                               << r->err;
  }

  fs::path home_;
};

TEST_F(FleetViewHelm, ChartLintsCleanWithEveryOptionalObject) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  auto plain = helm({"lint", "--strict", kChart.string()});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_NE(plain.out.find("1 chart(s) linted, 0 chart(s) failed"), std::string::npos) << plain.out;
  auto all = helm({"lint", "--strict", kChart.string(), "--set", "serviceMonitor.enabled=true", "--set",
                   "podMonitor.enabled=true", "--set", "prometheusRule.enabled=true"});
  EXPECT_EQ(all.exit_code, 0) << all.out << all.err;
  // The schema refuses a threshold cmaxd has not got.
  auto bad = helm({"lint", kChart.string(), "--set", "thresholds.drainAt=sometimes"});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  EXPECT_NE((bad.out + bad.err).find("drainAt"), std::string::npos) << bad.out << bad.err;
}

TEST_F(FleetViewHelm, RenderedRbacIsTheManifestsRuleForRuleAndThePodIsItsPod) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  auto manifest = objects(slurp(kManifest));
  ASSERT_FALSE(manifest.empty()) << kManifest;
  auto chart = render({});
  ASSERT_TRUE(chart);

  // Release "cmaxd" in cmax-system names everything as the manifest does, so the RBAC objects must
  // be equal as a whole where it matters: rules, roleRef, subjects, namespaces. Nothing more either.
  for (std::string_view kind : {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}) {
    auto want = of_kind(manifest, kind);
    auto got = of_kind(*chart, kind);
    ASSERT_EQ(got.size(), want.size()) << kind;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i]["metadata"]["name"], want[i]["metadata"]["name"]) << kind;
      EXPECT_EQ(got[i]["metadata"].value("namespace", json()), want[i]["metadata"].value("namespace", json())) << kind;
      for (const char* field : {"rules", "roleRef", "subjects"})
        EXPECT_EQ(got[i].value(field, json()), want[i].value(field, json()))
            << kind << " " << field << ": chart " << got[i].value(field, json()).dump() << "\n manifest "
            << want[i].value(field, json()).dump();
    }
  }
  for (std::string_view kind : {"ServiceMonitor", "PodMonitor", "PrometheusRule", "Service"})
    EXPECT_EQ(find(*chart, kind), nullptr) << kind << " must be off by default";

  const json* sa = find(*chart, "ServiceAccount");
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ((*sa)["metadata"]["name"], "cmaxd");
  const json* ds = find(*chart, "DaemonSet");
  const json* want_ds = find(manifest, "DaemonSet");
  ASSERT_NE(ds, nullptr);
  ASSERT_NE(want_ds, nullptr);
  const json& pod = (*ds)["spec"]["template"]["spec"];
  const json& want_pod = (*want_ds)["spec"]["template"]["spec"];
  for (const char* field :
       {"serviceAccountName", "priorityClassName", "tolerations", "nodeSelector", "runtimeClassName", "volumes"})
    EXPECT_EQ(pod.value(field, json()), want_pod.value(field, json())) << field;
  EXPECT_EQ((*ds)["spec"]["updateStrategy"], (*want_ds)["spec"]["updateStrategy"]);
  const json& c = pod["containers"][0];
  const json& want_c = want_pod["containers"][0];
  for (const char* field : {"command", "env", "ports", "securityContext", "resources", "volumeMounts"})
    EXPECT_EQ(c.value(field, json()), want_c.value(field, json())) << field;
  EXPECT_EQ(c["image"], "cmax:0.1.0") << "the tag defaults to appVersion (CMakeLists.txt's project VERSION)";
  // Every flag the manifest sets, the chart's defaults set the same way (dry run included).
  auto args = args_of(*ds);
  for (const auto& a : want_c["args"])
    EXPECT_TRUE(has(args, a.get<std::string>())) << a << " in " << fmt::format("{}", fmt::join(args, " "));
}

TEST_F(FleetViewHelm, EveryRenderedArgumentIsOneCmaxdAccepts) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"thresholds.drainAt=reboot_node", "thresholds.actOn=kernel", "thresholds.reboot=true",
       "thresholds.bootGraceSeconds=0", "breaker.max=5", "breaker.windowSeconds=7200", "breaker.dedupWindowSeconds=600",
       "fleetBreaker.maxPercent=2.5", "fleetBreaker.maxNodes=16", "fleetBreaker.poolSelector=pool=h100",
       "nvml.library=/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "infiniband.expect={mlx5_0/1,mlx5_1/1}",
       "kubeTimeoutMs=2000", "metrics.port=9500", "dryRun=false", "extraArgs={--from-now}"},
      {"nvml.enabled=false", "infiniband.enabled=false", "fleetBreaker.enabled=false", "metrics.enabled=false"},
  };
  for (const auto& sets : variants) {
    SCOPED_TRACE(fmt::format("--set {}", fmt::join(sets, " --set ")));
    auto chart = render(sets);
    ASSERT_TRUE(chart);
    const json* ds = find(*chart, "DaemonSet");
    ASSERT_NE(ds, nullptr);
    expect_cmaxd_accepts(args_of(*ds));
  }
  auto full = render(variants[1]);
  ASSERT_TRUE(full);
  auto args = args_of(first(*full, "DaemonSet"));
  for (const char* a :
       {"--drain-at=reboot_node", "--act-on=kernel", "--reboot", "--boot-grace-s=0", "--breaker-max=5",
        "--breaker-window=7200", "--dedup-window=600", "--fleet-max-percent=2.5", "--fleet-max-nodes=16",
        "--kube-pool-selector=pool=h100", "--nvml-lib=/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "--ib-expect=mlx5_0/1", "--ib-expect=mlx5_1/1", "--kube-timeout-ms=2000", "--metrics-listen=0.0.0.0:9500",
        "--from-now"})
    EXPECT_TRUE(has(args, a)) << a << " in " << fmt::format("{}", fmt::join(args, " "));
  EXPECT_FALSE(has(args, "--dry-run"));
  EXPECT_EQ(args.back(), "--from-now") << "extra arguments come last";
}

TEST_F(FleetViewHelm, ValuesSwitchWhatTheySay) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  {
    auto chart = render({"serviceMonitor.enabled=true", "serviceMonitor.labels.release=kps"});
    ASSERT_TRUE(chart);
    const json* sm = find(*chart, "ServiceMonitor");
    const json* svc = find(*chart, "Service");
    ASSERT_NE(sm, nullptr);
    ASSERT_NE(svc, nullptr) << "a ServiceMonitor selects a Service";
    EXPECT_EQ((*sm)["apiVersion"], "monitoring.coreos.com/v1");
    EXPECT_EQ((*sm)["metadata"]["labels"].value("release", ""), "kps");
    EXPECT_EQ((*sm)["spec"]["endpoints"][0]["port"], "metrics");
    // The ServiceMonitor's selector picks that Service, and the Service the agents' pods.
    for (const auto& [k, v] : (*sm)["spec"]["selector"]["matchLabels"].items())
      EXPECT_EQ((*svc)["metadata"]["labels"].value(k, json()), v) << k;
    const json* ds = find(*chart, "DaemonSet");
    ASSERT_NE(ds, nullptr);
    for (const auto& [k, v] : (*svc)["spec"]["selector"].items())
      EXPECT_EQ((*ds)["spec"]["template"]["metadata"]["labels"].value(k, json()), v) << k;
    EXPECT_EQ((*svc)["spec"]["ports"][0]["targetPort"], "metrics");
    // The samples' job is "cmaxd", the job the rules file selects (not the Service's name).
    EXPECT_EQ((*sm)["spec"].value("jobLabel", ""), "cmax.io/scrape-job");
    EXPECT_EQ((*svc)["metadata"]["labels"].value("cmax.io/scrape-job", ""), "cmaxd");
    EXPECT_EQ(find(*chart, "PodMonitor"), nullptr);
  }
  {
    auto chart = render({"podMonitor.enabled=true"});
    ASSERT_TRUE(chart);
    const json* pm = find(*chart, "PodMonitor");
    ASSERT_NE(pm, nullptr);
    EXPECT_EQ((*pm)["apiVersion"], "monitoring.coreos.com/v1");
    EXPECT_EQ((*pm)["spec"]["podMetricsEndpoints"][0]["port"], "metrics");
    EXPECT_EQ((*pm)["spec"].value("jobLabel", ""), "cmax.io/scrape-job");
    EXPECT_EQ(first(*chart, "DaemonSet")["spec"]["template"]["metadata"]["labels"].value("cmax.io/scrape-job", ""),
              "cmaxd");
    EXPECT_EQ(find(*chart, "ServiceMonitor"), nullptr);
  }
  {
    auto chart = render({"nvml.enabled=false"});
    ASSERT_TRUE(chart);
    const json* ds = find(*chart, "DaemonSet");
    ASSERT_NE(ds, nullptr);
    auto args = args_of(*ds);
    EXPECT_TRUE(has(args, "--no-nvml")) << fmt::format("{}", fmt::join(args, " "));
    EXPECT_FALSE(
        std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.starts_with("--nvml-lib"); }));
    EXPECT_EQ((*ds)["spec"]["template"]["spec"]["containers"][0].dump().find("NVIDIA_VISIBLE_DEVICES"),
              std::string::npos);
  }
  {
    // Without the fleet breaker cmaxd never touches its Leases, so the Role that grants them goes too.
    auto chart = render({"fleetBreaker.enabled=false"});
    ASSERT_TRUE(chart);
    EXPECT_TRUE(has(args_of(first(*chart, "DaemonSet")), "--no-fleet-breaker"));
    EXPECT_EQ(find(*chart, "Role"), nullptr);
    EXPECT_EQ(find(*chart, "RoleBinding"), nullptr);
    EXPECT_NE(find(*chart, "ClusterRole"), nullptr);
  }
  {
    auto chart = render({"metrics.enabled=false"});
    ASSERT_TRUE(chart);
    const json* ds = find(*chart, "DaemonSet");
    ASSERT_NE(ds, nullptr);
    auto args = args_of(*ds);
    auto it = std::find(args.begin(), args.end(), "--metrics-listen");
    ASSERT_NE(it, args.end()) << fmt::format("{}", fmt::join(args, " "));
    ASSERT_NE(it + 1, args.end());
    EXPECT_EQ(*(it + 1), "") << "metrics off is --metrics-listen ''";
    EXPECT_FALSE((*ds)["spec"]["template"]["spec"]["containers"][0].contains("ports"));
    // A monitor with nothing to scrape is refused, saying why.
    auto r = helm({"template", "cmaxd", kChart.string(), "--set", "metrics.enabled=false", "--set",
                   "serviceMonitor.enabled=true"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("need metrics.enabled"), std::string::npos) << r.err;
  }
  {
    // Another release in another namespace: every name follows it, and the fleet breaker's Role
    // stays in cmax-system, where cmaxd takes its Leases.
    auto chart = render({}, "gpu-agent");
    ASSERT_TRUE(chart);
    EXPECT_EQ(first(*chart, "ClusterRole")["metadata"]["name"], "gpu-agent-cmaxd");
    EXPECT_EQ(first(*chart, "Role")["metadata"]["namespace"], "cmax-system");
    EXPECT_EQ(first(*chart, "DaemonSet")["spec"]["template"]["spec"]["serviceAccountName"], "gpu-agent-cmaxd");
  }
}

TEST_F(FleetViewHelm, PrometheusRuleGroupsAreTheRulesFile) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  auto chart = render({"prometheusRule.enabled=true", "prometheusRule.labels.release=kps"});
  ASSERT_TRUE(chart);
  const json* rule = find(*chart, "PrometheusRule");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ((*rule)["apiVersion"], "monitoring.coreos.com/v1");
  EXPECT_EQ((*rule)["metadata"]["labels"].value("release", ""), "kps");
  json file = to_json(YAML::LoadFile((kChart / "files/cmax-rules.yaml").string()));
  ASSERT_TRUE(file.contains("groups")) << file.dump();
  EXPECT_EQ((*rule)["spec"]["groups"], file["groups"])
      << "rendered " << (*rule)["spec"]["groups"].dump(1) << "\nfile " << file["groups"].dump(1);
  // Every job the rules select is the job the chart's monitors give the agents' samples.
  const std::string job =
      first(*chart, "DaemonSet")["spec"]["template"]["metadata"]["labels"].value("cmax.io/scrape-job", "");
  EXPECT_EQ(job, "cmaxd");
  int selectors = 0;
  for (const auto& group : file["groups"])
    for (const auto& r : group.value("rules", json::array())) {
      const std::string expr = r.value("expr", "");
      for (size_t at = expr.find("job=\""); at != std::string::npos; at = expr.find("job=\"", at + 1), ++selectors) {
        size_t end = expr.find('"', at + 5);
        ASSERT_NE(end, std::string::npos) << expr;
        EXPECT_EQ(expr.substr(at + 5, end - at - 5), job)
            << "a rule selects another job than the chart's monitors set: " << expr;
      }
    }
  EXPECT_GT(selectors, 0) << "the rules select no job";
}

TEST_F(FleetViewHelm, ChartRulesFileIsTheDeployRulesFile) {
  const fs::path deploy = kSource / "deploy/prometheus/cmax-rules.yaml";
  const fs::path copy = kChart / "files/cmax-rules.yaml";
  if (!fs::exists(deploy))
    GTEST_SKIP() << deploy.string() << " does not exist yet; the chart carries a placeholder at " << copy.string();
  const std::string want = slurp(deploy), got = slurp(copy);
  if (got == want) return;
  auto differ = std::mismatch(want.begin(), want.end(), got.begin(), got.end()).first;
  auto line = 1 + std::count(want.begin(), differ, '\n');
  ADD_FAILURE() << "the chart's copy must be the rules file byte for byte (" << got.size() << " bytes, the file "
                << want.size() << "; they differ from line " << line << "): cp " << deploy.string() << " "
                << copy.string();
}

TEST_F(FleetViewHelm, InstallsOntoARealApiServerWithTheManifestsPermissionsAndUninstallsCleanly) {
  if (auto why = helm_unavailable()) GTEST_SKIP() << *why;
  if (auto why = KubeCluster::unavailable()) GTEST_SKIP() << *why;
  auto started = KubeCluster::start();
  ASSERT_TRUE(started) << started.error().message;
  auto& kube = *started;
  // The harness applied deploy/kubernetes/cmaxd.yaml (cmax-system, ServiceAccount cmaxd, ...): the
  // release takes other names beside it, in the same namespace, where cmaxd's Leases live.
  const std::string kubeconfig = kube->admin().kubeconfig;
  const std::string sa_user = "system:serviceaccount:cmax-system:cmaxd-helm";
  auto install = helm({"install", "cmaxd-helm", kChart.string(), "--namespace", "cmax-system", "--kubeconfig",
                       kubeconfig, "--set", "image.repository=registry.example/cmax", "--timeout", "60s"});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err << "\n" << kube->apiserver_log_tail();
  EXPECT_NE(install.out.find("STATUS: deployed"), std::string::npos) << install.out;

  const std::vector<std::string> paths = {
      "/apis/apps/v1/namespaces/cmax-system/daemonsets/cmaxd-helm",
      "/api/v1/namespaces/cmax-system/serviceaccounts/cmaxd-helm",
      "/apis/rbac.authorization.k8s.io/v1/clusterroles/cmaxd-helm",
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cmaxd-helm",
      "/apis/rbac.authorization.k8s.io/v1/namespaces/cmax-system/roles/cmaxd-helm-fleet-breaker",
      "/apis/rbac.authorization.k8s.io/v1/namespaces/cmax-system/rolebindings/cmaxd-helm-fleet-breaker",
  };
  for (const auto& p : paths) {
    auto o = kube->get(p);
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ((*o)["metadata"]["labels"].value("app.kubernetes.io/managed-by", ""), "Helm") << p;
    EXPECT_EQ((*o)["metadata"]["annotations"].value("meta.helm.sh/release-name", ""), "cmaxd-helm") << p;
  }
  auto manifest = objects(slurp(kManifest));
  auto cr = kube->get(paths[2]);
  ASSERT_TRUE(cr);
  EXPECT_EQ((*cr)["rules"], first(manifest, "ClusterRole")["rules"]) << cr->dump(1);
  auto role = kube->get(paths[4]);
  ASSERT_TRUE(role);
  EXPECT_EQ((*role)["rules"], first(manifest, "Role")["rules"]) << role->dump(1);
  auto ds = kube->get(paths[0]);
  ASSERT_TRUE(ds);
  const json& pod = (*ds)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "cmaxd-helm");
  EXPECT_EQ(pod["containers"][0]["image"], "registry.example/cmax:0.1.0");
  EXPECT_TRUE(has(pod["containers"][0]["args"].get<std::vector<std::string>>(), "--dry-run"));

  // What the release's ServiceAccount may do, as the API server's own authorizer answers: what
  // cmaxd needs, and not one thing more.
  struct Ask {
    std::string verb, group, resource, subresource, ns;
    bool allowed;
  };
  const std::vector<Ask> asks = {
      {"get", "", "nodes", "", "", true},
      {"list", "", "nodes", "", "", true},
      {"watch", "", "nodes", "", "", true},
      {"patch", "", "nodes", "", "", true},
      {"patch", "", "nodes", "status", "", true},
      {"create", "coordination.k8s.io", "leases", "", "cmax-system", true},
      {"update", "coordination.k8s.io", "leases", "", "cmax-system", true},
      {"list", "coordination.k8s.io", "leases", "", "cmax-system", true},
      {"delete", "", "nodes", "", "", false},
      {"update", "", "nodes", "", "", false},
      {"list", "", "pods", "", "", false},
      {"create", "", "pods", "eviction", "default", false},
      {"get", "", "secrets", "", "cmax-system", false},
      {"delete", "coordination.k8s.io", "leases", "", "cmax-system", false},
      {"create", "coordination.k8s.io", "leases", "", "kube-node-lease", false},
  };
  for (const auto& a : asks) {
    json attrs = {{"verb", a.verb}, {"group", a.group}, {"resource", a.resource}};
    if (!a.subresource.empty()) attrs["subresource"] = a.subresource;
    if (!a.ns.empty()) attrs["namespace"] = a.ns;
    json review = {
        {"apiVersion", "authorization.k8s.io/v1"},
        {"kind", "SubjectAccessReview"},
        {"spec",
         {{"user", sa_user},
          {"groups", {"system:serviceaccounts", "system:serviceaccounts:cmax-system", "system:authenticated"}},
          {"resourceAttributes", attrs}}}};
    auto r = kube->create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ((*r)["status"].value("allowed", false), a.allowed)
        << a.verb << " " << a.group << "/" << a.resource << (a.subresource.empty() ? "" : "/" + a.subresource)
        << " in '" << a.ns << "': " << (*r)["status"].dump();
  }

  auto list = helm({"list", "--namespace", "cmax-system", "--kubeconfig", kubeconfig, "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto releases = json::parse(list.out, nullptr, false);
  ASSERT_TRUE(releases.is_array() && releases.size() == 1) << list.out;
  EXPECT_EQ(releases[0]["name"], "cmaxd-helm");
  EXPECT_EQ(releases[0]["status"], "deployed");

  auto uninstall =
      helm({"uninstall", "cmaxd-helm", "--namespace", "cmax-system", "--kubeconfig", kubeconfig, "--timeout", "60s"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.out << uninstall.err;
  for (const auto& p : paths) {
    int status = 0;
    for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(100ms)) {
      auto r = kube->request("GET", p);
      ASSERT_TRUE(r) << r.error().message;
      status = r->status;
      if (status == 404) break;
    }
    EXPECT_EQ(status, 404) << p << " must be gone after helm uninstall";
  }
  // The release's record (Helm keeps it in Secrets) goes too, and what Helm did not install stays.
  auto secrets = kube->get("/api/v1/namespaces/cmax-system/secrets?labelSelector=owner%3Dhelm");
  ASSERT_TRUE(secrets) << secrets.error().message;
  EXPECT_TRUE((*secrets)["items"].empty()) << secrets->dump(1);
  for (const char* p : {"/apis/rbac.authorization.k8s.io/v1/clusterroles/cmaxd",
                        "/apis/apps/v1/namespaces/cmax-system/daemonsets/cmaxd",
                        "/api/v1/namespaces/cmax-system/serviceaccounts/cmaxd"}) {
    auto o = kube->get(p);
    EXPECT_TRUE(o) << p << " (the manifest's, not the release's) must stay: " << (o ? "" : o.error().message);
  }
}

}  // namespace
