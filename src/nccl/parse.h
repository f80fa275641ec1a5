#pragma once
// Pure parser for nccl-tests output (and cmax-collbench's, which prints the same table): the text
// table in all its printed variants, and the JSON document `-J FILE` writes. No I/O; string_view
// in, value out.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "nccl/run.h"

namespace cmax::nccl {

/// The most warnings one run keeps; later ones are counted in one last "... and N more" line.
inline constexpr std::size_t kMaxWarningsPerRun = 100;
/// A row whose size or count exceeds this (1e18 bytes) is rejected as absurd.
inline constexpr std::uint64_t kMaxRowBytes = 1'000'000'000'000'000'000ULL;

/// Everything one file held: its runs in order, and what could not be read.
struct ParsedLog {
  std::vector<Run> runs;
  /// Notes that belong to no run: a header with no table after it, a JSON field of the wrong type.
  std::vector<std::string> warnings;
};

/// Parses nccl-tests (or cmax-collbench) output. A file may hold several runs (several tables,
/// e.g. an all_reduce then an alltoall, or "Run-1 Starting command" blocks). No table at all is
/// an error that says so ("no nccl-tests table found: ..."); a truncated table is a run with
/// complete=false and a warning. Never throws; bounded memory; O(n).
///
/// Text. Each line first loses one launcher prefix (srun's `0: `, Open MPI's `[1,0]<stdout>:` or
/// `[host:pid]`, or a bare `[0] `). NCCL INFO/WARN lines and other noise are skipped, with a
/// warning only inside a table. The `# size count type redop [root] ...` column header decides
/// whether a `root` column is there (new builds) or not (builds before Aug 2022: `error` float
/// instead of `#wrong`, `old_format`). Without one (a file that starts mid-table) each row says:
/// 13 fields (or 9 with out-of-place only) have a root; 12 fields, or 11 when field 3 is numeric
/// (old alltoall's blank redop), do not; 8 fields have a root unless the last holds an exponent
/// (old `error`, "5e-07"). A row may carry 8 measure fields (out-of-place and in-place time algbw
/// busbw #wrong), 7 (in-place #wrong cut off), 4 or 3 (out-of-place only: in_place = nullopt) and
/// a trailing `--report_timestamps` date and time. `N/A` in #wrong is nullopt. A run ends at
/// `# Avg bus bandwidth : X` (complete) or, truncated, where the next run's header, column header
/// or `Run-N` line starts or the text ends. A row with a negative, non-finite or absurd (size or
/// count > kMaxRowBytes) number is rejected with a warning.
///
/// Derived facts. ranks = distinct Rank lines, nodes = distinct hosts, gpu_model = the most common
/// GPU name. The collective comes from `# Collective test starting: NAME`; without it, from the
/// rows' placements with algbw >= 1 GB/s (>= 0.1 when none is): with a reduction redop (sum prod
/// max min avg mulsum premulsum) and busbw > algbw on every one, all_reduce (2(n-1)/n); with a
/// reduction and busbw < algbw on every one, reduce_scatter; with a blank or "none" redop and
/// busbw < algbw on every one, alltoall ((n-1)/n; all_gather prints the same and is not told
/// apart). Anything else, busbw == algbw included (broadcast, reduce, sendrecv or a 2-rank
/// all_reduce), stays kUnknown. When ranks are known the median busbw/algbw f must also fit them
/// (within max(0.02, 2%)). Without Rank lines, ranks are inferred from f over algbw >= 1 GB/s
/// with the collective's factor (n = 2/(2-f) or 1/(1-f), rounded), ranks_inferred = true, but
/// only when the 2-decimal printing of the most precise row cannot round to a different n;
/// otherwise ranks stay 0 with a warning.
///
/// Checks, as run warnings: busbw recomputed as algbw * busbw_factor(collective, ranks) for both
/// placements when collective and ranks are known and not inferred, flagged when it differs from
/// the printed one by more than max(0.02 GB/s, 2%) on a row with algbw >= 0.1 GB/s; `#wrong` > 0
/// ("N wrong results at size S"), or an old-format `error` above 1e-3 (smaller ones are the float
/// rounding old builds printed on every row).
///
/// JSON (the text starts with `{` or `[`). nccl-tests' `-J` document: {"nccl_version": 22803,
/// "args": ["./all_reduce_perf", ...], "config": {"devices": [{"rank", "hostname", "device",
/// "device_hex", "device_info"}]}, "results": [{"size", "count", "type", "redop", "root" (a
/// number or a padded string "    -1"), "out_of_place": {"time" or "cpu_time", "alg_bw",
/// "bus_bw", "nwrong" (number, null or "N/A")} or null (an in-place-only row: its in-place
/// numbers become the row's one placement), "in_place": {...}}], "out_of_bounds":
/// {"count"}, "average_bus_bandwidth": {"bandwidth"}}. Also accepted: rows under "rows" or
/// "data" instead of "results", "devices" at top level, measure keys "algbw"/"busbw"/"wrong"/
/// "#wrong"/"error"/"time_us"/"algbw_gbps"/"busbw_gbps", placements as flat "oop_"/"ip_" key
/// prefixes, a top-level array of such documents (one run each) or of rows (one run), and
/// "test"/"collective"/"nccl_version" as strings. The run is complete when
/// "average_bus_bandwidth" is present; `header` stays "". JSON nested deeper than 64 levels,
/// or with no rows array, is an error.
Result<ParsedLog> parse_nccl_tests(std::string_view text);

}  // namespace cmax::nccl
