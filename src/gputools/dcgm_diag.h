#pragma once
// `dcgmi diag -r N` as a value, from the text table or the `-j` JSON, DCGM 3.x and 4.x. Pure.
// Layouts follow NVIDIA/DCGM's dcgmi/Diag.cpp and nvvs/include/NvvsJsonStrings.h at 903d745
// (3.3.8: "DCGM GPU Diagnostic", per-GPU "gpu_id", "Pass - All" rows) and at 72fa3fe (4.6.0:
// "DCGM Diagnostic", "entity_group"/"entity_id", "test_summary", "metadata", "GPU0: Pass" rows).
// The judgement lives in health/gpu_tools_judge.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::gputools {

/// A result as dcgmi prints it (HelperDisplayDiagResult): Pass, Fail, Warn, Skip, Not Run.
enum class DiagStatus { pass, fail, warn, skip, not_run, unknown };

/// "Pass", "fail", "Pass - All", "Fail - GPUs: 0, 1" -> the status word's value.
DiagStatus parse_diag_status(std::string_view s);
std::string_view diag_status_name(DiagStatus s);

/// One entity's result of a test: a GPU ("GPU0", gpu 0) or another entity ("CPU1").
struct DcgmEntityResult {
  std::string entity;  ///< "GPU0"
  int gpu = -1;        ///< the GPU index, or -1 for non-GPU entities
  DiagStatus status = DiagStatus::unknown;
  std::vector<std::string> warnings, info;
};

struct DcgmTest {
  std::string category;  ///< "Deployment", "Hardware", "Integration", "Stress" (3.x capitalised)
  std::string name;      ///< "GPU Memory" (3.x), "memory" (4.x)
  DiagStatus overall = DiagStatus::unknown;
  bool all_gpus = false;  ///< 3.x text "<status> - All": every GPU in the group had this status
  std::vector<DcgmEntityResult> results;  ///< per entity, where the output names them
  std::vector<std::string> warnings;      ///< Warning text, wrapped rows joined back
  std::vector<std::string> info;          ///< Info text
};

struct DcgmDiag {
  std::string dcgm_version;    ///< "3.3.8"
  std::string driver_version;  ///< "560.35.03"
  std::vector<std::string> device_ids;  ///< "2330" per GPU
  std::vector<DcgmTest> tests;
  std::string runtime_error;  ///< dcgmi could not run the diagnostic (JSON "runtime_error")
  std::vector<std::string> errors;  ///< rows that could not be read; the value is partial
};

/// Parses the text table of `dcgmi diag`. Errors when no "| Diagnostic | Result |" table is found.
Result<DcgmDiag> parse_dcgm_diag_text(std::string_view text);
/// Parses `dcgmi diag -j` (3.x "DCGM GPU Diagnostic" or 4.x "DCGM Diagnostic"). With
/// "iterations" (`--iterations N`), every iteration's tests are kept, named "<test> (iteration k)"
/// from the second on. Errors on malformed JSON or an unknown root.
Result<DcgmDiag> parse_dcgm_diag_json(std::string_view text);
/// Either form: JSON when the first non-blank character is '{'.
Result<DcgmDiag> parse_dcgm_diag(std::string_view text);

}  // namespace cmax::gputools
