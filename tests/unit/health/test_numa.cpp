#include <gtest/gtest.h>

#include "health/numa.h"
#include "support/temp_host.h"

using namespace cmax::health;

TEST(Numa, CpulistForms) {
  auto v = parse_cpulist("0-3,8-11,16\n");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11, 16}));
  EXPECT_EQ(*parse_cpulist("5"), std::vector<int>{5});
  EXPECT_EQ(*parse_cpulist("0-7:2"), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(*parse_cpulist("3,1,1-2"), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(parse_cpulist("")->empty());  // memory-only node
  EXPECT_TRUE(parse_cpulist("\n")->empty());
}

TEST(Numa, CpulistErrors) {
  for (auto bad : {"3-1", "a", "0-", "-1", "1-x", "0-99999999", "0-3:0", "1,,2x"}) {
    auto v = parse_cpulist(bad);
    EXPECT_FALSE(v) << bad;
    if (!v) {
      EXPECT_NE(v.error().message.find("parse cpulist"), std::string::npos);
    }
  }
}

TEST(Numa, ReadsNodesUnderHostRoot) {
  cmax::test::TempHost h;
  h.write("/sys/devices/system/node/node0/cpulist", "0-3,8-11\n");
  h.write("/sys/devices/system/node/node1/cpulist", "4-7,12-15\n");
  h.write("/sys/devices/system/node/node2/cpulist", "\n");  // CXL memory, no CPUs
  h.write("/sys/devices/system/node/has_cpu", "0-1\n");
  h.write("/sys/devices/system/node/online", "0-2\n");
  auto nodes = read_numa_nodes(h.host());
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].id, 1);
  EXPECT_EQ((*nodes)[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_TRUE((*nodes)[2].cpus.empty());
}

TEST(Numa, NoNumaDirectoryFallsBackToOnlineCpus) {
  cmax::test::TempHost h;
  h.write("/sys/devices/system/cpu/online", "0-5\n");
  auto nodes = read_numa_nodes(h.host());
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].cpus.size(), 6u);
}

TEST(Numa, BadFilesNameThePath) {
  cmax::test::TempHost h;
  h.write("/sys/devices/system/node/node0/cpulist", "zero\n");
  auto nodes = read_numa_nodes(h.host());
  ASSERT_FALSE(nodes);
  EXPECT_NE(nodes.error().message.find("/sys/devices/system/node/node0/cpulist"),
            std::string::npos);
  cmax::test::TempHost empty;
  EXPECT_FALSE(read_numa_nodes(empty.host()));
}

TEST(Numa, ThisMachine) {
  auto nodes = read_numa_nodes(cmax::core::HostRoot("/"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_FALSE(nodes->empty());
  std::size_t cpus = 0;
  for (const auto& n : *nodes) cpus += n.cpus.size();
  EXPECT_GE(cpus, 1u);
}
