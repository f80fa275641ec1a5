// libFuzzer target: parse_nccl_tests over nccl-tests text logs and -J JSON. Invariants: no crash
// and no unbounded allocation on any bytes; every kept row has size and count <= 1e18 and finite,
// non-negative times, bandwidths and #wrong; no more runs than lines (each needs one); no more
// nodes than ranks (or Rank lines); warnings
// per run stay within the cap plus its summary line; a failure is the "no table" error.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nccl/parse.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_measure(const cmax::nccl::Measure& m) {
  for (double v : {m.time_us, m.algbw_gbps, m.busbw_gbps}) check(std::isfinite(v) && v >= 0);
  if (m.wrong) check(std::isfinite(*m.wrong) && *m.wrong >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto r = cmax::nccl::parse_nccl_tests(in);
  if (!r) {
    check(r.error().message.rfind("no nccl-tests table found", 0) == 0);
    return 0;
  }
  std::size_t lines = 1;
  for (char c : in) lines += c == '\n';
  check(!r->runs.empty() && r->runs.size() <= lines);
  for (const auto& run : r->runs) {
    check(run.warnings.size() <= cmax::nccl::kMaxWarningsPerRun + 2);
    // Hosts seen, or (ranks elided) ranks over the GPUs a node has: never more nodes than ranks.
    check(run.ranks >= 0 && run.nodes >= 0 &&
          static_cast<std::size_t>(run.nodes) <=
              std::max(static_cast<std::size_t>(run.ranks), run.rank_info.size()));
    check(run.nics >= 0);
    check(!run.ranks_inferred || run.rank_info.empty());
    for (const auto& row : run.rows) {
      check(row.size_bytes <= cmax::nccl::kMaxRowBytes && row.count <= cmax::nccl::kMaxRowBytes);
      check_measure(row.out_of_place);
      if (row.in_place) check_measure(*row.in_place);
    }
    if (run.avg_busbw_reported)
      check(std::isfinite(*run.avg_busbw_reported) && *run.avg_busbw_reported >= 0);
  }
  return 0;
}
