#include "support/fake_kube_api.h"

namespace cmax::test {

using json = nlohmann::json;

FakeKubeApi::FakeKubeApi(std::string name) : name_(std::move(name)) {
  node_ = json{{"kind", "Node"},
               {"apiVersion", "v1"},
               {"metadata", {{"name", name_}, {"resourceVersion", "1"}, {"labels", {{"pool", "gpu"}}}, {"annotations", json::object()}}},
               {"spec", json::object()},
               {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})}}}};
  const std::string path = "/api/v1/nodes/" + name_;
  server_.Get(path, [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++gets_;
    res.set_content(node_.dump(), "application/json");
  });
  server_.Get("/api/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++gets_;
    res.set_content(json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"items", json::array({node_})}}.dump(),
                    "application/json");
  });
  server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++gets_;
    // Only the selector cmax sends is understood; anything else lists every pod, as a real server
    // would for an empty selector.
    std::string on;
    auto sel = req.get_param_value("fieldSelector");
    if (sel.rfind("spec.nodeName=", 0) == 0) on = sel.substr(14);
    json items = json::array();
    for (const auto& p : pods_)
      if (on.empty() || p["spec"].value("nodeName", "") == on) items.push_back(p);
    res.set_content(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"items", items}}.dump(),
                    "application/json");
  });
  server_.Patch(path, [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    if (!first_patch_) first_patch_ = std::chrono::steady_clock::now();
    try {
      node_ = node_.patch(json::parse(req.body));
    } catch (const json::exception& e) {
      res.status = 409;
      res.set_content(json{{"kind", "Status"}, {"code", 409}, {"message", e.what()}}.dump(), "application/json");
      return;
    }
    node_["metadata"]["resourceVersion"] = std::to_string(++version_);
    res.set_content(node_.dump(), "application/json");
  });
  server_.Patch(path + "/status", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    auto patch = json::parse(req.body, nullptr, false);
    if (patch.is_discarded()) {
      res.status = 400;
      return;
    }
    auto& conds = node_["status"]["conditions"];
    for (const auto& c : patch["status"]["conditions"]) {
      bool merged = false;
      for (auto& have : conds)
        if (have["type"] == c["type"]) {
          have.merge_patch(c);
          merged = true;
        }
      if (!merged) conds.push_back(c);
    }
    res.set_content(node_.dump(), "application/json");
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  for (int i = 0; i < 2000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeKubeApi::~FakeKubeApi() {
  server_.stop();
  thread_.join();
}

json FakeKubeApi::node() {
  std::lock_guard lock(mu_);
  return node_;
}

void FakeKubeApi::update_node(const std::function<void(json&)>& change) {
  std::lock_guard lock(mu_);
  change(node_);
  node_["metadata"]["resourceVersion"] = std::to_string(++version_);
}

void FakeKubeApi::set_pods(json pods) {
  std::lock_guard lock(mu_);
  pods_ = std::move(pods);
}

std::optional<std::chrono::steady_clock::time_point> FakeKubeApi::first_patch() {
  std::lock_guard lock(mu_);
  return first_patch_;
}

int FakeKubeApi::gets() {
  std::lock_guard lock(mu_);
  return gets_;
}

json make_pod(const std::string& name, const std::string& node, bool daemonset, const std::string& phase) {
  json pod{{"kind", "Pod"},
           {"apiVersion", "v1"},
           {"metadata", {{"name", name}, {"namespace", "default"}}},
           {"spec", {{"nodeName", node}}},
           {"status", {{"phase", phase}}}};
  if (daemonset)
    pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "cmaxd"}}});
  return pod;
}

}  // namespace cmax::test
