// cmax endpoint bench end to end against the real `cmax endpoint serve` on 127.0.0.1:0: the hit
// rate, tokens and TTFT it measures agree with the server's own accounting (/cmax/stats and the
// per-request /cmax/requests log with the server's timestamps), the fault modes are classed and
// counted as the server injected them, the API key is used and never written, Ctrl-C keeps partial
// results, and an unreachable endpoint fails fast with exit 3.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "integration/endpoint_serve_fixture.h"
#include "support/daemon.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using cmax::test::ServeProcess;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<json> jsonl(const std::string& text) {
  std::vector<json> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) out.push_back(json::parse(text.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

json get_json(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path);
  if (!r || r->status != 200) return json();
  return json::parse(r->body, nullptr, false);
}

std::vector<json> get_jsonl(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path);
  if (!r || r->status != 200) return {};
  return jsonl(r->body);
}

struct BenchRun {
  cmax::core::ProcessResult proc;
  json bench;
  std::vector<json> requests;
};

BenchRun bench(const fs::path& out, std::vector<std::string> args, std::vector<std::string> env = {},
               std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {CMAX_BIN, "endpoint", "bench", "--out", out.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cmax::core::run_process({argv, timeout, 16u << 20, env});
  BenchRun b;
  if (!r) {
    b.proc.err = r.error().message;
    return b;
  }
  b.proc = std::move(*r);
  b.bench = json::parse(slurp(out / "bench.json"), nullptr, false);
  b.requests = jsonl(slurp(out / "requests.jsonl"));
  return b;
}

// `cmax endpoint serve` requiring `key` (read from its own environment), on a free port; daemon is
// empty when it did not print its URL within 2 s.
struct KeyedServe {
  std::optional<cmax::test::Daemon> daemon;
  std::string url;
  static KeyedServe start(const fs::path& dir, const std::string& key) {
    KeyedServe k;
    auto d = cmax::test::Daemon::start({CMAX_BIN, "endpoint", "serve", "--listen", "127.0.0.1:0", "--time-scale", "0",
                                        "--api-key-env", "CMAX_TEST_SERVE_KEY"},
                                       {"CMAX_TEST_SERVE_KEY=" + key}, dir / "serve.log");
    if (!d) return k;
    int port = 0;
    for (int i = 0; i < 200 && port == 0; ++i) {
      const auto log = slurp(dir / "serve.log");
      if (auto at = log.find("127.0.0.1:"); at != std::string::npos) port = std::atoi(log.c_str() + at + 10);
      std::this_thread::sleep_for(10ms);
    }
    if (port == 0) return k;
    k.daemon.emplace(std::move(*d));
    k.url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    return k;
  }
};

std::string why(const BenchRun& b) { return "exit " + std::to_string(b.proc.exit_code) + "\nstdout:\n" + b.proc.out + "\nstderr:\n" + b.proc.err; }

TEST(EndpointBench, HitRateTokensAndTtftMatchTheServersOwnAccounting) {
  ServeProcess serve({"--replicas", "4", "--policy", "cache_aware", "--time-scale", "0.05"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--multiturn", "--sessions", "12", "--turns", "3",
                                       "--concurrency", "1,4", "--requests-per-level", "18"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  ASSERT_TRUE(b.bench.is_object()) << why(b);
  EXPECT_EQ(b.bench["schema"], "cmax.endpoint.bench/1");
  EXPECT_EQ(b.bench["model"], "cmax-sim");  // from GET /models
  const auto& o = b.bench["overall"];
  ASSERT_EQ(o["requests"], 36);
  EXPECT_EQ(o["succeeded"], 36);
  ASSERT_EQ(b.bench["levels"].size(), 2u);
  // bench.csv beside it: the header, overall, then a row per level, with bench.json's numbers.
  const std::string csv = slurp(serve.dir() / "run" / "bench.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  EXPECT_NE(csv.find("\noverall,36,36,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nc=1,18,18,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nc=4,18,18,0,"), std::string::npos) << csv;

  // Totals: the client's usage sums equal the server's accounting, so the hit rates are equal.
  const auto stats = get_json(serve.port(), "/cmax/stats");
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(o["prompt_tokens"], stats["prompt_tokens"]);
  EXPECT_EQ(o["cached_tokens"], stats["cached_tokens"]);
  EXPECT_EQ(o["completion_tokens"], stats["completion_tokens"]);
  const double server_rate = stats["cached_tokens"].get<double>() / stats["prompt_tokens"].get<double>();
  EXPECT_DOUBLE_EQ(o["cache_hit_rate"].get<double>(), server_rate);
  EXPECT_GT(server_rate, 0.3) << "the shared 800-token prefix and the growing sessions must hit";
  EXPECT_EQ(o["cache_source"], "openai");
  // The theoretical rate over the same prompts bounds what any cache could give.
  const double theory = b.bench["workload"]["theoretical_hit_rate"].get<double>();
  EXPECT_GE(theory + 1e-9, server_rate);

  // Per request: joined on the response id with the server's log.
  std::map<std::string, json> server;
  for (auto& e : get_jsonl(serve.port(), "/cmax/requests")) server[e["id"].get<std::string>()] = e;
  ASSERT_EQ(b.requests.size(), 36u);
  std::vector<double> diffs;
  for (const auto& r : b.requests) {
    ASSERT_EQ(r["error"], "ok") << r.dump();
    auto it = server.find(r["response_id"].get<std::string>());
    ASSERT_NE(it, server.end()) << r.dump();
    const auto& s = it->second;
    EXPECT_EQ(r["usage"]["prompt_tokens"], s["prompt_tokens"]);
    EXPECT_EQ(r["usage"]["cached_tokens"], s["cached_tokens"]);
    EXPECT_EQ(r["usage"]["completion_tokens"], s["completion_tokens"]);
    EXPECT_EQ(r["content_chunks"], s["completion_tokens"]);
    diffs.push_back(std::abs(r["ttft_s"].get<double>() * 1000 - s["ttft_ms"].get<double>()));
  }
  std::sort(diffs.begin(), diffs.end());
  // The client's TTFT includes sending the request and reading the token; loopback adds well under
  // a millisecond. (The 1 ms goal at concurrency 24 is measured in bench/, on a quiet machine.)
  EXPECT_LT(diffs[diffs.size() / 2], 5.0) << "median |client - server| TTFT in ms";
  std::printf("[ measure  ] |client TTFT - server TTFT|: median %.3f ms, max %.3f ms over %zu requests\n",
              diffs[diffs.size() / 2], diffs.back(), diffs.size());
}

// The server's own /metrics around each level: its prefix-cache counters give the same hit rate as
// the responses' usage; when the responses carry no cache field (vLLM without
// --enable-prompt-tokens-details) the counters still count, and the run says which flag is missing.
TEST(EndpointBench, TheServersMetricsAreReadAroundEachLevelAndAMissingCacheFieldIsNamed) {
  ServeProcess serve({"--replicas", "2", "--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--multiturn", "--sessions", "8", "--turns", "3",
                                       "--concurrency", "1,4", "--requests-per-level", "12"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  const auto& sm = b.bench["server_metrics"];
  ASSERT_TRUE(sm.is_object()) << b.bench.dump();
  EXPECT_EQ(sm["read"], true);
  EXPECT_EQ(sm["url"], "http://127.0.0.1:" + std::to_string(serve.port()) + "/metrics");
  ASSERT_EQ(sm["levels"].size(), 2u);
  for (const auto& l : sm["levels"]) {
    EXPECT_EQ(l["family"], "vllm");
    EXPECT_GT(l["prefix_cache_queries"].get<double>(), 0);
    EXPECT_NEAR(l["hit_rate"].get<double>(), l["responses_hit_rate"].get<double>(), 1e-9) << l.dump();
  }

  ServeProcess silent({"--replicas", "2", "--time-scale", "0", "--cache-fields", "none"});
  ASSERT_GT(silent.port(), 0) << silent.error();
  auto q = bench(silent.dir() / "run", {"--base-url", silent.base_url(), "--multiturn", "--sessions", "8", "--turns", "3",
                                        "--concurrency", "4", "--requests-per-level", "12"});
  ASSERT_EQ(q.proc.exit_code, 0) << why(q);
  EXPECT_EQ(q.bench["overall"]["cached_tokens"], 0);
  EXPECT_GT(q.bench["server_metrics"]["levels"][0]["hit_rate"].get<double>(), 0.5);
  EXPECT_NE(q.bench["warnings"].dump().find("--enable-prompt-tokens-details"), std::string::npos) << q.bench["warnings"];
  EXPECT_NE(q.proc.err.find("--enable-cache-report"), std::string::npos) << q.proc.err;

  // Asked not to, it does not.
  auto n = bench(serve.dir() / "run2", {"--base-url", serve.base_url(), "--fixed", "--concurrency", "2",
                                        "--requests-per-level", "4", "--no-server-metrics"});
  ASSERT_EQ(n.proc.exit_code, 0) << why(n);
  EXPECT_FALSE(n.bench.contains("server_metrics"));
}

// --warmup sends requests that are not counted; --flush-cache empties the server's prefix cache
// before each level. Both recorded; the server saw the warm-up, the results did not.
TEST(EndpointBench, WarmUpIsSentAndNotCountedAndTheCacheIsFlushedBeforeEachLevel) {
  ServeProcess serve({"--replicas", "2", "--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--multiturn", "--sessions", "8", "--turns", "3",
                                       "--concurrency", "1,4", "--requests-per-level", "12", "--warmup", "6",
                                       "--flush-cache"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  EXPECT_EQ(b.bench["warmup"]["requests"], 6);
  EXPECT_EQ(b.bench["warmup"]["succeeded"], 6);
  ASSERT_EQ(b.bench["cache_flushes"].size(), 2u);
  for (const auto& fl : b.bench["cache_flushes"]) {
    EXPECT_EQ(fl["path"], "/flush_cache");
    EXPECT_EQ(fl["flushed"], true) << fl.dump();
  }
  EXPECT_EQ(b.bench["overall"]["requests"], 24);
  EXPECT_EQ(b.requests.size(), 24u) << "warm-up requests are not written";
  const auto stats = get_json(serve.port(), "/cmax/stats");
  EXPECT_EQ(stats["requests"], 30) << "the server saw them";
  // Each level starts from an empty cache: its first request, the shared system prompt, misses.
  for (const auto& l : b.bench["server_metrics"]["levels"]) EXPECT_LT(l["hit_rate"].get<double>(), 0.95) << l.dump();
}

// --prompts: a ShareGPT file as the dataset has it, replayed in order, each reply as long as the
// conversation's own.
TEST(EndpointBench, AShareGptFileIsReplayedWithItsOwnReplyLengths) {
  ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  const auto file = (fs::path(CMAX_SOURCE_DIR) / "tests/golden/prompt_files/sharegpt_dsOTKpn_0.json").string();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--prompts", file, "--concurrency", "1",
                                       "--ignore-eos"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  EXPECT_EQ(b.bench["workload"]["kind"], "sharegpt");
  ASSERT_EQ(b.requests.size(), 1u) << "one conversation, sent once";
  EXPECT_GT(b.requests[0]["usage"]["completion_tokens"].get<int>(), 100);
  auto bad = bench(serve.dir() / "bad", {"--base-url", serve.base_url(), "--prompts", "/dev/null"});
  EXPECT_EQ(bad.proc.exit_code, 3);
  EXPECT_NE(bad.proc.err.find("empty"), std::string::npos) << bad.proc.err;
}

TEST(EndpointBench, MooncakeReplayReportsMeasuredAndTheoreticalHitRates) {
  ServeProcess serve({"--replicas", "2", "--time-scale", "0", "--cache-blocks", "100000"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  const auto trace = fs::path(CMAX_SOURCE_DIR) / "tests/golden/traces/mooncake_conversation_trace.jsonl";
  ASSERT_TRUE(fs::exists(trace)) << trace;
  auto b = bench(serve.dir() / "run", {trace.string(), "--base-url", serve.base_url(), "--max-requests", "60",
                                       "--max-tokens", "4", "--concurrency", "8", "--requests-per-level", "60"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  const auto stats = get_json(serve.port(), "/cmax/stats");
  const auto& o = b.bench["overall"];
  EXPECT_EQ(o["requests"], 60);
  EXPECT_EQ(o["cached_tokens"], stats["cached_tokens"]);
  EXPECT_EQ(o["prompt_tokens"], stats["prompt_tokens"]);
  EXPECT_EQ(b.bench["workload"]["kind"], "mooncake");
  ASSERT_TRUE(b.bench["workload"]["trace_theoretical_hit_rate"].is_number());
  ASSERT_TRUE(b.bench["workload"]["theoretical_hit_rate"].is_number());
  // Each request's prompt is its input_length tokens (plus the chat template's few).
  for (const auto& r : b.requests) {
    const auto expected = r["expected_prompt_tokens"].get<std::int64_t>();
    const auto got = r["usage"]["prompt_tokens"].get<std::int64_t>();
    EXPECT_NEAR(got, expected, 16) << r.dump();
  }
  std::printf("[ measure  ] mooncake 60 requests: measured %.4f, theoretical (16-token blocks) %.4f, trace's own %.4f\n",
              o["cache_hit_rate"].get<double>(), b.bench["workload"]["theoretical_hit_rate"].get<double>(),
              b.bench["workload"]["trace_theoretical_hit_rate"].get<double>());
}

TEST(EndpointBench, FaultsAreClassedAndCountedAsTheServerInjectedThem) {
  ServeProcess serve({"--time-scale", "0", "--fault-429-rate", "0.15", "--fault-5xx-rate", "0.1",
                      "--fault-drop-stream-rate", "0.1", "--seed", "7"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--fixed", "--max-requests", "200", "--input-tokens",
                                       "64", "--output-tokens", "16", "--concurrency", "8", "--requests-per-level", "200",
                                       "--retries", "0", "--max-error-share", "1"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  const auto stats = get_json(serve.port(), "/cmax/stats");
  const auto& e = b.bench["overall"]["errors"];
  EXPECT_EQ(e["http_429"], stats["faults"]["429"]);
  EXPECT_EQ(e["http_5xx"], stats["faults"]["5xx"]);
  EXPECT_EQ(e["dropped"], stats["dropped"]);
  EXPECT_GT(e["http_429"].get<int>(), 0);
  EXPECT_GT(e["http_5xx"].get<int>(), 0);
  EXPECT_GT(e["dropped"].get<int>(), 0);
  EXPECT_EQ(b.bench["overall"]["failed"].get<int>(),
            e["http_429"].get<int>() + e["http_5xx"].get<int>() + e["dropped"].get<int>());
  EXPECT_EQ(b.bench["overall"]["succeeded"], stats["completed"]);
  for (const auto& r : b.requests) {
    if (r["error"] == "http_429") { EXPECT_EQ(r["http_status"], 429); }
    if (r["error"] == "http_5xx") { EXPECT_EQ(r["http_status"], 500); }
    if (r["error"] != "ok") { EXPECT_FALSE(r["error_detail"].get<std::string>().empty()) << r.dump(); }
  }

  // With retries: every injected 429/5xx/early drop is retried and counted as a retry.
  ServeProcess serve2({"--time-scale", "0", "--fault-429-rate", "0.15", "--fault-5xx-rate", "0.1", "--seed", "7"});
  ASSERT_GT(serve2.port(), 0) << serve2.error();
  auto b2 = bench(serve2.dir() / "run", {"--base-url", serve2.base_url(), "--fixed", "--max-requests", "100",
                                         "--input-tokens", "64", "--output-tokens", "8", "--concurrency", "8",
                                         "--requests-per-level", "100", "--retries", "5"});
  ASSERT_EQ(b2.proc.exit_code, 0) << why(b2);
  const auto stats2 = get_json(serve2.port(), "/cmax/stats");
  const auto& o2 = b2.bench["overall"];
  EXPECT_EQ(o2["retries"]["http_429"].get<int>() + o2["errors"]["http_429"].get<int>(), stats2["faults"]["429"].get<int>());
  EXPECT_EQ(o2["retries"]["http_5xx"].get<int>() + o2["errors"]["http_5xx"].get<int>(), stats2["faults"]["5xx"].get<int>());
  EXPECT_GE(o2["succeeded"].get<int>(), 95);
}

TEST(EndpointBench, TheApiKeyIsSentAndNeverWritten) {
  const std::string key = "sk-cmax-test-0123456789abcdef";
  cmax::test::TempHost keys;
  cmax::test::TempHost d;
  auto serve = KeyedServe::start(d.dir(), key);
  ASSERT_TRUE(serve.daemon) << slurp(d.dir() / "serve.log");
  const std::string url = serve.url;

  auto ok = bench(d.dir() / "ok", {"--base-url", url, "--fixed", "--max-requests", "10", "--input-tokens", "32",
                                   "--output-tokens", "4", "--concurrency", "2", "--requests-per-level", "10"},
                  {"OPENAI_API_KEY=" + key});
  ASSERT_EQ(ok.proc.exit_code, 0) << why(ok);
  EXPECT_EQ(ok.bench["api_key"], "env:OPENAI_API_KEY");
  EXPECT_EQ(ok.proc.out.find(key), std::string::npos);
  EXPECT_EQ(ok.proc.err.find(key), std::string::npos);
  for (const auto& entry : fs::recursive_directory_iterator(d.dir() / "ok"))
    EXPECT_EQ(slurp(entry.path()).find(key), std::string::npos) << entry.path();

  // From a file, too.
  std::ofstream(keys.dir() / "key") << key << "\n";
  auto file = bench(d.dir() / "file", {"--base-url", url, "--api-key-file", (keys.dir() / "key").string(), "--fixed",
                                       "--max-requests", "4", "--concurrency", "1", "--requests-per-level", "4"});
  ASSERT_EQ(file.proc.exit_code, 0) << why(file);
  EXPECT_EQ(file.bench["api_key"], "file:" + (keys.dir() / "key").string());

  // A wrong key: the preflight says so, exit 3, nothing was run.
  auto bad = bench(d.dir() / "bad", {"--base-url", url, "--fixed", "--max-requests", "4"}, {"OPENAI_API_KEY=sk-wrong"});
  EXPECT_EQ(bad.proc.exit_code, 3) << why(bad);
  EXPECT_NE(bad.proc.err.find("refused the API key"), std::string::npos) << bad.proc.err;
  EXPECT_EQ(bad.proc.err.find("sk-wrong"), std::string::npos);
}

TEST(EndpointBench, CtrlCKeepsPartialResults) {
  ServeProcess serve({"--time-scale", "1", "--decode-tokens-per-s", "20", "--batch-slowdown", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  cmax::test::TempHost d;
  std::vector<std::string> argv = {CMAX_BIN, "endpoint", "bench", "--out", (d.dir() / "run").string(), "--base-url",
                                   serve.base_url(), "--fixed", "--max-requests", "40", "--input-tokens", "32",
                                   "--output-tokens", "30", "--ignore-eos", "--concurrency", "4",
                                   "--requests-per-level", "40"};
  auto daemon = cmax::test::Daemon::start(argv, {}, d.dir() / "bench.log");
  ASSERT_TRUE(daemon) << daemon.error().message;
  // Each request takes ~1.5 s (30 tokens at 20/s): after 2.5 s some have finished, 4 are in flight.
  std::this_thread::sleep_for(2500ms);
  ::kill(daemon->pid(), SIGINT);
  for (int i = 0; i < 100 && daemon->running(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_FALSE(daemon->running()) << "cmax endpoint bench did not stop within 5 s of SIGINT";
  EXPECT_EQ(daemon->exit_status(), "exit 2") << slurp(d.dir() / "bench.log");
  const auto j = json::parse(slurp(d.dir() / "run" / "bench.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << slurp(d.dir() / "bench.log");
  EXPECT_TRUE(j["interrupted"].get<bool>());
  const auto reqs = jsonl(slurp(d.dir() / "run" / "requests.jsonl"));
  int ok = 0, canceled = 0;
  for (const auto& r : reqs) {
    ok += r["error"] == "ok";
    canceled += r["error"] == "canceled";
  }
  EXPECT_GE(ok, 4);
  EXPECT_EQ(canceled, 4);
  EXPECT_EQ(j["overall"]["succeeded"], ok);
  EXPECT_EQ(j["overall"]["errors"]["canceled"], canceled);
}

TEST(EndpointBench, TheLibcurlTransportMeasuresTheSameAsTheNativeOne) {
  // libcurl carries https:// and HTTP/2; forced here onto the same cleartext server, with faults.
  for (const char* transport : {"curl", "native"}) {
    ServeProcess serve({"--time-scale", "0", "--fault-5xx-rate", "0.1", "--fault-drop-stream-rate", "0.1", "--seed", "3"});
    ASSERT_GT(serve.port(), 0) << serve.error();
    auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--transport", transport, "--multiturn", "--sessions",
                                         "8", "--turns", "3", "--concurrency", "4", "--requests-per-level", "24",
                                         "--retries", "0", "--max-error-share", "1"});
    ASSERT_EQ(b.proc.exit_code, 0) << why(b);
    EXPECT_EQ(b.bench["transport"], transport);
    const auto stats = get_json(serve.port(), "/cmax/stats");
    const auto& o = b.bench["overall"];
    // Dropped streams never deliver their usage: compare with the streams the server completed.
    std::uint64_t completed_cached = 0;
    for (const auto& e : get_jsonl(serve.port(), "/cmax/requests"))
      if (e["outcome"] == "completed") completed_cached += e["cached_tokens"].get<std::uint64_t>();
    EXPECT_EQ(o["cached_tokens"].get<std::uint64_t>(), completed_cached) << transport;
    EXPECT_EQ(o["errors"]["http_5xx"], stats["faults"]["5xx"]) << transport;
    EXPECT_EQ(o["errors"]["dropped"], stats["dropped"]) << transport;
    EXPECT_EQ(o["succeeded"], stats["completed"]) << transport;
  }
}

TEST(EndpointBench, AnUnreachableEndpointFailsFastWithExit3) {
  // A port nothing listens on: bind one, note it, close it.
  int port = 0;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  cmax::test::TempHost d;
  const auto t0 = std::chrono::steady_clock::now();
  auto b = bench(d.dir() / "run", {"--base-url", "http://127.0.0.1:" + std::to_string(port) + "/v1", "--fixed"}, {}, 30s);
  EXPECT_EQ(b.proc.exit_code, 3) << why(b);
  EXPECT_NE(b.proc.err.find("check --base-url"), std::string::npos) << b.proc.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(EndpointBench, PoissonRateReportsClientQueueingApart) {
  ServeProcess serve({"--time-scale", "0.2", "--replicas", "2"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  // 40 requests at 200/s through at most 2 in flight: most wait in the client, and that shows
  // as queueing, not as TTFT.
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--fixed", "--max-requests", "40", "--input-tokens",
                                       "32", "--output-tokens", "8", "--rate", "200", "--max-inflight", "2"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  const auto& o = b.bench["overall"];
  EXPECT_EQ(o["succeeded"], 40);
  EXPECT_EQ(b.bench["schedule"]["kind"], "rate");
  EXPECT_GT(o["queue_ms"]["p90"].get<double>(), 10.0);
  EXPECT_GT(o["ttft_incl_queue_ms"]["p90"].get<double>(), o["ttft_ms"]["p90"].get<double>());
  for (const auto& r : b.requests) EXPECT_TRUE(r["scheduled_s"].is_number()) << r.dump();
}

TEST(EndpointBench, CompareTwoRunsAsTableJsonAndCharts) {
  ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  cmax::test::TempHost d;
  cmax::test::TempHost prices;
  std::ofstream(prices.dir() / "prices.json")
      << R"({"schema":"cmax.prices/1","providers":{"a":{"input_per_mtok":0.25,"cached_input_per_mtok":0.025,"output_per_mtok":1.0},
            "b":{"usd_per_gpu_hour":2.5,"gpus":8}}})";
  for (auto [name, policy] : {std::pair{"a", "1,2"}, std::pair{"b", "2,4"}}) {
    auto b = bench(d.dir() / name, {"--base-url", serve.base_url(), "--provider", name, "--prices",
                                    (prices.dir() / "prices.json").string(), "--multiturn", "--sessions", "4", "--turns", "2",
                                    "--concurrency", policy, "--requests-per-level", "4"});
    ASSERT_EQ(b.proc.exit_code, 0) << why(b);
    ASSERT_TRUE(b.bench["cost"].is_object()) << b.bench.dump(2);
  }
  auto r = cmax::core::run_process({{CMAX_BIN, "endpoint", "compare", (d.dir() / "a").string(), (d.dir() / "b").string(),
                                     "--out", (d.dir() / "cmp").string()},
                                    30s});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->out.find("a"), std::string::npos);
  for (const char* svg : {"latency_vs_concurrency.svg", "hit_rate.svg", "cost.svg"}) {
    const auto text = slurp(d.dir() / "cmp" / svg);
    EXPECT_TRUE(text.starts_with("<svg") || text.starts_with("<?xml")) << svg;
    EXPECT_EQ(text.find("NaN"), std::string::npos) << svg;
  }
  auto j = cmax::core::run_process({{CMAX_BIN, "endpoint", "compare", (d.dir() / "a").string(), (d.dir() / "b").string(),
                                     "--json"},
                                    30s});
  ASSERT_TRUE(j);
  const auto cj = json::parse(j->out, nullptr, false);
  ASSERT_TRUE(cj.is_object()) << j->out;
  EXPECT_EQ(cj["schema"], "cmax.endpoint.compare/1");
  EXPECT_EQ(cj["runs"].size(), 2u);
  // A directory that is not a run: exit 3, named.
  auto bad = cmax::core::run_process({{CMAX_BIN, "endpoint", "compare", d.dir().string()}, 30s});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->exit_code, 3);
  EXPECT_NE(bad->err.find(d.dir().string()), std::string::npos) << bad->err;
}

}  // namespace

TEST(EndpointBench, HeadersAndAnExtraBodyReachTheServerAndOnlyHeaderNamesAreWritten) {
  const std::string key = "sk-cmax-header-0123456789";
  cmax::test::TempHost d;
  auto serve = KeyedServe::start(d.dir(), key);
  ASSERT_TRUE(serve.daemon) << slurp(d.dir() / "serve.log");
  const std::string url = serve.url;
  // The key travels as a header of the user's (a gateway's own scheme), not as cmax's API key.
  auto b = bench(d.dir() / "run", {"--base-url", url, "--header", "Authorization: Bearer " + key, "--header",
                                   "x-session-id: conv-1", "--extra-body", R"({"max_tokens":3,"temperature":0})",
                                   "--fixed", "--max-requests", "6", "--input-tokens", "32", "--output-tokens", "9",
                                   "--concurrency", "2", "--requests-per-level", "6"},
                 {"OPENAI_API_KEY="});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  EXPECT_EQ(b.bench["headers"], json({"Authorization", "x-session-id"}));
  EXPECT_EQ(b.bench["extra_body"]["max_tokens"], 3);
  ASSERT_EQ(b.requests.size(), 6u);
  for (const auto& r : b.requests) EXPECT_EQ(r["usage"]["completion_tokens"], 3) << r.dump();
  for (const auto& entry : fs::recursive_directory_iterator(d.dir() / "run"))
    EXPECT_EQ(slurp(entry.path()).find(key), std::string::npos) << entry.path();
  // A header the transport owns is refused before anything is sent.
  auto refused = bench(d.dir() / "refused", {"--base-url", url, "--header", "Content-Length: 1", "--fixed",
                                             "--max-requests", "1"});
  EXPECT_EQ(refused.proc.exit_code, 3) << why(refused);
  EXPECT_NE(refused.proc.err.find("set by the transport"), std::string::npos) << refused.proc.err;
}

// Anthropic's Messages API end to end: the key in x-api-key from ANTHROPIC_API_KEY, the usage read
// in Anthropic's shape (input_tokens uncached, cache_read_input_tokens, cache_creation_input_tokens)
// adds up to the server's own accounting, request by request.
TEST(EndpointBench, TheMessagesApiMeasuresTheCacheAsTheServerCountedIt) {
  const std::string key = "sk-ant-cmax-0123456789abcdef";
  cmax::test::TempHost d;
  auto serve = KeyedServe::start(d.dir(), key);
  ASSERT_TRUE(serve.daemon) << slurp(d.dir() / "serve.log");
  auto b = bench(d.dir() / "run", {"--base-url", serve.url, "--api", "messages", "--multiturn", "--sessions", "8",
                                   "--turns", "3", "--concurrency", "1,4", "--requests-per-level", "12"},
                 {"ANTHROPIC_API_KEY=" + key, "OPENAI_API_KEY="});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  EXPECT_EQ(b.bench["api"], "messages");
  EXPECT_EQ(b.bench["api_key"], "env:ANTHROPIC_API_KEY");
  const auto& o = b.bench["overall"];
  ASSERT_EQ(o["succeeded"], 24) << o.dump();
  EXPECT_EQ(o["cache_source"], "anthropic");
  const int port = std::stoi(serve.url.substr(serve.url.rfind(':') + 1));
  const auto stats = get_json(port, "/cmax/stats");
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(o["prompt_tokens"], stats["prompt_tokens"]);
  EXPECT_EQ(o["cached_tokens"], stats["cached_tokens"]);
  EXPECT_EQ(o["completion_tokens"], stats["completion_tokens"]);
  EXPECT_GT(o["cache_hit_rate"].get<double>(), 0.3) << "the shared system prompt and the sessions must hit";
  std::map<std::string, json> server;
  for (auto& e : get_jsonl(port, "/cmax/requests")) server[e["id"].get<std::string>()] = e;
  ASSERT_EQ(b.requests.size(), 24u);
  for (const auto& r : b.requests) {
    const auto id = r["response_id"].get<std::string>();
    EXPECT_TRUE(id.starts_with("msg_")) << id;
    auto it = server.find(id);
    ASSERT_NE(it, server.end()) << r.dump();
    EXPECT_EQ(it->second["api"], "messages");
    EXPECT_EQ(r["usage"]["prompt_tokens"], it->second["prompt_tokens"]);
    EXPECT_EQ(r["usage"]["cached_tokens"], it->second["cached_tokens"]);
    EXPECT_EQ(r["usage"]["completion_tokens"], it->second["completion_tokens"]);
    EXPECT_EQ(r["content_chunks"], it->second["completion_tokens"]);
    EXPECT_GT(r["ttft_s"].get<double>(), 0);
  }
  for (const auto& entry : fs::recursive_directory_iterator(d.dir() / "run"))
    EXPECT_EQ(slurp(entry.path()).find(key), std::string::npos) << entry.path();
  // Whole bodies read the same usage.
  auto whole = bench(d.dir() / "whole", {"--base-url", serve.url, "--api", "messages", "--no-stream", "--fixed",
                                         "--max-requests", "6", "--input-tokens", "64", "--output-tokens", "5",
                                         "--concurrency", "2", "--requests-per-level", "6"},
                     {"ANTHROPIC_API_KEY=" + key});
  ASSERT_EQ(whole.proc.exit_code, 0) << why(whole);
  EXPECT_EQ(whole.bench["overall"]["succeeded"], 6);
  EXPECT_EQ(whole.bench["overall"]["completion_tokens"], 30);
  // The OpenAI key variable is not read for the Messages API: refused, said so, exit 3.
  auto wrong = bench(d.dir() / "wrong", {"--base-url", serve.url, "--api", "messages", "--fixed", "--max-requests", "2"},
                     {"OPENAI_API_KEY=" + key, "ANTHROPIC_API_KEY="});
  EXPECT_EQ(wrong.proc.exit_code, 3) << why(wrong);
  EXPECT_NE(wrong.proc.err.find("ANTHROPIC_API_KEY"), std::string::npos) << wrong.proc.err;
}

// vLLM's /v1/messages shape (serve --cache-fields none): no cache field, so no hit rate is claimed;
// the session id travels in metadata.user_id and consistent hashing keeps each session on one
// replica; an injected 429 comes back in Anthropic's error shape and is retried.
TEST(EndpointBench, TheMessagesApiInVllmsShapeCarriesSessionsAndRetries429s) {
  ServeProcess serve({"--replicas", "4", "--policy", "consistent_hash", "--time-scale", "0", "--cache-fields", "none",
                      "--fault-429-rate", "0.2", "--seed", "3"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  auto b = bench(serve.dir() / "run", {"--base-url", serve.base_url(), "--api", "messages", "--multiturn", "--sessions",
                                       "8", "--turns", "3", "--concurrency", "4", "--requests-per-level", "24",
                                       "--session-user", "--retries", "6"});
  ASSERT_EQ(b.proc.exit_code, 0) << why(b);
  const auto& o = b.bench["overall"];
  EXPECT_EQ(o["succeeded"], 24);
  EXPECT_EQ(o["cache_source"], "none");
  EXPECT_EQ(o["requests_without_cache_field"], 24) << "no cache field: counted as such, not as a measured 0";
  EXPECT_EQ(o["cached_tokens"], 0);
  EXPECT_GT(o["retries"]["http_429"].get<int>(), 0) << o.dump();
  const auto stats = get_json(serve.port(), "/cmax/stats");
  EXPECT_EQ(o["prompt_tokens"], stats["prompt_tokens"]) << "input_tokens is the whole prompt in vLLM's shape";
  std::map<std::string, int> replica_of_id;
  for (auto& e : get_jsonl(serve.port(), "/cmax/requests"))
    if (e["status"] == 200) replica_of_id[e["id"].get<std::string>()] = e["replica"].get<int>();
  std::map<int, std::set<int>> replicas_of_session;
  std::set<int> used;
  for (const auto& r : b.requests) {
    const int replica = replica_of_id.at(r["response_id"].get<std::string>());
    replicas_of_session[r["session"].get<int>()].insert(replica);
    used.insert(replica);
  }
  for (const auto& [session, rs] : replicas_of_session) EXPECT_EQ(rs.size(), 1u) << "session " << session;
  EXPECT_GT(used.size(), 1u) << "metadata.user_id spreads the sessions (without it they share the first block's hash)";
}
