// cmaxd on Kubernetes for issue 27: the real /dev/kmsg, the real cmaxd (--scheduler kubernetes, as
// the least-privilege ServiceAccount of deploy/kubernetes/cmaxd.yaml) and a real kube-apiserver
// with etcd (tests/support/kube_cluster.h). N Xid 79s, each on a GPU of its own, written one at a
// time; for each, write -> the Node read back from the API server is cordoned and carries a cmax
// taint (GETs back to back), and -> its CmaxHealthy condition is False; cmaxd's own log gives
// record read -> scheduler called and -> returned. The node is resumed between events.
// Usage: cmaxd_kube_bench CMAXD_BINARY [N=200]. Needs root (/dev/kmsg) and BUILD/kube built
// (tests/kube/build_server.sh). Anchor: NVSentinel's published event-to-cordon P50 0.37 s, P99
// 0.50 s; NVSentinel cannot run here (it needs a cluster with kubelets and its MongoDB), so it is
// quoted, not measured.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sched/kubernetes.h"
#include "latency_stats.h"
#include "support/daemon.h"
#include "support/kmsg.h"
#include "support/kube_cluster.h"
#include "support/ports.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

bool held(const json& n) {
  if (!n["spec"].value("unschedulable", false)) return false;
  for (const auto& t : n["spec"].value("taints", json::array()))
    if (t.value("key", "").rfind("cmax.io/", 0) == 0) return true;
  return false;
}

bool condition_false(const json& n) {
  for (const auto& c : n["status"].value("conditions", json::array()))
    if (c.value("type", "") == "CmaxHealthy") return c.value("status", "") == "False";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cmaxd_kube_bench CMAXD_BINARY [N=200]\n");
    return 2;
  }
  const std::string bin = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 200;
  if (::access("/dev/kmsg", W_OK) != 0) {
    std::fprintf(stderr, "cmaxd_kube_bench: needs root to write /dev/kmsg\n");
    return 3;
  }
  if (auto why = cmax::test::KubeCluster::unavailable()) {
    std::fprintf(stderr, "cmaxd_kube_bench: %s\n", why->c_str());
    return 3;
  }
  auto started = cmax::test::KubeCluster::start();
  if (!started) {
    std::fprintf(stderr, "cmaxd_kube_bench: %s\n", started.error().message.c_str());
    return 3;
  }
  auto& kube = **started;
  if (auto r = kube.add_node({.name = "k1", .labels = {{"nvidia.com/gpu.present", "true"}}}); !r) {
    std::fprintf(stderr, "cmaxd_kube_bench: %s\n", r.error().message.c_str());
    return 3;
  }
  const auto log = kube.dir() / "cmaxd.log";
  auto agent = cmax::test::Daemon::start(
      {bin, "--node", "k1", "--scheduler", "kubernetes", "--kube-api", kube.url(), "--kube-token-file",
       kube.cmaxd().token_file, "--kube-ca-file", kube.ca_file(), "--db", (kube.dir() / "cmaxd.db").string(), "--from-now",
       "--metrics-listen", "", "--no-nvml", "--no-ib", "--breaker-max", "1000000"},
      {}, log);
  if (!agent) {
    std::fprintf(stderr, "cmaxd_kube_bench: %s\n", agent.error().message.c_str());
    return 3;
  }
  for (auto deadline = Clock::now() + 60s;
       Clock::now() < deadline && cmax::test::tail_of_file(log.string(), 1u << 20).find("\"cmaxd: node k1") == std::string::npos;)
    std::this_thread::sleep_for(10ms);
  cmax::test::DevkmsgUnlimited unlimited;
  int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return 3;
  cmax::sched::KubernetesScheduler operator_(kube.options(kube.cmaxd()));

  std::vector<double> cordoned, conditioned;
  int timeouts = 0;
  for (int i = 0; i < n; ++i) {
    // Level 4: this VM prints levels 0-3 on its serial console synchronously (2 ms a line).
    std::string line = fmt::format("<4>NVRM: Xid (PCI:{:04x}:{:02x}:00): 79, pid=1, name=bench, GPU has fallen off the bus.\n",
                                   0x3000 + i / 256, i % 256);
    auto t0 = Clock::now();
    if (::write(fd, line.data(), line.size()) < 0) return 3;
    bool seen_hold = false;
    for (auto deadline = t0 + 10s; Clock::now() < deadline;) {
      auto node = kube.node("k1");
      if (!node) continue;
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!seen_hold && held(*node)) {
        seen_hold = true;
        cordoned.push_back(ms);
      }
      if (seen_hold && condition_false(*node)) {
        conditioned.push_back(ms);
        break;
      }
    }
    if (!seen_hold) ++timeouts;
    // The operator returns the node for the next event (cmax's own hold: no force needed).
    (void)operator_.resume("k1", cmax::sched::Force::kNo);
    for (auto deadline = Clock::now() + 10s; Clock::now() < deadline;) {
      auto node = kube.node("k1");
      if (node && !held(*node)) break;
    }
    if (i % 20 == 19) std::fprintf(stderr, "\r%d/%d", i + 1, n);
  }
  std::fprintf(stderr, "\n");
  std::vector<double> called, returned;
  {
    std::ifstream in(log);
    std::string l;
    std::regex re(R"(^\{"level":"info","msg":"(drain|reboot) k1 done: .*scheduler called ([0-9.]+) ms, returned ([0-9.]+) ms)");
    std::smatch m;
    while (std::getline(in, l))
      if (std::regex_search(l, m, re)) {
        called.push_back(std::stod(m[2]));
        returned.push_back(std::stod(m[3]));
      }
  }
  std::printf("cmaxd on a real kube-apiserver v1.37: %d injected Xid 79s (%d never seen held within 10 s)\n", n, timeouts);
  cmax::bench::report("kmsg write -> Node cordoned and tainted (GET from the API)", cordoned, 58);
  cmax::bench::report("kmsg write -> CmaxHealthy=False (GET from the API)", conditioned, 58);
  cmax::bench::report("record read -> scheduler called (cmaxd's log)", called, 58);
  cmax::bench::report("record read -> node patch and status patch returned", returned, 58);
  std::printf("anchor (published, Kubernetes): NVSentinel event -> cordon p50 370 ms, p99 500 ms\n");
  ::close(fd);
  return timeouts == 0 ? 0 : 1;
}
