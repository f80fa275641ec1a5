#pragma once
// Finds the lines worth classifying, and which anchor literals each one holds, in one SIMD pass.
//
// A Teddy-style filter: every literal falls into one of 8 buckets, and four tables say, for each of
// the first four byte positions of a literal, which buckets a byte value can start. A position is a
// candidate when the four bytes there agree on a bucket; candidates are then compared with the
// bucket's literals in full. With AVX-512 VBMI the tables are exact (128-entry byte lookups); with
// AVX2 they are nibble tables (a superset, settled by the full compare); without either, a scalar
// loop. Hand-written rather than Hyperscan because Hyperscan's matcher for the 16 literals the
// classifier needs ran at 2.2-3.9 GB/s here, a third of ripgrep's single-literal search
// (docs/PERFORMANCE.md), and because the classifier wants the set of literals per line, which
// Hyperscan reports only as one callback per match.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::signals {

/// Which instruction set a Prefilter scans with.
enum class Isa { scalar, avx2, avx512 };

/// The best Isa this processor supports.
Isa best_isa();
std::string_view to_string(Isa isa);

/// One line that holds at least one literal.
struct Candidate {
  std::size_t begin = 0;    ///< offset of the line's first byte
  std::size_t end = 0;      ///< offset of its '\n', or of the end of the text
  std::uint64_t literals = 0;  ///< bit i set when literal i occurs in the line
};

class Prefilter {
 public:
  static constexpr std::size_t kMaxLiterals = 64;
  static constexpr std::size_t kWidth = 4;  ///< byte positions the tables cover
  static constexpr std::size_t kBuckets = 8;

  /// Builds the tables for 1 to 64 literals, none empty and none holding '\n'. `isa` is clamped
  /// to what this processor supports.
  static Result<Prefilter> create(std::span<const std::string_view> literals, Isa isa = best_isa());

  /// Appends to `out`, in order, one Candidate per line of `text` that holds a literal. Lines
  /// end at '\n'; the last line may lack one. Pure; thread-safe (the Prefilter is not modified).
  void find_lines(std::string_view text, std::vector<Candidate>& out) const;

  /// What find_lines must return, by the plain definition: each line, each literal, a find().
  /// Slow; for tests and the fuzz target, which compare every Isa with it.
  static void find_lines_naive(std::span<const std::string_view> literals, std::string_view text,
                               std::vector<Candidate>& out);

  Isa isa() const { return isa_; }
  /// The bucket each literal was put in (for tests and the bench's report).
  const std::vector<std::uint8_t>& buckets() const { return bucket_of_; }

  /// A literal for the full compare: its first 16 bytes as two words with masks (little-endian).
  struct Exact {
    std::uint64_t word[2] = {0, 0};
    std::uint64_t mask[2] = {0, 0};
    std::size_t size = 0;
    std::string text;
  };

  /// The tables the kernels read. Public so the SIMD kernels (prefilter_simd.cpp) can see them.
  struct Tables {
    std::array<std::array<std::uint8_t, 256>, kWidth> byte{};  ///< bucket bits per position, byte
    std::array<std::uint8_t, kWidth> past_end{};  ///< buckets with a literal shorter than the position
    std::array<std::array<std::uint8_t, 128>, kWidth> folded{};  ///< byte[j][c] | byte[j][c + 128]
    std::array<std::array<std::uint8_t, 16>, kWidth> low{}, high{};  ///< nibble supersets of byte
    std::array<std::vector<std::uint8_t>, kBuckets> members;  ///< literal indexes per bucket
    std::vector<Exact> exact;  ///< per literal
  };

 private:
  explicit Prefilter(Tables t, std::vector<std::uint8_t> bucket_of, Isa isa)
      : t_(std::move(t)), bucket_of_(std::move(bucket_of)), isa_(isa) {}

  Tables t_;
  std::vector<std::uint8_t> bucket_of_;
  Isa isa_;
};

}  // namespace cmax::signals
