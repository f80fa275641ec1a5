#pragma once
// Internal to the prefilter: turns candidate positions into candidate lines. The kernels
// (scalar, AVX2, AVX-512) find positions whose first four bytes agree on a bucket and hand them
// here in increasing order; this compares the bucket's literals in full and groups the hits by line.

#include <cstring>
#include <string_view>
#include <vector>

#include "signals/prefilter.h"

namespace cmax::signals::detail {

class LineCollector {
 public:
  LineCollector(const Prefilter::Tables& t, std::string_view text, std::vector<Candidate>& out)
      : t_(t), p_(text.data()), n_(text.size()), out_(out) {}

  /// Position `i` starts a literal of one of `buckets` (bit b = bucket b) in its first four bytes.
  void candidate(std::size_t i, unsigned buckets) {
    std::uint64_t found = 0;
    while (buckets) {
      const unsigned b = static_cast<unsigned>(__builtin_ctz(buckets));
      buckets &= buckets - 1;
      for (std::uint8_t l : t_.members[b])
        if (matches(t_.exact[l], i)) found |= std::uint64_t{1} << l;
    }
    if (found) hit(i, found);
  }

  /// The positions a SIMD kernel found in one block: `at[k]` (offset from `base`) with buckets `buckets[k]`.
  void candidates(std::size_t base, const std::uint16_t* at, const std::uint8_t* buckets, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) candidate(base + at[k], buckets[k]);
  }

  void finish() {
    if (pending_) out_.push_back(cur_);
    pending_ = false;
  }

  /// Positions [from, n) one byte at a time; also the tail the SIMD kernels leave.
  void scan_scalar(std::size_t from) {
    const auto* u = reinterpret_cast<const unsigned char*>(p_);
    for (std::size_t i = from; i < n_; ++i) {
      unsigned m = t_.byte[0][u[i]];
      if (!m) continue;
      for (std::size_t j = 1; j < Prefilter::kWidth && m; ++j) m &= i + j < n_ ? t_.byte[j][u[i + j]] : t_.past_end[j];
      if (m) candidate(i, m);
    }
  }

 private:
  bool matches(const Prefilter::Exact& e, std::size_t i) const {
    if (e.size > n_ - i) return false;
    if (n_ - i >= 16) {  // the common case: two masked 8-byte compares, no call
      std::uint64_t x[2];
      std::memcpy(x, p_ + i, 16);
      if (((x[0] ^ e.word[0]) & e.mask[0]) | ((x[1] ^ e.word[1]) & e.mask[1])) return false;
      return e.size <= 16 || std::memcmp(p_ + i + 16, e.text.data() + 16, e.size - 16) == 0;
    }
    return std::memcmp(p_ + i, e.text.data(), e.size) == 0;
  }

  void hit(std::size_t i, std::uint64_t found) {
    if (pending_ && i < cur_.end) {
      cur_.literals |= found;
      return;
    }
    std::size_t floor = 0;
    if (pending_) {
      out_.push_back(cur_);
      floor = cur_.end + 1;
    }
    const void* nl = i > floor ? ::memrchr(p_ + floor, '\n', i - floor) : nullptr;
    cur_.begin = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - p_) + 1 : floor;
    const void* e = std::memchr(p_ + i, '\n', n_ - i);
    cur_.end = e ? static_cast<std::size_t>(static_cast<const char*>(e) - p_) : n_;
    cur_.literals = found;
    pending_ = true;
  }

  const Prefilter::Tables& t_;
  const char* p_;
  std::size_t n_;
  std::vector<Candidate>& out_;
  Candidate cur_;
  bool pending_ = false;
};

/// Scan positions [0, k) for some k <= text size and return k; the caller scans the rest with
/// scan_scalar. Each needs the processor feature its name says.
std::size_t scan_avx2(const Prefilter::Tables& t, std::string_view text, LineCollector& lines);
std::size_t scan_avx512(const Prefilter::Tables& t, std::string_view text, LineCollector& lines);

}  // namespace cmax::signals::detail
