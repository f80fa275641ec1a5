#pragma once
// What `cmax nccl sweep` runs: one command per collective, node count and variant, as argv and
// environment (spawned without a shell). Pure: options in, steps out.
//
// Variants (the golden recipe, docs/nccl.md):
//   golden   NCCL's own choices, no overrides; NCCL_DEBUG=VERSION so the log names the NCCL build.
//            Every collective at every node count.
//   network  golden plus NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: every byte goes through the NICs,
//            so the fabric is measured, not NVLink. all_reduce at every node count above 1.
//   ring     golden plus NCCL_ALGO=Ring: the 2-node all_reduce against the published ring numbers
//            (392.7 GB/s on 8x400G H100), since the default (tree/NVLS) overstates busbw there.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::nccl {

enum class Launcher { kMpirun, kSrun };

struct SweepOptions {
  Launcher launcher = Launcher::kMpirun;
  std::vector<int> node_counts{1, 2};
  int ranks_per_node = 8;  ///< one per GPU
  std::vector<std::string> tests{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"};
  /// nccl-tests' build directory: runs DIR/<test>_perf. Empty: `collbench` below.
  std::string tests_dir;
  /// cmax-collbench's path, run as `cmax-collbench --op <test>` (CPU fabrics, machines without GPUs).
  std::string collbench;
  std::string min_bytes = "8", max_bytes = "8G", step_factor = "2";
  int iters = 20, warmup = 5;
  /// The nodes to place ranks on, one each, the first n for n nodes: mpirun's --host, srun's -w.
  /// Empty: mpirun on this host; srun wherever Slurm places the step.
  std::vector<std::string> hosts;
  /// srun: the reservation the steps run inside (--reservation), as a trial's nodes are held in one.
  std::string reservation;
  std::vector<std::string> launcher_args;  ///< extra, before the program (--partition x; --mca btl ...)
  bool network_variant = true;
  bool ring_variant = true;
  std::string mpirun = "mpirun";
  std::string srun = "srun";
};

struct SweepStep {
  std::string test;     ///< "all_reduce"
  int nodes = 1;
  std::string variant;  ///< "golden", "network", "ring"
  std::vector<std::string> argv;
  std::vector<std::string> env;  ///< "KEY=VALUE" set for the launcher (mpirun also forwards with -x)
  std::string log_name;          ///< "all_reduce-2n-golden.log"
};

/// "8G" -> 8 GiB, "512M", "64K", "8" (bytes), as nccl-tests reads -b/-e; nullopt otherwise.
std::optional<std::uint64_t> parse_size_bytes(std::string_view text);

/// What cmax-collbench's buffers take of one machine's memory: each rank holds a send and a
/// receive buffer of the largest message. With mpirun and no hosts every rank of the largest node
/// count runs here.
struct HostMemoryPlan {
  int ranks_here = 0;
  std::uint64_t max_bytes = 0;    ///< the largest message
  std::uint64_t needed_bytes = 0; ///< ranks_here x 2 x max_bytes
  std::uint64_t budget_bytes = 0; ///< half the memory available (the rest for the ranks' own use)
  bool fits() const { return needed_bytes <= budget_bytes; }
  /// The largest power-of-two message (at least 1 KiB) that fits the budget, for a default to
  /// shrink to; 0 when not even that fits.
  std::uint64_t largest_fitting() const;
};
HostMemoryPlan plan_host_memory(const SweepOptions& options, std::uint64_t max_bytes, std::uint64_t available_bytes);

/// The steps in run order: by node count, then collective, then variant. Node counts above the
/// number of `hosts` (when hosts are given) are skipped.
std::vector<SweepStep> plan_sweep(const SweepOptions& options);

}  // namespace cmax::nccl
