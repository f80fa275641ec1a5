// The ClusterMAX CLI's verdict beside cmax's where their policies differ (data/peers/clustermax.json):
// predicted from the same facts by the peer's recorded rule, carried by the finding, shown by -v.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "audit/audit.h"
#include "audit/check.h"
#include "audit/peer_view.h"
#include "report/terminal.h"
#include "support/temp_host.h"

using namespace cmax::audit;
using cmax::test::TempHost;

TEST(PeerMap, HasEveryClusterMaxCheckOnceAndOnlyCmaxChecksThatExist) {
  auto map = builtin_peer_map();
  ASSERT_TRUE(map) << map.error().message;
  EXPECT_EQ(map->peer, "clustermax");
  EXPECT_EQ(map->checks.size(), 61u);
  std::set<std::string> keys, ids;
  for (const auto& c : all_checks()) ids.emplace(c.id);
  // Checks of `cmax audit isolation`, which the node audit's table does not hold.
  for (const char* iso : {"isolation.ipmi.reachable", "isolation.redfish.reachable", "isolation.kube.nodes_proxy.get",
                          "storage.kube.rwx"})
    ids.emplace(iso);
  for (const auto& c : map->checks) {
    EXPECT_TRUE(keys.insert(c.key).second) << "twice: " << c.key;
    EXPECT_FALSE(c.note.empty()) << c.key;
    EXPECT_TRUE(c.relation == "equivalent" || c.relation == "policy" || c.relation == "partial" || c.relation == "meta")
        << c.key << ": " << c.relation;
    if (c.relation != "meta") EXPECT_FALSE(c.cmax.empty()) << c.key;
    for (const auto& id : c.cmax) EXPECT_TRUE(ids.count(id)) << c.key << " names no cmax check " << id;
  }
}

TEST(PeerView, WhereThePoliciesDifferTheFindingCarriesThePeersVerdictAndWhy) {
  TempHost t;
  t.write("/etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n");
  t.write("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
  t.write("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
  t.write("/proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.211.01  Release Build  (dvs-builder@U16-I3-C04-3-1)  "
          "Tue Jan 13 2026\n");
  t.write("/var/lib/dpkg/status",
          "Package: runc\nStatus: install ok installed\nVersion: 1.2.8-0ubuntu1~22.04.1\n\n"
          "Package: docker-ce\nStatus: install ok installed\nVersion: 5:29.7.2-1~ubuntu.22.04~jammy\n\n");
  t.write("/proc/sys/kernel/kptr_restrict", "1\n");
  AuditOptions o;
  o.host_root = t.dir().string();
  o.path_env = std::string();
  auto r = run_audit(o);
  ASSERT_TRUE(r) << r.error().message;
  std::map<std::string, Finding> by;
  for (const auto& f : r->findings) by[f.check_id] = f;
  EXPECT_EQ(by["security.nvidia_driver.floor"].outcome, Outcome::fail);
  EXPECT_EQ(by["security.nvidia_driver.floor"].peer_result, "PASS");  // R570 floor 570.211.01 from bulletin 5747
  EXPECT_EQ(by["security.runc.floor"].outcome, Outcome::fail);
  EXPECT_EQ(by["security.runc.floor"].peer_result, "PASS");  // their ladder's 1.2 rung is 1.2.8
  EXPECT_NE(by["security.runc.floor"].peer_why.find("GHSA-xjvp-4fhw-gc47"), std::string::npos);
  EXPECT_EQ(by["security.docker.floor"].peer_result, "PASS");  // 29.7.0 in the pinned table
  EXPECT_EQ(by["security.kptr_restrict"].outcome, Outcome::pass);
  EXPECT_EQ(by["security.kptr_restrict"].peer_result, "WARNING");  // they want 0 for perf symbols
  EXPECT_TRUE(by["security.dcgm.floor"].peer_result.empty());  // no policy difference recorded

  cmax::report::TerminalOptions topt;
  topt.verbosity = 1;
  std::string text = cmax::report::render_audit_terminal(*r, 2, topt);
  EXPECT_NE(text.find("securityVersions.runc.status says PASS"), std::string::npos) << text.substr(0, 3000);
}
