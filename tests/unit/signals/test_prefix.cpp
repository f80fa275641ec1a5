#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "signals/prefix.h"

using namespace cmax::signals;

namespace {

constexpr int kYear = 2024;
// 2024-11-22 14:56:47 UTC, the stamp most samples below carry.
constexpr double kNov22 = 1732287407;

LineInfo parse(std::string_view line) { return parse_line_prefix(line, kYear); }

// The view lies inside `whole` (prefix parsing returns views, never copies).
bool inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// Nothing but the message: no host, stamp, time, rank or kmsg fields.
void expect_bare(const LineInfo& info) {
  EXPECT_EQ(info.host, "");
  EXPECT_EQ(info.stamp, "");
  EXPECT_FALSE(info.has_time);
  EXPECT_FALSE(info.wall_clock);
  EXPECT_EQ(info.time, 0);
  EXPECT_EQ(info.rank, -1);
  EXPECT_EQ(info.kmsg_prio, -1);
}

}  // namespace

TEST(Prefix, EpochSeconds) {
  EXPECT_EQ(epoch_seconds(1970, 1, 1, 0, 0, 0), 0);
  EXPECT_EQ(epoch_seconds(2024, 11, 22, 14, 56, 47), kNov22);
  EXPECT_EQ(epoch_seconds(2024, 2, 29, 0, 0, 0), 1709164800);  // leap day
  EXPECT_EQ(epoch_seconds(2000, 3, 1, 0, 0, 0.5), 951868800.5);
}

TEST(Prefix, DmesgMonotonicWithCallerId) {
  std::string_view line = "[ 130.456250] [ T1946] NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-bench";
  LineInfo info = parse(line);
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-bench");
  EXPECT_EQ(info.stamp, "[ 130.456250]");
  EXPECT_EQ(info.host, "");
  EXPECT_TRUE(info.has_time);
  EXPECT_FALSE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, 130.45625);
  EXPECT_EQ(info.rank, -1);
  EXPECT_EQ(info.kmsg_prio, -1);
  EXPECT_TRUE(inside(info.message, line));
  EXPECT_TRUE(inside(info.stamp, line));
}

TEST(Prefix, DmesgMonotonicForms) {
  LineInfo big = parse("[2397166.923949] NVRM: Xid (PCI:0000:0f:00): 94, pid=2503421, name=python3, Ch 00000008");
  EXPECT_EQ(big.message, "NVRM: Xid (PCI:0000:0f:00): 94, pid=2503421, name=python3, Ch 00000008");
  EXPECT_EQ(big.stamp, "[2397166.923949]");
  EXPECT_DOUBLE_EQ(big.time, 2397166.923949);
  EXPECT_EQ(big.rank, -1);  // not an MPI rank

  LineInfo cpu = parse("[    5.000001] [    C2] watchdog: BUG: soft lockup - CPU#2 stuck for 23s! [a:1]");
  EXPECT_EQ(cpu.message, "watchdog: BUG: soft lockup - CPU#2 stuck for 23s! [a:1]");
  EXPECT_EQ(cpu.stamp, "[    5.000001]");
  EXPECT_DOUBLE_EQ(cpu.time, 5.000001);

  // The caller id may also come first (printk caller in front of the time on some builds).
  LineInfo caller_first = parse("[ T1946] [ 130.456250] NVRM: x");
  EXPECT_EQ(caller_first.message, "NVRM: x");
  EXPECT_DOUBLE_EQ(caller_first.time, 130.45625);
}

TEST(Prefix, DmesgHumanTime) {
  std::string_view line = "[Sat Oct 12 18:35:32 2024] NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000f";
  LineInfo info = parse(line);
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000f");
  EXPECT_EQ(info.stamp, "[Sat Oct 12 18:35:32 2024]");
  EXPECT_EQ(info.host, "");
  EXPECT_TRUE(info.has_time);
  EXPECT_TRUE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, 1728758132);
  EXPECT_EQ(info.rank, -1);

  LineInfo padded = parse("[Sat Nov  2 04:05:06 2024] NVRM: x");
  EXPECT_EQ(padded.message, "NVRM: x");
  EXPECT_DOUBLE_EQ(padded.time, 1730520306);
}

TEST(Prefix, SyslogWithDmesgStamp) {
  std::string_view line = "Nov 22 14:56:47 gpu-07 kernel: [ 130.4] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.";
  LineInfo info = parse(line);
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  EXPECT_EQ(info.host, "gpu-07");
  EXPECT_EQ(info.stamp, "Nov 22 14:56:47");  // the first stamp wins
  EXPECT_TRUE(info.has_time);
  EXPECT_TRUE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, kNov22);
  EXPECT_EQ(info.rank, -1);
  EXPECT_TRUE(inside(info.host, line));
}

TEST(Prefix, SyslogSpacePaddedDay) {
  LineInfo info = parse("Nov  2 04:05:06 gpu-07 kernel: EDAC MC0: 1 CE memory read error on DIMM_A1");
  EXPECT_EQ(info.message, "EDAC MC0: 1 CE memory read error on DIMM_A1");
  EXPECT_EQ(info.host, "gpu-07");
  EXPECT_EQ(info.stamp, "Nov  2 04:05:06");
  EXPECT_TRUE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, 1730520306);
}

TEST(Prefix, SyslogUsesAssumedYear) {
  LineInfo y2023 = parse_line_prefix("Nov 22 14:56:47 gpu-07 kernel: x", 2023);
  LineInfo y2024 = parse_line_prefix("Nov 22 14:56:47 gpu-07 kernel: x", 2024);
  EXPECT_DOUBLE_EQ(y2024.time - y2023.time, 366 * 86400.0);  // 2024 is a leap year
}

TEST(Prefix, SyslogTagWithPid) {
  LineInfo info = parse("Nov 22 14:56:47 gpu-07 kernel[0]: NVRM: x");
  EXPECT_EQ(info.message, "NVRM: x");
  EXPECT_EQ(info.host, "gpu-07");
}

TEST(Prefix, JournalShortIso) {
  std::string_view line = "2024-11-22T14:56:47+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.";
  LineInfo info = parse(line);
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  EXPECT_EQ(info.host, "gpu-07");
  EXPECT_EQ(info.stamp, "2024-11-22T14:56:47+0000");
  EXPECT_TRUE(info.has_time);
  EXPECT_TRUE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, kNov22);
  EXPECT_EQ(info.rank, -1);
}

TEST(Prefix, JournalShortIsoPreciseWithOffset) {
  LineInfo info = parse("2024-11-22T14:56:47.123456+01:00 gpu-07 kernel: NVRM: x");
  EXPECT_EQ(info.message, "NVRM: x");
  EXPECT_EQ(info.host, "gpu-07");
  EXPECT_EQ(info.stamp, "2024-11-22T14:56:47.123456+01:00");
  EXPECT_TRUE(info.wall_clock);
  EXPECT_NEAR(info.time, kNov22 + 0.123456 - 3600, 1e-5);

  LineInfo west = parse("2024-11-22T14:56:47-05:00 gpu-07 kernel: NVRM: x");
  EXPECT_NEAR(west.time, kNov22 + 5 * 3600, 1e-6);
  LineInfo zulu = parse("2024-11-22T14:56:47Z gpu-07 kernel: NVRM: x");
  EXPECT_EQ(zulu.stamp, "2024-11-22T14:56:47Z");
  EXPECT_NEAR(zulu.time, kNov22, 1e-6);
}

TEST(Prefix, SrunWithDmesgStamp) {
  LineInfo info = parse("0: [ 5.1] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, x");
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, x");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.stamp, "[ 5.1]");
  EXPECT_TRUE(info.has_time);
  EXPECT_FALSE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, 5.1);
  EXPECT_EQ(info.host, "");
}

TEST(Prefix, SrunBare) {
  LineInfo info = parse("12: NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(info.rank, 12);
  EXPECT_FALSE(info.has_time);
  EXPECT_EQ(info.stamp, "");
  EXPECT_EQ(info.host, "");
}

TEST(Prefix, MpiRank) {
  // MPICH's -prepend-rank "[3] " in front of another prefix is a rank...
  LineInfo info = parse("[3] [ 130.456250] NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(info.rank, 3);
  EXPECT_DOUBLE_EQ(info.time, 130.45625);

  LineInfo with_syslog = parse("[3] Nov 22 14:56:47 gpu-07 kernel: [ 130.4] NVRM: x");
  EXPECT_EQ(with_syslog.message, "NVRM: x");
  EXPECT_EQ(with_syslog.rank, 3);
  EXPECT_EQ(with_syslog.host, "gpu-07");
  EXPECT_EQ(with_syslog.stamp, "Nov 22 14:56:47");
  EXPECT_DOUBLE_EQ(with_syslog.time, kNov22);
}

TEST(Prefix, BareBracketNumberBeforeTheMessageIsAWholeSecondStamp) {
  // ...in front of the message itself it is the kernel's stamp without its fraction, and the
  // number in "nvidia-nvswitch3" is the driver's instance, not a task.
  LineInfo sx = parse("[123] nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error");
  EXPECT_EQ(sx.rank, -1);
  EXPECT_TRUE(sx.has_time);
  EXPECT_DOUBLE_EQ(sx.time, 123.0);
  EXPECT_EQ(sx.stamp, "[123]");
  EXPECT_EQ(sx.message, "nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error");
  LineInfo padded = parse("[  4512] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.");
  EXPECT_EQ(padded.rank, -1);
  EXPECT_DOUBLE_EQ(padded.time, 4512.0);
  EXPECT_EQ(padded.message, "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.");
  // srun -l's "12: " stays a task.
  EXPECT_EQ(parse("12: [ 130.4] NVRM: x").rank, 12);
}

TEST(Prefix, OpenMpiTaggedOutput) {
  LineInfo out = parse("[1,0]<stdout>: NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(out.message, "NVRM: Xid (PCI:0000:3b:00): 13, x");
  EXPECT_EQ(out.rank, 0);
  EXPECT_FALSE(out.has_time);

  LineInfo err = parse("[1,7]<stderr>: [ 5.1] NVRM: x");
  EXPECT_EQ(err.message, "NVRM: x");
  EXPECT_EQ(err.rank, 7);
  EXPECT_DOUBLE_EQ(err.time, 5.1);
}

TEST(Prefix, KmsgRecordFromUserspace) {
  std::string_view line = "11,386,2400315688,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.";
  LineInfo info = parse(line);
  EXPECT_EQ(info.message, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  EXPECT_EQ(info.kmsg_prio, 11);
  EXPECT_NE(info.kmsg_prio >> 3, 0) << "prio 11 is facility 1 (user): written from userspace";
  EXPECT_EQ(info.kmsg_prio & 7, 3);  // err
  EXPECT_EQ(info.kmsg_seq, 386u);
  EXPECT_TRUE(info.has_time);
  EXPECT_FALSE(info.wall_clock);
  EXPECT_DOUBLE_EQ(info.time, 2400.315688);
  EXPECT_EQ(info.stamp, "11,386,2400315688,-");
  EXPECT_EQ(info.host, "");
  EXPECT_EQ(info.rank, -1);
}

TEST(Prefix, KmsgRecordFromKernel) {
  LineInfo info = parse("3,387,2400315700,-;NVRM: x");
  EXPECT_EQ(info.message, "NVRM: x");
  EXPECT_EQ(info.kmsg_prio, 3);
  EXPECT_EQ(info.kmsg_prio >> 3, 0);
  EXPECT_EQ(info.kmsg_seq, 387u);

  LineInfo caller = parse("6,1234,5678901,-,caller=T123;NVRM: y");
  EXPECT_EQ(caller.message, "NVRM: y");
  EXPECT_EQ(caller.kmsg_prio, 6);
  EXPECT_DOUBLE_EQ(caller.time, 5.678901);
}

TEST(Prefix, NoPrefix) {
  for (std::string_view line : {
           "NVRM: Xid (PCI:0000:01:00): 43, Ch 00000020, engmask 00000101",
           "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28",
           "watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]",
           "ib0: lost carrier",
           "\xe2\x80\xa6 kernel: NVRM: Xid (PCI:0018:01:00): 154, x",  // "… kernel:" from a pasted log
           "Nov is a month",
           "[not a stamp] text",
           "[ 12.34x] text",
       }) {
    SCOPED_TRACE(line);
    LineInfo info = parse(line);
    EXPECT_EQ(info.message, line);
    EXPECT_EQ(info.message.data(), line.data());
    expect_bare(info);
  }
}

TEST(Prefix, StripsLineEnd) {
  EXPECT_EQ(parse("NVRM: x\r\n").message, "NVRM: x");
  EXPECT_EQ(parse("[ 1.5] NVRM: x\r").message, "NVRM: x");
}

TEST(Prefix, GarbageReturnsInputAsMessage) {
  const std::string binary("\x00\xff\xfe\x01\x80[\x00]\xc3\x28 \xa0\xa1", 13);
  const std::string invalid_utf8 = "\xf0\x28\x8c\x28 NVRM: \xff Xid (";
  for (std::string_view line : {std::string_view(), std::string_view("["), std::string_view("]"),
                                std::string_view("[["), std::string_view("[ "), std::string_view("[ 1."),
                                std::string_view("1,2,3"), std::string_view("1,2,3,-"), std::string_view("12:"),
                                std::string_view("[1,"), std::string_view("2024-11-22T"), std::string_view("Nov 22 14:56:47"),
                                std::string_view("Nov 22 14:56:47 gpu-07"), std::string_view(binary),
                                std::string_view(invalid_utf8)}) {
    SCOPED_TRACE(testing::PrintToString(std::string(line)));
    LineInfo info = parse(line);
    EXPECT_EQ(info.message, line);
    expect_bare(info);
  }
}

TEST(Prefix, HugeLinesReturnInputAsMessage) {
  const std::size_t mb = 1u << 20;
  for (const std::string& line : {std::string(mb, 'x'), "[" + std::string(mb, ' '), "[" + std::string(mb, '1') + "]",
                                  std::string(mb, '9') + ": x", std::string(mb, '[')}) {
    LineInfo info = parse(line);
    EXPECT_EQ(info.message.size(), line.size());
    EXPECT_EQ(info.message.data(), line.data());
    EXPECT_FALSE(info.has_time);
    EXPECT_EQ(info.rank, -1);
  }
  // A real prefix in front of a 1 MB message still parses.
  std::string big = "[ 130.456250] NVRM: " + std::string(mb, 'y');
  LineInfo info = parse(big);
  EXPECT_EQ(info.stamp, "[ 130.456250]");
  EXPECT_EQ(info.message.size(), big.size() - 14);
}
