// The prefilter's SIMD kernels. Each function carries its own target attribute and is called only
// when best_isa() says the processor has the feature, so the rest of the build stays baseline x86-64.
// Both gather the candidate positions of a block of text into small arrays and hand them to the
// LineCollector once per block, so the vector loop makes no call (and no AVX state switch) per hit.

#include <immintrin.h>

#include "signals/prefilter_lines.h"

namespace cmax::signals::detail {
namespace {

constexpr std::size_t kBlock = 4096;  // text per hand-over; the arrays below live on the stack
static_assert(Prefilter::kWidth == 4, "the kernels below read four positions");

// Appends the positions whose bit is set in `k` (bit i: position `offset` + i) with their bucket
// masks from `b`; returns the new count. Baseline ISA, so both kernels can inline it.
inline std::size_t gather(std::uint64_t k, const std::uint8_t* b, std::size_t offset, std::uint16_t* at,
                          std::uint8_t* buckets, std::size_t count) {
  do {
    const unsigned bit = static_cast<unsigned>(__builtin_ctzll(k));
    k &= k - 1;
    at[count] = static_cast<std::uint16_t>(offset + bit);
    buckets[count++] = b[bit];
  } while (k);
  return count;
}

// Lambdas do not inherit a function's target attribute in GCC: helpers carry their own.
__attribute__((target("avx2"))) inline __m256i nibble_table(const std::array<std::uint8_t, 16>& a) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.data())));
}

// The buckets the byte at each of q[0..32) admits: low-nibble table AND high-nibble table.
__attribute__((target("avx2"))) inline __m256i nibble_lookup(const char* q, __m256i lo, __m256i hi) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  return _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, nibble)),
                          _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)));
}

}  // namespace

__attribute__((target("avx2"))) std::size_t scan_avx2(const Prefilter::Tables& t, std::string_view text,
                                                      LineCollector& lines) {
  const char* p = text.data();
  const std::size_t n = text.size();
  constexpr std::size_t kStep = 32;
  if (n < kStep + 3) return 0;
  const __m256i lo0 = nibble_table(t.low[0]), lo1 = nibble_table(t.low[1]), lo2 = nibble_table(t.low[2]),
                lo3 = nibble_table(t.low[3]);
  const __m256i hi0 = nibble_table(t.high[0]), hi1 = nibble_table(t.high[1]), hi2 = nibble_table(t.high[2]),
                hi3 = nibble_table(t.high[3]);
  const __m256i zero = _mm256_setzero_si256();
  std::uint16_t at[kBlock];
  std::uint8_t buckets[kBlock];
  std::size_t i = 0;
  while (i + kStep + 3 <= n) {
    const std::size_t base = i;
    const std::size_t stop = std::min(n - (kStep + 3), base + kBlock - kStep);
    std::size_t count = 0;
    for (; i <= stop; i += kStep) {
      const char* q = p + i;
      const __m256i m = _mm256_and_si256(_mm256_and_si256(nibble_lookup(q, lo0, hi0), nibble_lookup(q + 1, lo1, hi1)),
                                         _mm256_and_si256(nibble_lookup(q + 2, lo2, hi2), nibble_lookup(q + 3, lo3, hi3)));
      const auto k = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, zero)));
      if (k) {
        alignas(32) std::uint8_t b[kStep];
        _mm256_store_si256(reinterpret_cast<__m256i*>(b), m);
        count = gather(k, b, i - base, at, buckets, count);
      }
    }
    lines.candidates(base, at, buckets, count);
  }
  return i;
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) std::size_t scan_avx512(const Prefilter::Tables& t,
                                                                                std::string_view text,
                                                                                LineCollector& lines) {
  const char* p = text.data();
  const std::size_t n = text.size();
  constexpr std::size_t kStep = 64;
  if (n < kStep + 3) return 0;
  const __m512i lo0 = _mm512_loadu_si512(t.folded[0].data()), hi0 = _mm512_loadu_si512(t.folded[0].data() + 64);
  const __m512i lo1 = _mm512_loadu_si512(t.folded[1].data()), hi1 = _mm512_loadu_si512(t.folded[1].data() + 64);
  const __m512i lo2 = _mm512_loadu_si512(t.folded[2].data()), hi2 = _mm512_loadu_si512(t.folded[2].data() + 64);
  const __m512i lo3 = _mm512_loadu_si512(t.folded[3].data()), hi3 = _mm512_loadu_si512(t.folded[3].data() + 64);
  std::uint16_t at[kBlock];
  std::uint8_t buckets[kBlock];
  std::size_t i = 0;
  while (i + kStep + 3 <= n) {
    const std::size_t base = i;
    const std::size_t stop = std::min(n - (kStep + 3), base + kBlock - kStep);
    std::size_t count = 0;
    for (; i <= stop; i += kStep) {
      const char* q = p + i;
      // vpermi2b looks up the low 7 bits of each byte in the 128-entry table lo:hi.
      const __m512i m0 = _mm512_permutex2var_epi8(lo0, _mm512_loadu_si512(q), hi0);
      const __m512i m1 = _mm512_permutex2var_epi8(lo1, _mm512_loadu_si512(q + 1), hi1);
      const __m512i m2 = _mm512_permutex2var_epi8(lo2, _mm512_loadu_si512(q + 2), hi2);
      const __m512i m3 = _mm512_permutex2var_epi8(lo3, _mm512_loadu_si512(q + 3), hi3);
      const __m512i m = _mm512_and_si512(_mm512_and_si512(m0, m1), _mm512_and_si512(m2, m3));
      const __mmask64 k = _mm512_test_epi8_mask(m, m);
      if (k) {
        alignas(64) std::uint8_t b[kStep];
        _mm512_store_si512(b, m);
        count = gather(k, b, i - base, at, buckets, count);
      }
    }
    lines.candidates(base, at, buckets, count);
  }
  return i;
}

}  // namespace cmax::signals::detail
