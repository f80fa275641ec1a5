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
  /// Like create(), but the compiled database is made once per process for a static literal
  /// table (keyed by its address) and shared; each Prefilter still owns its scratch space.
  static Result<Prefilter> create_shared(std::span<const std::string_view> static_literals);
  Prefilter(Prefilter&& other) noexcept;
  Prefilter& operator=(Prefilter&&) = delete;
  Prefilter(const Prefilter&) = delete;
  ~Prefilter();

  /// Calls `on_line(begin, end)` (offsets into `text`, end excludes '\n') once per line of
  /// `text` that contains a literal, in order. Not thread-safe (owns one scratch space).
  Result<void> scan(std::string_view text, const std::function<void(std::size_t, std::size_t)>& on_line);

 private:
  Prefilter(hs_database* db, hs_scratch* scratch, bool owns_db) : db_(db), scratch_(scratch), owns_db_(owns_db) {}
  hs_database* db_ = nullptr;
  hs_scratch* scratch_ = nullptr;
  bool owns_db_ = true;
};

}  // namespace cmax::signals
