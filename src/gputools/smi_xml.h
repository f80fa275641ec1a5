#pragma once
// Reads `nvidia-smi -q -x` (XML, DTD nvsmi_device_v11 through v13) into SmiReport (smi.h). The
// layouts differ between driver branches: ECC counts are `single_bit`/`double_bit` totals in old
// drivers and `sram_*`/`dram_*` counters later (v13 splits SRAM uncorrectable into parity and
// SECDED), clock reasons were `clocks_throttle_reason_*` before R535 and `clocks_event_reason_*`
// since, and power moved from `power_readings` to `gpu_power_readings`. Whatever the document has
// is read; what it lacks stays empty. Pure: no I/O.

#include <string_view>

#include "core/result.h"
#include "gputools/smi.h"

namespace cmax::gputools {

/// Parses one document. Errors (malformed or truncated XML, another root element) name the line
/// and offset and say to rerun `nvidia-smi -q -x`.
Result<SmiReport> parse_smi_xml(std::string_view text);

}  // namespace cmax::gputools
