#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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

TEST(Version, EpochsDominateWholePackageVersionsOnly) {
  // Between two versions of one package dpkg's order holds: the epoch first.
  EXPECT_GT(cmp("1:2.0", "3.0"), 0);
  EXPECT_EQ(parse_version("2:1.0-1")->epoch, 2u);
  EXPECT_GT(dpkg_compare("1:2.0-1", "3.0-1"), 0);
}

// The release a package carries, for an upstream floor (issue 23: the epoch made every one of
// these pass a floor above it).
TEST(PackageUpstream, EpochAndRevisionBelongToThePackager) {
  struct Case {
    const char* package;
    const char* upstream;
    const char* revision;
    std::uint64_t epoch;
  };
  for (const Case& c : {Case{"5:24.0.7-1~ubuntu.22.04~jammy", "24.0.7", "1~ubuntu.22.04~jammy", 5},
                        Case{"1:3.3.9", "3.3.9", "", 1},
                        Case{"2:1.1.12", "1.1.12", "", 2},
                        Case{"1:1.16.1", "1.16.1", "", 1},
                        Case{"1.1.5+ds1-1+deb12u1", "1.1.5+ds1", "1+deb12u1", 0},
                        Case{"1.17.8~rc1-1", "1.17.8~rc1", "1", 0},
                        Case{"1.4.0-rc.3", "1.4.0-rc.3", "", 0},   // a pre-release, not a revision
                        Case{"2:2.0-beta1", "2.0-beta1", "", 2},
                        Case{"24.0.7-1.el9", "24.0.7", "1.el9", 0},   // rpm: version-release
                        Case{"0.5.14-6", "0.5.14", "6", 0},
                        Case{"6.8.0-1015-nvidia", "6.8.0-1015", "nvidia", 0}}) {
    auto p = cmax::core::split_package_version(c.package);
    EXPECT_EQ(p.upstream, c.upstream) << c.package;
    EXPECT_EQ(p.revision, c.revision) << c.package;
    EXPECT_EQ(p.epoch, c.epoch) << c.package;
  }
  auto docker = cmax::core::parse_package_upstream("5:24.0.7-1~ubuntu.22.04~jammy");
  ASSERT_TRUE(docker);
  EXPECT_EQ(docker->epoch, 0u);
  EXPECT_LT(compare_versions(*docker, *parse_version("29.8.2")), 0) << "Docker 24.0.7 is below 29.8.2";
  EXPECT_LT(compare_versions(*cmax::core::parse_package_upstream("1:1.17.8~rc1-1"), *parse_version("1.17.8")), 0)
      << "a release candidate is below its release";
  EXPECT_EQ(compare_versions(*cmax::core::parse_package_upstream("1.17.8-0ubuntu1"), *parse_version("1.17.8")), 0)
      << "the revision is not part of the release";
  EXPECT_GT(compare_versions(*cmax::core::parse_package_upstream("29.8.2+security-3-1"), *parse_version("29.8.2")), 0);
  EXPECT_FALSE(cmax::core::parse_package_upstream("1:"));
  EXPECT_FALSE(cmax::core::parse_package_upstream("5:~ubuntu"));
}

// compare_versions is a total order: antisymmetric, transitive and total over every version the
// parser accepts, built here from the pieces the field's versions are made of.
TEST(VersionOrder, IsTotalAntisymmetricAndTransitive) {
  std::mt19937_64 rng(20261205);
  const std::vector<std::string> pre = {"", "-rc.1", "-rc2", "~rc1", "rc3", "-beta1", ".alpha2", "-dev", "-pre1"};
  const std::vector<std::string> suffix = {"", "-1", "-0ubuntu1", "+security-2", "+ds1-1+deb12u1", "~22.04", "-1~bpo12+1",
                                           "+dfsg", ".el9", "-amd64"};
  auto make = [&] {
    std::string v;
    if (rng() % 5 == 0) v += std::to_string(rng() % 3) + ":";
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < parts; ++i) v += (i ? "." : "") + std::to_string(rng() % 4);
    v += pre[rng() % pre.size()];
    v += suffix[rng() % suffix.size()];
    return v;
  };
  std::vector<cmax::core::Version> vs;
  while (vs.size() < 300) {
    auto v = parse_version(make());
    ASSERT_TRUE(v) << make();
    vs.push_back(std::move(*v));
  }
  for (const auto& a : vs)
    for (const auto& b : vs) {
      const int ab = compare_versions(a, b), ba = compare_versions(b, a);
      ASSERT_EQ(ab, -ba) << a.text << " vs " << b.text;
      ASSERT_TRUE(ab == -1 || ab == 0 || ab == 1);
    }
  for (std::size_t i = 0; i < 20000; ++i) {
    const auto& a = vs[rng() % vs.size()];
    const auto& b = vs[rng() % vs.size()];
    const auto& c = vs[rng() % vs.size()];
    if (compare_versions(a, b) <= 0 && compare_versions(b, c) <= 0)
      ASSERT_LE(compare_versions(a, c), 0) << a.text << " <= " << b.text << " <= " << c.text;
  }
  // Sorting with it is stable under a second sort (a strict weak order).
  auto sorted = vs;
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return compare_versions(x, y) < 0; });
  for (std::size_t i = 1; i < sorted.size(); ++i) EXPECT_LE(compare_versions(sorted[i - 1], sorted[i]), 0);
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
