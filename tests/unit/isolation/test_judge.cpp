#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>

#include "audit/audit.h"
#include "isolation/isolation.h"
#include "support/temp_host.h"

using namespace cmax::isolation;
using cmax::audit::Finding;
using cmax::audit::Outcome;

namespace {

const Finding *find(const std::vector<Finding> &findings, std::string_view id) {
  for (const auto &f : findings)
    if (f.check_id == id) return &f;
  return nullptr;
}

IsolationOptions options(std::vector<std::string> scopes, std::vector<std::string> ports = {}) {
  IsolationOptions o;
  o.scopes = std::move(scopes);
  o.ports = std::move(ports);
  return o;
}

ProbeResult result(Reach reach, std::string answer = {}, int err = 0) {
  ProbeResult r;
  r.reach = reach;
  r.answer = std::move(answer);
  r.answer_closed = true;
  r.error_number = err;
  r.detail = err ? std::strerror(err) : "";
  return r;
}

}  // namespace

TEST(IsolationPlan, OnlyNamedScopesAndTheMetadataAddress) {
  auto plan = make_plan(options({"10.0.0.0/30", "10.0.0.9"}, {"grafana", "9090"}));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->hosts.size(), 3u);
  ASSERT_EQ(plan->services.size(), 2u);
  ASSERT_EQ(plan->targets.size(), 3u * 2 + 1);
  for (std::size_t i = 0; i + 1 < plan->targets.size(); ++i) {
    auto a = plan->targets[i].addr;
    EXPECT_TRUE(a == 0x0A000001u || a == 0x0A000002u || a == 0x0A000009u);
    EXPECT_TRUE(plan->targets[i].port == 3000 || plan->targets[i].port == 9090);
  }
  EXPECT_EQ(plan->targets.back().addr, kMetadataAddress);
  EXPECT_EQ(plan->targets.back().port, 80);
  EXPECT_NE(plan->targets.back().request.find("GET /latest/meta-data/ HTTP/1.1"),
            std::string::npos);
  auto text = render_plan(*plan, ProberOptions{});
  EXPECT_NE(text.find("GET /api/search"), std::string::npos);
  EXPECT_NE(text.find("169.254.169.254:80"), std::string::npos);
  EXPECT_NE(text.find("7 probes"), std::string::npos) << text;
}

TEST(IsolationPlan, RefusesUnknownPortsLargeScopesAndBadCanaries) {
  auto port = make_plan(options({"10.0.0.1"}, {"22"}));
  ASSERT_FALSE(port);
  EXPECT_NE(port.error().message.find("3000 (grafana)"), std::string::npos) << port.error().message;
  auto big = make_plan(options({"10.0.0.0/16"}));
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("--max-hosts"), std::string::npos);
  auto o = options({});
  o.metadata = false;
  // Nothing to probe is a valid plan: the host-side checks and the canary still run.
  auto empty = make_plan(o);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->targets.empty());
  o.egress_canary = "ftp://example.org/";
  auto canary = make_plan(o);
  ASSERT_FALSE(canary);
  EXPECT_NE(canary.error().message.find("--egress-canary"), std::string::npos);
  o.egress_canary = "https://canary.example.org/x";
  ASSERT_TRUE(make_plan(o));
  EXPECT_NE(render_plan(*make_plan(o), o.prober).find("one GET https://canary.example.org/x"),
            std::string::npos);
  o.egress_canary.clear();
  o.metadata = true;
  auto only_metadata = make_plan(o);
  ASSERT_TRUE(only_metadata);
  EXPECT_EQ(only_metadata->targets.size(), 1u);
}

TEST(IsolationJudge, ThreeWayResultsPerTargetAndSummary) {
  auto plan = make_plan(options({"10.0.0.0/30"}, {"grafana", "slurmctld", "kubelet"}));
  ASSERT_TRUE(plan);
  // Port-major in table order: kubelet x2, grafana x2, slurmctld x2, then
  // metadata.
  ASSERT_EQ(plan->probes.size(), 7u);
  ASSERT_EQ(plan->probes[0].service->key, "kubelet");
  ProbeRun run;
  run.results = {
      result(Reach::open),                                         // kubelet .1: TLS, unverified
      result(Reach::closed, "", ECONNREFUSED),                     // kubelet .2
      result(Reach::open, "HTTP/1.1 200 OK\r\n\r\n[{\"id\":1}]"),  // grafana .1
      result(Reach::filtered),                                     // grafana .2
      result(Reach::open),                                         // slurmctld .1
      result(Reach::error, "", ENETUNREACH),                       // slurmctld .2: could not probe
      result(Reach::error, "",
             ENETUNREACH),  // metadata: no route = not reachable
  };
  auto findings = judge(*plan, run, ProberOptions{});
  EXPECT_EQ(find(findings, "isolation.grafana.anonymous@10.0.0.1:3000")->outcome, Outcome::fail);
  EXPECT_EQ(find(findings, "isolation.grafana.anonymous@10.0.0.2:3000"),
            nullptr);  // nothing answered
  EXPECT_EQ(find(findings, "isolation.kubelet.anonymous@10.0.0.2:10250"), nullptr);
  EXPECT_EQ(find(findings, "isolation.grafana.anonymous")->outcome, Outcome::fail);
  EXPECT_EQ(find(findings, "isolation.kubelet.anonymous@10.0.0.1:10250")->outcome,
            Outcome::unverified);
  EXPECT_EQ(find(findings, "isolation.kubelet.anonymous")->outcome, Outcome::unverified);
  EXPECT_EQ(find(findings, "isolation.slurmctld.reachable@10.0.0.1:6817")->outcome, Outcome::warn);
  const auto *slurm = find(findings, "isolation.slurmctld.reachable");
  EXPECT_EQ(slurm->outcome,
            Outcome::warn);  // warn outranks the probe that could not run
  EXPECT_EQ(find(findings, "isolation.metadata.imds")->outcome, Outcome::pass);
  EXPECT_EQ(find(findings, "isolation.ray.dashboard")->outcome, Outcome::not_applicable);
  for (const auto &f : findings) {
    EXPECT_EQ(f.category, cmax::audit::Category::security);
    EXPECT_TRUE(f.security);
    if (f.outcome == Outcome::unverified || f.outcome == Outcome::not_applicable) {
      EXPECT_FALSE(f.reason.empty()) << f.check_id;
    }
  }
  auto notes = run_notes(*plan, run);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 probe could not run"), std::string::npos) << notes[0];
}

TEST(IsolationJudge, AProbeThatCouldNotRunIsNeverAPass) {
  auto plan = make_plan(options({"10.0.0.1"}, {"ray"}));
  ASSERT_TRUE(plan);
  ProbeRun run;
  run.results = {result(Reach::error, "", EPERM), result(Reach::skipped)};
  run.deadline_hit = true;
  auto findings = judge(*plan, run, ProberOptions{});
  const auto *ray = find(findings, "isolation.ray.dashboard");
  EXPECT_EQ(ray->outcome, Outcome::unverified);
  EXPECT_NE(ray->reason.find("could not run"), std::string::npos) << ray->reason;
  EXPECT_EQ(find(findings, "isolation.metadata.imds")->outcome, Outcome::unverified);
  // An open port whose answer is not HTTP cannot be judged either.
  run.results = {result(Reach::open, "SSH-2.0-OpenSSH\r\n"),
                 result(Reach::closed, "", ECONNREFUSED)};
  run.deadline_hit = false;
  findings = judge(*plan, run, ProberOptions{});
  EXPECT_EQ(find(findings, "isolation.ray.dashboard@10.0.0.1:8265")->outcome, Outcome::unverified);
  EXPECT_EQ(find(findings, "isolation.ray.dashboard")->outcome, Outcome::unverified);
  EXPECT_EQ(find(findings, "isolation.metadata.imds")->outcome, Outcome::pass);
}

TEST(IsolationJudge, EveryAnsweringAddressGetsItsFindingAfterTheSummary) {
  auto plan = make_plan(options({"10.0.0.0/30"}, {"grafana"}));
  ASSERT_TRUE(plan);
  ProbeRun run;
  run.results = {result(Reach::open, "HTTP/1.1 200 OK\r\n\r\n[{\"id\":1}]"),
                 result(Reach::open, "HTTP/1.1 401 Unauthorized\r\n\r\n"), result(Reach::filtered)};
  auto findings = judge(*plan, run, ProberOptions{});
  std::vector<std::string> ids;
  for (const auto &f : findings)
    if (f.check_id.starts_with("isolation.grafana.")) ids.push_back(f.check_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"isolation.grafana.anonymous",
                                           "isolation.grafana.anonymous@10.0.0.1:3000",
                                           "isolation.grafana.anonymous@10.0.0.2:3000"}));
  EXPECT_EQ(find(findings, "isolation.grafana.anonymous@10.0.0.2:3000")->outcome, Outcome::pass);
}

TEST(IsolationRun, HostChecksJoinTheReportAndNoHostMakesThemNotApplicable) {
  cmax::test::TempHost host;
  host.write("/etc/munge/munge.key", "secret");
  host.write("/etc/passwd", "root:x:0:0::/root:/bin/sh\nmunge:x:" + std::to_string(::getuid()) +
                                ":" + std::to_string(::getgid()) + "::/nonexistent:/usr/sbin/nologin\n");
  std::filesystem::permissions(host.dir() / "etc/munge/munge.key", std::filesystem::perms(0644));
  const cmax::core::HostRoot root = host.host();
  IsolationOptions o;
  o.metadata = false;
  o.host = &root;
  o.env = HostIsolationEnv{};
  auto report = run_isolation(o);
  ASSERT_TRUE(report) << report.error().message;
  std::map<std::string, const cmax::audit::Finding *> by_id;
  for (const auto &f : report->findings) by_id[f.check_id] = &f;
  for (const char *id : {"isolation.host.gpu_devices", "isolation.host.container_toolkit_envvar",
                         "isolation.host.ib_pkeys", "isolation.host.netns", "isolation.host.proc_visibility",
                         "isolation.host.munge_key", "isolation.host.munge_socket", "isolation.egress.canary"})
    ASSERT_TRUE(by_id.count(id)) << id;
  EXPECT_EQ(by_id["isolation.host.munge_key"]->outcome, Outcome::fail) << by_id["isolation.host.munge_key"]->reason;
  EXPECT_EQ(by_id["isolation.host.gpu_devices"]->outcome, Outcome::not_applicable);
  EXPECT_EQ(by_id["isolation.egress.canary"]->outcome, Outcome::not_applicable);
  EXPECT_EQ(cmax::audit::exit_code_for(report->findings), 2);  // a security fail

  o.host_checks = false;
  auto off = run_isolation(o);
  ASSERT_TRUE(off);
  int host_findings = 0;
  for (const auto &f : off->findings)
    if (f.check_id.starts_with("isolation.host.")) {
      ++host_findings;
      EXPECT_EQ(f.outcome, Outcome::not_applicable) << f.check_id;
      EXPECT_EQ(f.reason, "not asked: --no-host");
    }
  EXPECT_EQ(host_findings, 7);
}
