#pragma once
// The text nccl-tests prints, byte for byte, so that every nccl-tests parser reads cmax-collbench.
// Layout of nccl-tests 2.13-2.16 (root and #wrong columns; time "%7.2f" below 100 us, "%7.1f" below
// 10000 us, "%7.0f" from there; bandwidths "%6.2f"; #wrong "%5g"), with the two header lines that
// 2.17 added. Pure functions, no I/O.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::collbench {

/// The facts in the lines above the table.
struct RunHeader {
  std::string tool_version;     ///< cmax-collbench's own version, e.g. "0.1.0"
  std::string backend;          ///< "mpi" or "nccl"
  std::string backend_library;  ///< e.g. "Open MPI 4.1.4", "NCCL 2.28.9"
  std::string test_name;        ///< nccl-tests' binary name, e.g. "all_reduce_perf"
  std::size_t min_bytes = 0;
  std::size_t max_bytes = 0;
  std::size_t step = 0;  ///< the factor when step_is_factor, else bytes
  bool step_is_factor = true;
  int warmup_iters = 0;
  int iters = 0;
  int validation = 1;
};

/// One "#  Rank ..." line's fields.
struct RankLine {
  int rank = 0;
  int group = 0;
  long pid = 0;
  std::string host;  ///< up to the first '.', as nccl-tests prints it
  int device = 0;
  std::string pci;   ///< "0000:00:00" (domain:bus:device)
  std::string name;  ///< e.g. "NVIDIA H100 80GB HBM3", "CPU (x86_64, 16 cores)"
};

/// The fixed columns of a row.
struct RowKey {
  std::size_t size_bytes = 0;
  std::size_t count = 0;
  std::string_view type;
  std::string_view redop;
  int root = -1;
};

/// One placement's (out-of-place or in-place) measured columns.
struct Placement {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::optional<std::int64_t> wrong;  ///< nullopt prints "N/A" (no check)
};

/// The time column as nccl-tests writes it: 7 wide, 2 decimals below 100 us, 1 below 10000, 0 from
/// there.
std::string format_time_us(double time_us);
/// From the version line through "# Using devices\n".
std::string format_run_header(const RunHeader& h);
/// One "#  Rank %2d Group %2d Pid %6d on %10s device %2d [pci] name\n" line.
std::string format_rank_line(const RankLine& r);
/// "#\n" and the three column-header lines.
std::string format_column_header();
/// One table row, out-of-place then in-place, ending in "\n".
std::string format_row(const RowKey& key, const Placement& out_of_place, const Placement& in_place);
/// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X " and "#".
std::string format_footer(std::int64_t out_of_bounds, double avg_busbw_gbps);

}  // namespace cmax::collbench
