#include "support/fake_kube_api.h"

namespace cmax::test {

using json = nlohmann::json;

namespace {

/// Equality terms "k=v[,k=v]" only; a term in another form matches everything, as the fake did
/// before it read selectors.
bool matches(const json& node, const std::string& selector) {
  std::size_t at = 0;
  while (at < selector.size()) {
    auto comma = selector.find(',', at);
    auto term = selector.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? selector.size() : comma + 1;
    auto eq = term.find('=');
    if (eq == std::string::npos || term.find_first_of("!()") != std::string::npos) continue;
    auto key = term.substr(0, eq), value = term.substr(term[eq + 1] == '=' ? eq + 2 : eq + 1);
    const auto& labels = node["metadata"].value("labels", json::object());
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

json status_object(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

}  // namespace

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
  server_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++gets_;
    pod_requests_.push_back("GET /api/v1/nodes");
    json items = json::array();
    auto selector = req.get_param_value("labelSelector");
    for (const json* n : {&node_}) if (matches(*n, selector)) items.push_back(*n);
    for (const auto& n : more_nodes_) if (matches(n, selector)) items.push_back(n);
    res.set_content(json{{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"items", items}}.dump(),
                    "application/json");
  });
  add_pod_routes();
  server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++gets_;
    // Only the selector cmax sends is understood; anything else lists every pod, as a real server
    // would for an empty selector.
    std::string on;
    auto sel = req.get_param_value("fieldSelector");
    if (sel.rfind("spec.nodeName=", 0) == 0) on = sel.substr(14);
    const auto labels = req.get_param_value("labelSelector");
    json items = json::array();
    for (const auto& p : pods_)
      if ((on.empty() || p["spec"].value("nodeName", "") == on) && matches(p, labels)) items.push_back(p);
    res.set_content(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"items", items}}.dump(),
                    "application/json");
  });
  server_.Patch(path, [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    if (!first_patch_) first_patch_ = std::chrono::steady_clock::now();
    try {
      node_ = apply_json_patch(node_, json::parse(req.body));
    } catch (const json::exception&) {
      // What kube-apiserver v1.37 answers when an op, a "test" among them, fails.
      res.status = 422;
      res.set_content(json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", "Invalid"},
                           {"code", 422}, {"message", "the server rejected our request due to an error in our request"}}
                          .dump(),
                      "application/json");
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

void FakeKubeApi::add_pod_routes() {
  const std::string pods = R"(/api/v1/namespaces/([a-z0-9-]+)/pods)";
  server_.Post(pods, [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    pod_requests_.push_back("POST " + req.path);
    auto pod = json::parse(req.body, nullptr, false);
    if (pod.is_discarded() || !pod.is_object() || !pod["metadata"].contains("name")) {
      res.status = 400;
      res.set_content(status_object(400, "BadRequest", "not a Pod").dump(), "application/json");
      return;
    }
    PodFate fate;
    fate.log = "{}";
    if (hook_) fate = hook_(pod);
    if (fate.create_status != 0) {
      res.status = fate.create_status;
      res.set_content(status_object(fate.create_status, "Forbidden", fate.message).dump(), "application/json");
      return;
    }
    auto name = pod["metadata"]["name"].get<std::string>();
    for (const auto& [have, c] : created_)
      if (have == name) {
        res.status = 409;
        res.set_content(status_object(409, "AlreadyExists", "pods \"" + name + "\" already exists").dump(),
                        "application/json");
        return;
      }
    pod["metadata"]["namespace"] = req.matches[1].str();
    pod["status"] = {{"phase", "Pending"}};
    created_.push_back({name, Created{pod, std::move(fate)}});
    res.status = 201;
    res.set_content(pod.dump(), "application/json");
  });
  auto find = [this](const std::string& name) -> Created* {
    for (auto& [have, c] : created_)
      if (have == name) return &c;
    return nullptr;
  };
  server_.Get(pods + "/([a-z0-9.-]+)", [this, find](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    pod_requests_.push_back("GET " + req.path);
    Created* c = find(req.matches[2].str());
    if (!c) {
      res.status = 404;
      res.set_content(status_object(404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found").dump(), "application/json");
      return;
    }
    res.set_content(advance(*c).dump(), "application/json");
  });
  server_.Get(pods + "/([a-z0-9.-]+)/log", [this, find](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    pod_requests_.push_back("GET " + req.path);
    Created* c = find(req.matches[2].str());
    if (!c) {
      res.status = 404;
      res.set_content(status_object(404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found").dump(), "application/json");
      return;
    }
    res.set_content(c->fate.log, "text/plain");
  });
  server_.Delete(pods + "/([a-z0-9.-]+)", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    pod_requests_.push_back("DELETE " + req.path);
    for (auto it = created_.begin(); it != created_.end(); ++it)
      if (it->first == req.matches[2].str()) {
        json pod = it->second.pod;
        created_.erase(it);
        res.set_content(pod.dump(), "application/json");
        return;
      }
    res.status = 404;
    res.set_content(status_object(404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found").dump(), "application/json");
  });
}

json FakeKubeApi::advance(Created& c) {
  using End = PodFate::End;
  auto& status = c.pod["status"];
  int seen = c.polls++;
  const PodFate& f = c.fate;
  auto container = [](json state) { return json::array({{{"name", "collect"}, {"state", std::move(state)}}}); };
  switch (f.end) {
    case End::stay_pending:
      status = {{"phase", "Pending"},
                {"containerStatuses", container({{"waiting", {{"reason", "ContainerCreating"}}}})}};
      break;
    case End::unschedulable:
      status = {{"phase", "Pending"},
                {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                                             {"message", f.message}}})}};
      break;
    case End::reject:
      status = {{"phase", "Failed"}, {"reason", f.reason}, {"message", f.message}};
      break;
    case End::succeed:
    case End::fail:
      if (seen < f.polls) {
        status = seen == 0 ? json{{"phase", "Pending"}}
                           : json{{"phase", "Running"}, {"containerStatuses", container({{"running", json::object()}})}};
      } else if (f.end == End::succeed) {
        status = {{"phase", "Succeeded"},
                  {"containerStatuses", container({{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}})}};
      } else {
        status = {{"phase", "Failed"},
                  {"containerStatuses",
                   container({{"terminated", {{"exitCode", f.exit_code}, {"reason", f.reason}, {"message", f.message}}}})}};
      }
      break;
  }
  return c.pod;
}

void FakeKubeApi::add_node(json node) {
  std::lock_guard lock(mu_);
  more_nodes_.push_back(std::move(node));
}

void FakeKubeApi::set_pod_hook(PodHook hook) {
  std::lock_guard lock(mu_);
  hook_ = std::move(hook);
}

std::vector<std::string> FakeKubeApi::pod_requests() {
  std::lock_guard lock(mu_);
  return pod_requests_;
}

std::vector<std::string> FakeKubeApi::live_pods() {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, c] : created_) names.push_back(name);
  return names;
}

json FakeKubeApi::created_pod(const std::string& name) {
  std::lock_guard lock(mu_);
  for (const auto& [have, c] : created_)
    if (have == name) return c.pod;
  return nullptr;
}

json make_node(const std::string& name, json labels, const std::string& ready, bool unschedulable) {
  json node{{"kind", "Node"},
            {"apiVersion", "v1"},
            {"metadata", {{"name", name}, {"resourceVersion", "1"}, {"labels", std::move(labels)}}},
            {"spec", json::object()},
            {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", ready}}})}}}};
  if (unschedulable) node["spec"]["unschedulable"] = true;
  return node;
}

json apply_json_patch(const json& doc, const json& ops) {
  json kept = json::array();
  for (const auto& op : ops) {
    if (op.is_object() && op.value("op", "") == "test" && op.contains("value") && op["value"].is_null()) {
      const json::json_pointer ptr(op.value("path", ""));
      if (!doc.contains(ptr) || doc.at(ptr).is_null()) continue;  // absent: the test passes
      throw json::other_error::create(501, "unsuccessful: " + op.dump(), nullptr);
    }
    kept.push_back(op);
  }
  return doc.patch(kept);
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
