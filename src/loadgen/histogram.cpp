#include "loadgen/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cmax::loadgen {
namespace {

// Values up to 2^40 - 1 us are tracked; larger ones land on this value.
constexpr int kTopBit = 40;
constexpr std::uint64_t kMaxTrackable = (std::uint64_t{1} << kTopBit) - 1;
// 16 bits already means 25 x 64 Ki counters (13 MB); nothing asks for more precision than that.
constexpr int kMaxSubBits = 16;

}  // namespace

// Layout: values below 2^(s+1) have one counter each (index = value). A value whose highest set
// bit is h >= s+1 keeps its top s+1 bits: it falls in bucket b = h - s (width 2^(h-s)) at
// sub-bucket (v >> (h-s)) - 2^s, index (b + 1) * 2^s + sub-bucket. Both formulas agree for
// h = s, so one expression serves every h >= s, and (41 - s) * 2^s counters cover h <= 39.
Histogram::Histogram(int sub_bucket_bits)
    : sub_bits_(std::clamp(sub_bucket_bits, 0, kMaxSubBits)),
      counts_(static_cast<std::size_t>(kTopBit + 1 - sub_bits_) << sub_bits_, 0) {}

std::size_t Histogram::index_of(std::uint64_t us) const {
  const std::uint64_t half = std::uint64_t{1} << sub_bits_;
  if (us < half) return static_cast<std::size_t>(us);
  const int h = std::bit_width(us) - 1;
  const int shift = h - sub_bits_;
  return (static_cast<std::size_t>(shift + 1) << sub_bits_) + static_cast<std::size_t>((us >> shift) - half);
}

std::uint64_t Histogram::highest_equivalent(std::size_t index) const {
  const std::size_t bucket = index >> sub_bits_;
  if (bucket == 0) return index;
  const int shift = static_cast<int>(bucket) - 1;
  const std::uint64_t sub = index & ((std::size_t{1} << sub_bits_) - 1);
  const std::uint64_t lowest = ((std::uint64_t{1} << sub_bits_) + sub) << shift;
  return lowest + (std::uint64_t{1} << shift) - 1;
}

void Histogram::record_us(std::uint64_t us, std::uint64_t count) {
  if (count == 0) return;
  if (us > kMaxTrackable) {
    us = kMaxTrackable;
    clamped_ += count;
  }
  counts_[index_of(us)] += count;
  count_ += count;
  min_ = std::min(min_, us);
  max_ = std::max(max_, us);
  sum_ += static_cast<long double>(us) * static_cast<long double>(count);
}

void Histogram::record_s(double seconds) {
  if (!(seconds >= 0)) return;  // negative and NaN: "never happened", not a sample
  const double us = std::round(seconds * 1e6);
  // Anything at or past 2^63 (or infinite) is far beyond the top and clamps like any other.
  record_us(us >= 9.2e18 ? UINT64_MAX : static_cast<std::uint64_t>(us));
}

void Histogram::merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (other.sub_bits_ == sub_bits_) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  } else {
    // A contract breach, but one with a sensible answer: each of other's buckets is re-recorded at
    // its highest equivalent value (capped at its max), so only the coarser precision is lost.
    for (std::size_t i = 0; i < other.counts_.size(); ++i) {
      if (other.counts_[i] != 0) {
        counts_[index_of(std::min(other.highest_equivalent(i), other.max_))] += other.counts_[i];
      }
    }
  }
  count_ += other.count_;
  clamped_ += other.clamped_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

void Histogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = clamped_ = max_ = 0;
  min_ = UINT64_MAX;
  sum_ = 0;
}

std::uint64_t Histogram::min_us() const { return count_ == 0 ? 0 : min_; }

std::uint64_t Histogram::max_us() const { return max_; }

double Histogram::mean_us() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

std::uint64_t Histogram::percentile_us(double p) const {
  if (count_ == 0) return 0;
  if (!(p > 0)) p = 0;  // NaN as well
  p = std::min(p, 100.0);
  // p x count / 100 rather than p / 100 x count: 99 x 100 / 100 is exactly 99, while 0.99 x 100
  // is 99.00000000000001 and would move the rank by one. The tolerance absorbs what remains of
  // p's decimal representation (99.9 is not exact).
  const double exact = p * static_cast<double>(count_) / 100.0;
  auto rank = static_cast<std::uint64_t>(std::ceil(exact - exact * 1e-12));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(highest_equivalent(i), max_);
  }
  return max_;  // unreachable: the counters sum to count_
}

}  // namespace cmax::loadgen
