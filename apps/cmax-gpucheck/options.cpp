#include "options.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace gpucheck {
namespace {

constexpr std::string_view kSteps[] = {"matmul", "correctness", "membw", "pcie", "peer"};

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    auto comma = s.find(',');
    auto part = s.substr(0, comma);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

template <class T>
bool number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool real(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

}  // namespace

bool Options::wants(std::string_view step) const {
  return std::find(steps.begin(), steps.end(), step) != steps.end();
}

std::string usage() {
  return "usage: cmax-gpucheck [--devices 0,1,...] [--seconds S] [--matmul-n N] [--check-n N]\n"
         "                     [--repeats R] [--membw-mib M] [--transfer-mib M]\n"
         "                     [--steps matmul,correctness,membw,pcie,peer]\n"
         "Runs the GPU checks and prints one JSON document (schema cmax.gpucheck.raw/1) on stdout.\n"
         "  --devices     CUDA ordinals in PCI bus order (default: every visible GPU)\n"
         "  --seconds     time budget of each timed loop (default 0.5)\n"
         "  --matmul-n    GEMM size for TFLOP/s, a multiple of 128 (default 8192)\n"
         "  --check-n     GEMM size for the bit-exact checks, a multiple of 128 (default 2048)\n"
         "  --repeats     runs of the same GEMM compared bit for bit (default 3)\n"
         "  --membw-mib   buffer size of the device memory copy (default 1024)\n"
         "  --transfer-mib  size of each PCIe and peer copy (default 256)\n"
         "Exit: 0 JSON printed (a failed step is in the JSON), 1 usage error, 2 no CUDA device,\n"
         "      3 the NVIDIA driver lists GPUs but CUDA cannot use them.\n";
}

std::optional<Options> parse_options(const std::vector<std::string>& args, std::string& error) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (flag == "--version") {
      o.version = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      error = flag.rfind("--", 0) == 0 ? flag + " needs a value" : "unknown argument " + flag;
      return std::nullopt;
    }
    const std::string& v = args[++i];
    long long n = 0;
    if (flag == "--devices") {
      o.devices.clear();
      for (const auto& part : split(v)) {
        int d = 0;
        if (!number(part, d) || d < 0) {
          error = "--devices takes CUDA ordinals like 0,1,2; got " + v;
          return std::nullopt;
        }
        o.devices.push_back(d);
      }
    } else if (flag == "--seconds") {
      if (!real(v, o.seconds) || o.seconds <= 0 || o.seconds > 60) {
        error = "--seconds takes a number in (0, 60]; got " + v;
        return std::nullopt;
      }
    } else if (flag == "--matmul-n" || flag == "--check-n") {
      if (!number(v, n) || n < 128 || n > 32768 || n % 128 != 0) {
        error = flag + " takes a multiple of 128 in [128, 32768]; got " + v;
        return std::nullopt;
      }
      (flag == "--matmul-n" ? o.matmul_n : o.check_n) = static_cast<int>(n);
    } else if (flag == "--repeats") {
      if (!number(v, n) || n < 2 || n > 100) {
        error = "--repeats takes a number in [2, 100]; got " + v;
        return std::nullopt;
      }
      o.repeats = static_cast<int>(n);
    } else if (flag == "--membw-mib" || flag == "--transfer-mib") {
      if (!number(v, n) || n < 1 || n > 65536) {
        error = flag + " takes a size in MiB in [1, 65536]; got " + v;
        return std::nullopt;
      }
      (flag == "--membw-mib" ? o.membw_bytes : o.transfer_bytes) = static_cast<std::size_t>(n) << 20;
    } else if (flag == "--steps") {
      o.steps = split(v);
      for (const auto& s : o.steps)
        if (std::find(std::begin(kSteps), std::end(kSteps), s) == std::end(kSteps)) {
          error = "--steps takes matmul, correctness, membw, pcie, peer; got " + s;
          return std::nullopt;
        }
    } else {
      error = "unknown flag " + flag + " (see --help)";
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace gpucheck
