#pragma once
// Owners for CUDA runtime handles (device and pinned memory, streams, events) and the first-error
// recorder every step uses: a step stops at its first failed call and reports it as text.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

namespace gpucheck {

/// "cudaErrorMemoryAllocation: out of memory"
std::string cuda_error_text(cudaError_t e);

/// Records the first failed call of a step as "<what>: <cudaErrorName>: <text>".
class Errors {
 public:
  /// True when `e` is cudaSuccess; otherwise records it (the first one only) and returns false.
  bool ok(cudaError_t e, const char* what);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

template <class T, cudaError_t (*Free)(T)>
class Handle {
 public:
  Handle() = default;
  ~Handle() {
    if (h_) Free(h_);
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, T{})) {}
  Handle& operator=(Handle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  T get() const { return h_; }
  T* out() { return &h_; }

 private:
  T h_{};
};

using DeviceMem = Handle<void*, cudaFree>;          ///< from cudaMalloc(out(), bytes)
using PinnedMem = Handle<void*, cudaFreeHost>;      ///< from cudaHostAlloc(out(), bytes, 0)
using Stream = Handle<cudaStream_t, cudaStreamDestroy>;
using Event = Handle<cudaEvent_t, cudaEventDestroy>;

/// Timings of a loop: reps timed back to back after one warm-up and one sizing run.
struct Timing {
  int reps = 0;
  double total_s = 0;  ///< first rep's start to last rep's end
  double best_s = 0;   ///< fastest single rep
};

/// Runs `body` (which enqueues one rep on `s`) once to warm up, once to size the loop, then as many
/// reps as fit in `budget_s` (within [min_reps, max_reps]), with an event between reps.
template <class Body>
Timing time_loop(cudaStream_t s, double budget_s, int min_reps, int max_reps, Body&& body, Errors& err);

}  // namespace gpucheck

#include "cuda_util_inl.h"
