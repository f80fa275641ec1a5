#include "apps/cmax-collbench/bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "apps/cmax-collbench/data.h"
#include "apps/cmax-collbench/format.h"

namespace cmax::collbench {
namespace {

constexpr int kLineBytes = 1024;

// nccl-tests cuts the host name at the first '.'. Inside a Slurm step the node's Slurm name
// (SLURMD_NODENAME), which is what the audit, the drill and sinfo call it; several slurmd on one
// host (multiple-slurmd) share a host name but not that.
std::string short_hostname() {
  if (const char* node = std::getenv("SLURMD_NODENAME"); node && *node) return node;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string h(host);
  return h.substr(0, h.find('.'));
}

void emit(std::FILE* out, const std::string& text) {
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

double aggregate_seconds(double local, TimeAggregate how, MPI_Comm comm, int nranks) {
  double v = local;
  switch (how) {
    case TimeAggregate::kRank0:
      MPI_Bcast(&v, 1, MPI_DOUBLE, 0, comm);
      return v;
    case TimeAggregate::kAverage:
      MPI_Allreduce(&local, &v, 1, MPI_DOUBLE, MPI_SUM, comm);
      return v / nranks;
    case TimeAggregate::kMin:
      MPI_Allreduce(&local, &v, 1, MPI_DOUBLE, MPI_MIN, comm);
      return v;
    case TimeAggregate::kMax:
      MPI_Allreduce(&local, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
      return v;
  }
  return v;
}

Placement measure(const BenchOptions& opt, const Plan& plan, bool in_place,
                  std::span<const std::byte> input, Backend& backend, MPI_Comm comm, int rank,
                  int nranks) {
  using Clock = std::chrono::steady_clock;
  backend.load(plan, in_place, input);
  // Warm-up at every size (nccl-tests warms up once at the largest): a CPU fabric's first calls at
  // a size set up protocol state that should not land in the timed loop.
  for (int i = 0; i < opt.warmup_iters; ++i) backend.start(plan, in_place);
  backend.wait();
  MPI_Barrier(comm);
  auto t0 = Clock::now();
  for (int i = 0; i < opt.iters; ++i) backend.start(plan, in_place);
  backend.wait();
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / opt.iters;
  seconds = aggregate_seconds(seconds, opt.aggregate, comm, nranks);

  Placement p;
  p.time_us = seconds * 1e6;
  p.algbw_gbps = alg_bw_gbps(opt.op, plan.counts.param, dtype_bytes(plan.dtype), nranks, seconds);
  p.busbw_gbps = p.algbw_gbps * bus_factor(opt.op, nranks);
  if (opt.check && backend.checkable(plan, in_place)) {
    // Like nccl-tests: fresh data, one more call, compare (the timed loop changed in-place data).
    backend.load(plan, in_place, input);
    backend.start(plan, in_place);
    backend.wait();
    std::vector<std::byte> got = backend.output(plan, in_place);
    std::vector<std::byte> want = make_expected(plan, rank, nranks);
    std::int64_t wrong = count_wrong(plan.dtype, got, want), total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    p.wrong = total;
  }
  return p;
}

}  // namespace

BenchSummary run_bench(const BenchOptions& opt, Backend& backend, MPI_Comm comm, std::FILE* out) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const std::size_t ts = dtype_bytes(opt.dtype);

  if (rank == 0) {
    RunHeader h;
    h.tool_version = opt.tool_version;
    h.backend = std::string(backend.name());
    h.backend_library = backend.library();
    h.test_name = std::string(op_name(opt.op)) + "_perf";
    h.min_bytes = opt.min_bytes;
    h.max_bytes = opt.max_bytes;
    h.step_is_factor = opt.step_factor > 1;
    h.step = h.step_is_factor ? opt.step_factor : opt.step_bytes;
    h.warmup_iters = opt.warmup_iters;
    h.iters = opt.iters;
    h.validation = opt.check ? 1 : 0;
    emit(out, format_run_header(h));
  }

  // Every rank describes itself; rank 0 prints the lines in rank order, as nccl-tests does.
  DeviceInfo dev = backend.device();
  std::string mine = format_rank_line(
      {rank, 0, static_cast<long>(::getpid()), short_hostname(), dev.device, dev.pci, dev.name});
  std::vector<char> line(kLineBytes, '\0');
  std::memcpy(line.data(), mine.data(),
              std::min(mine.size(), static_cast<std::size_t>(kLineBytes - 1)));
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(kLineBytes) * nranks : 0);
  MPI_Gather(line.data(), kLineBytes, MPI_CHAR, all.data(), kLineBytes, MPI_CHAR, 0, comm);
  if (rank == 0) {
    std::string lines;
    for (int r = 0; r < nranks; ++r)
      lines += std::string(all.data() + static_cast<std::size_t>(r) * kLineBytes);
    emit(out, lines + format_column_header());
  }

  backend.reserve(opt.max_bytes / ts * ts);
  BenchSummary summary;
  double busbw_sum = 0;
  int busbw_n = 0;
  for (std::size_t size :
       sweep_sizes(opt.min_bytes, opt.max_bytes, opt.step_bytes, opt.step_factor)) {
    Plan plan{opt.op, opt.dtype, opt.redop, opt.root, coll_counts(opt.op, size / ts, nranks)};
    std::vector<std::byte> input = make_input(plan, rank, nranks);
    Placement oop = measure(opt, plan, false, input, backend, comm, rank, nranks);
    Placement ip = measure(opt, plan, true, input, backend, comm, rank, nranks);
    for (const Placement* p : {&oop, &ip}) {
      busbw_sum += p->busbw_gbps;
      ++busbw_n;
      if (p->wrong && *p->wrong > 0) ++summary.rows_with_wrong;
    }
    if (rank == 0) {
      RowKey key{row_size_bytes(plan.counts, ts), plan.counts.param, dtype_name(opt.dtype),
                 redop_column(opt.op, opt.redop), root_column(opt.op, opt.root)};
      emit(out, format_row(key, oop, ip));
    }
  }
  summary.avg_busbw_gbps = busbw_n ? busbw_sum / busbw_n : 0;
  if (rank == 0) emit(out, format_footer(summary.rows_with_wrong, summary.avg_busbw_gbps));
  return summary;
}

}  // namespace cmax::collbench
