#pragma once
// cmax-gpucheck's command line: which GPUs, how long each timed step runs, and the problem sizes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpucheck {

struct Options {
  std::vector<int> devices;          ///< CUDA ordinals (PCI bus order); empty: every visible GPU
  double seconds = 0.5;              ///< time budget of each timed loop, per step and device (pair)
  int matmul_n = 8192;               ///< square GEMM size for TFLOP/s (multiple of 128)
  int check_n = 2048;                ///< square GEMM size for the bit-exact checks (multiple of 128)
  int repeats = 3;                   ///< runs of the same GEMM compared bit for bit
  std::size_t membw_bytes = 1ull << 30;     ///< per buffer of the device copy
  std::size_t transfer_bytes = 256ull << 20;  ///< per PCIe / peer copy
  std::vector<std::string> steps = {"matmul", "correctness", "membw", "pcie", "peer"};
  bool help = false;
  bool version = false;

  bool wants(std::string_view step) const;
};

/// Parses argv (without argv[0]); the error names the flag and what it accepts.
std::optional<Options> parse_options(const std::vector<std::string>& args, std::string& error);

/// The --help text.
std::string usage();

}  // namespace gpucheck
