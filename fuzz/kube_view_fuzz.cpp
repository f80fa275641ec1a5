// libFuzzer target: the Kubernetes cluster view's judges (cluster/kube_view.h) on any API answer.
// Input: byte 0 picks, bit by bit, which of the six replies are refused (403) or absent (404);
// the rest is every other reply's body, and is also read as an image reference. Invariants, each
// an abort when broken:
//   - no judge throws, each returns its own check id;
//   - a refused or unreadable node, DaemonSet or RBAC list never gives a pass (unverified, or for
//     the floor not_applicable when no DaemonSet is known);
//   - dcgm_exporter_tag_versions gives two X.Y.Z versions or nothing.

#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>

#include "audit/audit.h"
#include "cluster/kube_view.h"
#include "core/clock.h"
#include "fuzz_check.h"

using cmax::fuzz::check;
using cmax::audit::Outcome;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static const auto floors = cmax::audit::load_floors(cmax::audit::AuditOptions{});
  static const cmax::core::SystemClock clock;
  if (!floors) return 0;
  const std::uint8_t pick = data[0];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto reply = [&](int bit) -> cmax::Result<cmax::sched::KubeReply> {
    if (pick & (1u << bit)) return cmax::sched::KubeReply{bit % 2 ? 404 : 403, "x", body};
    return cmax::sched::KubeReply{200, "OK", body};
  };
  cmax::cluster::KubeViewAnswers a{reply(0), reply(1), reply(2), reply(3), reply(4), reply(5)};
  const bool nodes_refused = pick & 1u, ds_refused = pick & (1u << 3), roles_refused = pick & (1u << 4),
             bindings_refused = pick & (1u << 5);
  auto topo = cmax::cluster::judge_kube_topology(a, {"g1", std::string(body.substr(0, 16))});
  check(topo.check_id == "orchestration.kube.topology");
  if (nodes_refused) check(topo.outcome == Outcome::unverified);
  auto running = cmax::cluster::judge_dcgm_exporter_daemonset(a, size % 7);
  check(running.check_id == "monitoring.kube.dcgm_exporter");
  if (ds_refused) check(running.outcome == Outcome::unverified);
  auto floor = cmax::cluster::judge_dcgm_exporter_floor(a, *floors, clock);
  check(floor.check_id == "security.kube.dcgm_exporter.floor");
  if (ds_refused) check(floor.outcome == Outcome::unverified);
  auto proxy = cmax::cluster::judge_nodes_proxy_holders(a);
  check(proxy.check_id == "security.kube.nodes_proxy.holders");
  if (roles_refused || bindings_refused) check(proxy.outcome == Outcome::unverified);
  if (auto v = cmax::cluster::dcgm_exporter_tag_versions(body)) {
    static const std::regex xyz(R"([0-9]+\.[0-9]+\.[0-9]+)");
    check(std::regex_match(v->first, xyz) && std::regex_match(v->second, xyz));
  }
  return 0;
}
