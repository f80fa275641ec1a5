#include "signals/prefilter.h"

#include <algorithm>
#include <bitset>

#include "signals/prefilter_lines.h"

namespace cmax::signals {
namespace {

using ByteSet = std::bitset<256>;

// The bytes a bucket admits at each position: a literal's byte, or every byte past its end.
struct BucketSets {
  std::array<ByteSet, Prefilter::kWidth> at;
  bool empty = true;

  void add(std::string_view lit) {
    for (std::size_t j = 0; j < Prefilter::kWidth; ++j) {
      if (j < lit.size()) {
        at[j].set(static_cast<unsigned char>(lit[j]));
      } else {
        at[j].set();
      }
    }
    empty = false;
  }
  // How many 4-byte strings the bucket admits: the cross product of its sets. Each one that is
  // not a literal's prefix is a false candidate the full compare has to reject.
  double admitted() const {
    if (empty) return 0;
    double n = 1;
    for (const auto& s : at) n *= static_cast<double>(s.count());
    return n;
  }
};

// Greedy: each literal goes where it adds the fewest admitted strings, so literals that share
// bytes ("Error", "error") share a bucket and unlike ones get buckets of their own.
std::vector<std::uint8_t> assign_buckets(std::span<const std::string_view> literals) {
  std::array<BucketSets, Prefilter::kBuckets> sets;
  std::vector<std::uint8_t> bucket_of;
  for (std::string_view lit : literals) {
    std::size_t best = 0;
    double best_cost = 0;
    for (std::size_t b = 0; b < sets.size(); ++b) {
      BucketSets grown = sets[b];
      grown.add(lit);
      double cost = grown.admitted() - sets[b].admitted();
      // On a tie, join a bucket in use: empty buckets are worth more to later, unlike literals.
      bool better = b == 0 || cost < best_cost || (cost == best_cost && sets[best].empty && !sets[b].empty);
      if (better) {
        best = b;
        best_cost = cost;
      }
    }
    sets[best].add(lit);
    bucket_of.push_back(static_cast<std::uint8_t>(best));
  }
  return bucket_of;
}

}  // namespace

Isa best_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vbmi"))
      return Isa::avx512;
    if (__builtin_cpu_supports("avx2")) return Isa::avx2;
    return Isa::scalar;
  }();
  return isa;
}

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

Result<Prefilter> Prefilter::create(std::span<const std::string_view> literals, Isa isa) {
  if (literals.empty() || literals.size() > kMaxLiterals)
    return fail("build the kernel-log prefilter: {} literals (want 1 to {})", literals.size(), kMaxLiterals);
  for (std::size_t i = 0; i < literals.size(); ++i) {
    if (literals[i].empty() || literals[i].find('\n') != std::string_view::npos)
      return fail("build the kernel-log prefilter: literal {} is empty or holds a newline", i);
  }
  Tables t;
  std::vector<std::uint8_t> bucket_of = assign_buckets(literals);
  for (std::size_t i = 0; i < literals.size(); ++i) {
    std::string_view lit = literals[i];
    const auto bit = static_cast<std::uint8_t>(1u << bucket_of[i]);
    t.members[bucket_of[i]].push_back(static_cast<std::uint8_t>(i));
    Exact e;
    e.size = lit.size();
    e.text = std::string(lit);
    for (std::size_t k = 0; k < std::min<std::size_t>(16, lit.size()); ++k) {
      e.word[k / 8] |= std::uint64_t{static_cast<unsigned char>(lit[k])} << (8 * (k % 8));
      e.mask[k / 8] |= std::uint64_t{0xff} << (8 * (k % 8));
    }
    t.exact.push_back(std::move(e));
    for (std::size_t j = 0; j < kWidth; ++j) {
      if (j < lit.size()) {
        t.byte[j][static_cast<unsigned char>(lit[j])] |= bit;
      } else {
        for (auto& v : t.byte[j]) v |= bit;
        t.past_end[j] |= bit;
      }
    }
  }
  for (std::size_t j = 0; j < kWidth; ++j) {
    for (unsigned c = 0; c < 256; ++c) {
      t.folded[j][c & 127] |= t.byte[j][c];
      t.low[j][c & 15] |= t.byte[j][c];
      t.high[j][c >> 4] |= t.byte[j][c];
    }
  }
  return Prefilter(std::move(t), std::move(bucket_of), std::min(isa, best_isa()));
}

void Prefilter::find_lines(std::string_view text, std::vector<Candidate>& out) const {
  detail::LineCollector lines(t_, text, out);
  std::size_t done = 0;
  switch (isa_) {
    case Isa::avx512: done = detail::scan_avx512(t_, text, lines); break;
    case Isa::avx2: done = detail::scan_avx2(t_, text, lines); break;
    case Isa::scalar: break;
  }
  lines.scan_scalar(done);
  lines.finish();
}

void Prefilter::find_lines_naive(std::span<const std::string_view> literals, std::string_view text,
                                 std::vector<Candidate>& out) {
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    std::uint64_t found = 0;
    for (std::size_t i = 0; i < literals.size(); ++i)
      if (line.find(literals[i]) != std::string_view::npos) found |= std::uint64_t{1} << i;
    if (found) out.push_back(Candidate{begin, end, found});
    begin = end + 1;
  }
}

}  // namespace cmax::signals
