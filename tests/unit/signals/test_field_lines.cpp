// Real kernel-log lines nobody here wrote (tests/golden/kmsg, each with its source in SOURCES.md)
// through the whole engine: prefix, classifier, correlator. Per file, the incidents an SRE expects:
// kind, device, action; the negatives raise nothing at restart_app or above. And the rater's
// dirty-inode incident replayed: one root cause, the CPU lockup.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/signals_catalog.h"
#include "signals/catalog.h"
#include "signals/classify.h"
#include "signals/correlate.h"
#include "signals/host_map.h"
#include "signals/scanner.h"

using namespace cmax::signals;

namespace {

const Catalog& catalog() { return cmax::test::signals_catalog(); }

struct Scan {
  std::vector<Incident> incidents;
};

Scan scan_file(const std::string& name) {
  Correlator correlator(catalog());
  auto scanner = Scanner::create(correlator);
  EXPECT_TRUE(scanner);
  Scan out;
  if (!scanner) return out;
  auto r = scanner->scan_path(std::string(CMAX_SOURCE_DIR) + "/tests/golden/kmsg/" + name, "node");
  EXPECT_TRUE(r) << r.error().message;
  out.incidents = correlator.take_incidents();
  return out;
}

const Incident* find(const Scan& s, Kind kind, std::string_view device) {
  for (const auto& i : s.incidents)
    if (i.kind == kind && i.device == device) return &i;
  return nullptr;
}

std::string describe(const Scan& s) {
  std::string out;
  for (const auto& i : s.incidents)
    out += fmt::format("\n  {} {} {} {} {} x{}", i.node, to_string(i.kind), i.code, i.device, to_string(i.action), i.count);
  return out;
}

}  // namespace

TEST(FieldLines, GpuFallenOffTheBusInEveryForm) {
  auto s = scan_file("gpu_fallen_off_bus.log");
  // The three-line message in dmesg form: its address is on the first line.
  const Incident* dmesg = find(s, Kind::gpu_off_bus, "0000:b3:00.0");
  ASSERT_NE(dmesg, nullptr) << describe(s);
  EXPECT_EQ(dmesg->action, Action::reboot_node);
  // The same message in journal form, continuation lines indented: the host of its first line.
  const Incident* journal = find(s, Kind::gpu_off_bus, "0000:18:00.0");
  ASSERT_NE(journal, nullptr) << describe(s);
  EXPECT_EQ(journal->node, "000-000-00000-1-gpu-1");
  // With Xid 79 beside it: one incident.
  const Incident* x79 = find(s, Kind::xid, "0000:91:00");
  ASSERT_NE(x79, nullptr) << describe(s);
  EXPECT_EQ(x79->action, Action::reboot_node);
  EXPECT_NE(std::find(x79->related.begin(), x79->related.end(), "gpu_off_bus x1"), x79->related.end());
  EXPECT_EQ(s.incidents.size(), 3u) << describe(s);
}

TEST(FieldLines, Mlx5CommandTimeoutsDrainTheirCard) {
  auto s = scan_file("mlx5_cmd_timeout.log");
  for (std::string_view dev : {"0000:0b:06.0", "0000:00:06.0", "0000:61:00.0", "0000:00:00.0", "0000:18:00.0"}) {
    const Incident* i = find(s, Kind::mlx5_cmd_timeout, dev);
    ASSERT_NE(i, nullptr) << dev << describe(s);
    EXPECT_EQ(i->action, Action::drain) << dev;
  }
}

TEST(FieldLines, Mlx5HealthDumpsByTheirSyndrome) {
  auto s = scan_file("mlx5_health.log");
  // High temperature (drain), then "Fatal error 1" with an all-ones dump: the card is unreadable.
  const Incident* hot = find(s, Kind::ib_health, "0000:41:00.0");
  ASSERT_NE(hot, nullptr) << describe(s);
  EXPECT_EQ(hot->action, Action::reboot_node);
  // "Health issue observed, firmware internal error": synd 0x1.
  const Incident* fw = find(s, Kind::ib_health, "0000:0d:00.0");
  ASSERT_NE(fw, nullptr) << describe(s);
  EXPECT_EQ(fw->action, Action::reboot_node);
  for (const auto& i : s.incidents) EXPECT_GE(i.action, Action::drain) << describe(s);
}

TEST(FieldLines, PortModuleEventsNeverDrain) {
  for (std::string_view file : {"mlx5_port_module.log", "mlx5_port_module.from_format.log"}) {
    auto s = scan_file(std::string(file));
    for (const auto& i : s.incidents) EXPECT_LE(i.action, Action::monitor) << file << describe(s);
  }
}

TEST(FieldLines, NegativesRaiseNothingAtRestartAppOrAbove) {
  for (std::string_view file : {"negatives.log", "negatives.synthetic.log"}) {
    auto s = scan_file(std::string(file));
    for (const auto& i : s.incidents) EXPECT_LT(i.action, Action::restart_app) << file << describe(s);
  }
}

TEST(FieldLines, NvswitchSxidsOnTheirSwitch) {
  auto s = scan_file("nvswitch_sxid.log");
  const Incident* fatal = find(s, Kind::sxid, "0000:05:00.0");
  ASSERT_NE(fatal, nullptr) << describe(s);
  EXPECT_EQ(fatal->code, 20034);
  EXPECT_EQ(fatal->action, Action::drain);
  const Incident* boot = find(s, Kind::sxid, "0000:02:00.0");
  ASSERT_NE(boot, nullptr) << describe(s);
  EXPECT_EQ(boot->code, 22013);
  EXPECT_EQ(boot->action, Action::monitor);
  for (const auto& i : s.incidents) EXPECT_EQ(i.node.find("task"), std::string::npos) << describe(s);
}

TEST(FieldLines, EfaAdminQueueFailures) {
  auto s = scan_file("efa_admin.from_format.log");
  ASSERT_FALSE(s.incidents.empty());
  for (const auto& i : s.incidents) {
    EXPECT_EQ(i.kind, Kind::efa_admin) << describe(s);
    EXPECT_EQ(i.action, Action::drain);
  }
  EXPECT_NE(find(s, Kind::efa_admin, "efa_0"), nullptr) << describe(s);
}

// A rater's incident: a dirty-inode deadlock on an old kernel locked every core of one NUMA node,
// the Lustre client starved, the storage health check failed, and the node was taken out for a
// storage fault. The lines are the kernel's own formats (soft lockup, hung task, Lustre eviction
// and lost connection); the failing storage probe is cmaxd's fs_hung.
TEST(FieldLines, DirtyInodeDeadlockIsOneIncidentRootedInTheCpuLockup) {
  std::string log;
  for (int cpu = 24; cpu < 32; ++cpu)
    log += fmt::format("[ 5000.{:06}] watchdog: BUG: soft lockup - CPU#{} stuck for 23s! [kworker/{}:1:{}]\n", cpu, cpu,
                       cpu, 4000 + cpu);
  log += "[ 5120.000000] INFO: task python3:4242 blocked for more than 120 seconds.\n";
  log += "[ 5121.000000] INFO: task ptlrpcd_01_00:77 blocked for more than 120 seconds.\n";
  log += "[ 5130.000000] LustreError: 167-0: scratch-MDT0000-mdc-ffff9a7c0a2b4000: This client was evicted by "
         "scratch-MDT0000; in progress operations using this service will fail.\n";
  log += "[ 5131.000000] Lustre: scratch-OST0003-osc-ffff9a7c0a2b4000: Connection to scratch-OST0003 (at "
         "10.0.0.3@o2ib) was lost; in progress operations using this service will wait for recovery to complete\n";
  Correlator correlator(catalog());
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text(log, "gpu-07"));
  // cmaxd's storage probe: the Lustre mount stopped answering stat() within its timeout.
  LineInfo probe;
  probe.time = 5140;
  probe.has_time = true;
  Signal hung;
  hung.kind = Kind::fs_hung;
  hung.device = "/lustre";
  const std::string node = "gpu-07";
  ASSERT_TRUE(correlator.add({&node, &probe, &hung, "fs_hung /lustre"}));
  const auto& inc = correlator.incidents();
  // The probe's line is acted on as the root cause's (cmaxd drains with its reason).
  ASSERT_TRUE(correlator.last_incident());
  const Incident& root = inc[*correlator.last_incident()];
  EXPECT_EQ(root.kind, Kind::soft_lockup);
  EXPECT_EQ(root.related.size(), 7u);  // CPU#25 .. CPU#31 folded
  EXPECT_GE(root.action, Action::drain);
  // One incident without a parent: the lockup. Everything else is its child, with why.
  int roots = 0;
  for (std::size_t i = 0; i < inc.size(); ++i) {
    if (inc[i].parent < 0) {
      ++roots;
      continue;
    }
    EXPECT_EQ(&inc[static_cast<std::size_t>(inc[i].parent)], &root);
    EXPECT_NE(inc[i].cause.find("CPU lockup"), std::string::npos);
  }
  EXPECT_EQ(roots, 1);
  EXPECT_EQ(root.children.size(), inc.size() - 1);
  std::vector<Kind> kinds;
  for (auto c : root.children) kinds.push_back(inc[c].kind);
  for (Kind k : {Kind::hung_task, Kind::lustre, Kind::lustre_conn, Kind::fs_hung})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), k), kinds.end()) << to_string(k);
}

TEST(FieldLines, AStorageOutageWithoutALockupIsItsOwnRootCause) {
  // Without the lockup, the hung tasks are the filesystem's doing, not the other way round.
  std::string log = "[ 100.0] nfs: server nas01 not responding, still trying\n"
                    "[ 220.0] INFO: task python3:4242 blocked for more than 120 seconds.\n";
  Correlator correlator(catalog());
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text(log, "n1"));
  const auto& inc = correlator.incidents();
  ASSERT_EQ(inc.size(), 2u);
  EXPECT_EQ(inc[0].kind, Kind::nfs_timeout);
  EXPECT_EQ(inc[1].parent, 0);
  EXPECT_NE(inc[1].cause.find("filesystem that stopped answering"), std::string::npos);
}

TEST(HostMap, RdmaDeviceToPciAndTheDriverBranchFromALiveTree) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / fmt::format("cmax-hostmap-{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root / "sys/devices/pci0000:00/0000:00:06.0");
  fs::create_directories(root / "sys/class/infiniband/efa_0");
  fs::create_symlink("../../../devices/pci0000:00/0000:00:06.0", root / "sys/class/infiniband/efa_0/device");
  EXPECT_EQ(rdma_device_pci("efa_0", (root / "sys").string()), "0000:00:06.0");
  EXPECT_EQ(rdma_device_pci("mlx5_9", (root / "sys").string()), "");
  EXPECT_EQ(rdma_device_pci("../efa_0", (root / "sys").string()), "");
  fs::create_directories(root / "proc/driver/nvidia");
  {
    std::ofstream v(root / "proc/driver/nvidia/version");
    v << "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  (dvs-builder@U16)  Sat May 24 2025\n"
         "GCC version:  gcc version 12.3.0\n";
  }
  EXPECT_EQ(nvidia_driver_branch((root / "proc").string()), 575);
  EXPECT_EQ(nvidia_driver_branch((root / "nowhere").string()), -1);
  // A live scan maps an EFA line's RDMA device to its card.
  Correlator correlator(catalog());
  ScanOptions o;
  o.live_sys_root = (root / "sys").string();
  auto scanner = Scanner::create(correlator, o);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text("[ 5.0] infiniband efa_0: Admin queue is closed\n", "n1"));
  ASSERT_EQ(correlator.incidents().size(), 1u);
  EXPECT_EQ(correlator.incidents()[0].device, "0000:00:06.0");
  fs::remove_all(root);
}
