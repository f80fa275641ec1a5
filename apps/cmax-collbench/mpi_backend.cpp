#include "apps/cmax-collbench/mpi_backend.h"

#include <sys/utsname.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace cmax::collbench {
namespace {

MPI_Datatype mpi_type(Dtype t) {
  switch (t) {
    case Dtype::kFloat:
      return MPI_FLOAT;
    case Dtype::kDouble:
      return MPI_DOUBLE;
    case Dtype::kInt32:
      return MPI_INT32_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(RedOp r) {
  switch (r) {
    case RedOp::kSum:
      return MPI_SUM;
    case RedOp::kProd:
      return MPI_PROD;
    case RedOp::kMin:
      return MPI_MIN;
    case RedOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// MPI counts are int; a larger call would need derived datatypes, which nccl-tests sizes never
// reach per rank on a CPU fabric in practice.
int mpi_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT32_MAX))
    throw BackendError("MPI collective of " + std::to_string(n) +
                       " elements: over MPI's int count; lower -e");
  return static_cast<int>(n);
}

}  // namespace

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  // "Open MPI v4.1.4, package: ..." -> "Open MPI 4.1.4"; other libraries: their first line.
  s = s.substr(0, s.find_first_of(",\n"));
  if (auto v = s.find(" v"); v != std::string::npos && v + 2 < s.size() &&
                             std::isdigit(static_cast<unsigned char>(s[v + 2])))
    s.erase(v + 1, 1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

int mpi_local_rank(MPI_Comm comm) {
  MPI_Comm local;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  return local_rank;
}

void MpiBackend::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

MpiBackend::MpiBackend(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &nranks_);
  local_rank_ = mpi_local_rank(comm_);
}

MpiBackend::~MpiBackend() = default;

DeviceInfo MpiBackend::device() const {
  struct utsname u {};
  ::uname(&u);
  DeviceInfo d;
  d.device = local_rank_;
  d.name = std::string("CPU (") + u.machine + ", " +
           std::to_string(std::thread::hardware_concurrency()) + " cores)";
  return d;
}

void MpiBackend::reserve(std::size_t bytes) {
  // Page-aligned like device allocations, so a size's placement in memory does not change its time.
  bytes_ = bytes;
  std::size_t rounded = (bytes + 4095) / 4096 * 4096 + 4096;
  send_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
  recv_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
  if (!send_ || !recv_)
    throw BackendError("allocate 2 x " + std::to_string(bytes) + " bytes: out of memory; lower -e");
  std::memset(send_.get(), 0, rounded);
  std::memset(recv_.get(), 0, rounded);
}

void MpiBackend::load(const Plan& plan, bool in_place, std::span<const std::byte> input) {
  const std::size_t ts = dtype_bytes(plan.dtype);
  std::byte* dst = send_.get();
  if (in_place) {
    dst = recv_.get();
    // MPI_IN_PLACE all_gather reads this rank's block from its place in the receive buffer.
    if (plan.op == Op::kAllGather) dst += static_cast<std::size_t>(rank_) * plan.counts.send * ts;
  }
  std::memcpy(dst, input.data(), input.size());
  // Broadcast's root keeps its data in the one buffer MPI_Bcast has.
  if (plan.op == Op::kBroadcast && rank_ == plan.root && !in_place)
    std::memcpy(recv_.get(), input.data(), input.size());
}

void MpiBackend::start(const Plan& plan, bool in_place) {
  const auto& c = plan.counts;
  const MPI_Datatype t = mpi_type(plan.dtype);
  const MPI_Op op = mpi_op(plan.redop);
  void* send = send_.get();
  void* recv = recv_.get();
  switch (plan.op) {
    case Op::kAllReduce:
      MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, mpi_count(c.param), t, op, comm_);
      break;
    case Op::kAllGather:
      if (in_place)
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, mpi_count(c.param), t, comm_);
      else
        MPI_Allgather(send, mpi_count(c.param), t, recv, mpi_count(c.param), t, comm_);
      break;
    case Op::kReduceScatter:
      MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, mpi_count(c.param), t, op,
                               comm_);
      break;
    case Op::kAlltoall:
      if (in_place)
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, mpi_count(c.param), t, comm_);
      else
        MPI_Alltoall(send, mpi_count(c.param), t, recv, mpi_count(c.param), t, comm_);
      break;
    case Op::kSendRecv: {
      const int next = (rank_ + 1) % nranks_, prev = (rank_ - 1 + nranks_) % nranks_;
      if (in_place)
        MPI_Sendrecv_replace(recv, mpi_count(c.param), t, next, 0, prev, 0, comm_,
                             MPI_STATUS_IGNORE);
      else
        MPI_Sendrecv(send, mpi_count(c.param), t, next, 0, recv, mpi_count(c.param), t, prev, 0,
                     comm_, MPI_STATUS_IGNORE);
      break;
    }
    case Op::kBroadcast:
      if (!in_place && rank_ == plan.root)
        std::memcpy(recv, send, c.param * dtype_bytes(plan.dtype));
      MPI_Bcast(recv, mpi_count(c.param), t, plan.root, comm_);
      break;
  }
}

std::vector<std::byte> MpiBackend::output(const Plan& plan, bool) {
  // Every MPI placement leaves the result at the start of the receive buffer.
  const std::size_t n = plan.counts.recv * dtype_bytes(plan.dtype);
  return std::vector<std::byte>(recv_.get(), recv_.get() + n);
}

}  // namespace cmax::collbench
