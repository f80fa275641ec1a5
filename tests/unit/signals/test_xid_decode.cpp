// NVIDIA's register decodes as data: every row of the Xid 144-150 sheet through a line built from
// it, under an R570 and an R575 driver; the Fatal/Nonfatal word; the real lines of
// tests/golden/kmsg/nvlink_xid.log and xid74.log (sources in SOURCES.md); the Xid 74 bits.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "support/signals_catalog.h"
#include "signals/catalog.h"
#include "signals/classify.h"
#include "signals/csv.h"
#include "signals/prefix.h"
#include "signals/xid_decode.h"

using namespace cmax::signals;

namespace {

const Catalog& catalog() { return cmax::test::signals_catalog(); }

std::string slurp(const std::string& rel) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Signal signal_of(const std::string& line, int branch) {
  auto sig = classify(parse_line_prefix(line, 2026).message);
  EXPECT_TRUE(sig) << line;
  Signal s = sig ? *sig : Signal{};
  s.driver_branch = branch;
  return s;
}

std::string nvlink_line(int xid, const std::string& word, std::uint32_t intr, std::uint32_t status) {
  return fmt::format("NVRM: Xid (PCI:0018:01:00): {}, SUBCODE  {}   XC0 i0 Link 09 (0x{:08x} 0x{:08x} 0x00000000 "
                     "0x00000000 0x00000000 0x00000000)",
                     xid, word, intr, status);
}

Action sheet_action(std::string_view immediate) {
  return immediate == "RESET_GPU" ? Action::reset_gpu : Action::monitor;
}

}  // namespace

TEST(XidDecode, EveryRowOfTheSheetUnderItsOwnDriverGeneration) {
  auto rows = parse_csv(slurp("data/xid_nvlink_decode.csv"));
  ASSERT_TRUE(rows);
  ASSERT_GT(rows->size(), 190u);
  int checked = 0;
  std::map<std::string, std::vector<std::vector<std::string>>> by_row;  // "V1/45" -> its rows
  for (std::size_t i = 1; i < rows->size(); ++i)
    by_row[(*rows)[i].fields[1] + "/" + (*rows)[i].fields[8]].push_back((*rows)[i].fields);
  for (std::size_t i = 1; i < rows->size(); ++i) {
    const auto& f = (*rows)[i].fields;
    int xid = std::stoi(f[0]);
    int branch = f[1] == "V1" ? 570 : 575;
    std::uint32_t intr = 0;
    for (std::size_t k = 0; k < f[3].size(); ++k)
      if (f[3][f[3].size() - 1 - k] == '1') intr |= 1u << k;
    std::uint32_t status = f[4].empty() ? 0 : static_cast<std::uint32_t>(std::stoul(f[4].substr(0, f[4].find('/')), nullptr, 16));
    const bool fatal_row = f[5].find("atal") != std::string::npos && f[5].find("Non") == std::string::npos;
    // The line says what the row's severity says.
    Signal s = signal_of(nvlink_line(xid, fatal_row ? "Fatal" : "Nonfatal", intr, status), branch);
    ASSERT_EQ(s.nregs, 6u);
    auto d = catalog().reason_for(s);
    SCOPED_TRACE(fmt::format("sheet row {} {} {} mask {} status {}", f[8], f[1], f[2], f[3], f[4]));
    // The line decodes to this row (its number; Action-2 variants share it), or to a twin row of
    // the sheet with the same mask and status (TLW_RX PIPE0/PIPE1, MSE Degraded/MSE_WATCHDOG),
    // which must agree on the action; the action is the decoded row's.
    auto at = d.find(" row ");
    ASSERT_NE(at, std::string::npos) << d;
    const std::string got_row = d.substr(at + 5, d.find(':', at) - at - 5);
    const auto imm_at = d.find("): ") + 3;
    const std::string immediate = d.substr(imm_at, d.find(';', imm_at) - imm_at);
    if (got_row != f[8]) {
      bool twin = false;
      for (const auto& other : by_row[f[1] + "/" + got_row])
        twin |= other[3] == f[3] && other[4].find(f[4].substr(0, f[4].find('/'))) != std::string::npos;
      EXPECT_TRUE(twin) << d;
      EXPECT_EQ(immediate, f[6]) << "the sheet's twin rows disagree: " << d;
    }
    Action want = sheet_action(immediate);
    if (fatal_row == false && want < Action::reset_gpu && d.find("the line says Fatal") != std::string::npos) want = Action::reset_gpu;
    EXPECT_EQ(to_string(catalog().action_for(s)), to_string(want)) << d;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(rows->size()) - 1);
}

TEST(XidDecode, FatalAndNonfatalInstancesDiffer) {
  // SAW_MVB (Xid 144): ErrorStatus 0x1 is the sheet's Non-fatal IGNORE, 0x2 its Fatal RESET_GPU.
  Signal nonfatal = signal_of(nvlink_line(144, "Nonfatal", 0x21, 0x1), 570);
  Signal fatal = signal_of(nvlink_line(144, "Fatal", 0x21, 0x2), 570);
  EXPECT_EQ(catalog().action_for(nonfatal), Action::monitor);
  EXPECT_EQ(catalog().action_for(fatal), Action::reset_gpu);
  // A Fatal instance of a row the sheet marks non-fatal (promotable) takes Action 2.
  Signal promoted = signal_of(nvlink_line(144, "Fatal", 0x21, 0x1), 570);
  EXPECT_EQ(catalog().action_for(promoted), Action::reset_gpu);
  EXPECT_NE(catalog().reason_for(promoted).find("the line says Fatal"), std::string::npos);
}

TEST(XidDecode, R570AndR575DecodeTheSameRegistersDifferently) {
  // SAW_MVB on V1 is IntrInfo[9:5] = 1 (0x21); on V2 IntrInfo[6:0] = 1 (0x01).
  Signal v2_line_on_r570 = signal_of(nvlink_line(144, "Fatal", 0x01, 0x2), 570);
  Signal v2_line_on_r575 = signal_of(nvlink_line(144, "Fatal", 0x01, 0x2), 575);
  EXPECT_NE(catalog().reason_for(v2_line_on_r575).find("V2 (R575 on)"), std::string::npos);
  EXPECT_EQ(catalog().action_for(v2_line_on_r575), Action::reset_gpu);
  // Under R570 the same registers match no V1 row: the catalog's workflow (drain) decides.
  EXPECT_EQ(catalog().reason_for(v2_line_on_r570).find("decode"), std::string::npos);
  EXPECT_EQ(catalog().action_for(v2_line_on_r570), Action::drain);
  // RLW_RXPIPE: V1 bit 10 / V2 bit 7 turn IGNORE into RESET_GPU.
  EXPECT_EQ(catalog().action_for(signal_of(nvlink_line(145, "Nonfatal", 0x0c2, 0x1), 570)), Action::monitor);
  EXPECT_EQ(catalog().action_for(signal_of(nvlink_line(145, "Nonfatal", 0x4c2, 0x1), 570)), Action::reset_gpu);
  EXPECT_EQ(catalog().action_for(signal_of(nvlink_line(145, "Nonfatal", 0x06, 0x1), 580)), Action::monitor);
  EXPECT_EQ(catalog().action_for(signal_of(nvlink_line(145, "Nonfatal", 0x86, 0x1), 580)), Action::reset_gpu);
}

TEST(XidDecode, RealNvlinkLinesDecode) {
  std::istringstream in(slurp("tests/golden/kmsg/nvlink_xid.log"));
  std::string line;
  int decoded = 0;
  while (std::getline(in, line)) {
    auto sig = classify(parse_line_prefix(line, 2026).message);
    if (!sig || sig->kind != Kind::xid || sig->code < 144 || sig->code > 150) continue;
    EXPECT_GE(sig->nregs, 2u) << line;
    auto why = catalog().reason_for(*sig);
    EXPECT_NE(why.find("decode"), std::string::npos) << line << " -> " << why;
    decoded += why.find("decode") != std::string::npos;
  }
  EXPECT_GE(decoded, 15);
}

TEST(XidDecode, Xid74RegisterBits) {
  // NVIDIA's example (NVSentinel design doc): link 14, third register bit 16 -> field diags: drain.
  Signal s = signal_of("NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected "
                       "on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
                       -1);
  ASSERT_EQ(s.nregs, 7u);
  EXPECT_EQ(catalog().action_for(s), Action::drain);
  EXPECT_NE(catalog().reason_for(s).find("register 2 bit 16"), std::string::npos);
  // First register bit 0 only: "can be safely ignored" -> monitored.
  Signal benign = signal_of("NVRM: Xid (PCI:0003:00:00): 74, NVLink: fatal error detected on link 2(0x1, 0x0, 0x0, "
                            "0x0, 0x0, 0x0, 0x0)",
                            -1);
  EXPECT_EQ(catalog().action_for(benign), Action::monitor);
  // ECC threshold in the fifth register: continue operation; with an ECC/parity bit: reset.
  EXPECT_EQ(catalog().action_for(signal_of("NVRM: Xid (PCI:0003:00:00): 74, NVLink: fatal error detected on link "
                                           "2(0x0, 0x0, 0x0, 0x0, 0x100000, 0x0, 0x0)",
                                           -1)),
            Action::monitor);
  EXPECT_EQ(catalog().action_for(signal_of("NVRM: Xid (PCI:0003:00:00): 74, NVLink: fatal error detected on link "
                                           "2(0x10, 0x0, 0x0, 0x0, 0x100000, 0x0, 0x0)",
                                           -1)),
            Action::reset_gpu);
  // A bit NVIDIA does not list: report a bug, drained meanwhile.
  EXPECT_EQ(catalog().action_for(signal_of("NVRM: Xid (PCI:0003:00:00): 74, NVLink: fatal error detected on link "
                                           "2(0x4, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
                                           -1)),
            Action::drain);
  // No registers: the catalog's workflow row.
  EXPECT_EQ(catalog().action_for(signal_of("NVRM: Xid (PCI:0003:00:00): 74, NVLink: fatal error", -1)), Action::drain);
}

TEST(XidDecode, DamagedSheetsAreClearErrors) {
  EXPECT_FALSE(XidDecoder::from_csv("xid,version\n144,V3,x,1,,,,,1\n", "register,bit,mask,action,meaning\n"));
  EXPECT_FALSE(XidDecoder::from_csv("h\n144,V1,x,------000000----------0000100001,0xZZ,a,b,c,1\n", "h\n"));
  EXPECT_FALSE(XidDecoder::from_csv("h\n", "h\n0,0,0x1,explode,x\n"));
  auto d = XidDecoder::builtin();
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->nvlink_rows(), 196u);
  EXPECT_GE(d->xid74_rows(), 40u);
}
