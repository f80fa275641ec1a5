// Framing of collect documents on a shared stdout (cluster/frame.h): exact encoding, round trips
// of documents around the chunk size fed whole, byte by byte and in random pieces, srun --label
// interleaving, and every way a stream can be damaged.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cluster/frame.h"
#include "core/strings.h"

using namespace cmax::cluster;

namespace {

/// Every document the decoder reports, in order.
struct Collected {
  std::vector<FramedDocument> docs;
  FrameDecoder decoder;
  explicit Collected(std::size_t max_bytes = 64u << 20)
      : decoder([this](FramedDocument d) { docs.push_back(std::move(d)); }, max_bytes) {}
};

std::vector<FramedDocument> decode_whole(std::string_view stream) {
  Collected c;
  c.decoder.feed(stream);
  c.decoder.finish();
  return c.docs;
}

std::vector<FramedDocument> decode_bytewise(std::string_view stream) {
  Collected c;
  for (char ch : stream) c.decoder.feed(std::string_view(&ch, 1));
  c.decoder.finish();
  return c.docs;
}

std::vector<FramedDocument> decode_random(std::string_view stream, unsigned seed) {
  Collected c;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> len(0, 2500);
  for (std::size_t at = 0; at < stream.size();) {
    const std::size_t n = std::min(len(rng), stream.size() - at);
    c.decoder.feed(stream.substr(at, n));
    at += n;
  }
  c.decoder.finish();
  return c.docs;
}

/// `n` bytes of JSON-ish text full of 2-, 3- and 4-byte UTF-8 sequences (7-byte period, so chunk
/// boundaries at multiples of 900 fall inside them). The last sequence may be cut: bytes are bytes.
std::string utf8_document(std::size_t n) {
  static constexpr std::string_view kPattern = "\xE2\x82\xAC\xF0\x9F\x98\x80";  // "€😀"
  std::string s;
  s.reserve(n);
  while (s.size() < n) s += kPattern;
  s.resize(n);
  return s;
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// `stream`'s lines with `label` in front of each.
std::string labelled(std::string_view label, std::string_view stream) {
  std::string out;
  for (auto l : cmax::core::split_lines(stream)) {
    out += label;
    out += l;
    out += '\n';
  }
  return out;
}

}  // namespace

TEST(Fnv1a64, KnownVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(EncodeFrames, ExactLinesForASmallDocument) {
  EXPECT_EQ(encode_frames("n1", "foobar"), "@cmax1 B n1 6 85944171f73967e8\n@cmax1 D foobar\n@cmax1 E\n");
}

TEST(EncodeFrames, EmptyDocumentHasNoDataLine) {
  EXPECT_EQ(encode_frames("gpu-07", ""), "@cmax1 B gpu-07 0 cbf29ce484222325\n@cmax1 E\n");
}

TEST(EncodeFrames, ChunksOfNineHundredBytes) {
  for (std::size_t n : {1u, 899u, 900u, 901u, 1800u, 1801u, 100000u}) {
    const std::string doc = utf8_document(n);
    const std::string encoded = encode_frames("n1", doc);
    const auto lines = cmax::core::split_lines(encoded);
    const std::size_t chunks = (n + kFrameChunk - 1) / kFrameChunk;
    ASSERT_EQ(lines.size(), chunks + 2) << n;
    EXPECT_EQ(lines.front(), fmt::format("@cmax1 B n1 {} {:016x}", n, fnv1a64(doc)));
    EXPECT_EQ(lines.back(), "@cmax1 E");
    std::string joined;
    for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
      ASSERT_TRUE(lines[i].starts_with("@cmax1 D ")) << lines[i];
      const auto data = lines[i].substr(9);
      EXPECT_EQ(data.size(), i + 2 < lines.size() ? kFrameChunk : n - (chunks - 1) * kFrameChunk) << n << " line " << i;
      joined += data;
    }
    EXPECT_EQ(joined, doc);
  }
}

TEST(EncodeFrames, EveryLineFitsSrunsLineLimitWithALabel) {
  // srun --label prefixes "NNNN: "; it cuts lines over 1,024 bytes. A host name is at most 253 bytes.
  const std::string node(253, 'n');
  for (std::size_t n : {0u, 1u, 900u, 901u, 100000u}) {
    const std::string encoded = encode_frames(node, utf8_document(n));
    for (auto l : cmax::core::split_lines(encoded)) {
      EXPECT_LE(l.size() + 1 + std::string_view("1023: ").size(), 1024u) << n;
    }
  }
}

TEST(FrameDecoder, RoundTripsDocumentsAroundTheChunkSize) {
  for (std::size_t n : {0u, 1u, 899u, 900u, 901u, 100000u}) {
    const std::string doc = utf8_document(n);
    const std::string stream = encode_frames("gpu-01", doc);
    for (const auto& got : {decode_whole(stream), decode_bytewise(stream), decode_random(stream, 7u + n)}) {
      ASSERT_EQ(got.size(), 1u) << n;
      EXPECT_EQ(got[0].task, -1);
      EXPECT_EQ(got[0].node, "gpu-01");
      EXPECT_EQ(got[0].error, "") << n;
      EXPECT_EQ(got[0].document, doc) << n;
    }
  }
}

TEST(FrameDecoder, MultibyteSequencesSplitAcrossChunkBoundariesSurvive) {
  const std::string doc = utf8_document(100000);
  // The test is only worth something if the boundaries do cut sequences.
  std::size_t cut = 0;
  for (std::size_t at = kFrameChunk; at < doc.size(); at += kFrameChunk) cut += is_continuation(doc[at]);
  ASSERT_GT(cut, 50u);

  // 901 bytes: a 2-byte "é" at 899..900, so the first chunk ends on its lead byte.
  const std::string e901 = std::string(899, 'a') + "\xC3\xA9";
  ASSERT_EQ(e901.size(), 901u);
  auto got = decode_bytewise(encode_frames("n1", e901));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].document, e901);
  EXPECT_EQ(got[0].error, "");
}

TEST(FrameDecoder, RandomPiecesOfManyDocuments) {
  std::string stream;
  std::vector<std::string> docs;
  for (std::size_t n : {0u, 1u, 899u, 900u, 901u, 5000u, 100000u}) {
    docs.push_back(utf8_document(n));
    stream += encode_frames(fmt::format("n{}", n), docs.back());
  }
  for (unsigned seed = 1; seed <= 5; ++seed) {
    auto got = decode_random(stream, seed);
    ASSERT_EQ(got.size(), docs.size()) << seed;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      EXPECT_EQ(got[i].error, "") << seed << " " << i;
      EXPECT_EQ(got[i].document, docs[i]) << seed << " " << i;
      EXPECT_EQ(got[i].node, fmt::format("n{}", docs[i].size()));
    }
  }
}

TEST(FrameDecoder, SrunLabelledTasksInterleavedLineByLine) {
  // srun pads labels to the width of the largest task number: " 0: ", " 3: ", "12: ".
  struct Task {
    int task;
    std::string label, node, doc;
  };
  std::vector<Task> tasks = {{0, " 0: ", "n00", utf8_document(2000)},
                             {3, " 3: ", "n03", std::string(901, 'x')},
                             {12, "12: ", "n12", utf8_document(100000)}};
  std::vector<std::vector<std::string>> lines;
  for (const auto& t : tasks) {
    lines.emplace_back();
    const std::string text = labelled(t.label, encode_frames(t.node, t.doc));
    for (auto l : cmax::core::split_lines(text))
      lines.back().push_back(std::string(l) + "\n");
  }
  std::string stream;
  for (std::size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& ls : lines)
      if (i < ls.size()) {
        stream += ls[i];
        any = true;
      }
    if (!any) break;
  }
  for (const auto& got : {decode_whole(stream), decode_bytewise(stream), decode_random(stream, 42)}) {
    ASSERT_EQ(got.size(), 3u);
    // Short documents end first: task 3 (2 data lines), then 0 (3), then 12.
    EXPECT_EQ(got[0].task, 3);
    EXPECT_EQ(got[1].task, 0);
    EXPECT_EQ(got[2].task, 12);
    for (const auto& d : got) {
      const auto& t = *std::find_if(tasks.begin(), tasks.end(), [&](const Task& x) { return x.task == d.task; });
      EXPECT_EQ(d.node, t.node);
      EXPECT_EQ(d.error, "");
      EXPECT_EQ(d.document, t.doc);
    }
  }
}

TEST(FrameDecoder, UnpaddedLabelsAndUnlabelledInput) {
  const std::string stream = labelled("0: ", encode_frames("a", "{\"x\":1}")) + encode_frames("b", "[]") +
                             labelled("7: ", encode_frames("c", "null"));
  auto got = decode_whole(stream);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].task, 0);
  EXPECT_EQ(got[0].node, "a");
  EXPECT_EQ(got[0].document, "{\"x\":1}");
  EXPECT_EQ(got[1].task, -1);
  EXPECT_EQ(got[1].node, "b");
  EXPECT_EQ(got[1].document, "[]");
  EXPECT_EQ(got[2].task, 7);
  EXPECT_EQ(got[2].document, "null");
}

TEST(FrameDecoder, CrLfLineEndsAreAccepted) {
  std::string stream;
  const std::string encoded = encode_frames("n1", "{\"a\":2}");
  for (auto l : cmax::core::split_lines(encoded)) stream += std::string(l) + "\r\n";
  auto got = decode_whole(stream);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "");
  EXPECT_EQ(got[0].document, "{\"a\":2}");
}

TEST(FrameDecoder, NonFrameLinesAreKeptPerTask) {
  Collected c;
  c.decoder.feed(" 3: cmax collect: nvidia-smi took 4.2 s\n");
  c.decoder.feed(labelled(" 3: ", encode_frames("n3", "{}")));
  c.decoder.feed("12: slurmstepd: error: *** STEP 3.0 ON n12 CANCELLED ***\n");
  c.decoder.feed("plain stderr line\n 3: second\n\n 3: \n");
  c.decoder.finish();
  ASSERT_EQ(c.docs.size(), 1u);
  EXPECT_EQ(c.docs[0].document, "{}");
  const auto& other = c.decoder.other_output();
  ASSERT_EQ(other.size(), 3u);
  EXPECT_EQ(other.at(3), "cmax collect: nvidia-smi took 4.2 s\nsecond\n");
  EXPECT_EQ(other.at(12), "slurmstepd: error: *** STEP 3.0 ON n12 CANCELLED ***\n");
  EXPECT_EQ(other.at(-1), "plain stderr line\n");
}

TEST(FrameDecoder, OtherOutputIsClipped) {
  Collected c;
  for (int i = 0; i < 200; ++i) c.decoder.feed(" 1: " + std::string(100, 'w') + "\n");
  c.decoder.finish();
  // 4,096 bytes of text; the line that crosses the bound is cut there and still ends with '\n'.
  EXPECT_EQ(c.decoder.other_output().at(1).size(), 4096u + 1);
}

TEST(FrameDecoder, OverlongLineIsClippedTheSameWholeOrInPieces) {
  const std::string stream = " 2: " + std::string(5000, 'z') + "\n";
  Collected whole, pieces;
  whole.decoder.feed(stream);
  for (char ch : stream) pieces.decoder.feed(std::string_view(&ch, 1));
  ASSERT_TRUE(whole.decoder.other_output().contains(2));
  EXPECT_EQ(whole.decoder.other_output(), pieces.decoder.other_output());
  // The line is cut at 2 * kFrameChunk + 64 bytes, label included.
  EXPECT_EQ(whole.decoder.other_output().at(2), std::string(2 * kFrameChunk + 64 - 4, 'z') + "\n");
}

TEST(FrameDecoder, FinishReportsATruncatedDocument) {
  const std::string stream = encode_frames("n5", utf8_document(2000));
  const auto cut = stream.find("\n@cmax1 D ", stream.find("@cmax1 D ") + 1);  // after the first data line
  Collected c;
  c.decoder.feed(std::string_view(stream).substr(0, cut + 1));
  EXPECT_TRUE(c.docs.empty());
  c.decoder.finish();
  ASSERT_EQ(c.docs.size(), 1u);
  EXPECT_EQ(c.docs[0].node, "n5");
  EXPECT_EQ(c.docs[0].document, "");
  EXPECT_EQ(c.docs[0].error, "output ended inside the document (900 of 2000 bytes)");
}

TEST(FrameDecoder, FinishCompletesAnUnterminatedLastLine) {
  std::string stream = encode_frames("n5", "{}");
  stream.pop_back();  // "@cmax1 E" without its newline
  auto got = decode_whole(stream);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "");
  EXPECT_EQ(got[0].document, "{}");
}

TEST(FrameDecoder, EndBeforeAllDataIsTruncation) {
  const std::string doc = utf8_document(2000);
  std::string stream = fmt::format("@cmax1 B n1 2000 {:016x}\n@cmax1 D {}\n@cmax1 E\n", fnv1a64(doc), doc.substr(0, 900));
  auto got = decode_whole(stream);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, "n1");
  EXPECT_EQ(got[0].document, "");
  EXPECT_EQ(got[0].error, "document truncated: 900 of 2000 bytes");
}

TEST(FrameDecoder, CorruptedByteIsAHashMismatch) {
  std::string stream = encode_frames("n2", utf8_document(1500));
  const auto at = stream.find("@cmax1 D ") + 9 + 450;
  stream[at] = static_cast<char>(stream[at] ^ 0x01);
  auto got = decode_whole(stream);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, "n2");
  EXPECT_EQ(got[0].document, "");
  EXPECT_EQ(got[0].error, "document corrupted: hash mismatch");
}

TEST(FrameDecoder, MoreDataThanAnnounced) {
  auto got = decode_whole(fmt::format("@cmax1 B n1 3 {:016x}\n@cmax1 D abcd\n@cmax1 E\n", fnv1a64("abc")));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, "n1");
  EXPECT_EQ(got[0].error, "more data than the 3 bytes announced");
  EXPECT_EQ(got[0].document, "");
  // The same over two data lines.
  got = decode_whole(fmt::format("@cmax1 B n1 3 {:016x}\n@cmax1 D ab\n@cmax1 D cd\n@cmax1 E\n", fnv1a64("abc")));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "more data than the 3 bytes announced");
}

TEST(FrameDecoder, BeginInsideAnOpenDocument) {
  std::string stream = encode_frames("n1", utf8_document(1000));
  stream.resize(stream.find("\n@cmax1 D ", stream.find("@cmax1 D ") + 1) + 1);  // node restarted after 900 bytes
  stream += encode_frames("n1", "{\"second\":true}");
  for (const auto& got : {decode_whole(stream), decode_bytewise(stream)}) {
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].node, "n1");
    EXPECT_EQ(got[0].document, "");
    EXPECT_EQ(got[0].error, "a new document began before the last one ended (truncated output)");
    EXPECT_EQ(got[1].error, "");
    EXPECT_EQ(got[1].document, "{\"second\":true}");
  }
}

TEST(FrameDecoder, MalformedBeginLines) {
  auto got = decode_whole("@cmax1 B n1 many 0123abcd\n@cmax1 D x\n@cmax1 E\n");
  ASSERT_EQ(got.size(), 1u);  // the data and end that follow belong to no document
  EXPECT_EQ(got[0].node, "n1");
  EXPECT_EQ(got[0].error, "malformed begin frame \"n1 many 0123abcd\"");

  got = decode_whole(" 4: @cmax1 B n4 12\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].task, 4);
  EXPECT_EQ(got[0].node, "n4");
  EXPECT_EQ(got[0].error, "malformed begin frame \"n4 12\"");

  got = decode_whole("@cmax1 B n1 12 nothex\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "malformed begin frame \"n1 12 nothex\"");

  got = decode_whole("@cmax1 B n1 -1 00\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "malformed begin frame \"n1 -1 00\"");
}

TEST(FrameDecoder, StrayDataAndEndLinesAreIgnored) {
  auto got = decode_whole("@cmax1 D {}\n@cmax1 E\n" + encode_frames("n1", "{}"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].error, "");
  EXPECT_EQ(got[0].document, "{}");
}

TEST(FrameDecoder, MaxDocumentBytesBound) {
  const std::string at_limit(100, 'a'), over(101, 'a');
  Collected c(100);
  c.decoder.feed(encode_frames("n1", at_limit));
  c.decoder.feed(encode_frames("n2", over));
  c.decoder.feed(encode_frames("n3", "{}"));
  c.decoder.finish();
  ASSERT_EQ(c.docs.size(), 3u);
  EXPECT_EQ(c.docs[0].error, "");
  EXPECT_EQ(c.docs[0].document, at_limit);
  EXPECT_EQ(c.docs[1].node, "n2");
  EXPECT_EQ(c.docs[1].document, "");
  EXPECT_EQ(c.docs[1].error, "document of 101 bytes is over the 100-byte limit");
  EXPECT_EQ(c.docs[2].error, "");  // the rest of the oversized document is skipped, the next one read
  EXPECT_EQ(c.docs[2].document, "{}");
}

TEST(FrameDecoder, FinishWithNothingOpenReportsNothing) {
  Collected c;
  c.decoder.feed(encode_frames("n1", "{}"));
  c.decoder.finish();
  c.decoder.finish();
  EXPECT_EQ(c.docs.size(), 1u);
}
