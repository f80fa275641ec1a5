#pragma once
// Ranking results by how much they ask of a reader, for summaries of several results.

#include "audit/model.h"

namespace cmax::audit {

/// fail 4, warn 3, unverified 2, pass 1, not_applicable 0: a summary of several results shows the
/// one that ranks highest.
constexpr int attention_rank(Outcome o) {
  switch (o) {
    case Outcome::fail: return 4;
    case Outcome::warn: return 3;
    case Outcome::unverified: return 2;
    case Outcome::pass: return 1;
    case Outcome::not_applicable: return 0;
  }
  return 0;
}

}  // namespace cmax::audit
