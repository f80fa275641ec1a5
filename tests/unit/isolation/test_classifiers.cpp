#include <gtest/gtest.h>

#include "isolation/http_answer.h"
#include "isolation/services.h"

using namespace cmax::isolation;
using cmax::audit::Outcome;

namespace {

Verdict classify(std::string_view key, std::string_view raw) {
  const Service *s = find_service(key);
  EXPECT_NE(s, nullptr) << key;
  auto a = parse_http_answer(raw, true);
  EXPECT_TRUE(a) << raw;
  return s->classify(*a);
}

}  // namespace

TEST(IsolationHttpAnswer, ParsesStatusHeadersAndBody) {
  auto a = parse_http_answer(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json; "
      "charset=UTF-8\r\nContent-Length: 2\r\n\r\n[]extra",
      false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->reason, "OK");
  EXPECT_EQ(a->content_type, "application/json");
  EXPECT_EQ(a->body, "[]");
  EXPECT_TRUE(a->complete);
  auto chunked = parse_http_answer(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n4\r\n[{},\r\n3\r\n{}]\r\n0\r\n\r\n",
      false);
  ASSERT_TRUE(chunked);
  EXPECT_EQ(chunked->body, "[{},{}]");
  EXPECT_TRUE(chunked->complete);
  auto partial = parse_http_answer("HTTP/1.0 200 OK\r\n\r\nabc", false);
  ASSERT_TRUE(partial);
  EXPECT_FALSE(partial->complete);
  EXPECT_FALSE(parse_http_answer("SSH-2.0-OpenSSH_9.2\r\n", true));
  EXPECT_FALSE(parse_http_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
                                 false));  // headers not ended
  EXPECT_FALSE(parse_http_answer("HTTP/1.1 abc OK\r\n\r\n", true));
  EXPECT_TRUE(http_answer_complete("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_FALSE(http_answer_complete("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345"));
}

TEST(IsolationHttpAnswer, CountsJsonArrayElements) {
  EXPECT_EQ(json_array_length("[]"), 0);
  EXPECT_EQ(json_array_length(" [ ] "), 0);
  EXPECT_EQ(json_array_length(R"([{"title":"a,b]"},{"x":[1,2]}])"), 2);
  EXPECT_EQ(json_array_length("[1,2,3]"), 3);
  EXPECT_FALSE(json_array_length(R"({"a":1})"));
  EXPECT_FALSE(json_array_length("<html>"));
}

// Answers recorded from real services (trimmed), and what each must conclude.
TEST(IsolationClassifiers, GrafanaAnonymousSearch) {
  auto open = classify("grafana",
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                       "140\r\n\r\n"
                       R"([{"id":1,"uid":"gpu","title":"Tenant B GPUs","type":"dash-db"},)"
                       R"({"id":2,"uid":"net","title":"Fabric","type":"dash-db"}])");
  EXPECT_EQ(open.outcome, Outcome::fail);
  EXPECT_NE(open.observed.find("2 entries"), std::string::npos) << open.observed;
  EXPECT_EQ(classify("grafana",
                     "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n\r\n"
                     R"({"message":"Unauthorized"})")
                .outcome,
            Outcome::pass);
  EXPECT_EQ(classify("grafana", "HTTP/1.1 302 Found\r\nLocation: /login\r\n\r\n").outcome,
            Outcome::pass);
  EXPECT_EQ(classify("grafana", "HTTP/1.1 200 OK\r\n\r\n[]").outcome, Outcome::warn);
  EXPECT_EQ(classify("grafana", "HTTP/1.1 404 Not Found\r\n\r\nnope").outcome, Outcome::warn);
}

TEST(IsolationClassifiers, PrometheusExportersJupyterRayEtcdKubelet) {
  auto prom = classify("prometheus",
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                       R"({"status":"success","data":{"version":"2.51.2","revision":"b4c0ab5"}})");
  EXPECT_EQ(prom.outcome, Outcome::fail);
  EXPECT_NE(prom.observed.find("2.51.2"), std::string::npos);
  EXPECT_EQ(classify("prometheus", "HTTP/1.1 401 Unauthorized\r\n\r\n").outcome, Outcome::pass);
  EXPECT_EQ(classify("node_exporter",
                     "HTTP/1.1 200 OK\r\n\r\n# HELP node_load1 1m load\nnode_load1 0.5\n")
                .outcome,
            Outcome::warn);
  EXPECT_EQ(classify("dcgm_exporter", "HTTP/1.1 200 OK\r\n\r\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 99\n")
                .outcome,
            Outcome::warn);
  EXPECT_EQ(
      classify("jupyter", "HTTP/1.1 200 OK\r\n\r\n[{\"id\":\"k1\",\"name\":\"python3\"}]").outcome,
      Outcome::fail);
  EXPECT_EQ(
      classify("jupyter", "HTTP/1.1 403 Forbidden\r\n\r\n{\"message\":\"Forbidden\"}").outcome,
      Outcome::pass);
  EXPECT_EQ(classify("jupyter", "HTTP/1.1 401 Unauthorized\r\n\r\n").outcome, Outcome::pass);
  auto ray =
      classify("ray", "HTTP/1.1 200 OK\r\n\r\n{\"version\":\"4\",\"ray_version\":\"2.9.0\"}");
  EXPECT_EQ(ray.outcome, Outcome::fail);
  EXPECT_NE(ray.observed.find("2.9.0"), std::string::npos);
  EXPECT_EQ(classify("etcd",
                     "HTTP/1.1 200 "
                     "OK\r\n\r\n{\"etcdserver\":\"3.5.9\",\"etcdcluster\":\"3.5.0\"}")
                .outcome,
            Outcome::fail);
  EXPECT_EQ(
      classify("kubelet_readonly", "HTTP/1.1 200 OK\r\n\r\n{\"kind\":\"PodList\",\"items\":[]}")
          .outcome,
      Outcome::fail);
  EXPECT_EQ(classify("kubelet_readonly", "HTTP/1.1 401 Unauthorized\r\n\r\n").outcome,
            Outcome::pass);
}

TEST(IsolationClassifiers, MetadataNeverPassesAnOpenListing) {
  EXPECT_EQ(classify("metadata", "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n").outcome,
            Outcome::pass);
  EXPECT_EQ(classify("metadata", "HTTP/1.1 200 OK\r\n\r\nami-id\nhostname\niam/\n").outcome,
            Outcome::fail);
  EXPECT_EQ(classify("metadata", "HTTP/1.1 403 Forbidden\r\n\r\n").outcome, Outcome::pass);
  EXPECT_EQ(classify("metadata", "HTTP/1.1 404 Not Found\r\n\r\n").outcome, Outcome::warn);
}

TEST(IsolationServices, TableIsExplicitAndRequestsAreReadOnly) {
  std::vector<std::uint16_t> ports;
  for (const auto &s : all_services()) {
    EXPECT_FALSE(s.key.empty());
    EXPECT_FALSE(s.description.empty()) << s.key;
    EXPECT_FALSE(s.remediation.empty()) << s.key;
    if (s.request == Request::http_get || s.request == Request::https_get) {
      ASSERT_NE(s.classify, nullptr) << s.key;
      auto req = build_request(s, "10.0.0.5:3000");
      EXPECT_TRUE(req.starts_with("GET ")) << s.key;
      EXPECT_EQ(req.find("Authorization"), std::string::npos);
      EXPECT_EQ(req.find("credentials"), std::string::npos) << s.key;  // never a credential path
      EXPECT_EQ(req.find("token"), std::string::npos) << s.key;
    } else if (s.request == Request::udp) {
      ASSERT_NE(s.classify_bytes, nullptr) << s.key;
      EXPECT_FALSE(build_request(s, "h").empty()) << s.key;
      EXPECT_FALSE(s.by_default) << s.key;  // UDP services are opt-in (BMC ranges)
    } else {
      EXPECT_TRUE(build_request(s, "h").empty()) << s.key;
    }
    if (!s.metadata_only) ports.push_back(s.port);
  }
  EXPECT_EQ(find_service("3000")->key, "grafana");
  EXPECT_EQ(find_service("ray")->port, 8265);
  EXPECT_EQ(find_service("80"),
            nullptr);  // the metadata row is not a scope port
  EXPECT_EQ(find_service("nope"), nullptr);
  EXPECT_EQ(service_check_id(*find_service("grafana")), "isolation.grafana.anonymous");
}
