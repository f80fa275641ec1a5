#include "health/gpu_checks.h"
#include "health/gpu_tool_output.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/process.h"
#include "health/gpu_judge.h"
#include "health/gpu_thresholds.h"

namespace cmax::health {

namespace {

constexpr std::string_view kProgram = "cmax-gpucheck";

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// Next to the running binary (an install puts both in bin/), then the build tree's layout
// (apps/cmax/cmax beside apps/cmax-gpucheck/cmax-gpucheck), then PATH.
std::optional<std::string> locate_gpucheck() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto dir = self.parent_path();
    for (const auto& candidate : {dir / kProgram, dir.parent_path() / kProgram / kProgram})
      if (executable(candidate)) return candidate.string();
  }
  return core::find_program(kProgram);
}

}  // namespace

namespace {

std::vector<CheckResult> run_gpucheck(const GpuCheckOptions& options, const GpuThresholds& thresholds);

}  // namespace

Result<std::vector<CheckResult>> run_gpu_checks(const GpuCheckOptions& options) {
  auto thresholds = options.thresholds_file ? load_gpu_thresholds_file(*options.thresholds_file)
                                            : builtin_gpu_thresholds();
  if (!thresholds) return Unexpected<Error>{thresholds.error()};
  auto results = run_gpucheck(options, *thresholds);
  if (options.live_tools)
    for (auto& r : run_live_gpu_tools(*thresholds, options.tool_timeout, options.nvidia_smi))
      results.push_back(std::move(r));
  for (auto& r : judge_gpu_tool_files(options.tool_outputs, *thresholds)) results.push_back(std::move(r));
  return results;
}

namespace {

std::vector<CheckResult> run_gpucheck(const GpuCheckOptions& options, const GpuThresholds& thresholds) {
  std::string program = options.program;
  if (program.empty()) {
    auto found = locate_gpucheck();
    if (!found)
      return gpu_results_all(audit::Outcome::not_applicable,
                             "cmax-gpucheck not built (no CUDA toolkit at build time: the configure output says why) or not installed next to cmax");
    program = *found;
  } else if (!executable(program)) {
    return gpu_results_all(audit::Outcome::unverified,
                           fmt::format("cannot run {}: not found or not executable; check the path", program));
  }

  core::ProcessSpec spec;
  spec.argv = {program};
  if (!options.devices.empty()) {
    std::string list;
    for (int d : options.devices) list += (list.empty() ? "" : ",") + std::to_string(d);
    spec.argv.push_back("--devices");
    spec.argv.push_back(list);
  }
  spec.timeout = options.timeout;
  spec.max_output_bytes = 4u << 20;
  auto run = core::run_process(spec);
  if (!run)
    return gpu_results_all(audit::Outcome::unverified,
                           fmt::format("start {}: {}; check that it is executable", program, run.error().message));
  return judge_gpucheck_run(*run, thresholds);
}

}  // namespace

}  // namespace cmax::health
