#pragma once
// time_loop's definition (a template over the body).

#include <algorithm>
#include <cmath>

namespace gpucheck {

template <class Body>
Timing time_loop(cudaStream_t s, double budget_s, int min_reps, int max_reps, Body&& body, Errors& err) {
  Timing t;
  Event first, second;
  if (!err.ok(cudaEventCreate(first.out()), "cudaEventCreate") ||
      !err.ok(cudaEventCreate(second.out()), "cudaEventCreate"))
    return t;
  if (!err.ok(body(), "warm-up run") || !err.ok(cudaStreamSynchronize(s), "warm-up run")) return t;
  if (!err.ok(cudaEventRecord(first.get(), s), "cudaEventRecord") || !err.ok(body(), "sizing run") ||
      !err.ok(cudaEventRecord(second.get(), s), "cudaEventRecord") ||
      !err.ok(cudaEventSynchronize(second.get()), "sizing run"))
    return t;
  float one_ms = 0;
  if (!err.ok(cudaEventElapsedTime(&one_ms, first.get(), second.get()), "cudaEventElapsedTime")) return t;
  const double one_s = std::max(1e-6, one_ms / 1000.0);
  const int reps = std::clamp(static_cast<int>(std::floor(budget_s / one_s)), min_reps, max_reps);

  std::vector<Event> marks(static_cast<std::size_t>(reps) + 1);
  for (auto& m : marks)
    if (!err.ok(cudaEventCreate(m.out()), "cudaEventCreate")) return t;
  if (!err.ok(cudaEventRecord(marks[0].get(), s), "cudaEventRecord")) return t;
  for (int r = 0; r < reps; ++r)
    if (!err.ok(body(), "timed run") || !err.ok(cudaEventRecord(marks[r + 1].get(), s), "cudaEventRecord"))
      return t;
  if (!err.ok(cudaEventSynchronize(marks[reps].get()), "timed run")) return t;
  float total_ms = 0;
  if (!err.ok(cudaEventElapsedTime(&total_ms, marks[0].get(), marks[reps].get()), "cudaEventElapsedTime"))
    return t;
  double best_ms = total_ms;
  for (int r = 0; r < reps; ++r) {
    float ms = 0;
    if (!err.ok(cudaEventElapsedTime(&ms, marks[r].get(), marks[r + 1].get()), "cudaEventElapsedTime")) return t;
    best_ms = std::min(best_ms, static_cast<double>(ms));
  }
  t.reps = reps;
  t.total_s = total_ms / 1000.0;
  t.best_s = best_ms / 1000.0;
  return t;
}

}  // namespace gpucheck
