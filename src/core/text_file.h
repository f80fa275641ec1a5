#pragma once
// A user-named input file read whole, with a bound: a log or trace given on the command line. Unlike
// HostRoot::read_file (host files, regular files only), pipes and process substitutions are fine
// here, since a user who names one means it.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cmax::core {

/// The bytes of `path`; an error naming it when it cannot be opened or read, or when it holds more
/// than `max_bytes` ("read PATH: larger than N MiB" followed by `too_large_hint`, which says what
/// to do: "; split the trace").
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes,
                                   std::string_view too_large_hint = {});

/// Writes `text` to `path` through a temporary file beside it (PATH.tmp.PID) renamed over it, so a
/// reader never sees half a file and a crash leaves the old one. The temporary file is removed on
/// failure; errors name the file and what failed.
Result<void> write_text_file_atomic(const std::string& path, std::string_view text);

}  // namespace cmax::core
