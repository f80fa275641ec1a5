#pragma once
// nvbandwidth's output as a value, from its plain text or its `-j` JSON (v0.5+). Pure: text in,
// value out. Layouts follow NVIDIA/nvbandwidth@66746a3 (v0.8) output.cpp, json_output.cpp and
// inline_common.h (the matrix printer). The judgement lives in health/gpu_tools_judge.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::gputools {

enum class NvbStatus { passed, waived, error, not_found };

/// What a matrix measures, from its description line.
enum class NvbMatrixKind {
  host_device,    ///< "CPU(row) -> GPU(column)", "<-" and "<->": one end is host memory
  device_device,  ///< "GPU(row) -> GPU(column)": peer copies (NVLink or PCIe P2P)
  latency,        ///< "memory latency ... (ns)": lower is better
  unknown
};

struct NvbTestcase {
  std::string name;  ///< "host_to_device_memcpy_ce"; empty for a text-mode "Waived:" line, which
                     ///< nvbandwidth prints without the testcase name
  NvbStatus status = NvbStatus::passed;
  std::string description;  ///< "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
  NvbMatrixKind kind = NvbMatrixKind::unknown;
  std::vector<std::string> row_labels, column_labels;
  std::vector<std::vector<std::optional<double>>> matrix;  ///< rows x columns; N/A cells empty
  std::optional<double> sum_gbps;  ///< the SUM line / "sum" (ns for latency testcases)
  std::optional<double> min, max, average;  ///< only in -j verbose output
  std::string error;  ///< error text printed while this testcase ran
};

struct NvbDevice {
  int index = -1;
  std::string name;    ///< "NVIDIA A100-SXM4-80GB"
  std::string bus_id;  ///< "00000000:34:00"
};

struct Nvbandwidth {
  std::string version;        ///< "v0.8"
  std::string git_version;
  std::string cuda_runtime;   ///< "12060"
  std::string cuda_driver;    ///< text output only
  std::string driver;         ///< "560.35.05"
  std::string hostname;       ///< v0.8 text prints it above the devices
  std::vector<NvbDevice> devices;
  std::vector<NvbTestcase> testcases;
  std::vector<std::string> errors;  ///< errors outside a testcase, and lines that could not be read
};

/// Parses nvbandwidth's plain text output (stdout and stderr together is fine). Errors when the
/// text has neither a version line nor a testcase.
Result<Nvbandwidth> parse_nvbandwidth_text(std::string_view text);
/// Parses `nvbandwidth -j`. Text around the JSON object (stderr lines) is ignored. Errors on
/// malformed JSON or a document without an "nvbandwidth" object.
Result<Nvbandwidth> parse_nvbandwidth_json(std::string_view text);
/// Either form: JSON when the first non-blank character is '{'.
Result<Nvbandwidth> parse_nvbandwidth(std::string_view text);

/// The kind of matrix a description line names.
NvbMatrixKind nvb_matrix_kind(std::string_view description);
std::string_view nvb_status_name(NvbStatus s);

}  // namespace cmax::gputools
