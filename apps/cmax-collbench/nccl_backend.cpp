#include "apps/cmax-collbench/nccl_backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace cmax::collbench {
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string(what) + ": " + cudaGetErrorString(e));
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw BackendError(std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(Dtype t) {
  switch (t) {
    case Dtype::kFloat:
      return ncclFloat32;
    case Dtype::kDouble:
      return ncclFloat64;
    case Dtype::kInt32:
      return ncclInt32;
  }
  return ncclInt8;
}

ncclRedOp_t nccl_op(RedOp r) {
  switch (r) {
    case RedOp::kSum:
      return ncclSum;
    case RedOp::kProd:
      return ncclProd;
    case RedOp::kMin:
      return ncclMin;
    case RedOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm comm, int local_rank) : device_(local_rank) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &nranks_);
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclUniqueId id{};
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    nccl_check(ncclCommInitRank(&comm_, nranks_, id, rank_), "ncclCommInitRank");
  }

  ~NcclBackend() override {
    if (comm_) ncclCommDestroy(comm_);
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string_view name() const override { return "nccl"; }

  std::string library() const override {
    int v = 0;
    ncclGetVersion(&v);
    // NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch.
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }

  DeviceInfo device() const override {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    char pci[32];
    std::snprintf(pci, sizeof(pci), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID,
                  prop.pciDeviceID);
    return {device_, pci, prop.name};
  }

  void reserve(std::size_t bytes) override {
    cuda_check(cudaMalloc(&send_, bytes + 4096), "cudaMalloc send buffer");
    cuda_check(cudaMalloc(&recv_, bytes + 4096), "cudaMalloc receive buffer");
  }

  void load(const Plan& plan, bool in_place, std::span<const std::byte> input) override {
    std::byte* dst = in_place ? recv_ : send_;
    if (in_place && plan.op == Op::kAllGather)
      dst += static_cast<std::size_t>(rank_) * plan.counts.send * dtype_bytes(plan.dtype);
    cuda_check(cudaMemcpy(dst, input.data(), input.size(), cudaMemcpyHostToDevice),
               "cudaMemcpy input");
  }

  void start(const Plan& plan, bool in_place) override {
    const auto& c = plan.counts;
    const std::size_t ts = dtype_bytes(plan.dtype);
    const ncclDataType_t t = nccl_type(plan.dtype);
    // nccl-tests' in-place offsets: all_gather sends from its block of the receive buffer,
    // reduce_scatter receives into its block of the (full) buffer.
    std::byte* send = in_place ? recv_ : send_;
    std::byte* recv = recv_;
    switch (plan.op) {
      case Op::kAllReduce:
        nccl_check(ncclAllReduce(send, recv, c.param, t, nccl_op(plan.redop), comm_, stream_),
                   "ncclAllReduce");
        break;
      case Op::kAllGather:
        if (in_place) send = recv_ + static_cast<std::size_t>(rank_) * c.send * ts;
        nccl_check(ncclAllGather(send, recv, c.param, t, comm_, stream_), "ncclAllGather");
        break;
      case Op::kReduceScatter:
        if (in_place) recv = recv_ + static_cast<std::size_t>(rank_) * c.recv * ts;
        nccl_check(ncclReduceScatter(send, recv, c.param, t, nccl_op(plan.redop), comm_, stream_),
                   "ncclReduceScatter");
        break;
      case Op::kAlltoall:
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < nranks_; ++peer) {
          const std::size_t off = static_cast<std::size_t>(peer) * c.param * ts;
          nccl_check(ncclSend(send + off, c.param, t, peer, comm_, stream_), "ncclSend");
          nccl_check(ncclRecv(recv + off, c.param, t, peer, comm_, stream_), "ncclRecv");
        }
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      case Op::kSendRecv:
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        nccl_check(ncclSend(send, c.param, t, (rank_ + 1) % nranks_, comm_, stream_), "ncclSend");
        nccl_check(ncclRecv(recv, c.param, t, (rank_ - 1 + nranks_) % nranks_, comm_, stream_),
                   "ncclRecv");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        break;
      case Op::kBroadcast:
        nccl_check(ncclBroadcast(send, recv, c.param, t, plan.root, comm_, stream_),
                   "ncclBroadcast");
        break;
    }
  }

  void wait() override { cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  std::vector<std::byte> output(const Plan& plan, bool in_place) override {
    const std::size_t ts = dtype_bytes(plan.dtype);
    const std::byte* src = recv_;
    if (in_place && plan.op == Op::kReduceScatter)
      src += static_cast<std::size_t>(rank_) * plan.counts.recv * ts;
    std::vector<std::byte> out(plan.counts.recv * ts);
    cuda_check(cudaMemcpy(out.data(), src, out.size(), cudaMemcpyDeviceToHost),
               "cudaMemcpy output");
    return out;
  }

  // Send and receive on one buffer race in alltoall and sendrecv; nccl-tests prints N/A there too.
  bool checkable(const Plan& plan, bool in_place) const override {
    return !(in_place && (plan.op == Op::kAlltoall || plan.op == Op::kSendRecv));
  }

 private:
  int device_ = 0;
  int rank_ = 0;
  int nranks_ = 1;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
};

}  // namespace

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess) return n;
  if (why != nullptr) {
    *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    // Static cudart calls a missing driver "insufficient"; say which library is absent instead.
    int driver = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0) {
      void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* d = dlerror();
        *why = "no NVIDIA driver: libcuda.so.1 could not be loaded (" + std::string(d ? d : "not found") + ")";
      } else {
        dlclose(h);
      }
    }
  }
  return 0;
}

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int local_rank) {
  return std::make_unique<NcclBackend>(comm, local_rank);
}

}  // namespace cmax::collbench
