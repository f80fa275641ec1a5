// libFuzzer target: the NVIDIA tool-output parsers (src/gputools: nvidia-smi -q -x and --query-gpu
// CSV, topo -m, dcgmi diag text and -j, nvbandwidth text and -j) and their judges (src/health),
// through the same entry cmax check --gpu-tool-output uses. Invariants: no crash, no hang and no
// unbounded allocation on any bytes; every judged result has an id and, unless it passed, a
// reason; the tool recognised from the content is the one whose parser ran.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "gputools/dcgm_diag.h"
#include "gputools/nvbandwidth.h"
#include "gputools/smi_csv.h"
#include "gputools/smi_xml.h"
#include "gputools/topo.h"
#include "health/gpu_tool_output.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Every parser on every input: each must fail cleanly on the others' formats too.
  (void)cmax::gputools::parse_smi_xml(in);
  (void)cmax::gputools::parse_smi_csv(in);
  (void)cmax::gputools::parse_smi_csv_noheader(in, {"index", "name", "pci.bus_id", "remapped_rows.pending"});
  (void)cmax::gputools::parse_topo_matrix(in);
  (void)cmax::gputools::parse_dcgm_diag_text(in);
  (void)cmax::gputools::parse_dcgm_diag_json(in);
  (void)cmax::gputools::parse_nvbandwidth_text(in);
  (void)cmax::gputools::parse_nvbandwidth_json(in);
  static const auto thresholds = *cmax::health::builtin_gpu_thresholds();
  for (const auto& r : cmax::health::judge_gpu_tool_output(in, "fuzz", thresholds)) {
    cmax::fuzz::check(!r.id.empty());
    cmax::fuzz::check(r.outcome == cmax::audit::Outcome::pass || !r.reason.empty());
  }
  return 0;
}
