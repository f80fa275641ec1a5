#pragma once
// Reads `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`: one line per GPU,
// values separated by ", ". With a header, the column names are the query fields, each with its
// unit in brackets when it has one (`memory.used [MiB]`); values keep their units unless
// `nounits` was given (`81559 MiB` or `81559`). Known fields fill SmiGpu (smi.h); the rest are
// kept by name in SmiGpu::other. Pure: no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "gputools/smi.h"

namespace cmax::gputools {

/// Parses CSV output whose first line is the header. `timestamp`, `driver_version` and `count`
/// go to the report (from the first GPU's line). Errors name the line: a header that is not a
/// list of field names (noheader output: use parse_smi_csv_noheader), a line with a different
/// number of values than fields, empty output. A header with no GPU lines is an empty report.
Result<SmiReport> parse_smi_csv(std::string_view text);

/// Parses `noheader` output; `fields` are the --query-gpu names in query order (a "name [unit]"
/// form is accepted too).
Result<SmiReport> parse_smi_csv_noheader(std::string_view text,
                                         const std::vector<std::string>& fields);

/// Splits a --query-gpu list ("index,pci.bus_id,ecc.mode.current") into field names.
std::vector<std::string> split_query_fields(std::string_view query);

}  // namespace cmax::gputools
