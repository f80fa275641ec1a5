#include <gtest/gtest.h>

#include "core/version.h"

using cmax::core::compare_versions;
using cmax::core::dpkg_compare;
using cmax::core::find_version_token;
using cmax::core::in_train;
using cmax::core::parse_version;
using cmax::core::PreTag;

namespace {

int cmp(std::string_view a, std::string_view b) {
  auto va = parse_version(a);
  auto vb = parse_version(b);
  EXPECT_TRUE(va) << a;
  EXPECT_TRUE(vb) << b;
  return compare_versions(*va, *vb);
}

}  // namespace

TEST(Version, ParsesNvidiaDriverNumbering) {
  auto v = parse_version("550.144.03");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->parts, (std::vector<std::uint64_t>{550, 144, 3}));
  EXPECT_EQ(v->major(), 550u);
  EXPECT_LT(cmp("550.54.14", "550.144.03"), 0);  // numeric, not lexical
  EXPECT_EQ(cmp("R550", "550"), 0);
}

TEST(Version, ReleaseCandidatesSortBeforeTheRelease) {
  EXPECT_LT(cmp("1.4.0-rc.3", "1.4.0"), 0);
  EXPECT_LT(cmp("1.4.0-rc.2", "1.4.0-rc.3"), 0);
  EXPECT_LT(cmp("1.4.0rc3", "1.4.0"), 0);
  EXPECT_LT(cmp("1.4.0~rc3", "1.4.0"), 0);
  EXPECT_EQ(cmp("1.4.0-rc3", "1.4.0-rc.3"), 0);
  EXPECT_LT(cmp("1.0-alpha1", "1.0-beta1"), 0);
  EXPECT_LT(cmp("1.0-beta2", "1.0-rc1"), 0);
  auto v = parse_version("1.4.0-rc.3");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pre_tag, PreTag::rc);
  EXPECT_EQ(v->pre_number, 3u);
}

TEST(Version, DistroRevisionsAndBuildTagsSortAfterTheUpstreamRelease) {
  EXPECT_GT(cmp("1.1.12-0ubuntu2~22.04.1", "1.1.12"), 0);
  EXPECT_GT(cmp("1.17.8+security-2", "1.17.8"), 0);
  EXPECT_LT(cmp("1.17.7+security-9", "1.17.8"), 0);
  EXPECT_GT(cmp("1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1"), 0);
  EXPECT_EQ(cmp("1.17", "1.17.0"), 0);
}

TEST(Version, EpochsDominate) {
  EXPECT_GT(cmp("1:2.0", "3.0"), 0);
  EXPECT_EQ(parse_version("2:1.0-1")->epoch, 2u);
}

TEST(Version, KernelReleases) {
  EXPECT_LT(cmp("6.1.0-28-amd64", "6.1.0-30-amd64"), 0);
  EXPECT_LT(cmp("5.15.0-97-generic", "5.15.0-101-generic"), 0);
  EXPECT_GT(cmp("6.18.44-fc-v1045", "6.8"), 0);
}

TEST(Version, GarbageIsAnErrorThatSaysWhy) {
  for (std::string_view bad : {"", "   ", "abc", "-1.0", "version", "~1"}) {
    auto v = parse_version(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_NE(v.error().message.find("not a version"), std::string::npos) << v.error().message;
  }
  EXPECT_FALSE(parse_version("1.99999999999999999999999"));  // overflow, not a wrap
  EXPECT_FALSE(parse_version(std::string(300, '1')));
}

TEST(Version, Trains) {
  auto v = parse_version("550.144.03");
  EXPECT_TRUE(in_train(*v, *parse_version("550")));
  EXPECT_FALSE(in_train(*v, *parse_version("535")));
  EXPECT_TRUE(in_train(*parse_version("1.17.3"), *parse_version("1.17")));
  EXPECT_FALSE(in_train(*parse_version("1.1.7"), *parse_version("1.17")));
  EXPECT_FALSE(in_train(*parse_version("1"), *parse_version("1.17")));
}

TEST(Version, DpkgCompareMatchesDpkg) {
  // Expected orders checked with `dpkg --compare-versions` on Debian 12.
  EXPECT_LT(dpkg_compare("1.0~rc1", "1.0"), 0);
  EXPECT_LT(dpkg_compare("1.0", "1.0-1"), 0);
  EXPECT_LT(dpkg_compare("5.15.0-97.107", "5.15.0-101.111"), 0);
  EXPECT_LT(dpkg_compare("6.1.69-1", "6.1.76-1"), 0);
  EXPECT_GT(dpkg_compare("1:0.1", "9.9"), 0);
  EXPECT_EQ(dpkg_compare("1.0-1", "1.0-1"), 0);
  EXPECT_LT(dpkg_compare("1.0a", "1.0b"), 0);
  EXPECT_GT(dpkg_compare("1.0+deb12u1", "1.0"), 0);
  EXPECT_LT(dpkg_compare("1.0~", "1.0"), 0);
}

TEST(Version, FindsTheVersionInCommandOutput) {
  EXPECT_EQ(find_version_token("runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\n", "version"),
            "1.1.12");
  EXPECT_EQ(find_version_token("Docker version 28.2.2, build e6534b4", "version"), "28.2.2");
  EXPECT_EQ(find_version_token("containerd github.com/containerd/containerd v1.6.20 2806fc1"), "1.6.20");
  EXPECT_EQ(find_version_token("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"), "1.7.27");
  EXPECT_EQ(find_version_token("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
                               "Cuda compilation tools, release 13.0, V13.0.48\nBuild cuda_13.0.r13.0/compiler.36424714_0",
                               ", v"),
            "13.0.48");
  EXPECT_EQ(find_version_token("munge-0.5.15 (2022-05-03)", "munge-"), "0.5.15");
  EXPECT_EQ(find_version_token("slurm 22.05.8"), "22.05.8");
  EXPECT_FALSE(find_version_token("no numbers here"));
  EXPECT_FALSE(find_version_token("build 12345"));
}
