#pragma once
// Judging one measured number against the bounds in the thresholds table. Shared by every active
// check (CPU, memory, stall, storage): the table keys follow one convention,
//   <check id>.<measurement>.min / .max            fail bounds
//   <check id>.<measurement>.warn_min / .warn_max  warn bounds
// ("memory.bandwidth.fraction_of_ceiling.warn_min"), and any of the four may be absent.
// Pure apart from reading the Thresholds object; no I/O.

#include <optional>
#include <string>
#include <string_view>

#include "audit/model.h"
#include "health/active.h"
#include "health/result.h"

namespace cmax::health {

/// The four bounds of one measurement; absent ones are not checked.
struct Bounds {
  std::optional<double> min;       ///< below: fail
  std::optional<double> max;       ///< above: fail
  std::optional<double> warn_min;  ///< below (and not below min): warn
  std::optional<double> warn_max;  ///< above (and not above max): warn
  std::string key;                 ///< "<check id>.<measurement>", for reasons
  bool any() const { return min || max || warn_min || warn_max; }
};

/// The bounds stored under `key` ("cpu.stall.max_wakeup_ms") in the table.
Bounds read_bounds(const Thresholds& t, std::string_view key);

/// A verdict on one number and why.
struct Judgement {
  audit::Outcome outcome = audit::Outcome::unverified;
  std::string reason;  ///< empty for pass; "triad fraction 0.35 is below the fail bound 0.4 (...)"
};

/// Judges `m.value` against `b` and records the bound it is held to in m.min / m.max (the fail
/// bound when there is one, else the warn bound). Fail beats warn. No bounds at all, or a value
/// that is not a number, is unverified ("measured, not judged"), never a silent pass.
Judgement judge(Measurement& m, const Bounds& b);

/// Shorthand for judge(m, read_bounds(t, key)).
Judgement judge(Measurement& m, const Thresholds& t, std::string_view key);

/// The more serious of two outcomes when one check combines several verdicts:
/// fail > warn > unverified > not_applicable > pass.
audit::Outcome worse(audit::Outcome a, audit::Outcome b);

}  // namespace cmax::health
