#pragma once
// A high-dynamic-range latency histogram in the manner of HdrHistogram (Gil Tene): log-linear
// buckets over integer microseconds, fixed memory, O(1) record, mergeable. Written here because
// Debian 12 packages no HdrHistogram library. Pure.

#include <cstdint>
#include <vector>

namespace cmax::loadgen {

class Histogram {
 public:
  /// Values from 0 to about 2^40 us (12.7 days) with a relative error below 2^-sub_bucket_bits
  /// (10: < 0.1%). Larger values are clamped to the top (and counted in clamped()).
  explicit Histogram(int sub_bucket_bits = 10);

  void record_us(std::uint64_t us, std::uint64_t count = 1);
  /// Seconds, rounded to the nearest microsecond; negative values are ignored.
  void record_s(double seconds);
  void merge(const Histogram& other);  ///< other must have the same sub_bucket_bits
  void clear();

  std::uint64_t count() const { return count_; }
  std::uint64_t clamped() const { return clamped_; }
  std::uint64_t min_us() const;  ///< exact; 0 when empty
  std::uint64_t max_us() const;  ///< exact; 0 when empty
  double mean_us() const;        ///< exact (a running sum); 0 when empty
  /// Nearest rank: the smallest recorded value v (to the bucket's precision, reported as the
  /// bucket's highest equivalent value, capped at max_us()) with at least ceil(p/100 x count)
  /// values <= v. p in [0, 100]; 0 when empty.
  std::uint64_t percentile_us(double p) const;

 private:
  std::size_t index_of(std::uint64_t us) const;
  std::uint64_t highest_equivalent(std::size_t index) const;
  int sub_bits_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0, clamped_ = 0, min_ = UINT64_MAX, max_ = 0;
  long double sum_ = 0;
};

}  // namespace cmax::loadgen
