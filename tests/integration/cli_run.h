#pragma once
// What the integration tests of a whole rating share: run a command (argv, bounded, no shell) and
// keep its exit code and both streams, run this build's cmax, read a file or a JSON document back.
// Header-only: CMAX_BIN is the integration test binary's compile definition.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"

namespace cmax::test {

struct Ran {
  int code = -1;  ///< the exit code; -2 when it ran past its timeout
  std::string out, err;
  double seconds = 0;
};

inline Ran run(std::vector<std::string> argv, const std::vector<std::string>& env = {},
               std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = core::run_process({std::move(argv), timeout, 64u << 20, env});
  Ran out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return out;
  out.code = r->timed_out ? -2 : r->exit_code;
  out.out = r->out;
  out.err = r->err;
  return out;
}

/// This build's cmax with `args`.
inline Ran cmax_run(std::vector<std::string> args, const std::vector<std::string>& env = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  args.insert(args.begin(), CMAX_BIN);
  return run(std::move(args), env, timeout);
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The document, or a discarded value when the file is missing or not JSON.
inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(slurp(p), nullptr, false); }

/// A stage of a campaign.json (cmax.campaign/1) by its id; nullptr when there is none.
inline const nlohmann::json* campaign_stage(const nlohmann::json& campaign, const std::string& id) {
  if (!campaign.is_object() || !campaign.contains("stages")) return nullptr;
  for (const auto& s : campaign["stages"])
    if (s.value("id", "") == id) return &s;
  return nullptr;
}

}  // namespace cmax::test
