// The prefilter against its definition (find_lines_naive), on every instruction set this machine
// has: hand-made edge cases (literals at the ends of the text and of SIMD blocks, bytes >= 0x80,
// short literals, several literals per line) and seeded random texts built from literal fragments.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "signals/classify.h"
#include "signals/prefilter.h"

namespace cmax::signals {
namespace {

std::vector<Isa> available() {
  std::vector<Isa> isas{Isa::scalar};
  if (best_isa() >= Isa::avx2) isas.push_back(Isa::avx2);
  if (best_isa() >= Isa::avx512) isas.push_back(Isa::avx512);
  return isas;
}

std::string show(const std::vector<Candidate>& v) {
  std::string s;
  for (const auto& c : v) s += fmt::format("[{},{}) {:#x}\n", c.begin, c.end, c.literals);
  return s;
}

void expect_same(std::span<const std::string_view> literals, std::string_view text) {
  std::vector<Candidate> want;
  Prefilter::find_lines_naive(literals, text, want);
  for (Isa isa : available()) {
    auto p = Prefilter::create(literals, isa);
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_EQ(p->isa(), isa);
    std::vector<Candidate> got;
    p->find_lines(text, got);
    ASSERT_EQ(show(got), show(want)) << to_string(isa) << " on " << text.size() << " bytes";
  }
}

TEST(Prefilter, RejectsBadLiteralSets) {
  std::vector<std::string_view> none;
  EXPECT_FALSE(Prefilter::create(none));
  std::vector<std::string_view> empty{"ok", ""};
  EXPECT_FALSE(Prefilter::create(empty));
  std::vector<std::string_view> newline{"a\nb"};
  EXPECT_FALSE(Prefilter::create(newline));
  std::vector<std::string> many(65, "x");
  std::vector<std::string_view> views(many.begin(), many.end());
  EXPECT_FALSE(Prefilter::create(views));
  views.resize(64);
  EXPECT_TRUE(Prefilter::create(views));
}

TEST(Prefilter, EdgeCasesMatchTheDefinition) {
  auto anchors = anchor_literals();
  expect_same(anchors, "");
  expect_same(anchors, "\n\n\n");
  expect_same(anchors, "Xid (");                        // the whole text, no newline
  expect_same(anchors, "lost");                         // a 4-byte literal at the very end
  expect_same(anchors, "los");                          // its prefix at the very end: no match
  expect_same(anchors, "Xid");
  expect_same(anchors, "a\nerror\nb\nError\n");
  expect_same(anchors, "error lost Link is up, nfs: server x OK, table full\n");  // many per line
  expect_same(anchors, std::string(200, 'x') + "\n" + std::string(63, 'y') + "lockup");
  // Every offset around the 32- and 64-byte steps, and the 4096-byte hand-over blocks.
  for (std::size_t at : {0, 1, 27, 28, 29, 30, 31, 32, 33, 60, 61, 62, 63, 64, 65, 127, 4031, 4090, 4095, 4096, 4097}) {
    SCOPED_TRACE(at);
    std::string text(at, 'z');
    text += "EDAC MC";
    text += std::string(100, 'q');
    expect_same(anchors, text);
    text.resize(at + 7);  // the literal ends the text
    expect_same(anchors, text);
  }
  // Bytes >= 0x80 fold onto their low 7 bits in the AVX-512 tables: 'E' | 0x80 must not match.
  std::string high = "\xc5rror \xe5rror x\x80\xff\xfe error\n";
  expect_same(anchors, high);
  // Literals shorter than the table width, sharing and not sharing buckets.
  std::vector<std::string_view> shorts{"a", "ab", "abc", "zz", "\xff"};
  expect_same(shorts, "xxa\nb\nab\nzz z\n\xff\n" + std::string(300, 'b') + "a");
  expect_same(shorts, std::string(5000, 'c') + "abc" + std::string(5000, 'z'));
}

// A random text made of literal fragments, near-misses and noise, so that bucket cross-products,
// partial matches and line ends fall at every kind of offset.
std::string random_text(std::mt19937_64& rng, std::span<const std::string_view> literals, std::size_t size) {
  static constexpr std::string_view kNoise[] = {" ", "\n", "x", "lock", "blocking", "Err", "nvme0", "LOC",
                                                "Link up", "\xc3\xa9", "\x80", "EDAC", "nfs:", "orr"};
  std::string text;
  while (text.size() < size) {
    auto pick = rng() % 4;
    if (pick == 0) {
      text += literals[rng() % literals.size()];
    } else if (pick == 1) {
      std::string_view lit = literals[rng() % literals.size()];
      text += lit.substr(0, rng() % lit.size());
    } else {
      text += kNoise[rng() % std::size(kNoise)];
    }
  }
  return text;
}

TEST(Prefilter, RandomTextsMatchTheDefinition) {
  std::mt19937_64 rng(20261202);
  auto anchors = anchor_literals();
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    expect_same(anchors, random_text(rng, anchors, rng() % 9000));
    if (HasFatalFailure()) return;
  }
  // A set of 64 literals fills every bucket with many members.
  std::vector<std::string> words;
  for (int i = 0; i < 64; ++i) words.push_back(fmt::format("w{}{}", static_cast<char>('a' + i % 26), i));
  std::vector<std::string_view> views(words.begin(), words.end());
  for (int round = 0; round < 50; ++round) expect_same(views, random_text(rng, views, 6000));
}

TEST(Prefilter, LikeLiteralsShareABucket) {
  std::vector<std::string_view> lits{"Error", "lockup", "error", "nvme nvme"};
  auto p = Prefilter::create(lits);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->buckets()[0], p->buckets()[2]);  // "Error" and "error" differ in one byte
  EXPECT_NE(p->buckets()[0], p->buckets()[1]);
  EXPECT_NE(p->buckets()[1], p->buckets()[3]);
}

}  // namespace
}  // namespace cmax::signals
