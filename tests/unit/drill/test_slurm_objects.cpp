// parse_scontrol_partition and parse_scontrol_job on lines captured from Slurm 22.05.8
// (tests/golden/slurm_partition, tests/golden/slurm_job), and on broken input, which must give an
// error and never crash.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "drill/slurm_objects.h"

using cmax::drill::parse_scontrol_job;
using cmax::drill::parse_scontrol_partition;
using Names = std::vector<std::string>;

namespace {

std::string golden(const std::string& dir, const std::string& name) {
  auto path = std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / dir / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(SlurmPartition, NodesBeforeAndAfterASpareJoins) {
  auto before = parse_scontrol_partition(golden("slurm_partition", "batch.txt"));
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->name, "batch");
  EXPECT_EQ(before->nodes, (Names{"n1", "n2", "n3"}));  // not AllocNodes=, MaxNodes= or TotalNodes=
  EXPECT_EQ(before->state, "UP");
  auto after = parse_scontrol_partition(golden("slurm_partition", "after_join.txt"));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->nodes, (Names{"n1", "n2", "n3", "n4"}));
  EXPECT_TRUE(after->contains("n4"));
  EXPECT_FALSE(before->contains("n4"));
}

TEST(SlurmPartition, NotFoundAndGarbageAreErrorsThatSayWhat) {
  auto missing = parse_scontrol_partition(golden("slurm_partition", "not_found.txt"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("Partition nope not found"), std::string::npos);
  EXPECT_NE(missing.error().message.find("check the name"), std::string::npos);
  EXPECT_FALSE(parse_scontrol_partition(""));
  EXPECT_FALSE(parse_scontrol_partition("PartitionName=a State=UP"));  // no Nodes=
  EXPECT_FALSE(parse_scontrol_partition("PartitionName=a Nodes=n[3-1]"));
  EXPECT_FALSE(parse_scontrol_partition("PartitionName=a Nodes=n1\nPartitionName=b Nodes=n2"));
  EXPECT_FALSE(parse_scontrol_partition("JobId=1 JobState=RUNNING"));
  auto empty = parse_scontrol_partition("PartitionName=a Nodes=(null) State=UP");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->nodes.empty());
}

TEST(SlurmJob, RunningAfterARequeueAndPendingInBeginTime) {
  auto running = parse_scontrol_job(golden("slurm_job", "running_after_requeue.txt"));
  ASSERT_TRUE(running) << running.error().message;
  EXPECT_EQ(running->id, "3");
  EXPECT_EQ(running->state, "RUNNING");
  EXPECT_TRUE(running->running());
  EXPECT_EQ(running->nodes, (Names{"n2"}));  // NodeList=, not ReqNodeList=(null)
  EXPECT_EQ(running->restarts, 2);
  EXPECT_EQ(running->reason, "None");
  auto pending = parse_scontrol_job(golden("slurm_job", "pending_requeued.txt"));
  ASSERT_TRUE(pending) << pending.error().message;
  EXPECT_EQ(pending->state, "PENDING");
  EXPECT_FALSE(pending->running());
  EXPECT_TRUE(pending->nodes.empty());
  EXPECT_EQ(pending->restarts, 3);
  EXPECT_EQ(pending->reason, "BeginTime");
}

TEST(SlurmJob, InvalidIdAndGarbageAreErrors) {
  auto invalid = parse_scontrol_job(golden("slurm_job", "invalid.txt"));
  ASSERT_FALSE(invalid);
  EXPECT_NE(invalid.error().message.find("forgot it"), std::string::npos);
  EXPECT_FALSE(parse_scontrol_job(""));
  EXPECT_FALSE(parse_scontrol_job("JobId=1 NodeList=n1"));  // no JobState=
  EXPECT_FALSE(parse_scontrol_job("JobId=1 JobState=RUNNING Restarts=x"));
  EXPECT_FALSE(parse_scontrol_job("JobId=1 JobState=RUNNING NodeList=n[1-"));
  EXPECT_FALSE(parse_scontrol_job("JobId=5_1 JobState=RUNNING\nJobId=5_2 JobState=RUNNING"));
  EXPECT_FALSE(parse_scontrol_job("PartitionName=batch Nodes=n1"));
}

TEST(SlurmObjects, EveryTruncationOfARealLineIsAValueOrAnError) {
  for (const auto& [dir, file] : {std::pair{"slurm_partition", "batch.txt"}, {"slurm_job", "running_after_requeue.txt"}}) {
    const std::string text = golden(dir, file);
    for (std::size_t n = 0; n <= text.size(); ++n) {
      const std::string_view prefix(text.data(), n);
      if (std::string(dir) == "slurm_job") {
        auto j = parse_scontrol_job(prefix);
        if (j) EXPECT_FALSE(j->id.empty());
      } else {
        auto p = parse_scontrol_partition(prefix);
        if (p) EXPECT_FALSE(p->name.empty());
      }
    }
  }
}
