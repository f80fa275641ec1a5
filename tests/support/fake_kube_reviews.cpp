#include "support/fake_kube_reviews.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cmax::test {
namespace {

using nlohmann::json;

constexpr const char* kNotAllowed =
    R"({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",)"
    R"("status":{"allowed":false}})";
constexpr const char* kNoRules =
    R"({"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1",)"
    R"("status":{"resourceRules":[],"nonResourceRules":[],"incomplete":false}})";
constexpr const char* kNoPods =
    R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden: User )"
    R"(\"system:anonymous\" cannot create resource \"pods\" in API group \"\" in the namespace )"
    R"(\"default\"","reason":"Forbidden","code":403})";

void answer(httplib::Response& res, const FakeKubeReviews::Answer& a) {
  res.status = a.status;
  res.set_content(a.body, "application/json");
}

}  // namespace

FakeKubeReviews::FakeKubeReviews() {
  auto record = [this](const httplib::Request& req) {
    std::string query = req.has_param("dryRun") ? "dryRun=" + req.get_param_value("dryRun") : "";
    requests_.push_back(
        {req.method, req.path, query, req.body, req.get_header_value("Authorization")});
  };
  server_.Post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
               [this, record](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard lock(mu_);
                 record(req);
                 json j = json::parse(req.body, nullptr, false);
                 std::string ns = j.is_discarded() ? "" : j["spec"].value("namespace", "");
                 auto it = rules_.find(ns);
                 answer(res, it != rules_.end() ? it->second : Answer{201, kNoRules});
               });
  server_.Post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
               [this, record](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard lock(mu_);
                 record(req);
                 json j = json::parse(req.body, nullptr, false);
                 std::string key;
                 if (!j.is_discarded() && j["spec"].contains("nonResourceAttributes")) {
                   json n = j["spec"]["nonResourceAttributes"];
                   key = n.value("verb", "") + " " + n.value("path", "");
                 } else {
                   json a = j.is_discarded() ? json::object() : j["spec"]["resourceAttributes"];
                   std::string resource = a.value("resource", "");
                   if (!a.value("subresource", "").empty())
                     resource += "/" + a.value("subresource", "");
                   key = a.value("verb", "") + " " + a.value("group", "") + " " + resource + " " +
                         a.value("namespace", "");
                 }
                 access_keys_.push_back(key);
                 auto it = access_.find(key);
                 answer(res, it != access_.end() ? it->second : Answer{201, kNotAllowed});
               });
  server_.Post(R"(/api/v1/namespaces/([^/]+)/pods)",
               [this, record](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard lock(mu_);
                 record(req);
                 json j = json::parse(req.body, nullptr, false);
                 std::string name = j.is_discarded() ? "" : j["metadata"].value("generateName", "");
                 for (const auto& [id, a] : pods_)
                   if (name == "cmax-isolation-" + id + "-") return answer(res, a);
                 answer(res, Answer{403, kNoPods});
               });
  auto other = [this, record](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    record(req);
    res.status = 404;
  };
  server_.Get(".*", other);
  server_.Put(".*", other);
  server_.Patch(".*", other);
  server_.Delete(".*", other);
  server_.Post(".*", other);
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  for (int i = 0; i < 2000 && !server_.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeKubeReviews::~FakeKubeReviews() {
  server_.stop();
  thread_.join();
}

void FakeKubeReviews::set_rules_review(const std::string& ns, Answer a) {
  std::lock_guard lock(mu_);
  rules_[ns] = std::move(a);
}

void FakeKubeReviews::set_access_review(const std::string& key, Answer a) {
  std::lock_guard lock(mu_);
  access_[key] = std::move(a);
}

void FakeKubeReviews::set_pod_create(const std::string& id, Answer a) {
  std::lock_guard lock(mu_);
  pods_[id] = std::move(a);
}

std::vector<FakeKubeReviews::Request> FakeKubeReviews::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<std::string> FakeKubeReviews::access_keys() {
  std::lock_guard lock(mu_);
  return access_keys_;
}

std::string FakeKubeReviews::recorded(const std::string& name) {
  std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "tests/golden/kube_review" / name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cmax::test
