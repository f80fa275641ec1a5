#include <gtest/gtest.h>

#include "audit/floors.h"
#include "support/temp_host.h"

using namespace cmax::audit;
using cmax::core::parse_version;

namespace {

const char* kDoc = R"({
  "schema": "cmax.min-versions/1", "updated": "2026-12-01",
  "components": [
    {"component": "runc", "description": "d", "kind": "security",
     "trains": [{"train": "1.3", "floor": "1.3.6", "cves": ["CVE-A"]}, {"train": "1.4", "floor": "1.4.3", "cves": ["CVE-B"]}],
     "floor": "1.5.0", "cves": [{"id": "CVE-A", "severity": "high", "summary": "s", "fixed": ["1.3.6"]}],
     "source": "https://example.invalid/runc", "date": "2026-06-22"},
    {"component": "munge", "kind": "security", "trains": [], "floor": "0.5.18", "cves": [], "source": "", "date": ""}
  ],
  "kernel_cves": [
    {"id": "CVE-2024-1086", "summary": "nf_tables", "severity": "high", "introduced": "3.15",
     "fixed": ["5.15.149", "6.1.76", "6.6.15", "6.8"], "distros": {"debian-12": "6.1.76-1"}, "source": "s"}
  ]})";

FloorVerdict judge(const Floors& f, const char* component, const char* version) {
  return evaluate_floor(*f.find(component), *parse_version(version));
}

}  // namespace

TEST(Floors, TrainsFloorsAndUnsupportedTrains) {
  auto f = parse_floors(kDoc, "test");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(judge(*f, "runc", "1.3.5").status, FloorVerdict::Status::below);
  EXPECT_EQ(judge(*f, "runc", "1.3.5").floor, "1.3.6");
  EXPECT_EQ(judge(*f, "runc", "1.3.5").cves, std::vector<std::string>{"CVE-A"});
  EXPECT_EQ(judge(*f, "runc", "1.3.6").status, FloorVerdict::Status::ok);
  EXPECT_EQ(judge(*f, "runc", "1.4.3").status, FloorVerdict::Status::ok);
  EXPECT_EQ(judge(*f, "runc", "1.2.8").status, FloorVerdict::Status::unsupported_train);
  EXPECT_EQ(judge(*f, "runc", "1.2.8").supported, "1.3, 1.4");
  EXPECT_EQ(judge(*f, "runc", "1.5.1").status, FloorVerdict::Status::ok);
  EXPECT_EQ(judge(*f, "runc", "1.5.0-rc.1").status, FloorVerdict::Status::below);
  EXPECT_EQ(judge(*f, "munge", "0.5.15").status, FloorVerdict::Status::below);
  EXPECT_EQ(judge(*f, "munge", "0.5.18").status, FloorVerdict::Status::ok);
  EXPECT_EQ(f->find("docker"), nullptr);
}

TEST(Floors, OnlyTheCvesThatAffectTheObservedVersionAreListed) {
  auto f = parse_floors(R"({"schema": "cmax.min-versions/1", "components": [{"component": "docker", "floor": "29.8.2",
    "cves": [{"id": "NEW", "fixed": ["29.8.2"]}, {"id": "OLD", "fixed": ["23.0.15", "25.0.6", "26.1.5", "27.1.1"]}]}]})",
                        "t");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(judge(*f, "docker", "28.2.2").cves, std::vector<std::string>{"NEW"});
  EXPECT_EQ(judge(*f, "docker", "26.1.4").cves, (std::vector<std::string>{"NEW", "OLD"}));
  EXPECT_EQ(judge(*f, "docker", "26.1.5").cves, std::vector<std::string>{"NEW"});
  EXPECT_EQ(judge(*f, "docker", "24.0.9").cves, (std::vector<std::string>{"NEW", "OLD"}));  // series never fixed
}

TEST(Floors, KernelCveByDistroPackageThenUpstream) {
  auto f = parse_floors(kDoc, "test");
  ASSERT_TRUE(f);
  const auto& cve = f->kernel_cves.at(0);
  using S = KernelCveVerdict::Status;
  auto deb = *parse_version("6.1.0-18-amd64");
  EXPECT_EQ(evaluate_kernel_cve(cve, deb, "debian-12", "6.1.76-1").status, S::fixed);
  EXPECT_EQ(evaluate_kernel_cve(cve, deb, "debian-12", "6.1.69-1").status, S::vulnerable);
  EXPECT_EQ(evaluate_kernel_cve(cve, *parse_version("6.1.70"), "", "").status, S::vulnerable);
  EXPECT_EQ(evaluate_kernel_cve(cve, *parse_version("6.1.80"), "", "").status, S::fixed);
  EXPECT_EQ(evaluate_kernel_cve(cve, *parse_version("6.3.1"), "", "").status, S::vulnerable);  // EOL series
  EXPECT_EQ(evaluate_kernel_cve(cve, *parse_version("6.18.44-fc-v1045"), "", "").status, S::fixed);
  EXPECT_EQ(evaluate_kernel_cve(cve, *parse_version("3.10.0"), "", "").status, S::not_affected);
}

TEST(Floors, BadDocumentsAreErrorsNamingTheProblem) {
  auto a = parse_floors("{not json", "f.json");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("f.json"), std::string::npos);
  auto b = parse_floors(R"({"schema": "other/2"})", "f.json");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("schema"), std::string::npos);
  auto c = parse_floors(
      R"({"schema": "cmax.min-versions/1", "components": [{"component": "x", "trains": [{"train": "1", "floor": "garbage"}]}]})",
      "f.json");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("component 'x'"), std::string::npos);
  EXPECT_FALSE(load_floors_file("/nonexistent/min.json"));
}

TEST(Floors, TheShippedFileLoadsAndCoversTheFloorChecks) {
  const auto& f = cmax::test::test_floors();
  for (const char* c : {"nvidia-driver", "cuda-toolkit", "nvidia-container-toolkit", "runc", "containerd", "docker",
                        "dcgm", "slurm", "munge"})
    EXPECT_NE(f.find(c), nullptr) << c;
  EXPECT_GE(f.kernel_cves.size(), 3u);
  for (const auto& c : f.components) {
    EXPECT_FALSE(c.source.empty()) << c.component;
    EXPECT_FALSE(c.date.empty()) << c.component;
  }
}

// Ubuntu builds kernels from several source packages (linux, linux-aws, linux-hwe-6.8, ...), each
// with its own version line: a fix is never taken from another line (6.8.0-1050 > 6.8.0-124 by dpkg,
// yet linux-aws 6.8.0-1050.53 lacks the fix linux-aws 6.8.0-1057.60 carries). USN-8373-1's data.
TEST(KernelFlavours, EachUbuntuSourcePackageKeepsItsOwnFix) {
  using cmax::audit::kernel_source_package;
  EXPECT_EQ(kernel_source_package("ubuntu-24.04", "6.8.0-124-generic", "6.8.0-124.124"), "linux");
  EXPECT_EQ(kernel_source_package("ubuntu-24.04", "6.8.0-1057-aws", "6.8.0-1057.60"), "linux-aws");
  EXPECT_EQ(kernel_source_package("ubuntu-24.04", "6.8.0-1028-nvidia-64k", ""), "linux-nvidia");
  EXPECT_EQ(kernel_source_package("ubuntu-22.04", "6.8.0-124-generic", "6.8.0-124.124~22.04.1"), "linux-hwe-6.8");
  EXPECT_EQ(kernel_source_package("ubuntu-22.04", "6.8.0-1057-aws", "6.8.0-1057.60~22.04.1"), "linux-aws-6.8");
  EXPECT_EQ(kernel_source_package("debian-12", "6.1.0-28-cloud-amd64", "6.1.119-1"), "");

  const auto& floors = cmax::test::test_floors();
  const cmax::audit::KernelCve* frag = nullptr;
  for (const auto& k : floors.kernel_cves)
    if (k.id == "CVE-2026-46300") frag = &k;
  ASSERT_NE(frag, nullptr);
  auto release = [](const char* r) { return *cmax::core::parse_version(r); };
  using S = cmax::audit::KernelCveVerdict::Status;
  auto eval = [&](const char* rel, const char* distro, const char* pkg) {
    return cmax::audit::evaluate_kernel_cve(*frag, release(rel), distro, pkg, kernel_source_package(distro, rel, pkg)).status;
  };
  EXPECT_EQ(eval("6.8.0-101-generic", "ubuntu-24.04", "6.8.0-101.101"), S::vulnerable);
  EXPECT_EQ(eval("6.8.0-124-generic", "ubuntu-24.04", "6.8.0-124.124"), S::fixed);
  EXPECT_EQ(eval("6.8.0-1050-aws", "ubuntu-24.04", "6.8.0-1050.53"), S::vulnerable);  // not "fixed" by the generic line
  EXPECT_EQ(eval("6.8.0-1057-aws", "ubuntu-24.04", "6.8.0-1057.60"), S::fixed);
  EXPECT_EQ(eval("6.8.0-1030-oracle", "ubuntu-24.04", "6.8.0-1030.31"), S::unknown);  // no fix recorded for linux-oracle
  EXPECT_EQ(eval("6.8.0-124-generic", "ubuntu-22.04", "6.8.0-124.124~22.04.1"), S::fixed);  // linux-hwe-6.8
  // No package version in the tree: the ABI in the release still decides.
  EXPECT_EQ(eval("6.8.0-101-generic", "ubuntu-24.04", ""), S::vulnerable);
  EXPECT_EQ(eval("6.8.0-134-generic", "ubuntu-24.04", ""), S::fixed);
  EXPECT_EQ(eval("6.1.0-28-amd64", "debian-12", "6.1.119-1"), S::unknown);  // Fragnesia: no Debian fix on record
}
