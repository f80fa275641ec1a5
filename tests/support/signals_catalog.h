#pragma once
// The built-in signal catalog (NVIDIA's Xid catalog, the decode sheets, cmax's defaults), loaded
// once for a test binary; a damaged embedded catalog fails the test that asked for it.

#include <gtest/gtest.h>

#include "signals/catalog.h"

namespace cmax::test {

inline const signals::Catalog& signals_catalog() {
  static const signals::Catalog c = [] {
    auto r = signals::Catalog::builtin();
    if (!r) ADD_FAILURE() << r.error().message;
    return std::move(r).value();
  }();
  return c;
}

}  // namespace cmax::test
