#pragma once
// `cmax scan` output: JSON (schema cmax.scan/1, docs/schemas/scan.md) and the terminal table.

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "signals/correlate.h"
#include "signals/scanner.h"

namespace cmax::report {

inline constexpr std::string_view kScanSchema = "cmax.scan/1";

struct ScanReport {
  std::vector<std::string> sources;
  std::vector<std::string> errors;  ///< sources that failed part-way, with the reason
  signals::ScanStats stats;
  std::vector<signals::Incident> incidents;
  /// Lines fault drills wrote (signals/drill_marker.h), as incidents of their own: shown, never
  /// counted as the node's faults nor in the exit code.
  std::vector<signals::Incident> drills;
  std::uint64_t merged_past_cap = 0;
  std::uint64_t dropped_past_cap = 0;
  std::string prefilter;  ///< the prefilter's instruction set: avx512, avx2, scalar
  double seconds = 0;
};

std::string scan_to_json(const ScanReport& r);
/// The same JSON written incident by incident, so memory does not grow with the output.
void write_scan_json(const ScanReport& r, std::FILE* out);
std::string render_scan_terminal(const ScanReport& r, bool color);

/// 1 when an unresolved incident needs an action stronger than monitor, else 0.
int scan_exit_code(const ScanReport& r);

}  // namespace cmax::report
