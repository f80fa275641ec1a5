#pragma once
// munged for Slurm tests: started once per machine and left running (it is shared, like the
// system's).

#include <chrono>

#include "core/result.h"

namespace cmax::test {

/// Makes sure munged answers on this machine: creates /run/munge owned by munge, a key with
/// `mungekey -c` when /etc/munge/munge.key is missing, and starts munged as user munge when
/// `munge -n` fails. Needs root. Safe when several tests call it at once.
Result<void> ensure_munged(std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace cmax::test
