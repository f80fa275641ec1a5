// The controller's merge (cluster/merge.h) over real collect documents: audit JSON from
// report::audit_to_json and a cmax.scan/1 document, rendered by render_collect_doc, judged
// against the built-in floors, compared across nodes, written as cmax.cluster/1 and a run dir.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/floors.h"
#include "cluster/collect_doc.h"
#include "cluster/merge.h"
#include "core/clock.h"
#include "report/audit_json.h"

using namespace cmax::cluster;
using namespace std::chrono_literals;
using cmax::audit::Finding;
using cmax::audit::Outcome;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kGoodDriver = "550.54.15";
constexpr const char* kOddDriver = "535.104.05";

std::string audit_json(const std::string& node, const std::string& driver) {
  cmax::audit::AuditReport r;
  r.started_at = "2026-01-05T10:00:00Z";
  r.finished_at = "2026-01-05T10:00:02Z";
  r.duration = 1500ms;
  r.host = node;
  r.host_root = "/";
  r.harness = cmax::audit::kSlurm;
  r.floors_origin = "built-in";
  r.floors_updated = "2025-12-01";
  r.facts.present("gpu.driver.version", driver, "/proc/driver/nvidia/version");
  r.facts.present("kernel.release", "6.8.0-49-generic", "/proc/sys/kernel/osrelease");
  r.facts.present("gpu.nvidia.count", "8", "nvidia-smi -L");
  r.facts.absent("pkg.libnccl2", "dpkg: libnccl2", "not installed");
  return cmax::report::audit_to_json(r, 0);
}

// One unresolved Xid 79 (reboot_node), one unresolved monitor-only Xid and one resolved NFS
// timeout: one actionable incident of three.
constexpr const char* kScanJson = R"({
  "schema": "cmax.scan/1",
  "sources": ["/dev/kmsg"],
  "errors": [],
  "stats": {"bytes": 52311, "seconds": 0.01, "candidate_lines": 14, "signals": 5, "incidents": 3,
            "skipped_long_lines": 0, "skipped_overlong_lines": 0, "lost_kmsg_records": 0, "ignored": 0,
            "userspace_dropped": 0, "merged_past_incident_cap": 0, "dropped_past_incident_cap": 0,
            "prefilter": "avx2"},
  "incidents": [
    {"node": "n1", "kind": "xid", "code": 79, "pci": "0000:3b:00", "device": "0000:3b:00", "subject": "python3",
     "action": "reboot_node", "reason": "catalog", "count": 2, "first_seen": "Nov 22 14:56:47",
     "last_seen": "Nov 22 14:56:48", "resolved": false, "related": [], "origin": "kernel",
     "sample": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus."},
    {"node": "n1", "kind": "xid", "code": 13, "pci": "0000:5d:00", "device": "0000:5d:00", "subject": "python3",
     "action": "monitor", "reason": "catalog", "count": 1, "first_seen": "Nov 22 15:00:00",
     "last_seen": "Nov 22 15:00:00", "resolved": false, "related": [], "origin": "kernel", "sample": "..."},
    {"node": "n1", "kind": "nfs_timeout", "code": null, "pci": null, "device": "10.0.0.5", "subject": "",
     "action": "drain", "reason": "catalog", "count": 4, "first_seen": "Nov 22 15:01:00",
     "last_seen": "Nov 22 15:02:00", "resolved": true, "related": [], "origin": "kernel", "sample": "..."}
  ]
})";

std::string collect_doc(const std::string& node, const std::string& driver, bool with_scan,
                        const std::vector<cmax::health::CheckResult>& checks = {}) {
  auto doc = render_collect_doc(node, 12.5, audit_json(node, driver), with_scan ? kScanJson : "", checks, {});
  EXPECT_TRUE(doc) << (doc ? "" : doc.error().message);
  return doc ? *doc : std::string();
}

cmax::health::CheckResult memory_check() {
  cmax::health::CheckResult c;
  c.id = "memory.bandwidth";
  c.category = cmax::audit::Category::reliability;
  c.outcome = Outcome::pass;
  c.title = "Memory bandwidth";
  c.target = "numa0";
  c.summary = "triad 212.4 GB/s";
  c.duration_s = 3.2;
  c.measurements.push_back({"triad_gbps", 212.4, "GB/s", 150.0, std::nullopt});
  return c;
}

const cmax::audit::Floors& floors() {
  static const cmax::audit::Floors f = [] {
    auto r = cmax::audit::builtin_floors();
    EXPECT_TRUE(r);
    return r ? *r : cmax::audit::Floors{};
  }();
  return f;
}

const Finding* find(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.check_id == id; });
  return it == fs.end() ? nullptr : &*it;
}

const cmax::core::FixedClock kClock{std::chrono::sys_days{std::chrono::year{2026} / 1 / 5} + 10h};

/// n1 (with a kernel-log scan and a check), n2 and n3 (an older driver) answered; n4 did not.
std::vector<NodeOutput> four_nodes() {
  return {
      {"n1", NodeStatus::ok, collect_doc("n1", kGoodDriver, true, {memory_check()}), "", 14.0},
      {"n2", NodeStatus::ok, collect_doc("n2", kGoodDriver, false), "", 13.0},
      {"n3", NodeStatus::ok, collect_doc("n3", kOddDriver, false), "", 15.5},
      {"n4", NodeStatus::unreachable, "",
       "srun: Task launch for StepId=3.0 failed on node n4: Communication connection failure", 0.4},
  };
}

ClusterRun four_node_run() {
  auto run = merge_nodes(four_nodes(), floors(), kClock);
  run.harness = "slurm";
  run.started_at = "2026-01-05T10:00:00Z";
  run.finished_at = "2026-01-05T10:00:16Z";
  run.seconds = 16;
  run.fanout_log = "srun: error: Task launch for StepId=3.0 failed on node n4: Communication connection failure\n";
  return run;
}

/// A fresh directory under the system's temp dir, removed on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           fmt::format("cmax-test-merge-{}-{}", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(CollectDoc, RendersOneCompactLineAndParsesBack) {
  const auto text = collect_doc("n1", kGoodDriver, true, {memory_check()});
  EXPECT_EQ(text.find('\n'), std::string::npos);
  auto doc = parse_collect_doc(text, "test");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->node, "n1");
  EXPECT_EQ(doc->cmax_version, cmax::report::cmax_version());
  EXPECT_EQ(doc->seconds, 12.5);
  EXPECT_EQ(doc->audit.host, "n1");
  EXPECT_EQ(doc->audit.harness, cmax::audit::kSlurm);
  EXPECT_EQ(doc->audit.facts.value_or("gpu.driver.version"), kGoodDriver);
  EXPECT_TRUE(doc->scan.ran);
  EXPECT_EQ(doc->scan.bytes, 52311u);
  EXPECT_EQ(doc->scan.incidents, 3u);
  EXPECT_EQ(doc->scan.actionable, 1u);
  EXPECT_EQ(doc->scan.worst_action, "reboot_node");
  EXPECT_EQ(doc->scan.top, std::vector<std::string>{"xid 79 reboot_node x2 0000:3b:00"});
  ASSERT_EQ(doc->checks.size(), 1u);
  EXPECT_EQ(doc->checks[0].id, "memory.bandwidth");
  EXPECT_EQ(doc->checks[0].outcome, Outcome::pass);
  EXPECT_TRUE(doc->errors.empty());

  auto no_scan = parse_collect_doc(collect_doc("n2", kGoodDriver, false), "test");
  ASSERT_TRUE(no_scan);
  EXPECT_FALSE(no_scan->scan.ran);
  EXPECT_EQ(no_scan->scan_json, "");
}

TEST(CollectDoc, BadDocumentsAreErrorsNamingTheOrigin) {
  auto r = parse_collect_doc("{\"schema\":\"cmax.collect/2\",\"node\":\"n1\"}", "node n1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "read the collect document from node n1: schema is not cmax.collect/1 (is cmax on that node the same "
            "release?)");
  r = parse_collect_doc("{\"schema\":\"cmax.collect/1\"}", "node n1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "read the collect document from node n1: no \"node\"");
  r = parse_collect_doc("[1,2", "node n1");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("read the collect document from node n1: not JSON (")) << r.error().message;
  auto ok = parse_collect_doc("{\"schema\":\"cmax.collect/1\",\"node\":\"n1\"}", "node n1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->errors, std::vector<std::string>{"no audit in the document"});
}

TEST(CollectDoc, WrongTypesAreErrorsNotExceptions) {
  // A node running a damaged or foreign cmax must not take the controller down.
  for (const char* text : {
           R"({"schema":1,"node":"n1"})",
           R"({"schema":"cmax.collect/1","node":7})",
           R"({"schema":"cmax.collect/1","node":"n1","seconds":"12"})",
           R"({"schema":"cmax.collect/1","node":"n1","cmax_version":false})",
           R"({"schema":"cmax.collect/1","node":"n1","scan":{"stats":{"bytes":"many"}}})",
           R"({"schema":"cmax.collect/1","node":"n1","scan":{"incidents":[{"resolved":"no","action":"drain"}]}})",
           R"({"schema":"cmax.collect/1","node":"n1","scan":{"incidents":[{"action":5}]}})",
           R"({"schema":"cmax.collect/1","node":"n1","scan":{"incidents":[{"action":"drain","count":"x"}]}})",
           R"({"schema":"cmax.collect/1","node":"n1","scan":{"incidents":[{"action":"drain","kind":[]}]}})",
           R"({"schema":"cmax.collect/1","node":"n1","checks":[{"id":"a","category":"reliability","outcome":"pass","timed_out":"yes"}]})",
       }) {
    cmax::Result<CollectDoc> r = cmax::fail("unset");
    ASSERT_NO_THROW(r = parse_collect_doc(text, "node n1")) << text;
    ASSERT_FALSE(r) << text;
    EXPECT_TRUE(r.error().message.starts_with("read the collect document from node n1: ")) << r.error().message;
  }
}

TEST(MergeNodes, FourNodesOneOddDriverOneUnreachable) {
  const auto run = four_node_run();
  EXPECT_EQ(run.floors_origin, floors().origin);
  ASSERT_EQ(run.nodes.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run.nodes[i].output.status, NodeStatus::ok) << i;
    ASSERT_TRUE(run.nodes[i].doc) << i;
    EXPECT_FALSE(run.nodes[i].findings.empty());
    EXPECT_TRUE(run.nodes[i].doc->errors.empty()) << i;
  }
  EXPECT_EQ(run.nodes[3].output.status, NodeStatus::unreachable);
  EXPECT_FALSE(run.nodes[3].doc);
  EXPECT_TRUE(run.nodes[3].findings.empty());
  // The active check is a finding of its node.
  ASSERT_NE(find(run.nodes[0].findings, "check.memory.bandwidth@numa0"), nullptr);
  EXPECT_EQ(find(run.nodes[1].findings, "check.memory.bandwidth@numa0"), nullptr);

  const auto* driver = find(run.cluster_findings, "cluster.consistency.gpu_driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->outcome, Outcome::fail);
  EXPECT_EQ(driver->reason, "nodes disagree: 535.104.05 on n3");
  EXPECT_EQ(driver->expected, "every node: 550.54.15 (the majority, 2 of 3 nodes)");
  const auto* kernel = find(run.cluster_findings, "cluster.consistency.kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->outcome, Outcome::pass);
  EXPECT_EQ(kernel->observed, "3 nodes: 6.8.0-49-generic");
  const auto* nccl = find(run.cluster_findings, "cluster.consistency.nccl");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->outcome, Outcome::not_applicable);

  for (const char* n : {"n1", "n2", "n3"}) {
    const auto* a = find(run.cluster_findings, std::string("cluster.node.answered@") + n);
    ASSERT_NE(a, nullptr) << n;
    EXPECT_EQ(a->outcome, Outcome::pass);
    EXPECT_EQ(a->observed, "ok");
  }
  const auto* n4 = find(run.cluster_findings, "cluster.node.answered@n4");
  ASSERT_NE(n4, nullptr);
  EXPECT_EQ(n4->outcome, Outcome::fail);
  EXPECT_EQ(n4->observed, "unreachable");
  EXPECT_EQ(n4->reason, "srun: Task launch for StepId=3.0 failed on node n4: Communication connection failure");
  EXPECT_EQ(run.cluster_findings.size(), 13u + 4u);

  EXPECT_GE(cluster_exit_code(run), 1);
}

TEST(MergeNodes, NotScheduledIsUnverifiedNotFail) {
  auto outputs = four_nodes();
  outputs[3].status = NodeStatus::not_scheduled;
  outputs[3].detail = "Slurm will not start work there (state drained) (reason: Xid 79)";
  const auto run = merge_nodes(std::move(outputs), floors(), kClock);
  const auto* n4 = find(run.cluster_findings, "cluster.node.answered@n4");
  ASSERT_NE(n4, nullptr);
  EXPECT_EQ(n4->outcome, Outcome::unverified);
  EXPECT_EQ(n4->observed, "not_scheduled");
}

TEST(MergeNodes, QueuedIsUnverifiedAndARunWithNoNodeEvaluatedSaysWhy) {
  auto outputs = four_nodes();
  outputs[2].status = NodeStatus::queued;
  outputs[2].detail = "Slurm would not start the collect job 11 within 5 s (reason: ReqNodeNotAvail)";
  auto run = merge_nodes(std::move(outputs), floors(), kClock);
  const auto* n3 = find(run.cluster_findings, "cluster.node.answered@n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->outcome, Outcome::unverified);
  EXPECT_EQ(n3->observed, "queued");
  EXPECT_EQ(why_no_node_evaluated(run), "") << "three nodes answered";

  std::vector<NodeOutput> none = {
      {"n1", NodeStatus::not_scheduled, "", "a job on it is still ending (state completing)", 0},
      {"n2", NodeStatus::not_scheduled, "", "a job on it is still ending (state completing)", 0},
      {"n3", NodeStatus::queued, "", "Slurm would not start the collect job 12", 5}};
  const auto empty = merge_nodes(std::move(none), floors(), kClock);
  EXPECT_EQ(why_no_node_evaluated(empty),
            "no node was evaluated, so this run gives no verdict: 2 not_scheduled (n1: a job on it is still ending "
            "(state completing)); 1 queued (n3: Slurm would not start the collect job 12)");
}

TEST(MergeNodes, PayloadThatIsNotJsonMakesTheNodeFailed) {
  std::vector<NodeOutput> outputs = {{"n1", NodeStatus::ok, collect_doc("n1", kGoodDriver, false), "", 1},
                                     {"n5", NodeStatus::ok, "cmax: command not found", "", 1}};
  const auto run = merge_nodes(std::move(outputs), floors(), kClock);
  ASSERT_EQ(run.nodes.size(), 2u);
  const auto& n5 = run.nodes[1];
  EXPECT_EQ(n5.output.status, NodeStatus::failed);
  EXPECT_FALSE(n5.doc);
  EXPECT_TRUE(n5.findings.empty());
  EXPECT_TRUE(n5.output.detail.starts_with("read the collect document from node n5: not JSON (")) << n5.output.detail;
  EXPECT_EQ(n5.output.payload, "cmax: command not found");  // kept as sent, for the run directory
  const auto* a = find(run.cluster_findings, "cluster.node.answered@n5");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->outcome, Outcome::fail);
  EXPECT_EQ(a->observed, "failed");
  EXPECT_EQ(a->reason, n5.output.detail);
  // One node answered: nothing to compare.
  EXPECT_EQ(find(run.cluster_findings, "cluster.consistency.gpu_driver")->outcome, Outcome::not_applicable);
  EXPECT_GE(cluster_exit_code(run), 1);
}

TEST(MergeNodes, DocumentNamingAnotherNodeIsRecorded) {
  std::vector<NodeOutput> outputs = {{"n2", NodeStatus::ok, collect_doc("n9", kGoodDriver, false), "", 1}};
  const auto run = merge_nodes(std::move(outputs), floors(), kClock);
  ASSERT_EQ(run.nodes.size(), 1u);
  ASSERT_TRUE(run.nodes[0].doc);
  EXPECT_EQ(run.nodes[0].output.status, NodeStatus::ok);
  EXPECT_EQ(run.nodes[0].doc->errors, std::vector<std::string>{"the document names node n9 but came from n2"});
}

TEST(ClusterToJson, SchemaNodesAndScanSummary) {
  const auto run = four_node_run();
  const int code = cluster_exit_code(run);
  const auto text = cluster_to_json(run, code);
  EXPECT_EQ(text, cluster_to_json(run, code));  // deterministic
  ASSERT_TRUE(text.ends_with("}\n"));
  const auto j = json::parse(text);
  EXPECT_EQ(j["schema"], "cmax.cluster/1");
  EXPECT_EQ(j["harness"], "slurm");
  EXPECT_EQ(j["started_at"], "2026-01-05T10:00:00Z");
  EXPECT_EQ(j["summary"]["nodes"], 4);
  EXPECT_EQ(j["summary"]["exit_code"], code);
  EXPECT_EQ(j["summary"]["by_status"], json::object({{"ok", 3}, {"unreachable", 1}}));
  ASSERT_EQ(j["nodes"].size(), 4u);
  EXPECT_EQ(j["nodes"][0]["node"], "n1");
  EXPECT_EQ(j["nodes"][0]["status"], "ok");
  EXPECT_EQ(j["nodes"][0]["seconds"], 14.0);
  EXPECT_EQ(j["nodes"][0]["collect_seconds"], 12.5);
  EXPECT_EQ(j["nodes"][0]["harness"], "slurm");
  EXPECT_EQ(j["nodes"][0]["scan"]["ran"], true);
  EXPECT_EQ(j["nodes"][0]["scan"]["incidents"], 3);
  EXPECT_EQ(j["nodes"][0]["scan"]["actionable"], 1);
  EXPECT_EQ(j["nodes"][0]["scan"]["worst_action"], "reboot_node");
  EXPECT_EQ(j["nodes"][0]["scan"]["top"], json::array({"xid 79 reboot_node x2 0000:3b:00"}));
  ASSERT_EQ(j["nodes"][0]["checks"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["checks"][0]["id"], "memory.bandwidth");
  EXPECT_EQ(j["nodes"][1]["scan"]["ran"], false);
  EXPECT_EQ(j["nodes"][1]["scan"]["worst_action"], "");
  EXPECT_EQ(j["nodes"][3]["node"], "n4");
  EXPECT_EQ(j["nodes"][3]["status"], "unreachable");
  EXPECT_EQ(j["nodes"][3]["detail"],
            "srun: Task launch for StepId=3.0 failed on node n4: Communication connection failure");
  EXPECT_FALSE(j["nodes"][3].contains("scan"));
  EXPECT_FALSE(j["nodes"][3].contains("findings"));
  int fails = 0;
  for (const auto& f : run.nodes[2].findings) fails += f.outcome == Outcome::fail;
  EXPECT_EQ(j["nodes"][2]["findings"]["fail"], fails);
  EXPECT_EQ(j["nodes"][2]["failing"].size(), static_cast<std::size_t>(fails));

  ASSERT_EQ(j["cluster_findings"].size(), run.cluster_findings.size());
  EXPECT_EQ(j["cluster_findings"][0]["id"], "cluster.consistency.gpu_driver");
  EXPECT_EQ(j["cluster_findings"][0]["outcome"], "fail");
  EXPECT_EQ(j["cluster_findings"][0]["reason"], "nodes disagree: 535.104.05 on n3");
}

TEST(AggregateReport, NodeFindingsAreSuffixedWithTheirNode) {
  const auto run = four_node_run();
  const auto r = aggregate_report(run);
  EXPECT_EQ(r.host, "cluster (4 nodes, slurm)");
  EXPECT_EQ(r.harness, cmax::audit::kSlurm);
  EXPECT_EQ(r.started_at, run.started_at);
  EXPECT_EQ(r.duration, 16s);
  std::size_t at = 0;
  for (const auto& n : run.nodes) {
    for (const auto& f : n.findings) {
      ASSERT_LT(at, r.findings.size());
      EXPECT_EQ(r.findings[at].check_id, f.check_id + "@" + n.output.node);
      EXPECT_EQ(r.findings[at].outcome, f.outcome);
      ++at;
    }
  }
  ASSERT_EQ(r.findings.size(), at + run.cluster_findings.size());
  for (const auto& f : run.cluster_findings) EXPECT_EQ(r.findings[at++].check_id, f.check_id);  // not suffixed again
  EXPECT_NE(find(r.findings, "check.memory.bandwidth@numa0@n1"), nullptr);
  EXPECT_NE(find(r.findings, "cluster.node.answered@n4"), nullptr);
}

TEST(WriteClusterRunDir, WritesTheRunAndEachNodesDocument) {
  TempDir tmp;
  const auto run = four_node_run();
  const auto dir = (tmp.path / "run").string();
  auto written = write_cluster_run_dir(run, cluster_exit_code(run), dir);
  ASSERT_TRUE(written) << written.error().message;
  const fs::path out(*written);
  EXPECT_EQ(read(out / "cluster.json"), cluster_to_json(run, cluster_exit_code(run)));
  EXPECT_EQ(read(out / "fanout.log"), run.fanout_log);
  const auto results = json::parse(read(out / "results.json"));
  EXPECT_EQ(results["schema"], "cmax.audit/1");
  EXPECT_EQ(results["findings"].size(), aggregate_report(run).findings.size());
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(read(out / "nodes" / (run.nodes[i].output.node + ".json")), run.nodes[i].output.payload + "\n") << i;
  EXPECT_FALSE(fs::exists(out / "nodes" / "n4.json"));  // no payload, no file
}

TEST(WriteClusterRunDir, NodeNamesCannotEscapeTheNodesDirectory) {
  TempDir tmp;
  std::vector<NodeOutput> outputs;
  for (const char* n : {"../evil", "..", ".", "a/b", "/etc/passwd", ""})
    outputs.push_back({n, NodeStatus::failed, "payload of " + std::string(n), "no document", 1});
  auto run = merge_nodes(std::move(outputs), floors(), kClock);
  run.harness = "slurm";
  const auto dir = tmp.path / "deep" / "run";
  auto written = write_cluster_run_dir(run, cluster_exit_code(run), dir.string());
  ASSERT_TRUE(written) << written.error().message;
  const fs::path nodes = fs::path(*written) / "nodes";

  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path)) {
    if (!e.is_regular_file()) continue;
    const auto rel = fs::relative(e.path(), dir);
    ASSERT_FALSE(rel.empty());
    ASSERT_NE(*rel.begin(), "..") << e.path();  // nothing outside the run directory
    if (e.path().parent_path() == nodes) names.push_back(e.path().filename().string());
    else EXPECT_EQ(e.path().parent_path(), dir) << e.path();  // nothing in a subdirectory of nodes/
  }
  std::vector<std::string> want = {"_..json", "_...json", "_.._evil.json", "_.json", "_etc_passwd.json", "a_b.json"};
  std::sort(names.begin(), names.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);
  EXPECT_EQ(read(nodes / "_.._evil.json"), "payload of ../evil\n");
  EXPECT_EQ(read(nodes / "a_b.json"), "payload of a/b\n");
}

TEST(RenderNodeTable, ListsEveryNodeAndTheDisagreement) {
  const auto run = four_node_run();
  const auto table = render_node_table(run, false);
  EXPECT_EQ(table.find("\033["), std::string::npos);  // no colour asked
  const auto lines = [&] {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (auto nl = table.find('\n'); nl != std::string::npos; at = nl + 1, nl = table.find('\n', at))
      out.push_back(table.substr(at, nl - at));
    return out;
  }();
  ASSERT_GE(lines.size(), 5u);
  EXPECT_TRUE(lines[0].starts_with("NODE  STATUS")) << lines[0];
  EXPECT_TRUE(lines[1].starts_with("n1    ok            ")) << lines[1];
  EXPECT_NE(lines[1].find("reboot_node (1)"), std::string::npos) << lines[1];
  EXPECT_TRUE(lines[2].starts_with("n2    ok            ")) << lines[2];
  EXPECT_NE(lines[2].find("not scanned"), std::string::npos) << lines[2];
  EXPECT_TRUE(lines[3].starts_with("n3    ok            ")) << lines[3];
  EXPECT_TRUE(lines[4].starts_with("n4    unreachable     0.40     -    -    -  -")) << lines[4];
  EXPECT_NE(lines[4].find("Communication connection failure"), std::string::npos);
  EXPECT_NE(table.find("\nNodes disagree:\n  FAIL GPU driver version agrees across nodes: nodes disagree: 535.104.05 "
                       "on n3\n"),
            std::string::npos)
      << table;
  const auto colored = render_node_table(run, true);
  EXPECT_NE(colored.find("\033[31mFAIL\033[0m"), std::string::npos);
  EXPECT_NE(colored.find("\033[32mok           \033[0m"), std::string::npos);
}
