// Conformance of cmax endpoint serve with the official `openai` npm package (and, for /v1/messages,
// Anthropic's `@anthropic-ai/sdk`): node runs
// tests/conformance/openai_client.mjs against a server started here, and the usage the client
// read must equal the server's own /cmax/stats accounting. The package is installed once into
// <build>/npm (later runs are offline); the test skips when node or npm is missing or the install
// fails (no registry).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "integration/endpoint_serve_fixture.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// openai@4 supports Node 18+; the v4 line is what the brief and this machine's Node 20 agree on.
constexpr const char* kOpenAiPackage = "openai@4";
// Anthropic's TypeScript SDK, pinned: its Stream and MessageStream read /v1/messages.
constexpr const char* kAnthropicPackage = "@anthropic-ai/sdk@1.17.0";

std::string tail(const std::string& s, std::size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }

// A conformance script's summary: the last line of its stdout, as JSON (discarded when not JSON).
json summary_line(std::string out) {
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const auto nl = out.rfind('\n');
  return json::parse(nl == std::string::npos ? out : out.substr(nl + 1), nullptr, false);
}

// Installs `package` (its node_modules folder: `installed`) into <build>/npm once; the node binary,
// or "" with *skip set.
std::string node_with(const char* package, const fs::path& installed, std::string* skip) {
  auto node = cmax::core::find_program("node");
  auto npm = cmax::core::find_program("npm");
  if (!node || !npm) {
    *skip = "node and npm are needed (scripts/setup-deps --test installs them)";
    return "";
  }
  const fs::path dir = fs::path(CMAX_BINARY_DIR) / "npm";
  fs::create_directories(dir);
  if (!fs::exists(dir / "node_modules" / installed / "package.json")) {
    auto install = cmax::core::run_process(
        {{*npm, "install", "--no-audit", "--no-fund", "--prefix", dir.string(), package}, 300s});
    if (!install || install->exit_code != 0) {
      *skip = std::string("npm install ") + package + " failed (offline?); rerun with the npm registry reachable:\n" +
              (install ? tail(install->err) : install.error().message);
      return "";
    }
  }
  return *node;
}

std::string openai_node(std::string* skip) { return node_with(kOpenAiPackage, "openai", skip); }

TEST(EndpointOpenAi, TheOfficialNodeClientReadsWhatTheServerAccounts) {
  std::string skip;
  const auto node = openai_node(&skip);
  if (node.empty()) GTEST_SKIP() << skip;
  const fs::path dir = fs::path(CMAX_BINARY_DIR) / "npm";
  // ESM resolves "openai" from the script's own folder: run a copy next to node_modules.
  const fs::path script = dir / "openai_client.mjs";
  fs::copy_file(fs::path(CMAX_SOURCE_DIR) / "tests/conformance/openai_client.mjs", script,
                fs::copy_options::overwrite_existing);

  cmax::test::ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto run = cmax::core::run_process({{node, script.string(), serve.base_url(), "cmax-sim"}, 60s});
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_FALSE(run->timed_out) << run->err;
  // The summary is the last line of stdout.
  auto summary = summary_line(run->out);
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

// The same requests through cmax endpoint bench and through the official client (bench/
// openai_bench_client.mjs), each against a fresh server at concurrency 1: the same prompt, cached
// and completion tokens, request by request.
TEST(EndpointOpenAi, CmaxBenchAndTheOfficialClientAgreeOnTokensAndCachedTokens) {
  std::string skip;
  const auto node = openai_node(&skip);
  if (node.empty()) GTEST_SKIP() << skip;
  const fs::path dir = fs::path(CMAX_BINARY_DIR) / "npm";
  const fs::path script = dir / "openai_bench_client.mjs";
  fs::copy_file(fs::path(CMAX_SOURCE_DIR) / "bench/openai_bench_client.mjs", script, fs::copy_options::overwrite_existing);
  cmax::test::TempHost tmp;
  // --seed: a run draws a fresh prompt seed unless told, and these bodies must be the run's.
  const std::vector<std::string> workload = {"--fixed", "--input-tokens", "200", "--shared-prefix-tokens", "96",
                                             "--output-tokens", "12", "--max-requests", "20", "--seed", "1"};
  std::vector<std::string> dry = {CMAX_BIN, "endpoint", "bench", "--dry-run", "--model", "cmax-sim"};
  dry.insert(dry.end(), workload.begin(), workload.end());
  auto bodies = cmax::core::run_process({dry, 30s});
  ASSERT_TRUE(bodies && bodies->exit_code == 0);
  std::ofstream(tmp.dir() / "bodies.jsonl") << bodies->out;

  cmax::test::ServeProcess mine({"--time-scale", "0"});
  ASSERT_GT(mine.port(), 0) << mine.error();
  std::vector<std::string> argv = {CMAX_BIN, "endpoint", "bench", "--base-url", mine.base_url(), "--concurrency", "1",
                                   "--requests-per-level", "20", "--out", (tmp.dir() / "run").string()};
  argv.insert(argv.end(), workload.begin(), workload.end());
  auto run = cmax::core::run_process({argv, 60s});
  ASSERT_TRUE(run);
  ASSERT_EQ(run->exit_code, 0) << run->err;

  cmax::test::ServeProcess theirs({"--time-scale", "0"});
  ASSERT_GT(theirs.port(), 0) << theirs.error();
  auto nrun = cmax::core::run_process({{node, script.string(), theirs.base_url(), (tmp.dir() / "bodies.jsonl").string(), "1"}, 60s});
  ASSERT_TRUE(nrun);
  ASSERT_EQ(nrun->exit_code, 0) << nrun->err;
  const auto summary = json::parse(nrun->out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << nrun->out;
  EXPECT_EQ(summary["ok"], 20);

  std::ifstream in(tmp.dir() / "run" / "requests.jsonl");
  std::vector<json> recs;
  for (std::string line; std::getline(in, line);) recs.push_back(json::parse(line));
  std::sort(recs.begin(), recs.end(), [](const json& a, const json& b) { return a["index"] < b["index"]; });
  ASSERT_EQ(recs.size(), 20u);
  const auto& per = summary["per_request"];
  ASSERT_EQ(per.size(), 20u);
  std::uint64_t cached = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& u = recs[i]["usage"];
    EXPECT_EQ(u["prompt_tokens"], per[i]["prompt_tokens"]) << i;
    EXPECT_EQ(u["cached_tokens"], per[i]["cached_tokens"]) << i;
    EXPECT_EQ(u["completion_tokens"], per[i]["completion_tokens"]) << i;
    cached += u["cached_tokens"].get<std::uint64_t>();
  }
  EXPECT_GT(cached, 0u) << "the shared prefix must be served from the cache";
}

// The same for Anthropic's Messages API: the official SDK reads whole messages, the raw event
// stream and its MessageStream from cmax endpoint serve, and the usage it read (the prompt as
// input_tokens + cache_read_input_tokens + cache_creation_input_tokens) equals the server's own
// accounting.
TEST(EndpointOpenAi, TheOfficialAnthropicClientReadsWhatTheServerAccounts) {
  std::string skip;
  const auto node = node_with(kAnthropicPackage, fs::path("@anthropic-ai") / "sdk", &skip);
  if (node.empty()) GTEST_SKIP() << skip;
  const fs::path dir = fs::path(CMAX_BINARY_DIR) / "npm";
  const fs::path script = dir / "anthropic_client.mjs";
  fs::copy_file(fs::path(CMAX_SOURCE_DIR) / "tests/conformance/anthropic_client.mjs", script,
                fs::copy_options::overwrite_existing);
  cmax::test::ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto run = cmax::core::run_process(
      {{node, script.string(), "http://127.0.0.1:" + std::to_string(serve.port()), "cmax-sim"}, 60s});
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_FALSE(run->timed_out) << run->err;
  auto summary = summary_line(run->out);
  ASSERT_TRUE(summary.is_object()) << "stdout:\n" << run->out << "\nstderr:\n" << tail(run->err);
  EXPECT_EQ(run->exit_code, 0) << summary.dump(2) << "\n" << tail(run->err);
  EXPECT_TRUE(summary["ok"].get<bool>()) << summary["errors"].dump(2);
  std::printf("[ measure  ] anthropic client read: %s\n", summary["totals"].dump().c_str());

  httplib::Client cli("127.0.0.1", serve.port());
  auto res = cli.Get("/cmax/stats");
  ASSERT_TRUE(res);
  auto st = json::parse(res->body);
  const auto& t = summary["totals"];
  EXPECT_EQ(t["requests"], 3);
  EXPECT_EQ(st["completed"], t["requests"]) << st.dump(2);
  EXPECT_EQ(st["prompt_tokens"], t["prompt_tokens"]);
  EXPECT_EQ(st["cached_tokens"], t["cached_tokens"]);
  EXPECT_EQ(st["completion_tokens"], t["completion_tokens"]);
  EXPECT_GT(t["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(st["errors"]["404"], 1);  // the unknown model
  EXPECT_EQ(st["errors"]["400"], 1);  // no max_tokens
}

}  // namespace
