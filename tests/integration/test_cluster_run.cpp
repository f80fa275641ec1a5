// `cmax run` across a real Slurm cluster of four nodes on this machine (tests/support/
// slurm_cluster.h): every node answers through one srun and the answers merge into one run
// directory; a node whose slurmd is gone is reported while the other three complete; `cmax
// collect` alone prints a document the controller reads.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster/collect_doc.h"
#include "cluster/frame.h"
#include "core/process.h"
#include "support/slurm_cluster.h"

using cmax::test::SlurmCluster;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Ran {
  cmax::core::ProcessResult r;
  double seconds = 0;
};

Ran run_cmax(std::vector<std::string> args, std::chrono::milliseconds timeout = 60s) {
  args.insert(args.begin(), CMAX_BIN);
  auto t0 = std::chrono::steady_clock::now();
  auto r = cmax::core::run_process({args, timeout, 64u << 20, {}});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return {r ? *r : cmax::core::ProcessResult{},
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ClusterRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm test cluster here: " << *why;
    auto c = SlurmCluster::start({.nodes = 4});
    ASSERT_TRUE(c) << c.error().message;
    cluster_ = std::move(*c);
    out_ = cluster_->dir() / "run";
  }
  std::vector<std::string> run_args(int node_timeout_s) {
    return {"run", "--stage", "audit", "--harness", "slurm", "--slurm-conf", cluster_->conf_path(), "--out", out_.string(),
            "--node-timeout-s", std::to_string(node_timeout_s), "--json"};
  }
  std::unique_ptr<SlurmCluster> cluster_;
  fs::path out_;
};

}  // namespace

TEST_F(ClusterRunTest, EveryNodeAnswersAndTheAnswersMergeIntoOneRunDirectory) {
  auto ran = run_cmax(run_args(30));
  ASSERT_NE(ran.r.exit_code, 3) << ran.r.err;
  auto j = json::parse(ran.r.out);
  EXPECT_EQ(j["schema"], "cmax.cluster/1");
  EXPECT_EQ(j["harness"], "slurm");
  ASSERT_EQ(j["nodes"].size(), 4u) << ran.r.out;
  std::set<std::string> names;
  for (const auto& n : j["nodes"]) {
    EXPECT_EQ(n["status"], "ok") << n.dump();
    names.insert(n["node"].get<std::string>());
    // Judged here: the audit's findings for the node, and its kernel log scanned there.
    EXPECT_GT(n["findings"]["pass"].get<int>() + n["findings"]["fail"].get<int>(), 5) << n.dump();
    EXPECT_TRUE(n["scan"]["ran"].get<bool>()) << n.dump();
    EXPECT_LT(n["collect_seconds"].get<double>(), 5.0);
    // Each node's own document, as it sent it, is in the run directory.
    auto doc = cmax::cluster::parse_collect_doc(slurp(out_ / "nodes" / (n["node"].get<std::string>() + ".json")), "test");
    ASSERT_TRUE(doc) << doc.error().message;
    EXPECT_EQ(doc->node, n["node"]);
    EXPECT_FALSE(doc->audit.facts.all().empty());
  }
  EXPECT_EQ(names, (std::set<std::string>{"n1", "n2", "n3", "n4"}));
  // Four nodes of one machine agree on everything they have.
  bool compared_kernel = false;
  for (const auto& f : j["cluster_findings"]) {
    std::string id = f["id"];
    EXPECT_NE(f["outcome"], "fail") << f.dump();
    if (id == "cluster.consistency.kernel") {
      compared_kernel = true;
      EXPECT_EQ(f["outcome"], "pass") << f.dump();
    }
  }
  EXPECT_TRUE(compared_kernel);
  // The aggregate report (results.json) names findings per node, for the scorecard and the store.
  auto results = json::parse(slurp(out_ / "results.json"));
  int per_node = 0;
  for (const auto& f : results["findings"])
    if (f["id"].get<std::string>().ends_with("@n2")) ++per_node;
  EXPECT_GT(per_node, 5);
  EXPECT_TRUE(fs::exists(out_ / "cmax.db"));
  EXPECT_NE(slurp(out_ / "fanout.log").find("srun"), std::string::npos);
  std::cerr << "cmax run over 4 Slurm nodes: " << ran.seconds << " s\n";
}

TEST_F(ClusterRunTest, ANodeWhoseSlurmdStoppedIsReportedAndTheOtherThreeComplete) {
  // slurmctld still lists n3 as idle (it notices a dead slurmd only after SlurmdTimeout), so srun
  // tries it: the launch fails there and the other three answer.
  ASSERT_TRUE(cluster_->stop_slurmd("n3"));
  auto ran = run_cmax(run_args(20), 60s);
  ASSERT_NE(ran.r.exit_code, 3) << ran.r.err;
  EXPECT_GE(ran.r.exit_code, 1);  // a node that did not answer is a fail
  auto j = json::parse(ran.r.out);
  ASSERT_EQ(j["nodes"].size(), 4u);
  for (const auto& n : j["nodes"]) {
    if (n["node"] == "n3") {
      EXPECT_TRUE(n["status"] == "unreachable" || n["status"] == "timeout") << n.dump();
      EXPECT_FALSE(n["detail"].get<std::string>().empty());
    } else {
      EXPECT_EQ(n["status"], "ok") << n.dump();
      EXPECT_TRUE(n.contains("findings"));
    }
  }
  bool reported = false;
  for (const auto& f : j["cluster_findings"])
    if (f["id"] == "cluster.node.answered@n3") reported = f["outcome"] == "fail";
  EXPECT_TRUE(reported);
  // Bounded by the node timeout, not by Slurm's own patience.
  EXPECT_LT(ran.seconds, 20 + 8);
  std::cerr << "cmax run with n3's slurmd stopped: " << ran.seconds << " s\n";
}

TEST_F(ClusterRunTest, DryRunPrintsThePlanAndSkipsADrainedNode) {
  auto d = cluster_->scontrol({"update", "nodename=n2", "state=drain", "reason=cmax test"});
  ASSERT_TRUE(d && d->exit_code == 0);
  auto ran = run_cmax({"run", "--stage", "audit", "--harness", "slurm", "--slurm-conf", cluster_->conf_path(), "--dry-run"});
  EXPECT_EQ(ran.r.exit_code, 0) << ran.r.err;
  EXPECT_NE(ran.r.out.find("nodes to ask (3): n1 n3 n4"), std::string::npos) << ran.r.out;
  EXPECT_NE(ran.r.out.find("not asked: n2"), std::string::npos) << ran.r.out;
  EXPECT_NE(ran.r.out.find("cmax test"), std::string::npos) << ran.r.out;
  EXPECT_NE(ran.r.out.find("--nodelist=n1,n3,n4"), std::string::npos) << ran.r.out;
}

TEST(CollectCommand, PrintsOneDocumentAndFramesItForSrun) {
  auto plain = run_cmax({"collect", "--node", "testnode"});
  ASSERT_EQ(plain.r.exit_code, 0) << plain.r.err;
  auto doc = cmax::cluster::parse_collect_doc(plain.r.out, "cmax collect");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->node, "testnode");
  EXPECT_TRUE(doc->audit.facts.is_present("kernel.release"));
  EXPECT_EQ(std::count(plain.r.out.begin(), plain.r.out.end(), '\n'), 1);  // one line

  auto framed = run_cmax({"collect", "--node", "testnode", "--frame"});
  ASSERT_EQ(framed.r.exit_code, 0);
  std::vector<cmax::cluster::FramedDocument> docs;
  cmax::cluster::FrameDecoder dec([&](cmax::cluster::FramedDocument d) { docs.push_back(std::move(d)); });
  dec.feed(framed.r.out);
  dec.finish();
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].error, "");
  EXPECT_EQ(docs[0].node, "testnode");
  EXPECT_TRUE(cmax::cluster::parse_collect_doc(docs[0].document, "framed"));
  std::cerr << "cmax collect: " << plain.seconds << " s\n";
}
