// Conformance of cmax endpoint serve with the official `openai` npm package: node runs
// tests/conformance/openai_client.mjs against a server started here, and the usage the client
// read must equal the server's own /cmax/stats accounting. The package is installed once into
// <build>/npm (later runs are offline); the test skips when node or npm is missing or the install
// fails (no registry).

#include <gtest/gtest.h>

#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "integration/endpoint_serve_fixture.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// openai@4 supports Node 18+; the v4 line is what the brief and this machine's Node 20 agree on.
constexpr const char* kOpenAiPackage = "openai@4";

std::string tail(const std::string& s, std::size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }

TEST(EndpointOpenAi, TheOfficialNodeClientReadsWhatTheServerAccounts) {
  auto node = cmax::core::find_program("node");
  auto npm = cmax::core::find_program("npm");
  if (!node || !npm) GTEST_SKIP() << "node and npm are needed (scripts/setup-deps --test installs them)";
  const fs::path dir = fs::path(CMAX_BINARY_DIR) / "npm";
  fs::create_directories(dir);
  if (!fs::exists(dir / "node_modules" / "openai" / "package.json")) {
    auto install = cmax::core::run_process(
        {{*npm, "install", "--no-audit", "--no-fund", "--prefix", dir.string(), kOpenAiPackage}, 300s});
    ASSERT_TRUE(install) << install.error().message;
    if (install->exit_code != 0)
      GTEST_SKIP() << "npm install " << kOpenAiPackage << " failed (offline?); rerun with the npm registry "
                   << "reachable:\n" << tail(install->err);
  }
  // ESM resolves "openai" from the script's own folder: run a copy next to node_modules.
  const fs::path script = dir / "openai_client.mjs";
  fs::copy_file(fs::path(CMAX_SOURCE_DIR) / "tests/conformance/openai_client.mjs", script,
                fs::copy_options::overwrite_existing);

  cmax::test::ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto run = cmax::core::run_process({{*node, script.string(), serve.base_url(), "cmax-sim"}, 60s});
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_FALSE(run->timed_out) << run->err;
  // The summary is the last line of stdout.
  std::string last_line = run->out;
  while (!last_line.empty() && last_line.back() == '\n') last_line.pop_back();
  last_line = last_line.substr(last_line.rfind('\n') == std::string::npos ? 0 : last_line.rfind('\n') + 1);
  auto summary = json::parse(last_line, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << "stdout:\n" << run->out << "\nstderr:\n" << tail(run->err);
  EXPECT_EQ(run->exit_code, 0) << summary.dump(2) << "\n" << tail(run->err);
  EXPECT_TRUE(summary["ok"].get<bool>()) << summary["errors"].dump(2);
  std::printf("[ measure  ] openai client read: %s\n", summary["totals"].dump().c_str());

  httplib::Client cli("127.0.0.1", serve.port());
  auto res = cli.Get("/cmax/stats");
  ASSERT_TRUE(res);
  auto st = json::parse(res->body);
  const auto& t = summary["totals"];
  EXPECT_EQ(t["requests"], 4);
  EXPECT_EQ(st["requests"], t["requests"]) << st.dump(2);
  EXPECT_EQ(st["completed"], t["requests"]);
  EXPECT_EQ(st["prompt_tokens"], t["prompt_tokens"]);
  EXPECT_EQ(st["cached_tokens"], t["cached_tokens"]);
  EXPECT_EQ(st["completion_tokens"], t["completion_tokens"]);
  EXPECT_GT(t["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(st["errors"]["404"], 1);  // the unknown model
}

}  // namespace
