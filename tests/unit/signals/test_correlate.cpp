#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "signals/catalog.h"
#include "signals/correlate.h"
#include "signals/scanner.h"

using namespace cmax::signals;

namespace {

Catalog builtin() {
  auto c = Catalog::builtin();
  EXPECT_TRUE(c) << c.error().message;
  return std::move(c).value();
}

struct Outcome {
  std::vector<Incident> incidents;
  ScanStats stats;
};

// Scans `text` as one log of node `node` through a fresh correlator.
Outcome scan(std::string_view text, const Catalog& catalog, ScanOptions options = {},
             const std::string& node = "n1") {
  Correlator correlator(catalog);
  auto scanner = Scanner::create(correlator, options);
  EXPECT_TRUE(scanner) << scanner.error().message;
  if (!scanner) return {};
  auto r = scanner->scan_text(text, node);
  EXPECT_TRUE(r) << r.error().message;
  return {correlator.incidents(), scanner->stats()};
}

Outcome scan(std::string_view text) { return scan(text, builtin()); }

bool has_related(const Incident& inc, std::string_view part) {
  for (const auto& r : inc.related)
    if (r.find(part) != std::string::npos) return true;
  return false;
}

std::string related_of(const Incident& inc) { return fmt::format("[{}]", fmt::join(inc.related, ", ")); }

std::string xid_line(std::string_view pci, int code, std::string_view rest = "pid=5171, Uncontained: FBHUB. RST: Yes, D-RST: No") {
  return fmt::format("NVRM: Xid (PCI:{}): {}, {}\n", pci, code, rest);
}

// "Nov 22 HH:MM:SS gpu-07 kernel: " for `minutes` after 14:00.
std::string syslog_at(int minutes, std::string_view host = "gpu-07") {
  return fmt::format("Nov 22 {:02}:{:02}:00 {} kernel: ", 14 + minutes / 60, minutes % 60, host);
}

}  // namespace

TEST(Correlate, FloodOfOneXidIsOneIncident) {
  std::string log;
  for (int i = 0; i < 10000; ++i) log += xid_line("0000:37:00", 95);
  auto out = scan(log);
  ASSERT_EQ(out.incidents.size(), 1u);
  const Incident& inc = out.incidents[0];
  EXPECT_EQ(inc.count, 10000u);
  EXPECT_EQ(inc.kind, Kind::xid);
  EXPECT_EQ(inc.code, 95);
  EXPECT_EQ(inc.device, "0000:37:00");
  EXPECT_EQ(inc.node, "n1");
  EXPECT_EQ(inc.action, Action::reset_gpu);
  EXPECT_EQ(out.stats.signals, 10000u);
}

TEST(Correlate, FloodOnTwoGpusIsTwoIncidents) {
  std::string log;
  for (int i = 0; i < 10000; ++i) log += xid_line(i % 2 ? "0000:37:00" : "0000:b5:00", 95);
  auto out = scan(log);
  ASSERT_EQ(out.incidents.size(), 2u);
  EXPECT_EQ(out.incidents[0].device, "0000:b5:00");
  EXPECT_EQ(out.incidents[1].device, "0000:37:00");
  EXPECT_EQ(out.incidents[0].count, 5000u);
  EXPECT_EQ(out.incidents[1].count, 5000u);
}

TEST(Correlate, RepeatsBeyondTheWindowAreNewIncidents) {
  auto far = scan(syslog_at(0) + xid_line("0000:37:00", 95) + syslog_at(10) + xid_line("0000:37:00", 95));
  ASSERT_EQ(far.incidents.size(), 2u);
  EXPECT_EQ(far.incidents[0].count, 1u);
  EXPECT_EQ(far.incidents[1].count, 1u);
  EXPECT_EQ(far.incidents[0].first_seen, "Nov 22 14:00:00");
  EXPECT_EQ(far.incidents[1].first_seen, "Nov 22 14:10:00");

  auto near = scan(syslog_at(0) + xid_line("0000:37:00", 95) + syslog_at(4) + xid_line("0000:37:00", 95));
  ASSERT_EQ(near.incidents.size(), 1u);
  EXPECT_EQ(near.incidents[0].count, 2u);
  EXPECT_EQ(near.incidents[0].first_seen, "Nov 22 14:00:00");
  EXPECT_EQ(near.incidents[0].last_seen, "Nov 22 14:04:00");
}

TEST(Correlate, Xid45IsChargedToTheXidThatCausedIt) {
  auto out = scan("[ 100.000000] " + xid_line("0000:3b:00", 79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.") +
                  "[ 101.000000] " + xid_line("0000:3b:00", 45, "pid=1234, name=python3, Ch 00000010, caused by previous Xid 79") +
                  "[ 101.500000] " + xid_line("0000:3b:00", 45, "pid=1235, name=python3, Ch 00000011"));
  ASSERT_EQ(out.incidents.size(), 1u) << "Xid 45 must not open an incident of its own";
  const Incident& inc = out.incidents[0];
  EXPECT_EQ(inc.code, 79);
  EXPECT_EQ(inc.count, 1u);
  EXPECT_EQ(inc.action, Action::reboot_node);
  EXPECT_TRUE(has_related(inc, "Xid 45")) << related_of(inc);
  EXPECT_TRUE(has_related(inc, "x2")) << related_of(inc);
  EXPECT_EQ(inc.last_seen, "[ 101.500000]");
}

TEST(Correlate, Xid45OnAnotherGpuOrOutsideTheWindowIsItsOwn) {
  auto other_gpu = scan(xid_line("0000:3b:00", 79) + xid_line("0000:5e:00", 45, "pid=1, name=a, Ch 1"));
  ASSERT_EQ(other_gpu.incidents.size(), 2u);
  EXPECT_EQ(other_gpu.incidents[1].code, 45);
  EXPECT_EQ(other_gpu.incidents[1].action, Action::ignore);

  auto late = scan("[ 100.0] " + xid_line("0000:3b:00", 79) + "[ 1000.0] " + xid_line("0000:3b:00", 45, "pid=1, name=a, Ch 1"));
  ASSERT_EQ(late.incidents.size(), 2u);
  EXPECT_TRUE(late.incidents[0].related.empty()) << related_of(late.incidents[0]);
}

TEST(Correlate, AerThenXid79ThenXid154IsOneGpuFault) {
  auto out = scan(
      "[ 200.000000] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0\n"
      "[ 200.100000] " +
      xid_line("0000:3b:00", 79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.") + "[ 200.200000] " +
      xid_line("0000:3b:00", 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"));
  ASSERT_EQ(out.incidents.size(), 1u);
  const Incident& inc = out.incidents[0];
  EXPECT_EQ(inc.kind, Kind::aer_fatal);
  EXPECT_EQ(inc.device, "0000:3b:00.0");
  EXPECT_EQ(inc.action, Action::reboot_node);
  EXPECT_TRUE(has_related(inc, "Xid 79")) << related_of(inc);
  EXPECT_TRUE(has_related(inc, "Xid 154")) << related_of(inc);
  EXPECT_EQ(inc.first_seen, "[ 200.000000]");
  EXPECT_EQ(inc.last_seen, "[ 200.200000]");
}

TEST(Correlate, GpuFaultChainTakesTheStrongestAction) {
  // A non-fatal AER drains; the Xid 154 that follows asks for a reboot.
  auto out = scan(
      "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n" +
      xid_line("0000:3b:00", 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"));
  ASSERT_EQ(out.incidents.size(), 1u);
  EXPECT_EQ(out.incidents[0].kind, Kind::aer_nonfatal);
  EXPECT_EQ(out.incidents[0].action, Action::reboot_node);
  EXPECT_NE(out.incidents[0].reason.find("154"), std::string::npos) << out.incidents[0].reason;
}

TEST(Correlate, NfsOkResolvesNotResponding) {
  auto out = scan(
      "[ 10.0] nfs: server nas01 not responding, still trying\n"
      "[ 11.0] nfs: server nas01 not responding, still trying\n"
      "[ 40.0] nfs: server nas01 OK\n");
  ASSERT_EQ(out.incidents.size(), 1u);
  const Incident& inc = out.incidents[0];
  EXPECT_EQ(inc.kind, Kind::nfs_timeout);
  EXPECT_EQ(inc.device, "nas01");
  EXPECT_EQ(inc.count, 2u);
  EXPECT_TRUE(inc.resolved);
  EXPECT_TRUE(has_related(inc, "nfs_ok")) << related_of(inc);
}

TEST(Correlate, TimeoutAfterRecoveryIsANewIncident) {
  auto out = scan(
      "[ 10.0] nfs: server nas01 not responding, still trying\n"
      "[ 40.0] nfs: server nas01 OK\n"
      "[ 50.0] nfs: server nas01 not responding, still trying\n"
      "[ 51.0] nfs: server nas01 not responding, still trying\n");
  ASSERT_EQ(out.incidents.size(), 2u);
  EXPECT_TRUE(out.incidents[0].resolved);
  EXPECT_EQ(out.incidents[0].count, 1u);
  EXPECT_FALSE(out.incidents[1].resolved);
  EXPECT_EQ(out.incidents[1].count, 2u);
}

TEST(Correlate, OkForAnotherServerResolvesNothing) {
  Catalog cat = builtin();
  Correlator correlator(cat);
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text("nfs: server nas01 not responding, still trying\nnfs: server nas02 OK\n", "n1"));
  ASSERT_EQ(correlator.incidents().size(), 1u);
  EXPECT_FALSE(correlator.incidents()[0].resolved);
  EXPECT_EQ(correlator.unmatched_closes(), 1u);
}

TEST(Correlate, LinkUpResolvesCarrierLoss) {
  auto out = scan("ixgbe 0000:01:00.0 eth0: NIC Link is Down\nixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX\n");
  ASSERT_EQ(out.incidents.size(), 1u);
  EXPECT_EQ(out.incidents[0].kind, Kind::net_carrier);
  EXPECT_TRUE(out.incidents[0].resolved);
}

TEST(Correlate, HostFieldsNameTheNode) {
  auto out = scan(syslog_at(0, "gpu-07") + xid_line("0000:37:00", 95) + syslog_at(0, "gpu-08") +
                      xid_line("0000:37:00", 95) + syslog_at(1, "gpu-07") + xid_line("0000:37:00", 95),
                  builtin(), {}, "collected.log");
  ASSERT_EQ(out.incidents.size(), 2u);
  EXPECT_EQ(out.incidents[0].node, "gpu-07");
  EXPECT_EQ(out.incidents[0].count, 2u);
  EXPECT_EQ(out.incidents[1].node, "gpu-08");
  EXPECT_EQ(out.incidents[1].count, 1u);
}

TEST(Correlate, SrunPrefixesNameTheTask) {
  auto out = scan("0: [ 5.1] " + xid_line("0000:37:00", 13, "pid=1, name=a, Graphics Exception") + "3: [ 5.2] " +
                      xid_line("0000:37:00", 13, "pid=2, name=a, Graphics Exception") + "[1,0]<stdout>: " +
                      xid_line("0000:37:00", 13, "pid=3, name=a, Graphics Exception"),
                  builtin(), {}, "job42");
  ASSERT_EQ(out.incidents.size(), 2u);
  EXPECT_EQ(out.incidents[0].node, "job42/task0");
  EXPECT_EQ(out.incidents[0].count, 2u);
  EXPECT_EQ(out.incidents[1].node, "job42/task3");
}

TEST(Correlate, ApplicationXidsEscalateToGpuReset) {
  // Xid 13 is application-class: 10 on one GPU within 3600 s point at the GPU.
  std::string thirteen, nine;
  for (int i = 0; i < 13; ++i) {
    std::string line = syslog_at(i * 4) + xid_line("0000:b5:00", 13, "pid=9, name=a, Graphics Exception");
    thirteen += line;
    if (i < 9) nine += line;
  }
  auto out = scan(thirteen);
  ASSERT_EQ(out.incidents.size(), 1u);
  EXPECT_EQ(out.incidents[0].count, 13u);
  EXPECT_EQ(out.incidents[0].action, Action::reset_gpu);
  EXPECT_NE(out.incidents[0].reason.find("escalated"), std::string::npos) << out.incidents[0].reason;

  auto few = scan(nine);
  ASSERT_EQ(few.incidents.size(), 1u);
  EXPECT_EQ(few.incidents[0].count, 9u);
  EXPECT_EQ(few.incidents[0].action, Action::restart_app);
}

TEST(Correlate, ConfigIgnoresAnXid) {
  Catalog cat = builtin();
  auto r = cat.apply_config(R"({"schema": "cmax.signals-config/1", "ignore": {"xid": [43]}})", "test.json");
  ASSERT_TRUE(r) << r.error().message;
  auto out = scan(xid_line("0000:01:00", 43, "Ch 00000020, engmask 00000101") + xid_line("0000:01:00", 13, "pid=1, name=a, x"), cat);
  ASSERT_EQ(out.incidents.size(), 1u);
  EXPECT_EQ(out.incidents[0].code, 13);
  EXPECT_EQ(out.stats.ignored, 1u);
  EXPECT_EQ(out.stats.signals, 2u);
}

TEST(Correlate, KmsgOrigin) {
  std::string log = "11,386,2400315688,-;" + xid_line("0000:3b:00", 79) + "3,387,2400315700,-;" + xid_line("0000:5e:00", 79);
  auto all = scan(log);
  ASSERT_EQ(all.incidents.size(), 2u);
  EXPECT_EQ(all.incidents[0].origin, "userspace");
  EXPECT_EQ(all.incidents[1].origin, "kernel");

  ScanOptions kernel_only;
  kernel_only.kernel_origin_only = true;
  auto kernel = scan(log, builtin(), kernel_only);
  ASSERT_EQ(kernel.incidents.size(), 1u);
  EXPECT_EQ(kernel.incidents[0].device, "0000:5e:00");
  EXPECT_EQ(kernel.stats.userspace_dropped, 1u);
}

// Memory stays bounded whatever the log: past the cap, noise from new devices folds into one overflow
// incident per node, kind and code, faults that need action keep their own incidents while the
// overflow allowance lasts, and past it lines are counted and dropped. No line is lost from the counts.
TEST(Correlate, IncidentCapBoundsIncidentsAndKeepsCounts) {
  const std::size_t devices = Correlator::kIncidentCap + 500;
  std::string text;
  for (std::size_t d = 0; d < devices; ++d)
    text += fmt::format("pcieport 0000:00:01.0: AER: Corrected error received: {:04x}:{:02x}:00.0\n", d >> 8, d & 255);
  text += "pcieport 0000:00:01.0: AER: Corrected error received: 0000:00:00.0\n";  // a repeat of the first
  // Past the cap, Xid 79s (reboot_node) on new hosts keep their own incidents, up to the allowance.
  const std::size_t hosts = Correlator::kOverflowCap + 50;
  for (std::size_t h = 0; h < hosts; ++h)
    text += fmt::format("Nov 22 14:00:00 host{} kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n", h);

  const Catalog catalog = builtin();
  Correlator correlator(catalog);
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text(text, "n1"));
  const auto& incidents = correlator.incidents();
  EXPECT_EQ(incidents.size(), Correlator::kIncidentCap + Correlator::kOverflowCap);
  std::uint64_t counted = 0;
  for (const auto& i : incidents) counted += i.count;
  EXPECT_EQ(counted + correlator.dropped_past_cap(), devices + 1 + hosts);
  EXPECT_EQ(incidents[0].count, 2u);  // the repeat merged into the device's own incident
  const Incident& overflow = incidents[Correlator::kIncidentCap];
  EXPECT_EQ(overflow.device, "*");
  EXPECT_EQ(overflow.kind, Kind::aer_corrected);
  EXPECT_EQ(overflow.count, 500u);
  EXPECT_NE(overflow.reason.find("incident cap"), std::string::npos);
  // The AER overflow took one slot, so hosts 0 .. kOverflowCap-2 got theirs; the rest were dropped.
  const Incident& host0 = incidents[Correlator::kIncidentCap + 1];
  EXPECT_EQ(host0.node, "host0");
  EXPECT_EQ(host0.device, "0000:3b:00");
  EXPECT_EQ(host0.action, Action::reboot_node);
  EXPECT_EQ(correlator.dropped_past_cap(), hosts - (Correlator::kOverflowCap - 1));
  EXPECT_EQ(correlator.merged_past_cap(), 500u);
}

// The agent learns from last_incident() which incident a line landed in.
TEST(Correlate, LastIncidentNamesWhereTheLineWent) {
  const Catalog catalog = builtin();
  Correlator c(catalog);
  auto scanner = Scanner::create(c);
  ASSERT_TRUE(scanner);
  ASSERT_TRUE(scanner->scan_text(xid_line("0000:3b:00", 79), "n1"));
  EXPECT_EQ(c.last_incident(), std::optional<std::size_t>(0));
  ASSERT_TRUE(scanner->scan_text(xid_line("0000:5e:00", 79), "n1"));
  EXPECT_EQ(c.last_incident(), std::optional<std::size_t>(1));
  ASSERT_TRUE(scanner->scan_text(xid_line("0000:3b:00", 79), "n1"));  // a repeat of the first
  EXPECT_EQ(c.last_incident(), std::optional<std::size_t>(0));
  ASSERT_TRUE(scanner->scan_text("nfs: server nas09 OK\n", "n1"));  // closes nothing
  EXPECT_FALSE(c.last_incident());
}
