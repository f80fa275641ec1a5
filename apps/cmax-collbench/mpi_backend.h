#pragma once
// Collectives with MPI on host memory: how a CPU fabric (shared memory, TCP, verbs through UCX)
// performs, in nccl-tests' format. In-place uses MPI_IN_PLACE (all_reduce, all_gather,
// reduce_scatter, alltoall) or MPI_Sendrecv_replace (sendrecv); MPI_Bcast has one buffer, so
// out-of-place broadcast copies send to receive on the root first, as an out-of-place broadcast
// does.

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "apps/cmax-collbench/backend.h"

namespace cmax::collbench {

/// "Open MPI 4.1.4" from MPI_Get_library_version's first clause; the raw text when not Open MPI.
std::string mpi_library_version();
/// This rank's index among the ranks on its host (MPI_Comm_split_type shared memory).
int mpi_local_rank(MPI_Comm comm);

/// Not thread safe; one per rank.
class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(MPI_Comm comm);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  std::string_view name() const override { return "mpi"; }
  std::string library() const override { return mpi_library_version(); }
  DeviceInfo device() const override;
  void reserve(std::size_t bytes) override;
  void load(const Plan& plan, bool in_place, std::span<const std::byte> input) override;
  void start(const Plan& plan, bool in_place) override;
  void wait() override {}
  std::vector<std::byte> output(const Plan& plan, bool in_place) override;
  bool checkable(const Plan&, bool) const override { return true; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  MPI_Comm comm_;
  int rank_ = 0;
  int nranks_ = 1;
  int local_rank_ = 0;
  std::size_t bytes_ = 0;
  std::unique_ptr<std::byte, FreeDeleter> send_;
  std::unique_ptr<std::byte, FreeDeleter> recv_;
};

}  // namespace cmax::collbench
