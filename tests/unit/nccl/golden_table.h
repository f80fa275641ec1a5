#pragma once
// Test-only reader of the golden nccl-tests tables (tests/golden/nccl), so the analysis tests do
// not depend on the real parser (nccl/parse.h): rows are whitespace-separated columns
// `size count type redop [root] time algbw busbw wrong` out-of-place then in-place; lines starting
// with '#' are skipped after a leading "0: " (srun) prefix; "#  Rank" lines give the GPU model and
// hosts; each "# Avg bus bandwidth" footer ends a run. Old-format tables have no root column and
// alltoall rows there may leave redop blank.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/run.h"

namespace cmax::nccl::testing {

inline bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

inline std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

inline std::filesystem::path golden_path(std::string_view prefix) {
  auto dir = std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(prefix)) return e.path();
  return dir / std::string(prefix);
}

/// The runs of golden file `prefix` ("02_"), one per footer.
inline std::vector<Run> read_golden(std::string_view prefix, bool old_format,
                                    Collective collective = Collective::kAllReduce) {
  std::ifstream in(golden_path(prefix));
  std::vector<Run> runs(1);
  std::vector<std::string> hosts;
  auto measure = [](const std::vector<std::string>& t, std::size_t at) {
    Measure m;
    m.time_us = std::stod(t[at]);
    m.algbw_gbps = std::stod(t[at + 1]);
    m.busbw_gbps = std::stod(t[at + 2]);
    if (at + 3 < t.size() && t[at + 3] != "N/A") m.wrong = std::stod(t[at + 3]);
    return m;
  };
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view v = line;
    if (v.starts_with("0: ")) v.remove_prefix(3);
    if (v.starts_with("#  Rank")) {
      auto t = split_ws(v);
      for (std::size_t k = 0; k + 1 < t.size(); ++k)
        if (t[k] == "on" && std::find(hosts.begin(), hosts.end(), t[k + 1]) == hosts.end())
          hosts.push_back(t[k + 1]);
      runs.back().gpu_model = std::string(v.substr(v.find("] ") + 2));
      runs.back().ranks++;
      runs.back().nodes = static_cast<int>(hosts.size());
      runs.back().hosts = hosts;
      continue;
    }
    if (v.starts_with("# Avg bus bandwidth")) {
      runs.back().avg_busbw_reported = std::stod(std::string(v.substr(v.find(':') + 1)));
      runs.back().complete = true;
      Run next;
      next.gpu_model = runs.back().gpu_model;
      next.ranks = runs.back().ranks;
      next.nodes = runs.back().nodes;
      next.hosts = runs.back().hosts;
      runs.push_back(std::move(next));
      continue;
    }
    if (v.starts_with("# Out of bounds values")) {
      runs.back().out_of_bounds = std::stoull(std::string(v.substr(v.find(':') + 1)));
      continue;
    }
    if (v.starts_with("#")) continue;
    auto t = split_ws(v);
    if (t.size() < 7 || !all_digits(t[0]) || !all_digits(t[1])) continue;
    Row r;
    r.line = line_no;
    r.size_bytes = std::stoull(t[0]);
    r.count = std::stoull(t[1]);
    r.type = t[2];
    std::size_t at = 3;
    // A blank redop (old alltoall rows) leaves the time in its column.
    if (t[3].find_first_of("0123456789") == std::string::npos) r.redop = t[at++];
    if (!old_format) r.root = std::stoi(t[at++]);
    r.out_of_place = measure(t, at);
    if (t.size() >= at + 8) r.in_place = measure(t, at + 4);
    runs.back().rows.push_back(std::move(r));
  }
  if (runs.back().rows.empty()) runs.pop_back();
  for (auto& r : runs) {
    r.collective = collective;
    r.old_format = old_format;
    r.test = std::string(collective_name(collective)) + "_perf";
  }
  // The fabric, as a user declares it (--fabric) for logs without NCCL INFO NET lines: the
  // nccl-tests issue 309 logs (01-04) are HGX H100 on 8x CX7 400G InfiniBand (README.md).
  if (prefix.starts_with("0") && prefix < "05")
    for (auto& r : runs) r.fabric = "IB";
  return runs;
}

}  // namespace cmax::nccl::testing
