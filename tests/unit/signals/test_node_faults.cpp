// Issue 37: every line of tests/golden/node_faults (real kernel lines of node faults that are not
// the GPU, each with its public source in README.md) through the whole engine, prefix, classifier
// and correlator, one line at a time, against expected.tsv: the kind, device and action an SRE
// expects, or no signal at all for a context line. The benign files of each family raise nothing
// at restart_app or above; the files together raise every kind issue 37 names.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "signals/catalog.h"
#include "signals/correlate.h"
#include "signals/pstore.h"
#include "signals/scanner.h"
#include "support/signals_catalog.h"

using namespace cmax::signals;

namespace {

const std::string kDir = std::string(CMAX_SOURCE_DIR) + "/tests/golden/node_faults/";

struct Row {
  std::string file;
  int line = 0;
  std::string kind, device, action;
};

std::vector<Row> expected_rows() {
  std::ifstream in(kDir + "expected.tsv");
  std::vector<Row> rows;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream fields(text);
    Row r;
    std::string line;
    std::getline(fields, r.file, '\t');
    std::getline(fields, line, '\t');
    std::getline(fields, r.kind, '\t');
    std::getline(fields, r.device, '\t');
    std::getline(fields, r.action, '\t');
    r.line = std::stoi(line);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(kDir + file);
  std::vector<std::string> out;
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

std::vector<Incident> scan_one(const std::string& line) {
  Correlator correlator(cmax::test::signals_catalog());
  auto scanner = Scanner::create(correlator);
  EXPECT_TRUE(scanner);
  if (!scanner) return {};
  auto r = scanner->scan_text(line + "\n", "node");
  EXPECT_TRUE(r) << r.error().message;
  return correlator.take_incidents();
}

}  // namespace

TEST(NodeFaults, EveryLineOfTheCorpusDecidesAsExpected) {
  const auto rows = expected_rows();
  ASSERT_GE(rows.size(), 180u) << "expected.tsv lost its rows";
  std::map<std::string, std::vector<std::string>> files;
  int checked = 0;
  for (const auto& r : rows) {
    auto& lines = files[r.file];
    if (lines.empty()) lines = lines_of(r.file);
    ASSERT_LE(r.line, static_cast<int>(lines.size())) << r.file;
    const std::string& text = lines[static_cast<std::size_t>(r.line - 1)];
    SCOPED_TRACE(fmt::format("{}:{}: {}", r.file, r.line, text));
    auto incidents = scan_one(text);
    if (r.kind == "-") {
      EXPECT_TRUE(incidents.empty()) << "a context or benign line raised " << to_string(incidents[0].kind);
    } else {
      ASSERT_EQ(incidents.size(), 1u);
      EXPECT_EQ(to_string(incidents[0].kind), r.kind);
      EXPECT_EQ(incidents[0].device.empty() ? "-" : incidents[0].device, r.device);
      EXPECT_EQ(to_string(incidents[0].action), r.action);
    }
    ++checked;
  }
  // Every line of every family file is in the table: a line added to the corpus needs a decision.
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    const auto name = entry.path().filename().string();
    if (entry.path().extension() != ".txt" || name.find("pstore") != std::string::npos) continue;
    int nonblank = 0;
    for (const auto& l : lines_of(name)) nonblank += !l.empty();
    int listed = 0;
    for (const auto& r : rows) listed += r.file == name;
    EXPECT_EQ(listed, nonblank) << name << ": every line needs a row in expected.tsv";
  }
  EXPECT_GT(checked, 0);
}

TEST(NodeFaults, BenignLinesOfEachFamilyRaiseNothingActionable) {
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    const auto name = entry.path().filename().string();
    if (name.find(".benign.txt") == std::string::npos) continue;
    for (const auto& line : lines_of(name)) {
      if (line.empty()) continue;
      SCOPED_TRACE(name + ": " + line);
      for (const auto& inc : scan_one(line)) EXPECT_LT(inc.action, Action::restart_app) << to_string(inc.kind);
    }
  }
}

TEST(NodeFaults, TheCorpusRaisesEveryNodeFaultKind) {
  std::set<std::string> seen;
  for (const auto& r : expected_rows())
    if (r.kind != "-") seen.insert(r.kind);
  for (Kind k : {Kind::fs_readonly, Kind::fs_error, Kind::block_eod, Kind::block_io, Kind::md_degraded, Kind::md_failed,
                 Kind::nvme, Kind::oom, Kind::oom_memcg, Kind::kernel_panic, Kind::kernel_oops, Kind::soft_lockup,
                 Kind::hard_lockup, Kind::hung_task, Kind::nfs_timeout, Kind::nfs_state, Kind::nfs_writeback,
                 Kind::peermem, Kind::gpu_lib_segfault, Kind::mlx5_pcie_power, Kind::mlx5_cmd_err, Kind::ib_port,
                 Kind::mlx5_fatal, Kind::nvlink_training, Kind::file_max, Kind::mce, Kind::edac_ce, Kind::edac_ue,
                 Kind::memory_failure, Kind::xid})
    EXPECT_TRUE(seen.count(std::string(to_string(k)))) << "no golden line for " << to_string(k);
}

// A whole record, as the kernel prints it, is one incident per fault, not one per line.
TEST(NodeFaults, AnOomRecordIsOneIncidentOfItsScope) {
  Correlator correlator(cmax::test::signals_catalog());
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  // 03_oom.txt lines 8-9 (0jc1/py-autovod #7): the summary and the kill line of one global OOM.
  auto lines = lines_of("03_oom.txt");
  ASSERT_TRUE(scanner->scan_text(lines[7] + "\n" + lines[8] + "\n", "node"));
  auto incidents = correlator.take_incidents();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].kind, Kind::oom);
  EXPECT_EQ(incidents[0].action, Action::drain);
  EXPECT_EQ(incidents[0].count, 2);
}

// pstore: "%s#%d Part%u" headers; a dump's parts read oldest (highest part) first, so the panic,
// in Part1, comes last and the scan of the records finds it (04_kernel_panic.pstore_*.sample.txt is
// gpud's ERST fixture: its first line and the 34 lines around the panic).
TEST(Pstore, HeadersParseAndNothingElseDoes) {
  auto h = parse_pstore_header("Panic#2 Part1\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->why, "Panic");
  EXPECT_EQ(h->count, 2);
  EXPECT_EQ(h->part, 1);
  EXPECT_TRUE(h->crash());
  auto s = parse_pstore_header("Shutdown#1 Part3");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->crash());
  for (std::string_view bad : {"", "Panic", "Panic#x Part1", "Panic#1 Part", "Pa nic#1 Part1", "<6>[ 1.0] Panic#1 Part1",
                               "#1 Part1", "Panic#-1 Part1", "Panic#1 Part1 more"})
    EXPECT_FALSE(parse_pstore_header(bad)) << bad;
}

TEST(Pstore, RecordsReadOldestFirstAndTheirPanicIsFound) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cmax-pstore-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  std::ifstream sample(kDir + "04_kernel_panic.pstore_dmesg-erst.sample.txt");
  std::string panic((std::istreambuf_iterator<char>(sample)), std::istreambuf_iterator<char>());
  write("dmesg-erst-2", panic);  // Panic#1 Part1: the newest text
  write("dmesg-erst-1", "Panic#1 Part2\n<6>[ 2971.000000] older boot messages\n");
  write("console-ramoops-0", "[    0.000000] Linux version 5.15.0\n");
  auto records = read_pstore(dir.string());
  ASSERT_TRUE(records) << records.error().message;
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].header->part, 2);
  EXPECT_EQ((*records)[1].header->part, 1);
  EXPECT_FALSE((*records)[2].header) << "a console record has no header and comes last";
  EXPECT_EQ((*records)[1].text.find("Panic#1"), std::string::npos) << "the header is not part of the log";

  Correlator correlator(cmax::test::signals_catalog());
  auto scanner = Scanner::create(correlator);
  ASSERT_TRUE(scanner);
  for (const auto& r : *records) ASSERT_TRUE(scanner->scan_text(r.text, "node"));
  auto incidents = correlator.take_incidents();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].kind, Kind::kernel_panic);
  EXPECT_EQ(incidents[0].action, Action::reboot_node);

  auto missing = read_pstore((dir / "absent").string());
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->empty()) << "no pstore mounted: no records, no error";
  std::filesystem::remove_all(dir);
}
