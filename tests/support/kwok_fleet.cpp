#include "support/kwok_fleet.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::filesystem::path bin_dir() { return std::filesystem::path(CMAX_BINARY_DIR) / "kube"; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A Node as a registering HGX node would send it: capacity and allocatable with 8 GPUs, the
// GPU operator's labels, rack and NVLink-domain labels; no status conditions (KWOK sets them).
json node_object(const KwokFleetSpec& spec, int i) {
  json res = {{"cpu", "224"}, {"memory", "2063731Mi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"},
              {"ephemeral-storage", "7Ti"}};
  const std::string name = KwokFleet::node_name(i);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"type", "kwok"},
              {"kubernetes.io/hostname", name},
              {"kubernetes.io/os", "linux"},
              {"kubernetes.io/arch", "amd64"},
              {"node.kubernetes.io/instance-type", "hgx-h100-8"},
              {"nvidia.com/gpu.present", "true"},
              {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/gpu.count", "8"},
              {"topology.kubernetes.io/zone", "zone-a"},
              {"topology.cmax.io/rack", fmt::format("rack-{:04d}", i / spec.nodes_per_rack)},
              {"nvidia.com/gpu.clique", fmt::format("fleet.{}", i / spec.nodes_per_nvlink_domain)}}},
            {"annotations", {{"kwok.x-k8s.io/node", "fake"}, {"node.alpha.kubernetes.io/ttl", "0"}}}}},
          {"spec", json::object()},
          {"status", {{"capacity", res}, {"allocatable", res}}}};
}


}  // namespace

std::optional<std::string> KwokFleet::unavailable() {
  auto why = read_text(bin_dir() / "kwok.unavailable");
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!why.empty()) return "no KWOK here: " + why;
  if (::access((bin_dir() / "kwok").c_str(), X_OK) != 0 ||
      !std::filesystem::exists(bin_dir() / "kwok-stages" / "node-initialize.yaml"))
    return fmt::format("no KWOK here: {} is not built (tests/kube/build_kwok.sh {} builds it; ctest's kube.build_kwok "
                       "runs it)",
                       (bin_dir() / "kwok").string(), bin_dir().string());
  return std::nullopt;
}

std::string KwokFleet::node_name(int i) { return fmt::format("kwok-{:05d}", i); }

std::vector<std::string> KwokFleet::agent_args() const {
  return {"--scheduler=kubernetes", "--kube-api=" + kube_.url(), "--kube-token-file=" + kube_.cmaxd().token_file,
          "--kube-ca-file=" + kube_.ca_file()};
}

std::string KwokFleet::log_tail() const { return last_chars(read_text(kube_.dir() / "kwok.log")); }

KwokFleet::~KwokFleet() {
  if (kwok_) kwok_->stop();
}

Result<std::unique_ptr<KwokFleet>> KwokFleet::start(const KubeCluster& kube, const KwokFleetSpec& spec) {
  if (auto why = unavailable()) return fail("start KWOK: {}", *why);
  std::unique_ptr<KwokFleet> f(new KwokFleet(kube, spec));

  // The nodes first, from several threads (one TLS connection per request, as the harness makes).
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int> next{0}, failed{0};
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < spec.register_threads; ++t)
    threads.emplace_back([&] {
      for (int i; (i = next++) < spec.nodes;) {
        auto r = kube.request("POST", "/api/v1/nodes", node_object(spec, i).dump());
        if (!r || (r->status != 201 && r->status != 409)) {
          ++failed;
          std::lock_guard l(mu);
          if (first_error.empty()) first_error = r ? fmt::format("{} {}", r->status, r->text.substr(0, 300)) : r.error().message;
        }
      }
    });
  for (auto& t : threads) t.join();
  if (failed) return fail("register {} of {} KWOK nodes failed; first: {}", failed.load(), spec.nodes, first_error);
  f->register_s_ = seconds_since(t0);

  // KWOK: upstream's two node Stages of v0.8.0 and the options, in one config file.
  const auto config = kube.dir() / "kwok.yaml";
  {
    std::ofstream out(config);
    out << "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n"
        << "  manageAllNodes: false\n  manageNodesWithLabelSelector: type=kwok\n"
        << fmt::format("  nodeLeaseDurationSeconds: {}\n", spec.lease_seconds)
        // KWOK's defaults, written out: a config file of one's own is not defaulted field by field.
        << "  nodeLeaseParallelism: 4\n  nodePlayStageParallelism: 4\n  podPlayStageParallelism: 4\n"
        << "  podsOnNodeSyncParallelism: 1\n---\n"
        << read_text(bin_dir() / "kwok-stages" / "node-initialize.yaml") << "\n---\n"
        << read_text(bin_dir() / "kwok-stages" / "node-heartbeat-with-lease.yaml") << "\n";
    if (!out) return fail("write {}: {}", config.string(), std::strerror(errno));
  }
  auto kwok = Daemon::start({(bin_dir() / "kwok").string(), "--kubeconfig=" + kube.admin().kubeconfig,
                             "--config=" + config.string(), "--manage-all-nodes=false",
                             "--manage-nodes-with-label-selector=type=kwok", "--node-lease-duration-seconds=" +
                                                                                 std::to_string(spec.lease_seconds)},
                            {"HOME=" + kube.dir().string()}, kube.dir() / "kwok.log");
  if (!kwok) return fail("start KWOK: {}", kwok.error().message);
  f->kwok_.emplace(std::move(*kwok));

  // Every node Ready, as KWOK's node-initialize Stage set it.
  const auto t1 = std::chrono::steady_clock::now();
  const auto deadline = t1 + spec.ready_timeout;
  int ready = 0;
  for (;;) {
    if (!f->kwok_->running())
      return fail("KWOK ended ({}): {}", f->kwok_->exit_status(), f->log_tail());
    ready = 0;
    std::string next_page;
    bool listed = true;
    do {
      auto r = kube.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok&limit=500" +
                                       (next_page.empty() ? "" : "&continue=" + next_page));
      if (!r || r->status != 200 || !r->body.is_object()) {
        listed = false;
        break;
      }
      for (const auto& n : r->body.value("items", json::array()))
        for (const auto& c : n["status"].value("conditions", json::array()))
          if (c.value("type", "") == "Ready" && c.value("status", "") == "True") ++ready;
      next_page = r->body["metadata"].value("continue", "");
    } while (!next_page.empty());
    if (listed && ready >= spec.nodes) break;
    if (std::chrono::steady_clock::now() > deadline)
      return fail("{} of {} KWOK nodes Ready after {} s; KWOK's log: {}", ready, spec.nodes, spec.ready_timeout.count(),
                  f->log_tail());
    std::this_thread::sleep_for(spec.nodes > 2000 ? 2s : 500ms);
  }
  f->ready_s_ = seconds_since(t1);
  return f;
}

}  // namespace cmax::test
