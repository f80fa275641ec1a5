// cmax check --submit, the pure parts: shell quoting, sinfo and squeue parsing, the sbatch argv and
// the batch script. The script is also run by /bin/sh against a stand-in srun that prints its
// argv, so quoting is proven on a real shell with hostile paths. The real Slurm submission is in
// tests/integration/test_check_active.cpp.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "health/submit.h"

namespace cmax::health {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ShellQuote, LeavesSafeWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("/usr/bin/cmax"), "/usr/bin/cmax");
  EXPECT_EQ(shell_quote("--output=/x/cmax-check-%N-%j.out"), "--output=/x/cmax-check-%N-%j.out");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(reboot)"), "'$(reboot)'");
  EXPECT_EQ(shell_quote("`id`;x"), "'`id`;x'");
  EXPECT_EQ(shell_quote("a\nb"), "'a\nb'");
}

TEST(ParseIdleNodes, KeepsOnlyNodesThatAreIdleAndInService) {
  const char* sinfo =
      "n1 idle\n"
      "n2 allocated\n"
      "n3 idle*\n"
      "n4 drained\n"
      "n5 idle~\n"
      "n6 mixed\n"
      "n7 idle\n"
      "n1 idle\n"  // in a second partition
      "n8 draining\n"
      "\n"
      "  n9   idle  \n"
      "garbage\n";
  EXPECT_EQ(parse_idle_nodes(sinfo), (std::vector<std::string>{"n1", "n7", "n9"}));
  EXPECT_TRUE(parse_idle_nodes("").empty());
}

TEST(ParseJobIds, OnePerLine) {
  EXPECT_EQ(parse_job_ids("12\n 13 \n\n"), (std::vector<std::string>{"12", "13"}));
  EXPECT_TRUE(parse_job_ids("").empty());
}

TEST(SlurmArgv, SinfoAndSqueue) {
  EXPECT_EQ(sinfo_argv(""), (std::vector<std::string>{"sinfo", "-h", "-N", "-o", "%N %T"}));
  EXPECT_EQ(sinfo_argv("gpu"), (std::vector<std::string>{"sinfo", "-h", "-N", "-o", "%N %T", "--partition=gpu"}));
  EXPECT_EQ(squeue_argv("alice"), (std::vector<std::string>{"squeue", "-h", "--user=alice", "--name=cmax-check",
                                                            "--states=PENDING,RUNNING", "-o", "%i"}));
}

SubmitOptions options() {
  SubmitOptions o;
  o.cmax_bin = "/opt/cmax/bin/cmax";
  o.check_args = {"--checks", "storage,cpu", "--path", "/scratch/it's here"};
  o.output_dir = "/scratch/checks/";
  o.time_limit = std::chrono::minutes(12);
  return o;
}

TEST(BuildSubmit, ArgvAndScript) {
  const std::vector<std::string> nodes = {"gpu-01", "gpu-02"};
  auto p = build_submit(options(), nodes, "/scratch/checks/cmax-check-1.sbatch");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->sbatch_argv,
            (std::vector<std::string>{"sbatch", "--parsable", "--job-name=cmax-check", "--nice=10000", "--nodes=2",
                                      "--ntasks-per-node=1", "--nodelist=gpu-01,gpu-02", "--time=12", "--exclusive",
                                      "--no-requeue", "--output=/scratch/checks/cmax-check-batch-%j.log",
                                      "/scratch/checks/cmax-check-1.sbatch"}));
  EXPECT_EQ(p->script_path, "/scratch/checks/cmax-check-1.sbatch");
  EXPECT_TRUE(p->script.starts_with("#!/bin/sh\n")) << p->script;
  EXPECT_NE(p->script.find(
                "\nexec srun --ntasks-per-node=1 --output=/scratch/checks/cmax-check-%N-%j-%t.out "
                "--error=/scratch/checks/cmax-check-%N-%j-%t.err /opt/cmax/bin/cmax check --active --json "
                "--checks storage,cpu --path '/scratch/it'\\''s here'\n"),
            std::string::npos)
      << p->script;

  auto o = options();
  o.qos = "scavenger";
  o.partition = "gpu";
  o.nice = 500;
  p = build_submit(o, nodes, "/s.sbatch");
  ASSERT_TRUE(p) << p.error().message;
  auto has = [&](const std::string& w) {
    return std::find(p->sbatch_argv.begin(), p->sbatch_argv.end(), w) != p->sbatch_argv.end();
  };
  EXPECT_TRUE(has("--qos=scavenger"));
  EXPECT_TRUE(has("--partition=gpu"));
  EXPECT_TRUE(has("--nice=500"));
}

TEST(BuildSubmit, RefusesWhatCouldNotWork) {
  const std::vector<std::string> nodes = {"n1"};
  auto o = options();
  o.cmax_bin = "cmax";
  auto p = build_submit(o, nodes, "/s.sbatch");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("the cmax path \"cmax\" must be absolute"), std::string::npos);
  o = options();
  o.output_dir = "out";
  EXPECT_FALSE(build_submit(o, nodes, "/s.sbatch"));
  EXPECT_FALSE(build_submit(options(), nodes, "s.sbatch"));
  EXPECT_FALSE(build_submit(options(), {}, "/s.sbatch"));
  const std::vector<std::string> bad = {"n1,n2"};
  p = build_submit(options(), bad, "/s.sbatch");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("node name \"n1,n2\" is not a plain Slurm node name"), std::string::npos);
  o = options();
  o.qos = "a b";
  EXPECT_FALSE(build_submit(o, nodes, "/s.sbatch"));
  o = options();
  o.time_limit = std::chrono::minutes(0);
  EXPECT_FALSE(build_submit(o, nodes, "/s.sbatch"));
}

TEST(BuildSubmit, TheScriptRunsSrunWithExactlyTheArgvItWasGiven) {
  std::string tmpl = (fs::temp_directory_path() / "cmax-submit-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  {
    std::ofstream srun(bin / "srun");
    srun << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n";
  }
  ::chmod((bin / "srun").c_str(), 0755);

  auto o = options();
  o.output_dir = (dir / "out dir").string();
  o.cmax_bin = (dir / "my cmax").string();
  o.check_args = {"--path", "/x/$(touch pwned)/`id` 'q' \"dq\" ;&|*?", "--thresholds", "a\\b"};
  const std::vector<std::string> nodes = {"n1"};
  auto p = build_submit(o, nodes, (dir / "job.sbatch").string());
  ASSERT_TRUE(p) << p.error().message;
  std::ofstream(dir / "job.sbatch") << p->script;

  auto r = core::run_process({{"/bin/sh", (dir / "job.sbatch").string()}, 5s, 1u << 16,
                              {"PATH=" + bin.string() + ":/usr/bin:/bin"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 0) << r->err;
  std::string expected;
  for (const auto& w : std::vector<std::string>{"--ntasks-per-node=1",
                                                "--output=" + o.output_dir + "/cmax-check-%N-%j-%t.out",
                                                "--error=" + o.output_dir + "/cmax-check-%N-%j-%t.err", o.cmax_bin,
                                                "check", "--active", "--json"})
    expected += w + "\n";
  for (const auto& w : o.check_args) expected += w + "\n";
  EXPECT_EQ(r->out, expected);
  EXPECT_FALSE(fs::exists(fs::current_path() / "pwned"));
  EXPECT_FALSE(fs::exists(dir / "pwned"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(MergeActiveResults, ANodeFileOfTheWrongShapeIsReportedNeverThrown) {
  // Each file is what a compute node wrote: fields of the wrong type are that node's error.
  const std::vector<NodeResultFile> files{
      {"n1.json", R"({"schema": ["cmax.check.active/1"], "results": []})", ""},
      {"n2.json", R"({"schema": "cmax.check.active/1", "node": 7, "healthy": "yes",
                      "results": [{"id": "disk", "target": 3, "outcome": ["pass"]}]})", ""},
      {"n3.json", "", "cannot open"}};
  MergedResults m;
  ASSERT_NO_THROW(m = merge_active_results("42", {"n1", "n2", "n3"}, files, "2026-12-05T00:00:00Z"));
  EXPECT_FALSE(m.healthy);
  const auto doc = nlohmann::json::parse(m.document);
  EXPECT_EQ(doc["nodes"][0]["file"], "n1.json");
  EXPECT_TRUE(doc["nodes"][0].contains("error")) << "an array schema is not a result";
  EXPECT_EQ(doc["nodes"][1]["healthy"], false) << "\"healthy\": \"yes\" is not a boolean";
}

TEST(JobTimeLimit, CoversEveryCheckAndAMargin) {
  using std::chrono::minutes;
  EXPECT_EQ(job_time_limit(7, 60s, 0ms), minutes(9));  // 7 checks + a 2 minute margin
  EXPECT_EQ(job_time_limit(7, 60s, 120s), minutes(11));
  EXPECT_EQ(job_time_limit(1, 10s, 0ms), minutes(5));     // at least 5
  EXPECT_EQ(job_time_limit(4, 61s, 0ms), minutes(7));
}

}  // namespace
}  // namespace cmax::health

namespace cmax::health {
namespace {

TEST(Submit, AJobInsideAReservationSaysSo) {
  SubmitOptions o;
  o.cmax_bin = "/opt/cmax";
  o.output_dir = "/runs/r1/active";
  o.reservation = "train";
  const std::vector<std::string> nodes{"n1", "n2"};
  auto p = build_submit(o, nodes, "/runs/r1/active/x.sbatch");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(std::find(p->sbatch_argv.begin(), p->sbatch_argv.end(), "--reservation=train"), p->sbatch_argv.end());
  o.reservation = "bad name";
  EXPECT_FALSE(build_submit(o, nodes, "/runs/r1/active/x.sbatch"));
}

TEST(Submit, WhyNoNodeIsIdleNamesTheStatesAndTheJobStillCompleting) {
  EXPECT_EQ(describe_not_idle("n1 idle\nn2 idle\nn3 reserved\n"), "");
  // sinfo calls a node idle inside an active reservation "reserved": a job inside it gets it.
  EXPECT_EQ(parse_idle_nodes("n1 reserved\nn2 idle\nn3 allocated\n"), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(describe_not_idle("n1 completing\nn2 idle\nspare1 down*\nn1 completing\n"), "n1 completing, spare1 down*");
  EXPECT_EQ(describe_not_idle("a mixed\nb mixed\nc mixed\n", 2), "a mixed, b mixed and 1 more");
  EXPECT_EQ(describe_completing(""), "");
  const auto why = describe_completing("7|cmax-collect|n[1-2]\n");
  EXPECT_NE(why.find("job 7 (cmax-collect) on n[1-2]"), std::string::npos) << why;
  EXPECT_NE(why.find("slurmd is down"), std::string::npos) << why;
}

TEST(Submit, TwoJobsMergeIntoOneDocumentAndANodeWithoutAResultIsUnverified) {
  const std::string ok_n1 = R"({"schema":"cmax.check.active/1","node":"n1","healthy":true,"results":[{"id":"cpu","outcome":"pass"}]})";
  const std::string ok_s1 = R"({"schema":"cmax.check.active/1","node":"spare1","healthy":true,"results":[{"id":"cpu","outcome":"pass"}]})";
  auto m = merge_active_jobs({{"12", "", {"spare1"}, {{"a.out", ok_s1, ""}}, "COMPLETED"},
                              {"13", "train", {"n1", "n2"}, {{"b.out", ok_n1, ""}}, "COMPLETED"}});
  auto doc = nlohmann::json::parse(m.document);
  EXPECT_FALSE(m.healthy) << "n2 did not report";
  EXPECT_EQ(doc["job"], "12,13");
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][1]["reservation"], "train");
  int unverified = 0;
  for (const auto& r : doc["results"])
    if (r["outcome"] == "unverified") {
      ++unverified;
      EXPECT_EQ(r["target"], "n2");
    }
  EXPECT_EQ(unverified, 1);
  // One job: the document merge_active_results always gave.
  auto one = merge_active_results("12", {"spare1"}, {{"a.out", ok_s1, ""}}, "COMPLETED");
  EXPECT_TRUE(one.healthy);
  EXPECT_FALSE(nlohmann::json::parse(one.document).contains("jobs"));
}

// A slurmctld busy launching a job on hundreds of nodes did not answer one squeue within its
// timeout (256 slurmd on two cores, bench/fleet_scale_slurm.sh), and the wait gave up on a job
// that was running. A silence is asked again; only many in a row end the wait. A stand-in squeue
// (the contract: its arguments and its output) sleeps past the timeout twice, then says RUNNING,
// then the job is gone.
TEST(SubmitWait, ASlowSqueueIsAskedAgainNotTakenForADeadController) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("cmax-squeue-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path count = dir / "count";
  {
    std::ofstream sh(dir / "squeue");
    sh << "#!/bin/sh\nn=$(cat '" << count.string() << "' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '"
       << count.string() << "'\ncase $n in 1|2) sleep 2 ;; 3) echo RUNNING ;; *) exit 0 ;; esac\n";
  }
  fs::permissions(dir / "squeue", fs::perms::owner_all);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  SubmitOptions o;
  o.slurm_timeout = 200ms;
  auto state = wait_for_job(o, "42", 60s, nullptr, 50ms);
  ::setenv("PATH", old_path.c_str(), 1);
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(*state, "COMPLETED") << "ran, then left the queue";
  std::ifstream in(count);
  int n = 0;
  in >> n;
  EXPECT_EQ(n, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cmax::health
