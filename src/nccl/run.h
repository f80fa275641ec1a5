#pragma once
// What one nccl-tests run (or cmax-collbench run, which prints the same format) measured: the
// header's facts and every row. A plain value the parser (nccl/parse.h) produces and the analysis
// (nccl/analyze.h) and chart (nccl/chart.h) read. No I/O.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::nccl {

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv,
  kGather,
  kScatter,
  kHyperCube,
  kUnknown
};

/// "all_reduce", "all_gather", ... as nccl-tests names the binary without "_perf"; "unknown".
std::string_view collective_name(Collective c);
/// From a binary or test name: "all_reduce_perf", "all_reduce", "alltoall_perf", "sendrecv".
Collective collective_from_name(std::string_view name);
/// busbw / algbw for `c` on `ranks` ranks (nccl-tests' factors): 2(n-1)/n all_reduce; (n-1)/n
/// all_gather, reduce_scatter, alltoall, gather, scatter; 1 broadcast, reduce, sendrecv,
/// hypercube. 0 when unknown or ranks < 1.
double busbw_factor(Collective c, int ranks);

/// One placement's columns of a row.
struct Measure {
  double time_us = 0;
  double algbw_gbps = 0;  ///< GB/s, GB = 1e9 bytes
  double busbw_gbps = 0;
  /// #wrong (new format, an integer) or error (old format, a float); nullopt for "N/A" or absent.
  std::optional<double> wrong;
};

/// One row of the table.
struct Row {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;
  std::string type;   ///< "float", "half", ...
  std::string redop;  ///< "sum", "none", "" (alltoall rows in old builds leave it blank)
  std::optional<int> root;  ///< the root column (-1 for none); nullopt in old builds without it
  Measure out_of_place;
  std::optional<Measure> in_place;  ///< absent when the row has only out-of-place columns
  std::size_t line = 0;             ///< 1-based line in the input
};

/// One `#  Rank  N Group G Pid P on HOST device D [PCI] NAME` line.
struct RankInfo {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string pci;  ///< "0000:04:00"
  std::string gpu;  ///< "NVIDIA H100 80GB HBM3"
};

/// One run: the header facts and rows from one table.
struct Run {
  std::string test;  ///< "all_reduce_perf" when the header says (new header), else derived
  Collective collective = Collective::kUnknown;
  int ranks = 0;     ///< from the Rank lines; else inferred (see `ranks_inferred`)
  bool ranks_inferred = false;  ///< no Rank lines: ranks from busbw/algbw of the rows
  int nodes = 0;                ///< distinct hosts among the Rank lines; 0 when unknown
  std::vector<std::string> hosts;  ///< distinct, in order of first appearance
  std::vector<RankInfo> rank_info;
  std::string gpu_model;     ///< the most common GPU name among the Rank lines; "" when unknown
  /// "2.26.2+cuda12.8" from "NCCL version ..."; else "2.28.3" decoded from the
  /// `# nccl-tests version ... nccl-library=22803` line or a -J file's code; "" when neither.
  std::string nccl_version;
  /// "mpi" for a cmax-collbench run on its MPI backend ("# cmax-collbench version 0.1.0 backend mpi"),
  /// "nccl" for its NCCL backend; "" for nccl-tests and rccl-tests.
  std::string backend;
  std::string tests_version; ///< "2.17.8" from "# nccl-tests version ..."; ""
  std::string header;        ///< the "# nThread ..." line, verbatim; "" when absent
  bool old_format = false;   ///< an `error` column and no `root`
  /// The inter-node fabric the log shows ("IB", "RoCE", "EFA", "Slingshot", "TCPX", "Socket"), from
  /// its NCCL INFO lines (NET/IB ... /RoCE, NET/OFI, cxi, GPUDirectTCPX/FasTrak, NET/Socket) or
  /// declared (cmax nccl analyze --fabric); "" when unknown.
  std::string fabric;
  /// NICs NCCL uses on each rank's host: the devices "NET/IB : Using [0]mlx5_0:1/IB [1]..." lists;
  /// 0 when unknown. A reference for another NIC count is not this run's.
  int nics = 0;
  std::optional<bool> redop_column;  ///< the column header names "redop"; nullopt: no header seen
  std::vector<Row> rows;     ///< in input order
  std::optional<double> avg_busbw_reported;  ///< "# Avg bus bandwidth : X"
  std::optional<std::uint64_t> out_of_bounds;  ///< "# Out of bounds values : N OK"
  bool complete = false;     ///< the footer was seen; false for a truncated table
  std::size_t first_line = 0;
  /// What the parser noticed about this run, in words: a busbw that does not match algbw times
  /// the collective's factor (row and size named), a row it could not read, a truncated table.
  std::vector<std::string> warnings;
};

}  // namespace cmax::nccl
