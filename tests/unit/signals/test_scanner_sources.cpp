#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "support/signals_catalog.h"
#include "signals/catalog.h"
#include "signals/correlate.h"
#include "signals/scanner.h"
#include "signals/source.h"
#include "support/temp_host.h"

using namespace cmax::signals;
namespace fs = std::filesystem;

namespace {

const Catalog& catalog() { return cmax::test::signals_catalog(); }

// One line per incident, every field that correlation decides.
std::vector<std::string> summary(const std::vector<Incident>& incidents) {
  std::vector<std::string> out;
  for (const auto& i : incidents)
    out.push_back(fmt::format("{}|{}|{}|{}|{}|x{}|{}|{}..{}|{}|{}", i.node, to_string(i.kind), i.code, i.device,
                              i.subject, i.count, to_string(i.action), i.first_seen, i.last_seen,
                              i.resolved ? "resolved" : "open", fmt::join(i.related, ",")));
  return out;
}

struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<std::string> incidents;
  ScanStats stats;
};

Outcome scan_file(const fs::path& path, ScanOptions options = {}) {
  Outcome out;
  auto source = open_file_source(path.string());
  if (!source) {
    out.error = source.error().message;
    return out;
  }
  Correlator correlator(catalog());
  auto scanner = Scanner::create(correlator, options);
  EXPECT_TRUE(scanner) << scanner.error().message;
  if (!scanner) return out;
  auto r = scanner->scan(**source, "n1");
  out.ok = static_cast<bool>(r);
  if (!r) out.error = r.error().message;
  out.incidents = summary(correlator.incidents());
  out.stats = scanner->stats();
  return out;
}

Outcome scan_memory(std::string_view text, ScanOptions options = {}) {
  Outcome out;
  Correlator correlator(catalog());
  auto scanner = Scanner::create(correlator, options);
  EXPECT_TRUE(scanner) << scanner.error().message;
  if (!scanner) return out;
  auto r = scanner->scan_text(text, "n1");
  out.ok = static_cast<bool>(r);
  out.incidents = summary(correlator.incidents());
  out.stats = scanner->stats();
  return out;
}

void write_plain(const fs::path& path, std::string_view data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string read_all(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_gzip(const fs::path& path, std::string_view data) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

void write_zstd(const fs::path& path, std::string_view data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(n);
  write_plain(path, out);
}

// A kernel log of `lines` lines: noise, with a fault on a different GPU every 50 lines, plus an
// nfs outage that resolves and a flood of one Xid. Faults spread over the whole file so a
// truncated copy keeps some of them.
std::string sample_log(int lines = 20000) {
  std::string log;
  for (int i = 0; i < lines; ++i) {
    double t = 100.0 + i * 0.01;
    if (i % 50 == 0) {
      int gpu = i / 50;
      log += fmt::format("[{:12.6f}] NVRM: Xid (PCI:{:04x}:{:02x}:00): {}, pid={}, name=python3, Ch 0000000{}\n", t,
                         gpu >> 8, gpu & 0xff, gpu % 3 == 0 ? 95 : 13, 1000 + i, gpu % 10);
    } else if (i % 997 == 0) {
      log += fmt::format("[{:12.6f}] nfs: server nas01 not responding, still trying\n", t);
    } else if (i % 997 == 5) {
      log += fmt::format("[{:12.6f}] nfs: server nas01 OK\n", t);
    } else if (i % 7 == 0) {
      log += fmt::format("[{:12.6f}] NVRM: Xid (PCI:0000:ff:00): 95, pid=5171, Uncontained: FBHUB. RST: Yes\n", t);
    } else {
      log += fmt::format("[{:12.6f}] systemd[1]: Started Session {} of User u{} (line {} of the log).\n", t, i * 7,
                         i % 13, i);
    }
  }
  return log;
}

std::string fault(std::string_view pci) {
  return fmt::format("NVRM: Xid (PCI:{}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n", pci);
}

}  // namespace

TEST(ScannerSources, PlainGzipAndZstdGiveTheSameIncidents) {
  cmax::test::TempHost tmp;
  std::string log = sample_log();
  write_plain(tmp.dir() / "n1.log", log);
  write_gzip(tmp.dir() / "n1.log.gz", log);
  write_zstd(tmp.dir() / "n1.log.zst", log);
  // Magic bytes decide, not names.
  write_gzip(tmp.dir() / "n1-gzip.log", log);

  Outcome memory = scan_memory(log);
  ASSERT_TRUE(memory.ok);
  ASSERT_GT(memory.incidents.size(), 300u);
  for (const char* name : {"n1.log", "n1.log.gz", "n1.log.zst", "n1-gzip.log"}) {
    for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{4096}}) {
      SCOPED_TRACE(fmt::format("{} chunk {}", name, chunk));
      ScanOptions o;
      o.chunk_bytes = chunk;
      Outcome file = scan_file(tmp.dir() / name, o);
      EXPECT_TRUE(file.ok) << file.error;
      EXPECT_EQ(file.incidents, memory.incidents);
      EXPECT_EQ(file.stats.bytes, log.size());
      EXPECT_EQ(file.stats.signals, memory.stats.signals);
    }
  }
}

TEST(ScannerSources, DescribeNamesTheFormat) {
  cmax::test::TempHost tmp;
  write_plain(tmp.dir() / "a.log", "x\n");
  write_gzip(tmp.dir() / "b.log", "x\n");
  write_zstd(tmp.dir() / "c.log", "x\n");
  auto a = open_file_source((tmp.dir() / "a.log").string());
  auto b = open_file_source((tmp.dir() / "b.log").string());
  auto c = open_file_source((tmp.dir() / "c.log").string());
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ((*a)->describe(), (tmp.dir() / "a.log").string());
  EXPECT_NE((*b)->describe().find("gzip"), std::string::npos);
  EXPECT_NE((*c)->describe().find("zstd"), std::string::npos);
}

TEST(ScannerSources, MissingFileIsAnErrorNamingIt) {
  auto s = open_file_source("/nonexistent/dir/gpu-07.log");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("/nonexistent/dir/gpu-07.log"), std::string::npos) << s.error().message;
}

TEST(ScannerSources, EmptyFileAndNoTrailingNewline) {
  cmax::test::TempHost tmp;
  write_plain(tmp.dir() / "empty.log", "");
  Outcome empty = scan_file(tmp.dir() / "empty.log");
  EXPECT_TRUE(empty.ok) << empty.error;
  EXPECT_TRUE(empty.incidents.empty());

  std::string last = fault("0000:3b:00");
  last.pop_back();
  write_plain(tmp.dir() / "tail.log", "noise\n" + last);
  write_gzip(tmp.dir() / "tail.log.gz", "noise\n" + last);
  for (const char* name : {"tail.log", "tail.log.gz"}) {
    Outcome o = scan_file(tmp.dir() / name);
    EXPECT_TRUE(o.ok) << o.error;
    EXPECT_EQ(o.incidents.size(), 1u) << name;
  }
}

TEST(ScannerSources, TruncatedZstdIsAnErrorAndKeepsWhatWasRead) {
  cmax::test::TempHost tmp;
  std::string log = sample_log();
  write_zstd(tmp.dir() / "full.zst", log);
  std::string bytes = read_all(tmp.dir() / "full.zst");
  fs::path cut = tmp.dir() / "gpu-07.kern.log.zst";
  write_plain(cut, std::string_view(bytes).substr(0, bytes.size() / 2));

  std::size_t full = scan_memory(log).incidents.size();
  ScanOptions o;
  o.chunk_bytes = 64u << 10;
  Outcome out = scan_file(cut, o);
  EXPECT_FALSE(out.ok) << "a truncated zstd file scanned as complete";
  EXPECT_NE(out.error.find(cut.string()), std::string::npos) << out.error;
  EXPECT_GT(out.incidents.size(), 0u) << "incidents from the part read are lost";
  EXPECT_LT(out.incidents.size(), full);
}

TEST(ScannerSources, TruncatedGzipIsAnErrorAndKeepsWhatWasRead) {
  cmax::test::TempHost tmp;
  std::string log = sample_log();
  write_gzip(tmp.dir() / "full.gz", log);
  std::string bytes = read_all(tmp.dir() / "full.gz");
  fs::path cut = tmp.dir() / "gpu-07.kern.log.gz";
  write_plain(cut, std::string_view(bytes).substr(0, bytes.size() / 2));

  std::size_t full = scan_memory(log).incidents.size();
  for (std::size_t chunk : {std::size_t{64} << 10, std::size_t{4} << 20}) {
    SCOPED_TRACE(fmt::format("chunk {}", chunk));
    ScanOptions o;
    o.chunk_bytes = chunk;
    Outcome out = scan_file(cut, o);
    EXPECT_FALSE(out.ok) << "a truncated gzip file scanned as complete (" << out.incidents.size() << " of " << full
                         << " incidents)";
    EXPECT_NE(out.error.find(cut.string()), std::string::npos) << out.error;
    EXPECT_GT(out.incidents.size(), 0u) << "incidents from the part read are lost";
    EXPECT_LT(out.incidents.size(), full);
  }
}

TEST(ScannerSources, LongLinesAreSkippedAndCounted) {
  cmax::test::TempHost tmp;
  std::string one_mb = "[ 1.0] NVRM: Xid (PCI:0000:aa:00): 79, " + std::string(1u << 20, 'a') + "\n";
  std::string five_mb = "[ 2.0] NVRM: Xid (PCI:0000:bb:00): 79, " + std::string(5u << 20, 'b') + "\n";
  std::string log = fault("0000:01:00") + one_mb + fault("0000:02:00") + five_mb + fault("0000:03:00") + "tail\n";
  write_plain(tmp.dir() / "long.log", log);
  write_zstd(tmp.dir() / "long.log.zst", log);
  ScanOptions o;
  o.chunk_bytes = 4u << 20;  // the 1 MB line fits a chunk (and is skipped by length), the 5 MB one does not
  for (const char* name : {"long.log", "long.log.zst"}) {
    SCOPED_TRACE(name);
    Outcome out = scan_file(tmp.dir() / name, o);
    EXPECT_TRUE(out.ok) << out.error;
    ASSERT_EQ(out.incidents.size(), 3u) << fmt::format("{}", fmt::join(out.incidents, "\n"));
    EXPECT_NE(out.incidents[0].find("0000:01:00"), std::string::npos);
    EXPECT_NE(out.incidents[1].find("0000:02:00"), std::string::npos);
    EXPECT_NE(out.incidents[2].find("0000:03:00"), std::string::npos);
    EXPECT_EQ(out.stats.skipped_long, 1u);    // the 1 MB line: over max_line_bytes, inside the chunk
    EXPECT_EQ(out.stats.overlong_lines, 1u);  // the 5 MB line: over the 4 MiB chunk
    EXPECT_EQ(out.stats.bytes, log.size());
  }
  // With the default chunk (512 KiB) both are longer than the chunk, skipped unread.
  Outcome out = scan_file(tmp.dir() / "long.log");
  ASSERT_EQ(out.incidents.size(), 3u);
  EXPECT_EQ(out.stats.skipped_long, 0u);
  EXPECT_EQ(out.stats.overlong_lines, 2u);
}

// A line longer than the chunk whose end falls near the end of a read: the start of the next
// line is the only thing left in the buffer and must be carried, not skipped as overlong too.
TEST(ScannerSources, LineAfterAnOverlongLineIsKept) {
  cmax::test::TempHost tmp;
  const std::size_t chunk = 4096;
  for (std::size_t overlong : {chunk + 4000, chunk + 1000, 2 * chunk + 4050, 3 * chunk - 20}) {
    SCOPED_TRACE(fmt::format("overlong line of {} bytes", overlong));
    std::string log = std::string(overlong, 'x') + "\n" + fault("0000:3b:00") + fault("0000:5e:00");
    write_plain(tmp.dir() / "x.log", log);
    ScanOptions o;
    o.chunk_bytes = chunk;
    Outcome out = scan_file(tmp.dir() / "x.log", o);
    EXPECT_TRUE(out.ok) << out.error;
    EXPECT_EQ(out.incidents.size(), 2u) << fmt::format("{}", fmt::join(out.incidents, "\n"));
    EXPECT_EQ(out.stats.overlong_lines, 1u);
  }
}

TEST(ScannerSources, ChunkBoundariesInsideFaultLinesLoseNothing) {
  cmax::test::TempHost tmp;
  // Lines of every length from ~90 to ~700 bytes, so chunk ends fall at every offset of a line.
  std::string log;
  for (int i = 0; i < 3000; ++i)
    log += fmt::format("[{:10.6f}] NVRM: Xid (PCI:{:04x}:{:02x}:00): 95, pid={}, {}Uncontained: FBHUB.\n", i * 0.5,
                       i >> 8, i & 0xff, i, std::string(static_cast<std::size_t>(i * 37 % 611), 'p'));
  write_plain(tmp.dir() / "b.log", log);
  write_gzip(tmp.dir() / "b.log.gz", log);
  Outcome memory = scan_memory(log);
  ASSERT_EQ(memory.incidents.size(), 3000u);
  for (std::size_t chunk : {std::size_t{4096}, std::size_t{1000}, std::size_t{4099}}) {
    for (const char* name : {"b.log", "b.log.gz"}) {
      SCOPED_TRACE(fmt::format("{} chunk {}", name, chunk));
      ScanOptions o;
      o.chunk_bytes = chunk;
      Outcome out = scan_file(tmp.dir() / name, o);
      EXPECT_TRUE(out.ok) << out.error;
      EXPECT_EQ(out.incidents, memory.incidents);
      EXPECT_EQ(out.stats.overlong_lines, 0u);
    }
  }
}

TEST(ScannerSources, BinaryGarbageAndInvalidUtf8DoNotCrash) {
  cmax::test::TempHost tmp;
  std::mt19937 rng(12345);
  std::string garbage;
  garbage.reserve(2u << 20);
  const std::string_view pieces[] = {"NVRM: Xid (", "SXid (", "\n", "\xff\xfe", "\xc3\x28", "[ 1.0] ", "EDAC MC",
                                     "AER: ", "lockup", "Killed process", "nfs: server ", "Link is ", ":", "("};
  while (garbage.size() < (2u << 20)) {
    if (rng() % 8 == 0) garbage += pieces[rng() % std::size(pieces)];
    else garbage += static_cast<char>(rng() & 0xff);
  }
  // A real fault with invalid UTF-8 in the process name still counts.
  garbage += "\n[ 9.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=\xff\xfe\xc3\x28, GPU has fallen off the bus.\n";
  write_plain(tmp.dir() / "garbage.bin", garbage);
  write_gzip(tmp.dir() / "garbage.bin.gz", garbage);

  Outcome memory = scan_memory(garbage);
  EXPECT_TRUE(memory.ok);
  bool found = false;
  for (const auto& i : memory.incidents) found |= i.find("0000:3b:00|") != std::string::npos;
  EXPECT_TRUE(found);
  for (const char* name : {"garbage.bin", "garbage.bin.gz"}) {
    for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{4096}}) {
      ScanOptions o;
      o.chunk_bytes = chunk;
      Outcome out = scan_file(tmp.dir() / name, o);
      EXPECT_TRUE(out.ok) << out.error;
      EXPECT_EQ(out.stats.bytes, garbage.size());
    }
  }
}

TEST(ScannerSources, NodeFromPath) {
  EXPECT_EQ(node_from_path("logs/gpu-07.kern.log.gz"), "gpu-07");
  EXPECT_EQ(node_from_path("gpu-07/kern.log"), "gpu-07");
  EXPECT_EQ(node_from_path("n3/kern.log.1"), "n3");
  EXPECT_EQ(node_from_path("/srv/logs/n3/kern.log.1"), "n3");
  EXPECT_EQ(node_from_path("n3/syslog.2.gz"), "n3");
  EXPECT_EQ(node_from_path("n3/messages"), "n3");
  EXPECT_EQ(node_from_path("gpu-07.log"), "gpu-07");
  EXPECT_EQ(node_from_path("gpu-07.dmesg.zst"), "gpu-07");
  EXPECT_EQ(node_from_path("gpu-07"), "gpu-07");
}

// rsyslog's common remote template writes /var/log/remote/%FROMHOST-IP%.log: the address's last
// octets are not rotation numbers.
TEST(ScannerSources, NodeFromPathKeepsAddresses) {
  EXPECT_EQ(node_from_path("remote/10.0.0.5.log"), "10.0.0.5");
  EXPECT_EQ(node_from_path("remote/10.0.0.5.log.1"), "10.0.0.5");
}
