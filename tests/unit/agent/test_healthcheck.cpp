// cmax check's pieces: the decision table over SLURM_NODE_IS_HEALTHY, and check_health over
// probe findings (the kernel log part runs against the real /dev/kmsg in
// tests/integration/test_cmaxd.cpp).

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "agent/healthcheck.h"

namespace cmax::agent {
namespace {

using V = HealthAction::Verb;

TEST(HealthCheck, SlurmsVerdictIsYesNoOrUnset) {
  EXPECT_EQ(parse_slurm_node_is_healthy(nullptr), SlurmHealth::unset);
  EXPECT_EQ(parse_slurm_node_is_healthy(""), SlurmHealth::unset);
  EXPECT_EQ(parse_slurm_node_is_healthy("yes"), SlurmHealth::yes);
  EXPECT_EQ(parse_slurm_node_is_healthy("no"), SlurmHealth::no);
  EXPECT_EQ(parse_slurm_node_is_healthy("YES"), SlurmHealth::unset);  // not what slurmd writes
}

TEST(HealthCheck, ScontrolOnlyForARegisteredNodeAndOnlyToChangeItsState) {
  EXPECT_EQ(decide_health_action(SlurmHealth::unset, false).verb, V::none);
  EXPECT_EQ(decide_health_action(SlurmHealth::unset, true).verb, V::none);
  EXPECT_NE(decide_health_action(SlurmHealth::unset, false).why.find("scontrol is not called"), std::string::npos);
  EXPECT_EQ(decide_health_action(SlurmHealth::yes, false).verb, V::drain);
  EXPECT_EQ(decide_health_action(SlurmHealth::yes, true).verb, V::none);
  EXPECT_EQ(decide_health_action(SlurmHealth::no, true).verb, V::resume);
  EXPECT_EQ(decide_health_action(SlurmHealth::no, false).verb, V::none);
}

class FixedProbe final : public probes::Probe {
 public:
  FixedProbe(std::string name, std::vector<probes::Finding> findings, bool fails = false)
      : name_(std::move(name)), findings_(std::move(findings)), fails_(fails) {}
  std::string_view name() const override { return name_; }
  Result<std::vector<probes::Finding>> poll(std::chrono::milliseconds) override {
    if (fails_) return fail("read {}: gone", name_);
    return findings_;
  }
  std::vector<std::string> problems() const override { return {"/lustre: stat: No such file or directory"}; }

 private:
  std::string name_;
  std::vector<probes::Finding> findings_;
  bool fails_;
};

TEST(HealthCheck, ProbeFindingsAtTheDrainLevelMakeItUnhealthyStrongestFirst) {
  const auto catalog = signals::Catalog::builtin().value();
  std::vector<std::unique_ptr<probes::Probe>> probes;
  probes.push_back(std::make_unique<FixedProbe>(
      "nvml", std::vector<probes::Finding>{
                  {signals::Kind::gpu_throttle, 0x8, "0000:06:00.0", "hw_slowdown", false, "nvml: throttling"},
                  {signals::Kind::gpu_pcie_link, 8, "0000:06:00.0", "x8 of x16", false, "nvml: link x8"},
                  {signals::Kind::xid, 79, "0000:07:00.0", "GPU-1", false, "nvml: Xid 79"}}));
  probes.push_back(std::make_unique<FixedProbe>("ib", std::vector<probes::Finding>{}, true));
  HealthOptions o;
  o.node = "n1";
  o.kmsg_path = "";
  auto rep = check_health(o, catalog, probes);
  ASSERT_TRUE(rep) << rep.error().message;
  ASSERT_EQ(rep->problems.size(), 2u);  // throttling is monitor-level
  EXPECT_EQ(rep->problems[0].kind, signals::Kind::xid);
  EXPECT_EQ(rep->problems[0].device, "0000:07:00");  // as the kernel prints it, so both sources join
  EXPECT_EQ(rep->problems[0].label(), "Xid 79 0000:07:00 (reboot_node)");
  EXPECT_EQ(rep->problems[0].source, "probe:nvml");
  EXPECT_EQ(rep->problems[1].kind, signals::Kind::gpu_pcie_link);
  bool failed_noted = false, problem_noted = false;
  for (const auto& n : rep->notes) {
    failed_noted |= n == "probe ib: read ib: gone";
    problem_noted |= n.find("/lustre: stat") != std::string::npos;
  }
  EXPECT_TRUE(failed_noted);
  EXPECT_TRUE(problem_noted);
}

TEST(HealthCheck, ARecoveredPortIsHealthy) {
  const auto catalog = signals::Catalog::builtin().value();
  std::vector<std::unique_ptr<probes::Probe>> probes;
  probes.push_back(std::make_unique<FixedProbe>(
      "ib", std::vector<probes::Finding>{{signals::Kind::ib_port_down, 1, "mlx5_0/1", "DOWN", false, "down"},
                                         {signals::Kind::ib_port_up, 1, "mlx5_0/1", "ACTIVE", false, "up"}}));
  HealthOptions o;
  o.node = "n1";
  o.kmsg_path = "";
  auto rep = check_health(o, catalog, probes);
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->problems.empty());
}

// Issue 37: cmax check reads the node faults that are not the GPU as cmaxd does. A kernel log (here a
// FIFO carrying /dev/kmsg records) with a read-only filesystem, a cgroup's OOM and a benign ext4
// remount: one problem, the filesystem, at drain; the OOM is the job's and the remount nothing.
TEST(HealthCheck, NodeFaultsInTheKernelLogAreProblemsAtTheirCatalogLevel) {
  const auto catalog = signals::Catalog::builtin().value();
  const auto fifo = std::filesystem::temp_directory_path() / fmt::format("cmax-check-kmsg-{}", ::getpid());
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // O_RDWR does not wait for a reader: the records sit in the pipe until the check reads them.
  const int w = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(w, 0);
  const std::string records =
      "4,1,1000,-;EXT4-fs (sdz1): Remounting filesystem read-only\n"
      "4,2,1001,-;Memory cgroup out of memory: Killed process 77 (train) total-vm:1kB, anon-rss:1kB, file-rss:0kB, "
      "shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
      "6,3,1002,-;EXT4-fs (nvme0n1p5): re-mounted. Opts: errors=remount-ro. Quota mode: none.\n";
  ASSERT_EQ(::write(w, records.data(), records.size()), static_cast<ssize_t>(records.size()));
  std::vector<std::unique_ptr<probes::Probe>> probes;
  HealthOptions o;
  o.node = "n1";
  o.kmsg_path = fifo.string();
  o.budget = std::chrono::milliseconds(3000);
  auto rep = check_health(o, catalog, probes);
  ::close(w);
  std::filesystem::remove(fifo);
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->records, 3u);
  ASSERT_EQ(rep->problems.size(), 1u);
  EXPECT_EQ(rep->problems[0].kind, signals::Kind::fs_readonly);
  EXPECT_EQ(rep->problems[0].device, "sdz1");
  EXPECT_EQ(rep->problems[0].action, signals::Action::drain);
}

}  // namespace
}  // namespace cmax::agent
