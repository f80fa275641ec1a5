#pragma once
// Finds the lines worth classifying: Hyperscan's multi-literal matcher over a buffer of whole
// lines, reporting each line that holds an anchor literal once. Hyperscan (Debian libhyperscan-dev)
// is used because one SIMD pass over many literals is what keeps the scan at memory speed; a loop
// of memmem calls, one per literal, reads the buffer two dozen times.

#include <cstddef>
#include <functional>
#include <span>
#include <string_view>

#include "core/result.h"

struct hs_database;
struct hs_scratch;

namespace cmax::signals {

class Prefilter {
 public:
  /// Compiles the literals. An error names the literal Hyperscan rejected.
  static Result<Prefilter> create(std::span<const std::string_view> literals);
  Prefilter(Prefilter&& other) noexcept;
  Prefilter& operator=(Prefilter&&) = delete;
  Prefilter(const Prefilter&) = delete;
  ~Prefilter();

  /// Calls `on_line(begin, end)` (offsets into `text`, end excludes '\n') once per line of
  /// `text` that contains a literal, in order. Not thread-safe (owns one scratch space).
  Result<void> scan(std::string_view text, const std::function<void(std::size_t, std::size_t)>& on_line);

 private:
  Prefilter(hs_database* db, hs_scratch* scratch) : db_(db), scratch_(scratch) {}
  hs_database* db_ = nullptr;
  hs_scratch* scratch_ = nullptr;
};

}  // namespace cmax::signals
