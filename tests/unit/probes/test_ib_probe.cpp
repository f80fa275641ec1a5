// IbProbe: the sysfs parsers, the diff over readings, and the probe over a file tree.
//
// Contract test: there is no InfiniBand hardware (nor rdma_rxe) in the test VM, so the probe tests
// build a tree with exactly the kernel's file names and contents. drivers/infiniband/core/sysfs.c:
//   state_show:        sysfs_emit(buf, "%d: %s\n", attr.state, ...) with the names
//                      NOP, DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER (0..5; else "UNKNOWN")
//   phys_state_show:   sysfs_emit(buf, "%u: %s\n", attr.phys_state, phys_state_to_str(...)) with
//                      Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp,
//                      LinkErrorRecovery, Phy Test (1..7; else "<unknown>")
//   show_pma_counter:  PORT_PMA_ATTR(link_downed, 2, 8, 56): an 8-bit counter, "%u\n"
// under /sys/class/infiniband/<device>/ports/<n>/{state,phys_state,counters/link_downed}, where
// <device> is a symlink into /sys/devices.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "probes/ib_probe.h"
#include "support/temp_host.h"

namespace cmax::probes {
namespace {

using namespace std::chrono_literals;
using signals::Kind;

constexpr std::string_view kActive = "4: ACTIVE\n";
constexpr std::string_view kLinkUp = "5: LinkUp\n";
constexpr std::string_view kDown = "1: DOWN\n";
constexpr std::string_view kPolling = "2: Polling\n";

IbPortReading port(std::string name, int state, std::string state_name, int phys,
                   std::string phys_name, std::optional<std::uint64_t> link_downed = 0) {
  return {std::move(name), state, std::move(state_name), phys, std::move(phys_name), link_downed};
}
IbPortReading up(std::string name, std::optional<std::uint64_t> link_downed = 0) {
  return port(std::move(name), 4, "ACTIVE", 5, "LinkUp", link_downed);
}
IbPortReading down(std::string name, std::optional<std::uint64_t> link_downed = 0) {
  return port(std::move(name), 1, "DOWN", 2, "Polling", link_downed);
}
IbReading reading(std::vector<IbPortReading> ports) { return IbReading{std::move(ports), true}; }

// Feeds readings through diff_ib in turn, keeping the state; returns each step's findings.
class Differ {
 public:
  explicit Differ(std::vector<std::string> expect = {}) : expect_(std::move(expect)) {}
  std::vector<Finding> step(const IbReading& r) {
    auto d = diff_ib(state_, r, expect_);
    state_ = std::move(d.next);
    return std::move(d.findings);
  }

 private:
  std::vector<std::string> expect_;
  IbState state_;
};

TEST(IbParse, ReadsEveryStateTheKernelPrints) {
  const std::vector<std::pair<std::string_view, int>> states = {
      {"0: NOP\n", 0},    {"1: DOWN\n", 1},         {"2: INIT\n", 2},   {"3: ARMED\n", 3},
      {"4: ACTIVE\n", 4}, {"5: ACTIVE_DEFER\n", 5}, {"9: UNKNOWN\n", 9}};
  for (auto [text, number] : states) {
    auto r = parse_ib_numbered_name(text);
    ASSERT_TRUE(r) << text << ": " << r.error().message;
    EXPECT_EQ(r->number, number);
    EXPECT_EQ(r->name, text.substr(3, text.size() - 4));
  }
}

TEST(IbParse, ReadsEveryPhysStateIncludingOneWithASpace) {
  const std::vector<std::pair<std::string_view, std::string_view>> states = {
      {"1: Sleep\n", "Sleep"},
      {"2: Polling\n", "Polling"},
      {"3: Disabled\n", "Disabled"},
      {"4: PortConfigurationTraining\n", "PortConfigurationTraining"},
      {"5: LinkUp\n", "LinkUp"},
      {"6: LinkErrorRecovery\n", "LinkErrorRecovery"},
      {"7: Phy Test\n", "Phy Test"},
      {"0: <unknown>\n", "<unknown>"}};
  int number = 1;
  for (auto [text, name] : states) {
    auto r = parse_ib_numbered_name(text);
    ASSERT_TRUE(r) << text << ": " << r.error().message;
    EXPECT_EQ(r->number, number == 8 ? 0 : number);
    EXPECT_EQ(r->name, name);
    ++number;
  }
  auto no_newline = parse_ib_numbered_name("5: LinkUp");
  ASSERT_TRUE(no_newline);
  EXPECT_EQ(no_newline->number, 5);
}

TEST(IbParse, GarbageStateIsAnError) {
  for (std::string_view bad :
       {"", "\n", "ACTIVE\n", "4:ACTIVE\n", "x: ACTIVE\n", "-1: DOWN\n", " 4: ACTIVE\n", "4: \n",
        "4:  ACTIVE\n", "99999999999: DOWN\n", "4 : ACTIVE\n"}) {
    auto r = parse_ib_numbered_name(bad);
    EXPECT_FALSE(r) << "accepted \"" << bad << "\"";
    if (!r) {
      EXPECT_NE(r.error().message.find("parse IB port state"), std::string::npos);
    }
  }
}

TEST(IbParse, CounterIsAWholeUnsignedDecimal) {
  EXPECT_EQ(parse_ib_counter("0\n").value_or(99), 0u);
  EXPECT_EQ(parse_ib_counter("255\n").value_or(0), 255u);
  EXPECT_EQ(parse_ib_counter("7").value_or(0), 7u);
  EXPECT_EQ(parse_ib_counter("18446744073709551615\n").value_or(0), 18446744073709551615ull);
  for (std::string_view bad :
       {"", "\n", "-1\n", "12a\n", "1 2\n", "0x10\n", "+3\n", "18446744073709551616\n"}) {
    auto r = parse_ib_counter(bad);
    EXPECT_FALSE(r) << "accepted \"" << bad << "\"";
  }
}

TEST(IbDiff, FirstReadingReportsOnlyExpectedPortsThatAreDown) {
  Differ d({"mlx5_0/1", "mlx5_1/1"});
  auto f = d.step(reading({up("mlx5_0/1"), down("mlx5_0/2"), down("mlx5_1/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].device, "mlx5_1/1");
  EXPECT_EQ(f[0].code, 1);
  EXPECT_EQ(f[0].subject, "state DOWN, phys_state Polling");
  EXPECT_NE(f[0].text.find("mlx5_1/1"), std::string::npos);
  // Still down: no repeat; the unused mlx5_0/2 never reports.
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1"), down("mlx5_0/2"), down("mlx5_1/1")})).empty());
}

TEST(IbDiff, PortLeavingActiveIsDownOnceAndUpCloses) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1")})).empty());
  auto f = d.step(reading({port("mlx5_0/1", 2, "INIT", 5, "LinkUp")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].subject, "state INIT, phys_state LinkUp");
  EXPECT_TRUE(d.step(reading({down("mlx5_0/1")})).empty());
  f = d.step(reading({up("mlx5_0/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_up);
  EXPECT_EQ(f[0].device, "mlx5_0/1");
  EXPECT_EQ(f[0].subject, "state ACTIVE, phys_state LinkUp");
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1")})).empty());
}

TEST(IbDiff, PhysStateLeavingLinkUpIsDownEvenWhenStateSaysActive) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1")})).empty());
  auto f = d.step(reading({port("mlx5_0/1", 4, "ACTIVE", 6, "LinkErrorRecovery")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].subject, "state ACTIVE, phys_state LinkErrorRecovery");
}

TEST(IbDiff, UnexpectedPortDownAtStartIsSilentUntilItIsUsed) {
  Differ d;
  EXPECT_TRUE(d.step(reading({down("mlx5_0/2")})).empty());
  // Coming up closes nothing, so says nothing; going down after that is a fault.
  EXPECT_TRUE(d.step(reading({up("mlx5_0/2")})).empty());
  auto f = d.step(reading({down("mlx5_0/2")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].code, 2);
}

TEST(IbDiff, LinkDownedRiseIsReportedWithTheIncreaseAndAResetRebaselines) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 3)})).empty());
  auto f = d.step(reading({up("mlx5_0/1", 5)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_link_downed);
  EXPECT_EQ(f[0].code, 2);
  EXPECT_EQ(f[0].device, "mlx5_0/1");
  EXPECT_EQ(f[0].subject, "link_downed 3 -> 5");
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 5)})).empty());
  // perfquery -R (or a driver reload) cleared the counter: a new baseline, not a finding.
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 0)})).empty());
  f = d.step(reading({up("mlx5_0/1", 1)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, 1);
  EXPECT_EQ(f[0].subject, "link_downed 0 -> 1");
}

TEST(IbDiff, FlapThatLeftThePortDownGivesBothFindings) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 0)})).empty());
  auto f = d.step(reading({down("mlx5_0/1", 1)}));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[1].kind, Kind::ib_link_downed);
  EXPECT_EQ(f[1].code, 1);
}

TEST(IbDiff, UnreadableCounterKeepsTheBaseline) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 4)})).empty());
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", std::nullopt)})).empty());
  auto f = d.step(reading({up("mlx5_0/1", 6)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "link_downed 4 -> 6");
}

TEST(IbDiff, UnreadableStateKeepsTheLastJudgement) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1")})).empty());
  IbPortReading unknown{"mlx5_0/1", std::nullopt, "", std::nullopt, "", 0};
  EXPECT_TRUE(d.step(reading({unknown})).empty());
  // One field known to be bad is enough to call the port down.
  IbPortReading half{"mlx5_0/1", 1, "DOWN", std::nullopt, "", 0};
  auto f = d.step(reading({half}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].subject, "state DOWN, phys_state unreadable");
}

TEST(IbDiff, ExpectedPortMissingIsDownAndItsArrivalCloses) {
  Differ d({"mlx5_0/1"});
  auto f = d.step(reading({}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].device, "mlx5_0/1");
  EXPECT_EQ(f[0].subject, "port not found");
  EXPECT_TRUE(d.step(reading({})).empty());
  f = d.step(reading({up("mlx5_0/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_up);
}

TEST(IbDiff, PortThatVanishesWhileUpIsDownAndReturnsAsUp) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1", 7), up("mlx5_1/1")})).empty());
  auto f = d.step(reading({up("mlx5_1/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_down);
  EXPECT_EQ(f[0].device, "mlx5_0/1");
  EXPECT_EQ(f[0].subject, "port missing");
  // Back with its counter restarted at 0: up again, and no counter finding.
  f = d.step(reading({up("mlx5_0/1", 0), up("mlx5_1/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_port_up);
}

TEST(IbDiff, HotpluggedPortsAreBaselined) {
  Differ d;
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1")})).empty());
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1"), down("mlx5_2/1", 9), up("mlx5_3/1", 4)})).empty());
  auto f = d.step(reading({up("mlx5_0/1"), down("mlx5_2/1", 9), up("mlx5_3/1", 5)}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::ib_link_downed);
  EXPECT_EQ(f[0].device, "mlx5_3/1");
}

TEST(IbDiff, IncompleteReadingSaysNothingAboutPortsItDidNotReach) {
  Differ d({"mlx5_0/1"});
  EXPECT_TRUE(d.step(reading({up("mlx5_0/1"), up("mlx5_1/1")})).empty());
  EXPECT_TRUE(d.step(IbReading{{}, false}).empty());
  auto f = d.step(reading({up("mlx5_0/1")}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].device, "mlx5_1/1");
  EXPECT_EQ(f[0].subject, "port missing");
}

// A sysfs-shaped tree: /sys/class/infiniband/<dev> -> ../../devices/.../infiniband/<dev>.
class IbTree {
 public:
  IbTree() { host_.mkdir("/sys/class/infiniband"); }
  void add_device(const std::string& dev) {
    std::string real = "/sys/devices/pci0000:00/0000:00:02.0/infiniband/" + dev;
    host_.mkdir(real);
    host_.symlink("../../devices/pci0000:00/0000:00:02.0/infiniband/" + dev,
                  "/sys/class/infiniband/" + dev);
  }
  void set(const std::string& dev, int port, std::string_view state, std::string_view phys,
           std::optional<std::string_view> link_downed = "0\n") {
    std::string dir = "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port);
    host_.write(dir + "/state", state);
    host_.write(dir + "/phys_state", phys);
    if (link_downed) host_.write(dir + "/counters/link_downed", *link_downed);
    host_.write(dir + "/rate", "400 Gb/sec (4X NDR)\n");
  }
  std::filesystem::path path(const std::string& host_path) const {
    return host_.dir() / host_path.substr(1);
  }
  std::string root() const { return path("/sys/class/infiniband").string(); }

 private:
  test::TempHost host_;
};

IbProbe make_probe(const std::string& root, std::vector<std::string> expect = {}) {
  auto p = IbProbe::create(IbOptions{root, std::move(expect)});
  EXPECT_TRUE(p) << p.error().message;
  return std::move(p).value();
}

TEST(IbProbe, NoInfinibandRootIsAnEmptyReadingNotAnError) {
  test::TempHost host;
  auto probe = make_probe((host.dir() / "sys/class/infiniband").string());
  EXPECT_EQ(probe.name(), "ib");
  auto f = probe.poll(1s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());
  auto r = read_ib_ports((host.dir() / "nope").string(), std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ports.empty());
  EXPECT_TRUE(r->complete);
}

TEST(IbProbe, RootThatIsNotADirectoryIsAnError) {
  test::TempHost host;
  host.write("/sys/class/infiniband", "not a directory\n");
  auto probe = make_probe((host.dir() / "sys/class/infiniband").string());
  auto f = probe.poll(1s);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("sys/class/infiniband"), std::string::npos) << f.error().message;
}

TEST(IbProbe, ReadsTheSysfsTreeAndReportsChanges) {
  IbTree tree;
  tree.add_device("mlx5_0");
  tree.add_device("mlx5_1");
  tree.set("mlx5_0", 1, kActive, kLinkUp, "3\n");
  tree.set("mlx5_0", 2, kDown, kPolling);  // an unused port: DOWN forever, never reported
  tree.set("mlx5_1", 1, kActive, kLinkUp);

  auto r = read_ib_ports(tree.root(), std::chrono::steady_clock::now() + 5s);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->ports.size(), 3u);
  EXPECT_EQ(r->ports[0].port, "mlx5_0/1");
  EXPECT_EQ(r->ports[0].state, 4);
  EXPECT_EQ(r->ports[0].state_name, "ACTIVE");
  EXPECT_EQ(r->ports[0].phys_state, 5);
  EXPECT_EQ(r->ports[0].phys_state_name, "LinkUp");
  EXPECT_EQ(r->ports[0].link_downed, 3u);
  EXPECT_EQ(r->ports[1].port, "mlx5_0/2");
  EXPECT_EQ(r->ports[1].phys_state_name, "Polling");
  EXPECT_EQ(r->ports[2].port, "mlx5_1/1");

  auto probe = make_probe(tree.root(), {"mlx5_0/1", "mlx5_1/1"});
  auto f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());

  // The cable of mlx5_0/1 is pulled: the link goes down once and the port falls to DOWN/Polling.
  tree.set("mlx5_0", 1, kDown, kPolling, "4\n");
  f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].kind, Kind::ib_port_down);
  EXPECT_EQ((*f)[0].device, "mlx5_0/1");
  EXPECT_EQ((*f)[0].subject, "state DOWN, phys_state Polling");
  EXPECT_EQ((*f)[1].kind, Kind::ib_link_downed);
  EXPECT_EQ((*f)[1].code, 1);

  f = probe.poll(5s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->empty());

  tree.set("mlx5_0", 1, kActive, kLinkUp, "4\n");
  f = probe.poll(5s);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].kind, Kind::ib_port_up);
  EXPECT_EQ((*f)[0].device, "mlx5_0/1");
}

TEST(IbProbe, ExpectedPortDownAtStartIsReported) {
  IbTree tree;
  tree.add_device("mlx5_0");
  tree.set("mlx5_0", 1, kDown, "3: Disabled\n");
  auto probe = make_probe(tree.root(), {"mlx5_0/1", "mlx5_9/1"});
  auto f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].device, "mlx5_0/1");
  EXPECT_EQ((*f)[0].subject, "state DOWN, phys_state Disabled");
  EXPECT_EQ((*f)[1].device, "mlx5_9/1");
  EXPECT_EQ((*f)[1].subject, "port not found");
}

TEST(IbProbe, UnreadableFilesAreSkippedForThatPortOnly) {
  IbTree tree;
  tree.add_device("mlx5_0");
  tree.set("mlx5_0", 1, kActive, kLinkUp, std::nullopt);  // no counters directory
  tree.set("mlx5_0", 2, kActive, kLinkUp);
  // A directory where a file should be cannot be read; garbage cannot be parsed.
  std::filesystem::remove(tree.path("/sys/class/infiniband/mlx5_0/ports/2/state"));
  std::filesystem::create_directory(tree.path("/sys/class/infiniband/mlx5_0/ports/2/state"));
  tree.add_device("mlx5_1");
  tree.set("mlx5_1", 1, "garbage\n", kLinkUp, "x\n");

  auto r = read_ib_ports(tree.root(), std::chrono::steady_clock::now() + 5s);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->ports.size(), 3u);
  EXPECT_EQ(r->ports[0].state, 4);
  EXPECT_FALSE(r->ports[0].link_downed);
  EXPECT_FALSE(r->ports[1].state);
  EXPECT_EQ(r->ports[1].phys_state, 5);
  EXPECT_FALSE(r->ports[2].state);
  EXPECT_FALSE(r->ports[2].link_downed);

  auto probe = make_probe(tree.root());
  auto f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());
}

TEST(IbProbe, ExhaustedBudgetLeavesTheReadingIncomplete) {
  IbTree tree;
  tree.add_device("mlx5_0");
  tree.set("mlx5_0", 1, kDown, kPolling);
  auto r = read_ib_ports(tree.root(), std::chrono::steady_clock::now() - 1ms);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->complete);
  EXPECT_TRUE(r->ports.empty());
  // With no time to read, the expected port is neither seen nor called missing; later it is.
  auto probe = make_probe(tree.root(), {"mlx5_0/1"});
  auto f = probe.poll(0ms);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->empty());
  f = probe.poll(5s);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].subject, "state DOWN, phys_state Polling");
}

TEST(IbProbe, CreateRejectsMalformedExpectedPorts) {
  for (std::string bad : {"mlx5_0", "mlx5_0/", "/1", "mlx5_0/one", "mlx5_0:1"}) {
    auto p = IbProbe::create(IbOptions{"/sys/class/infiniband", {bad}});
    ASSERT_FALSE(p) << bad;
    EXPECT_NE(p.error().message.find(bad), std::string::npos) << p.error().message;
  }
  EXPECT_TRUE(IbProbe::create(IbOptions{"/sys/class/infiniband", {"mlx5_0/1", "ibp1s0/2"}}));
}

}  // namespace
}  // namespace cmax::probes
