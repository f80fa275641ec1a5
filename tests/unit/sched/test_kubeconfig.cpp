// kubeconfig reading: the shapes kubectl, kind and EKS write; kubectl's file list and merge;
// what is refused and why; and KubeClient sending the kubeconfig's inline token and verifying the
// server against its inline CA (a real TLS server on loopback).

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "sched/kube_client.h"
#include "sched/kubeconfig.h"
#include "support/tls_server_ctx.h"

using namespace cmax::sched;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The shape `kubectl config view --raw` prints: two clusters, two users, three contexts.
std::string two_clusters(const std::string& ca_data) {
  return R"(apiVersion: v1
kind: Config
preferences: {}
current-context: team-a@prod
clusters:
- name: prod
  cluster:
    server: https://10.0.0.10:6443
    certificate-authority-data: )" +
         ca_data + R"(
- name: lab
  cluster:
    server: https://lab.example.org:443/k8s/clusters/c-1
    certificate-authority: certs/lab-ca.crt
users:
- name: team-a
  user:
    token: eyJhbGciOiJSUzI1NiJ9.team-a
- name: robot
  user:
    tokenFile: tokens/robot
contexts:
- name: team-a@prod
  context:
    cluster: prod
    user: team-a
    namespace: team-a
- name: robot@lab
  context:
    cluster: lab
    user: robot
- name: dangling
  context:
    cluster: nowhere
    user: team-a
)";
}

// What `kind create cluster` writes: client certificates.
constexpr std::string_view kKind = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0Q2c9PQ==
    server: https://127.0.0.1:39123
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0Q2c9PQ==
    client-key-data: TFMwdExTMUNSVWRKVGlCRlF5QlFVa2xXUVZSRklFdEZXUzB0TFMwdENnPT0=
)";

// What `aws eks update-kubeconfig` writes: an exec credential plugin.
constexpr std::string_view kEks = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: TFMwdExTMUNSVWRKVGc9PQ==
    server: https://ABCDEF.gr7.us-west-2.eks.amazonaws.com
  name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
contexts:
- context:
    cluster: arn:aws:eks:us-west-2:111122223333:cluster/gpu
    user: arn:aws:eks:us-west-2:111122223333:cluster/gpu
  name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
current-context: arn:aws:eks:us-west-2:111122223333:cluster/gpu
kind: Config
preferences: {}
users:
- name: arn:aws:eks:us-west-2:111122223333:cluster/gpu
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: ["eks", "get-token", "--cluster-name", "gpu"]
)";

class TempDir {
 public:
  TempDir() : dir_(fs::temp_directory_path() / ("cmax-kubeconfig-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(counter_++))) {
    fs::create_directories(dir_);
  }
  ~TempDir() { fs::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view text) const {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path() const { return dir_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

}  // namespace

TEST(Base64, DecodesStandardTextAndRefusesOthers) {
  EXPECT_EQ(*decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(*decode_base64("aGVsbG8"), "hello");  // padding optional
  EXPECT_EQ(*decode_base64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(*decode_base64(""), "");
  EXPECT_EQ(*decode_base64(base64("\x01\x02\xff")), "\x01\x02\xff");
  EXPECT_FALSE(decode_base64("aGVsbG8-"));  // base64url is not what kubeconfigs hold
  EXPECT_FALSE(decode_base64("aGVsbG8=x"));
  EXPECT_FALSE(decode_base64("a"));  // ends inside a byte
}

TEST(Kubeconfig, ResolvesTheCurrentContextAndRelativePaths) {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto k = parse_kubeconfig(two_clusters(base64(pem)), "/home/me/.kube");
  ASSERT_TRUE(k) << k.error().message;
  EXPECT_EQ(k->current_context, "team-a@prod");
  ASSERT_EQ(k->clusters.size(), 2u);
  EXPECT_EQ(k->clusters[0].ca_pem, pem);
  EXPECT_EQ(k->clusters[1].ca_file, "/home/me/.kube/certs/lab-ca.crt");
  EXPECT_EQ(k->users[1].token_file, "/home/me/.kube/tokens/robot");

  auto c = choose_context(*k, "");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->context, "team-a@prod");
  EXPECT_EQ(c->server, "https://10.0.0.10:6443");
  EXPECT_EQ(c->token, "eyJhbGciOiJSUzI1NiJ9.team-a");
  EXPECT_EQ(c->ns, "team-a");
  auto o = to_options(*c);
  EXPECT_EQ(o.api_url, "https://10.0.0.10:6443");
  EXPECT_TRUE(o.token_path.empty());
  EXPECT_EQ(o.token, "eyJhbGciOiJSUzI1NiJ9.team-a");
  EXPECT_EQ(o.ca_pem, pem);

  auto lab = choose_context(*k, "robot@lab");
  ASSERT_TRUE(lab);
  EXPECT_EQ(lab->server, "https://lab.example.org:443/k8s/clusters/c-1");
  EXPECT_EQ(to_options(*lab).token_path, "/home/me/.kube/tokens/robot");
  EXPECT_EQ(to_options(*lab).ca_path, "/home/me/.kube/certs/lab-ca.crt");
  EXPECT_TRUE(lab->ns.empty());

  auto none = choose_context(*k, "nope");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no context named nope"), std::string::npos);
  auto dangling = choose_context(*k, "dangling");
  ASSERT_FALSE(dangling);
  EXPECT_NE(dangling.error().message.find("cluster nowhere"), std::string::npos);
}

TEST(Kubeconfig, RefusesWhatItWillNotUseAndSaysWhatToPass) {
  auto kind = parse_kubeconfig(kKind, "/root/.kube");
  ASSERT_TRUE(kind) << kind.error().message;
  auto c = choose_context(*kind, "");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("client certificate"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("--kube-token-file"), std::string::npos);

  auto eks = parse_kubeconfig(kEks, "/root/.kube");
  ASSERT_TRUE(eks) << eks.error().message;
  auto e = choose_context(*eks, "");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("exec credential plugin aws"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("never runs a program"), std::string::npos);

  auto insecure = parse_kubeconfig(R"(kind: Config
current-context: x
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)",
                                   "/");
  ASSERT_TRUE(insecure) << insecure.error().message;
  auto i = choose_context(*insecure, "");
  ASSERT_FALSE(i);
  EXPECT_NE(i.error().message.find("insecure-skip-tls-verify"), std::string::npos);

  EXPECT_FALSE(parse_kubeconfig("clusters: [unclosed", "/"));
  auto pod = parse_kubeconfig("kind: Pod\nmetadata: {name: x}\n", "/");
  ASSERT_FALSE(pod);
  EXPECT_NE(pod.error().message.find("kind is Pod"), std::string::npos);
  auto bad_ca = parse_kubeconfig(
      "kind: Config\nclusters: [{name: c, cluster: {server: 'https://h', certificate-authority-data: '%%%'}}]\n", "/");
  ASSERT_FALSE(bad_ca);
  EXPECT_NE(bad_ca.error().message.find("cluster c: certificate-authority-data"), std::string::npos);
  auto empty = parse_kubeconfig("", "/");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(choose_context(*empty, ""));
}

TEST(Kubeconfig, FileListAndMergeFollowKubectl) {
  EXPECT_EQ(kubeconfig_files("/x/config", "/a:/b", "/home/me"), std::vector<std::string>{"/x/config"});
  EXPECT_EQ(kubeconfig_files("", "/a::/b:", "/home/me"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(kubeconfig_files("", "", "/home/me"), std::vector<std::string>{"/home/me/.kube/config"});
  EXPECT_EQ(kubeconfig_files("", nullptr, nullptr), std::vector<std::string>{});

  TempDir dir;
  // The first file names the current context and a user; the second redefines that user (ignored,
  // the first definition wins) and adds the cluster and context.
  std::string a = dir.write("a.yaml", R"(kind: Config
current-context: ctx
users: [{name: u, user: {tokenFile: tok}}]
)");
  std::string b = dir.write("b.yaml", R"(kind: Config
current-context: other
users: [{name: u, user: {token: from-b}}]
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: ns-b}}]
)");
  auto c = load_kubeconfig({a, dir.path() + "/missing.yaml", b}, "");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->context, "ctx");
  EXPECT_EQ(c->token_file, dir.path() + "/tok");
  EXPECT_TRUE(c->token.empty());
  EXPECT_EQ(c->ns, "ns-b");
  EXPECT_NE(c->source.find("a.yaml"), std::string::npos);

  auto gone = load_kubeconfig({dir.path() + "/missing.yaml"}, "");
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("missing.yaml"), std::string::npos);
  auto all_gone = load_kubeconfig({dir.path() + "/m1", dir.path() + "/m2"}, "");
  ASSERT_FALSE(all_gone);
  EXPECT_NE(all_gone.error().message.find("none of"), std::string::npos);
}

TEST(KubeClientKubeconfig, SendsTheInlineToken) {
  httplib::Server server;
  std::string auth;
  server.Get("/version", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    res.set_content(R"({"major":"1","minor":"30"})", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  KubeconfigChoice choice;
  choice.server = "http://127.0.0.1:" + std::to_string(port);
  choice.token = "inline-token-123";
  KubeClient client(to_options(choice));
  auto r = client.send("GET", "/version");
  server.stop();
  t.join();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(auth, "Bearer inline-token-123");
}

TEST(KubeClientKubeconfig, VerifiesTheServerAgainstTheInlineCa) {
  cmax::test::SelfSigned server_cert("kube-apiserver");
  cmax::test::SelfSigned other("someone-else");
  ASSERT_TRUE(server_cert.ok() && other.ok());
  httplib::SSLServer server(server_cert.cert(), server_cert.key());
  ASSERT_TRUE(server.is_valid());
  server.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"major":"1"})", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  KubeconfigChoice choice;
  choice.server = "https://127.0.0.1:" + std::to_string(port);
  choice.token = "t";
  choice.ca_pem = server_cert.cert_pem();
  auto good = KubeClient(to_options(choice)).send("GET", "/version");
  choice.ca_pem = other.cert_pem();
  auto wrong = KubeClient(to_options(choice)).send("GET", "/version");
  choice.ca_pem = "not a certificate";
  auto junk = KubeClient(to_options(choice)).send("GET", "/version");
  server.stop();
  t.join();
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->status, 200);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("does not verify"), std::string::npos) << wrong.error().message;
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().message.find("holds no PEM certificate"), std::string::npos) << junk.error().message;
}
