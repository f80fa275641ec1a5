// libFuzzer target: what cmax reads from a Kubernetes API server (a Node, a NodeList, a Status,
// and the drill's view of a Node with its PodList), the patches it builds from a Node it read, and
// kubeconfig files (yaml-cpp) with their base64 CA data. Invariants: no crash or escaping
// exception on any bytes; a chosen kubeconfig context has a server; a parsed node
// has a name; a hold patch and a release patch built from it are valid JSON arrays whose first op
// tests what was read (spec, or the resourceVersion when no spec was), with a test of null on
// /metadata/annotations when the node had none; a drill view has a name and a known base state.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "drill/kube_view.h"
#include "sched/kubeconfig.h"
#include "sched/kubernetes_parse.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_patch(const std::string& text, const cmax::sched::kube::Node& node) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  check(!j.is_discarded() && j.is_array() && !j.empty());
  const auto& first = j[0];
  check(first.is_object() && first.value("op", "") == "test");
  if (node.spec_json.empty())
    check(first.value("path", "") == "/metadata/resourceVersion" && first["value"] == node.resource_version);
  else
    check(first.value("path", "") == "/spec" && first["value"] == nlohmann::json::parse(node.spec_json));
  if (!node.has_annotations)
    check(j.size() > 1 && j[1].value("path", "") == "/metadata/annotations" && j[1]["value"].is_null());
  // A node without labels is guarded like one without annotations (the hold adds the whole map).
  if (!node.has_labels) {
    bool guarded = false;
    for (const auto& op : j)
      if (op.value("op", "") == "test" && op.value("path", "") == "/metadata/labels" && op["value"].is_null()) guarded = true;
    check(guarded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  namespace kube = cmax::sched::kube;
  if (auto config = cmax::sched::parse_kubeconfig(in, "/fuzz")) {
    if (auto choice = cmax::sched::choose_context(*config, "")) check(!choice->server.empty());
    (void)cmax::sched::merge_kubeconfigs({*config, *config});
  }
  (void)cmax::sched::decode_base64(in);
  if (auto node = kube::parse_node(in)) {
    check(!node->state.name.empty());
    check_patch(kube::hold_patch(*node, "cmax: Xid 79 (fuzz)", kube::Hold::kFault, "NoExecute", "2026-12-03T00:00:00Z"),
                *node);
    check_patch(kube::hold_patch(*node, "cmax: Xid 79 (fuzz)", kube::Hold::kReboot, "NoExecute", "2026-12-03T00:00:00Z"),
                *node);
    check_patch(kube::release_patch(*node, true), *node);
  }
  if (auto page = kube::parse_node_list(in))
    for (const auto& n : page->nodes) check(!n.name.empty());
  if (auto e = kube::parse_node_watch_event(in)) {
    check(!e->type.empty());
    check(e->node.has_value() == (e->type == "ADDED" || e->type == "MODIFIED" || e->type == "DELETED"));
  }
  if (auto t = kube::parse_pool_total(in)) {
    auto again = kube::parse_pool_total(kube::pool_total_json("p", "ns", t->total, t->counted_ms, "h", t->resource_version));
    check(again && again->total == t->total && again->counted_ms == t->counted_ms && t->total >= 0);
  }
  if (auto count = kube::parse_list_count(in)) check(!count->remaining || *count->remaining >= 0);
  // The breaker's slots: what it reads, it writes back the same; the view never counts below zero.
  if (auto slots = kube::parse_breaker_slots(in)) {
    for (const auto& sl : *slots) {
      auto again = kube::parse_breaker_slots(
          "{\"kind\":\"LeaseList\",\"items\":[" +
          kube::breaker_slot_json(sl.name, "ns", "all", sl.holder, sl.acquired_ms > 0 ? sl.acquired_ms : 1, 120) + "]}");
      check(again.has_value() && again->size() == 1 && (*again)[0].holder == sl.holder && (*again)[0].index == sl.index);
    }
    auto v = kube::view_slots(*slots, "k1", {"k2"}, 0, 10, 1765076662000, 120000);
    check(v.count >= 1 && v.free.size() <= 10);
  }
  // The bytes as the Node next to an empty PodList, and as the PodList next to a plain Node.
  constexpr std::string_view kNode = R"({"kind":"Node","metadata":{"name":"k1"},"status":{"conditions":[{"type":"Ready","status":"True"}]}})";
  constexpr std::string_view kPods = R"({"kind":"PodList","items":[]})";
  for (auto v : {cmax::drill::kube_view(in, kPods, {"a"}), cmax::drill::kube_view(kNode, in, {})})
    if (v) check(!v->state.name.empty() && (v->state.base == "IDLE" || v->state.base == "ALLOCATED" || v->state.base == "DOWN"));
  // The bytes as a workload's PodList: counts never negative, the nodes elsewhere sorted, unique,
  // never the target.
  if (auto w = cmax::drill::kube_workload(in, "k1", "app=train")) {
    check(w->on_target >= 0 && w->elsewhere >= 0 && static_cast<int>(w->elsewhere_nodes.size()) <= w->elsewhere);
    for (std::size_t i = 0; i < w->elsewhere_nodes.size(); ++i) {
      check(w->elsewhere_nodes[i] != "k1");
      if (i > 0) check(w->elsewhere_nodes[i - 1] < w->elsewhere_nodes[i]);
    }
  }
  (void)kube::status_message(in);
  (void)kube::parse_api_url(in);
  return 0;
}
