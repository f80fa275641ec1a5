#pragma once
// A loopback stand-in for the parts of a Kubernetes API server that `cmax audit isolation` asks:
// SelfSubjectRulesReview, SelfSubjectAccessReview and pod creates. It answers with bodies the test
// sets (recorded from real API servers, tests/golden/kube_review/) and records every request, so a
// test can check what was asked and that nothing but dry runs was sent.

#include <httplib.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cmax::test {

class FakeKubeReviews {
 public:
  /// One canned answer.
  struct Answer {
    int status = 201;
    std::string body;
  };
  /// One request as the server saw it.
  struct Request {
    std::string method;
    std::string path;   ///< without the query
    std::string query;  ///< "dryRun=All", or ""
    std::string body;
    std::string authorization;  ///< the Authorization header
  };

  /// Serves on a free port of 127.0.0.1. Until set, reviews answer "not allowed" (complete, no
  /// rules) and pod creates 403 from RBAC.
  FakeKubeReviews();
  ~FakeKubeReviews();
  FakeKubeReviews(const FakeKubeReviews&) = delete;
  FakeKubeReviews& operator=(const FakeKubeReviews&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// The answer to a SelfSubjectRulesReview of namespace `ns`.
  void set_rules_review(const std::string& ns, Answer a);
  /// The answer to a SelfSubjectAccessReview of "verb group resource[/sub] namespace" (group and
  /// namespace may be empty: "get  nodes/proxy "), or of "verb path" for a non-resource URL
  /// ("get /logs").
  void set_access_review(const std::string& key, Answer a);
  /// The answer to a pod create whose generateName starts with "cmax-isolation-<id>-".
  void set_pod_create(const std::string& id, Answer a);
  /// Every request so far, in order.
  std::vector<Request> requests();
  /// The access review keys asked so far, in order.
  std::vector<std::string> access_keys();

  /// Reads tests/golden/kube_review/<name>.
  static std::string recorded(const std::string& name);

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::map<std::string, Answer> rules_, access_, pods_;
  std::vector<Request> requests_;
  std::vector<std::string> access_keys_;
};

}  // namespace cmax::test
