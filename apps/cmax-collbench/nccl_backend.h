#pragma once
// Collectives with NCCL on one GPU per rank (device = the rank's index on its host), the same calls
// nccl-tests makes. Ranks come from MPI: rank 0's ncclUniqueId goes to the others with MPI_Bcast.
// Built only when CMake finds the CUDA runtime and NCCL (CMAX_COLLBENCH_NCCL).

#include <mpi.h>

#include <memory>
#include <string>

#include "apps/cmax-collbench/backend.h"

namespace cmax::collbench {

/// CUDA devices this process sees; 0 when there is no device or no driver (never throws). When
/// CUDA fails, `why` (if given) says how: the CUDA error, or which driver library is missing.
int cuda_device_count(std::string* why = nullptr);

/// Opens device `local_rank` and joins every rank of `comm` in one NCCL communicator (collective
/// over comm). Throws BackendError when a CUDA or NCCL call fails.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int local_rank);

}  // namespace cmax::collbench
