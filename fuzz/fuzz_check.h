#pragma once
// The fuzz targets' invariant check: an invariant that does not hold aborts, which libFuzzer
// reports as a crash with the input that broke it.

#include <cstdlib>

namespace cmax::fuzz {

inline void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace cmax::fuzz
