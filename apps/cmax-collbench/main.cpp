// cmax-collbench: a collective benchmark that prints exactly what nccl-tests prints, over MPI on
// host memory (any CPU fabric, no GPU needed) or NCCL on GPUs, so that nccl-tests parsers, cmax's
// NCCL analysis and sweeps run on it unchanged. Results on stdout (rank 0 only), errors on stderr.
// Exit codes: 0 ok; 1 a result was wrong; 2 usage; 3 environment (no GPU, MPI or library failure,
// timeout).

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "apps/cmax-collbench/bench.h"
#include "apps/cmax-collbench/mpi_backend.h"
#ifdef CMAX_COLLBENCH_NCCL
#include "apps/cmax-collbench/nccl_backend.h"
#endif

namespace cmax::collbench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitEnvironment = 3;

struct Flags {
  std::string op;
  std::string redop = "sum";
  std::string dtype = "float";
  std::string min_bytes = "8";
  std::string max_bytes = "128M";
  std::string step_bytes = "1M";
  std::size_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  int root = 0;
  int average = 1;
  int nthreads = 1;
  int ngpus = 1;
  int agg_iters = 1;
  int graph = 0;
  std::string backend = "auto";
  int timeout_s = 600;
};

// Before MPI_Init only the launcher's environment says which rank this is; used only so that a
// usage error under mpirun prints once, not once per rank.
bool is_first_rank_before_init() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::string(v) == "0";
  }
  return true;
}

const char* kDescription =
    "cmax-collbench times one collective over a sweep of sizes and prints the table exactly as\n"
    "nccl-tests does (header, '#  Rank' lines, out-of-place and in-place columns, footer), so any\n"
    "nccl-tests parser and 'cmax nccl' read it unchanged. Launch it with mpirun (one process per "
    "rank)\n"
    "like an nccl-tests binary; a symlink named all_reduce_perf, alltoall_perf, ... picks --op.\n"
    "\n"
    "Backends: 'mpi' runs the collectives with MPI on host memory (measures the CPU fabric: "
    "shared\n"
    "memory, TCP, verbs), needs no GPU; 'nccl' runs them with NCCL, one GPU per rank (device = "
    "the\n"
    "rank's index on its host), ranks and the ncclUniqueId from MPI; 'auto' takes nccl when it "
    "was\n"
    "built in and every rank has its GPU, else mpi.\n"
    "\n"
    "Numbers as nccl-tests computes them: time = mean of -n calls after -w warm-up calls, "
    "combined\n"
    "over ranks by -a (default: average); algbw = size / time (GB/s, 1e9 bytes); busbw = algbw x\n"
    "2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter, alltoall, 1 for broadcast "
    "and\n"
    "sendrecv. 'size' is the larger of the send and receive buffer: the gathered whole for "
    "all_gather,\n"
    "the scattered whole for reduce_scatter, all blocks for alltoall; 'count' is the count passed "
    "to\n"
    "the call (per rank block for those three). With -c 1 each placement is checked once more "
    "after\n"
    "timing on deterministic data; #wrong is the number of wrong elements over all ranks.\n"
    "\n"
    "Example (4 local ranks as root, shared memory, then TCP on loopback):\n"
    "  mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl self,vader cmax-collbench --op "
    "all_reduce -b 8 -e "
    "16M\n"
    "  mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl tcp,self --mca "
    "btl_tcp_if_include lo \\\n"
    "    cmax-collbench --op alltoall -b 1K -e 64M -f 2 -n 20 -w 5\n"
    "\n"
    "Exit codes: 0 ok; 1 a result was wrong (Out of bounds values > 0); 2 usage error; 3 "
    "environment\n"
    "error (no CUDA device for --backend nccl, NCCL not built in, a CUDA/NCCL/MPI failure, "
    "--timeout-s\n"
    "exceeded).";

void add_flags(CLI::App& app, Flags& f) {
  std::string ops;
  for (const auto& n : op_names()) ops += (ops.empty() ? "" : "|") + n;
  app.add_option(
      "--op", f.op,
      "Collective: " + ops +
          ". Default: from the program name (all_reduce_perf -> all_reduce), else all_reduce");
  app.add_option("-o,--redop", f.redop,
                 "Reduction for all_reduce and reduce_scatter: sum|prod|min|max (nccl-tests' -o; "
                 "its long name\n"
                 "--op is taken here by the collective)")
      ->capture_default_str();
  app.add_option("-d,--datatype", f.dtype, "Element type: float|double|int32")
      ->capture_default_str();
  app.add_option("-b,--minbytes", f.min_bytes,
                 "Smallest size in bytes; K, M, G, T suffixes are powers of 1024")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", f.max_bytes, "Largest size in bytes (same suffixes)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", f.step_factor,
                 "Multiply the size by this between rows; 1 steps by -i instead")
      ->capture_default_str();
  app.add_option("-i,--stepbytes", f.step_bytes,
                 "Add this many bytes between rows; used when -f is 1 or -i is given without -f "
                 "(as nccl-tests)")
      ->capture_default_str();
  app.add_option("-n,--iters", f.iters, "Timed calls per size and placement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup_iters", f.warmup,
                 "Untimed calls before the timed ones, at every size")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("-c,--check", f.check,
                 "1: check every result once after timing (#wrong); 0: print N/A")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}));
  app.add_option("-r,--root", f.root, "Root rank for broadcast")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("-a,--average", f.average,
                 "Time over ranks: 0 rank 0, 1 average, 2 minimum, 3 maximum (nccl-tests' -a)")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1, 2, 3}));
  app.add_option("--backend", f.backend,
                 "mpi: host memory, any CPU fabric; nccl: one GPU per rank; auto: nccl when built "
                 "in and every rank "
                 "has its GPU, else mpi")
      ->capture_default_str()
      ->check(CLI::IsMember({"mpi", "nccl", "auto"}));
  app.add_option("--timeout-s,-T,--timeout", f.timeout_s,
                 "Abort every rank (exit 3) when the whole run takes longer than this many "
                 "seconds; 0 never")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  // nccl-tests flags a sweep passes that only have one meaning here.
  app.add_option("-t,--nthreads", f.nthreads, "Threads per process; only 1 (one rank per process)")
      ->check(CLI::IsMember({1}));
  app.add_option("-g,--ngpus", f.ngpus, "GPUs per thread; only 1")->check(CLI::IsMember({1}));
  app.add_option("-m,--agg_iters", f.agg_iters, "Calls aggregated per iteration; only 1")
      ->check(CLI::IsMember({1}));
  app.add_option("-G,--cudagraph", f.graph, "CUDA graph launches; only 0")
      ->check(CLI::IsMember({0}));
  app.set_version_flag("--version", std::string("cmax-collbench ") + CMAX_VERSION);
}

// Checks what CLI11 cannot and fills the options; an error message when the flags do not make
// sense.
std::optional<std::string> to_options(const Flags& f, const CLI::App& app, std::string_view argv0,
                                      BenchOptions& o) {
  if (!f.op.empty()) {
    auto op = parse_op(f.op);
    if (!op) return "--op " + f.op + ": not a collective this tool runs";
    o.op = *op;
  } else {
    o.op = parse_op(argv0).value_or(Op::kAllReduce);
  }
  auto redop = parse_redop(f.redop);
  if (!redop) return "-o " + f.redop + ": use sum, prod, min or max";
  auto dtype = parse_dtype(f.dtype);
  if (!dtype) return "-d " + f.dtype + ": use float, double or int32";
  auto min_b = parse_size(f.min_bytes), max_b = parse_size(f.max_bytes),
       step_b = parse_size(f.step_bytes);
  if (!min_b) return "-b " + f.min_bytes + ": not a size (digits and an optional K, M, G or T)";
  if (!max_b) return "-e " + f.max_bytes + ": not a size";
  if (!step_b) return "-i " + f.step_bytes + ": not a size";
  if (*max_b < *min_b) return "-e " + f.max_bytes + " is below -b " + f.min_bytes;
  o.redop = *redop;
  o.dtype = *dtype;
  o.min_bytes = *min_b;
  o.max_bytes = *max_b;
  o.step_bytes = *step_b;
  // -i alone means step in bytes, as in nccl-tests where the factor is off unless -f is given.
  bool step_given = app.count("-i") > 0, factor_given = app.count("-f") > 0;
  o.step_factor = (step_given && !factor_given) ? 1 : f.step_factor;
  if (o.step_factor <= 1 && o.step_bytes == 0)
    return "-i 0 with -f 1 would never reach -e: give -i above 0";
  o.warmup_iters = f.warmup;
  o.iters = f.iters;
  o.check = f.check == 1;
  o.root = f.root;
  o.aggregate = static_cast<TimeAggregate>(f.average);
  o.tool_version = CMAX_VERSION;
  return std::nullopt;
}

// Ends the run of every rank when it exceeds the limit: MPI_Abort where MPI allows a second thread
// to call it, else this process exits and mpirun ends the others.
class Watchdog {
 public:
  Watchdog(int limit_s, int rank, bool mpi_thread_multiple) {
    if (limit_s <= 0) return;
    thread_ = std::jthread([=](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      cv.wait_for(lock, stop, std::chrono::seconds(limit_s), [] { return false; });
      if (stop.stop_requested()) return;
      std::fprintf(stderr,
                   "cmax-collbench: rank %d: the run exceeded --timeout-s %d s (a rank or the "
                   "fabric is stuck, "
                   "or the sweep is too large); aborting every rank\n",
                   rank, limit_s);
      std::fflush(stderr);
      if (mpi_thread_multiple) MPI_Abort(MPI_COMM_WORLD, kExitEnvironment);
      ::_exit(kExitEnvironment);
    });
  }

 private:
  std::jthread thread_;
};

// The backend the flags ask for, or the exit code when there is none; collective over comm.
std::unique_ptr<Backend> choose_backend(const std::string& want, MPI_Comm comm, int rank,
                                        int& exit_code) {
  int local_rank = mpi_local_rank(comm);
#ifdef CMAX_COLLBENCH_NCCL
  int ok = 1;
  if (want != "mpi") {
    std::string why;
    int n = cuda_device_count(&why);
    ok = n > local_rank ? 1 : 0;
    if (!ok && want == "nccl") {
      if (n == 0)
        std::fprintf(stderr, "cmax-collbench: rank %d: no CUDA device%s%s: use --backend mpi\n", rank,
                     why.empty() ? "" : ": ", why.c_str());
      else
        std::fprintf(stderr,
                     "cmax-collbench: rank %d: local rank %d needs CUDA device %d but %d are "
                     "visible: run at most %d "
                     "ranks per host, or use --backend mpi\n",
                     rank, local_rank, local_rank, n, n);
    }
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  if (want == "nccl" && !all_ok) {
    exit_code = kExitEnvironment;
    return nullptr;
  }
  if (want != "mpi" && all_ok) return make_nccl_backend(comm, local_rank);
#else
  if (want == "nccl") {
    if (rank == 0)
      std::fprintf(stderr,
                   "cmax-collbench: built without the NCCL backend (CMake found no CUDA toolkit or "
                   "NCCL): use "
                   "--backend mpi, or rebuild where /usr/local/cuda has nccl.h and libnccl\n");
    exit_code = kExitEnvironment;
    return nullptr;
  }
#endif
  (void)rank;
  return std::make_unique<MpiBackend>(comm);
}

}  // namespace
}  // namespace cmax::collbench

int main(int argc, char** argv) {
  using namespace cmax::collbench;
  CLI::App app{kDescription, "cmax-collbench"};
  Flags flags;
  add_flags(app, flags);
  const bool print = is_first_rank_before_init();
  BenchOptions options;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return print ? app.exit(e) : 0;
    if (print)
      std::fprintf(stderr, "cmax-collbench: %s\nRun 'cmax-collbench --help' for usage.\n",
                   e.what());
    return kExitUsage;
  }
  if (auto err = to_options(flags, app, argc > 0 ? argv[0] : "", options)) {
    if (print)
      std::fprintf(stderr, "cmax-collbench: %s\nRun 'cmax-collbench --help' for usage.\n",
                   err->c_str());
    return kExitUsage;
  }

  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (options.root >= nranks) {
    if (rank == 0)
      std::fprintf(stderr, "cmax-collbench: -r %d: there are only %d ranks\n", options.root,
                   nranks);
    MPI_Finalize();
    return kExitUsage;
  }

  int code = kExitOk;
  {
    Watchdog watchdog(flags.timeout_s, rank, provided == MPI_THREAD_MULTIPLE);
    try {
      std::unique_ptr<Backend> backend = choose_backend(flags.backend, MPI_COMM_WORLD, rank, code);
      if (backend) {
        BenchSummary s = run_bench(options, *backend, MPI_COMM_WORLD, stdout);
        code = s.rows_with_wrong > 0 ? kExitWrong : kExitOk;
      }
    } catch (const std::exception& e) {
      // Other ranks may wait inside a collective for this one: end them all.
      std::fprintf(stderr, "cmax-collbench: rank %d: %s\n", rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, kExitEnvironment);
    }
  }
  MPI_Finalize();
  return code;
}
