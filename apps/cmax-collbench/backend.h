#pragma once
// What the benchmark loop needs from a communication library. Ranks always come from MPI; a backend
// moves the data (MPI on host memory, NCCL on GPU memory). Implementations: mpi_backend.h,
// nccl_backend.h. Errors inside a backend throw BackendError; main turns it into MPI_Abort.

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "apps/cmax-collbench/ops.h"

namespace cmax::collbench {

/// A library call failed; the message names the call and the error.
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// This rank's device as the "#  Rank" line shows it.
struct DeviceInfo {
  int device = 0;
  std::string pci = "0000:00:00";
  std::string name;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "mpi" or "nccl".
  virtual std::string_view name() const = 0;
  /// The library and its version, e.g. "Open MPI 4.1.4".
  virtual std::string library() const = 0;
  virtual DeviceInfo device() const = 0;
  /// Allocates send and receive buffers of `bytes` each; called once, before any load.
  virtual void reserve(std::size_t bytes) = 0;
  /// Puts this rank's input (plan.counts.send elements) where the placement reads it.
  virtual void load(const Plan& plan, bool in_place, std::span<const std::byte> input) = 0;
  /// Starts one collective; it may still be running on return (NCCL).
  virtual void start(const Plan& plan, bool in_place) = 0;
  /// Returns once every started collective has completed on this rank.
  virtual void wait() = 0;
  /// This rank's output (plan.counts.recv elements), copied to host memory.
  virtual std::vector<std::byte> output(const Plan& plan, bool in_place) = 0;
  /// False where the placement cannot give a checkable result (the row shows N/A).
  virtual bool checkable(const Plan& plan, bool in_place) const = 0;
};

}  // namespace cmax::collbench
