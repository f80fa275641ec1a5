// `cmax scan` end to end: the real binary on the real samples, on this machine's /dev/kmsg,
// on compressed files, and on bad input.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/temp_host.h"

using nlohmann::json;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run scan(std::vector<std::string> args) {
  args.insert(args.begin(), "scan");
  args.insert(args.begin(), CMAX_BIN);
  auto r = cmax::core::run_process({args, std::chrono::seconds(60), 16u << 20});
  EXPECT_TRUE(r);
  EXPECT_FALSE(r->timed_out);
  return {r->exit_code, r->out, r->err};
}

void validate(const json& j) {
  ASSERT_EQ(j["schema"], "cmax.scan/1");
  EXPECT_TRUE(j["stats"]["bytes"].is_number());
  for (const auto& i : j["incidents"]) {
    for (const char* k : {"node", "kind", "action", "device", "first_seen", "last_seen", "sample", "reason"})
      EXPECT_TRUE(i[k].is_string()) << k;
    EXPECT_GE(i["count"].get<int>(), 1);
    EXPECT_TRUE(i["code"].is_number() || i["code"].is_null());
    EXPECT_TRUE(i["pci"].is_string() || i["pci"].is_null());
  }
}

}  // namespace

TEST(CmaxScan, RealSamplesEveryLineAnIncident) {
  auto path = cmax::test::shared_data_dir() / "xid" / "kernel_log_examples.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared/data not beside the checkout";
  auto r = scan({"--json", path.string()});
  EXPECT_EQ(r.code, 1);  // Xid 79 and others need action
  auto j = json::parse(r.out);
  validate(j);
  EXPECT_EQ(j["stats"]["signals"], 24);
  bool saw79 = false;
  for (const auto& i : j["incidents"])
    if (i["kind"] == "xid" && i["code"] == 79) {
      saw79 = true;
      EXPECT_EQ(i["action"], "reboot_node");
      EXPECT_EQ(i["pci"], "0004:01:00");
    }
  EXPECT_TRUE(saw79);
  auto text = scan({"--no-color", path.string()});
  EXPECT_NE(text.out.find("reboot_node"), std::string::npos);
}

TEST(CmaxScan, GzipFileAndNodeFromTheSyslogHost) {
  cmax::test::TempHost t;
  auto gz = (t.dir() / "gpu-07.kern.log.gz").string();
  std::string log =
      "Nov 22 14:56:47 gpu-07 kernel: [ 130.4] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
      "Nov 22 14:56:48 gpu-08 kernel: [ 131.0] nfs: server fs1 not responding, still trying\n"
      "Nov 22 14:57:48 gpu-08 kernel: [ 191.0] nfs: server fs1 OK\n";
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, log.data(), static_cast<unsigned>(log.size()));
  gzclose(f);
  auto r = scan({"--json", gz});
  auto j = json::parse(r.out);
  validate(j);
  ASSERT_EQ(j["incidents"].size(), 2u);
  EXPECT_EQ(j["incidents"][0]["node"], "gpu-07");
  EXPECT_EQ(j["incidents"][1]["node"], "gpu-08");
  EXPECT_EQ(j["incidents"][1]["resolved"], true);
  EXPECT_NE(j["sources"][0].get<std::string>().find("gzip"), std::string::npos);
}

TEST(CmaxScan, MissingFileKeepsTheOtherSourcesAndExits3OnlyWhenNothingNeedsAction) {
  cmax::test::TempHost t;
  t.write("/ok.log", "[ 1.0] nfs: server fs1 not responding, still trying\n");
  auto r = scan({"--json", (t.dir() / "ok.log").string(), "/nonexistent/kern.log"});
  EXPECT_EQ(r.code, 3);
  auto j = json::parse(r.out);
  EXPECT_EQ(j["incidents"].size(), 1u);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_NE(j["errors"][0].get<std::string>().find("/nonexistent/kern.log"), std::string::npos);
  EXPECT_NE(r.err.find("/nonexistent/kern.log"), std::string::npos);
  auto bad = scan({"--config", (t.dir() / "ok.log").string(), (t.dir() / "ok.log").string()});
  EXPECT_EQ(bad.code, 3);
}

TEST(CmaxScan, LiveKmsgSeesAnInjectedLineAndKnowsItCameFromUserspace) {
  if (::geteuid() != 0) GTEST_SKIP() << "writing /dev/kmsg needs root";
  std::ofstream kmsg("/dev/kmsg");
  if (!kmsg) GTEST_SKIP() << "no /dev/kmsg";
  // A PCI domain no real machine uses, so earlier runs and real faults cannot be confused with it.
  std::string pci = "00" + std::to_string(10 + ::getpid() % 89) + ":ee:00";
  kmsg << "<3>NVRM: Xid (PCI:" << pci << "): 79, pid=1, name=cmax-test, GPU has fallen off the bus.\n";
  kmsg.flush();
  auto r = scan({"--json"});
  auto j = json::parse(r.out);
  validate(j);
  bool found = false;
  for (const auto& i : j["incidents"])
    if (i["pci"] == pci) {
      found = true;
      EXPECT_EQ(i["origin"], "userspace");
      EXPECT_EQ(i["action"], "reboot_node");
    }
  EXPECT_TRUE(found) << "the injected line was not seen (kmsg rate limit?)";
  auto kernel_only = json::parse(scan({"--json", "--kernel-only"}).out);
  for (const auto& i : kernel_only["incidents"]) EXPECT_NE(i["pci"], pci);
  EXPECT_GE(kernel_only["stats"]["userspace_dropped"].get<int>(), 1);
}
