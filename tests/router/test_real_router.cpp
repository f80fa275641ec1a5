// Real cache-aware routers in front of `cmax endpoint serve` workers: smg 1.13.0 (the SGLang
// router's successor) and vllm-router 0.1.17, installed from PyPI by tests/router/setup_*.sh. Each
// registers its workers through the calls it makes on real engines (/health, /v1/models,
// /server_info, /model_info, /v1/loads) and routes two workloads to them under each policy: a
// conversation workload (four workers), and the Mooncake conversation trace replayed by `cmax
// endpoint bench` (eight workers), whose hit rate `cmax endpoint simulate` must predict. The hit
// rate is read from the workers' own accounting (/cmax/stats) and from the usage the client got
// back.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/ports.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A router under test: its venv, its program, the words before its flags.
struct RouterKind {
  const char* name;     ///< "smg 1.13.0"
  const char* venv;     ///< under BUILD/peers
  const char* program;  ///< in the venv's bin
  std::vector<std::string> prefix;  ///< smg: {"launch"}
};
const RouterKind kSmg{"smg 1.13.0", "smg", "smg", {"launch"}};
const RouterKind kVllmRouter{"vllm-router 0.1.17", "vllm-router", "vllm-router", {}};
std::filesystem::path program_of(const RouterKind& k) {
  return std::filesystem::path(CMAX_BINARY_DIR) / "peers" / k.venv / "bin" / k.program;
}
constexpr int kMaxWorkers = 8;
constexpr int kConversations = 7;

struct HitRate {
  std::uint64_t prompt = 0, cached = 0;
  double rate() const { return prompt == 0 ? 0.0 : static_cast<double>(cached) / static_cast<double>(prompt); }
};

class RealRouter : public ::testing::Test {
 protected:
  // Skips unless `kind` is installed; then starts `workers` workers, each with `cache_blocks`
  // 16-token blocks.
  void use(const RouterKind& kind, int workers = 4, std::size_t cache_blocks = 4096) {
    kind_ = &kind;
    if (::access(program_of(kind).c_str(), X_OK) != 0)
      GTEST_SKIP() << kind.name << " is not installed in " << program_of(kind).parent_path().parent_path().string()
                   << " (tests/router/setup_routers.sh; ctest's router.setup runs it)";
    std::mt19937_64 rng(cmax::test::port_seed());
    workers_n_ = workers;
    auto base = cmax::test::pick_ports(rng, workers_n_ + 2);
    ASSERT_TRUE(base) << base.error().message;
    base_ = *base;
    // One process, four independent workers (one --listen each, one replica behind each).
    std::vector<std::string> argv = {CMAX_BIN,    "endpoint", "serve", "--replicas", "1", "--time-scale", "0",
                                     "--cache-blocks", std::to_string(cache_blocks)};
    for (int i = 0; i < workers_n_; ++i) argv.insert(argv.end(), {"--listen", fmt::format("127.0.0.1:{}", base_ + i)});
    auto w = cmax::test::Daemon::start(argv, {}, dir_.dir() / "workers.log");
    ASSERT_TRUE(w) << w.error().message;
    workers_.emplace(std::move(*w));
    for (int i = 0; i < workers_n_; ++i) ASSERT_TRUE(wait_ok(base_ + i, "/health")) << "worker " << i;
  }

  // GET path on port answers 200 within 20 s.
  static bool wait_ok(int port, const char* path, const std::string& body_has = {}) {
    for (auto deadline = Clock::now() + 20s; Clock::now() < deadline; std::this_thread::sleep_for(50ms)) {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(1s);
      auto r = c.Get(path);
      if (r && r->status == 200 && (body_has.empty() || r->body.find(body_has) != std::string::npos)) return true;
    }
    return false;
  }

  // Starts the router with `policy` in front of the workers; empties their caches first.
  void start_router(const std::string& policy) {
    router_.reset();
    for (int i = 0; i < workers_n_; ++i) {
      httplib::Client c("127.0.0.1", base_ + i);
      auto r = c.Post("/flush_cache", "", "application/json");
      ASSERT_TRUE(r && r->status == 200) << "flush worker " << i;
      stats_before_[i] = worker_stats(i);
    }
    std::vector<std::string> argv = {program_of(*kind_).string()};
    argv.insert(argv.end(), kind_->prefix.begin(), kind_->prefix.end());
    argv.insert(argv.end(), {"--host", "127.0.0.1", "--port", std::to_string(router_port()), "--prometheus-port",
                             std::to_string(base_ + workers_n_ + 1), "--policy", policy,
                             "--worker-startup-check-interval", "1", "--worker-urls"});
    for (int i = 0; i < workers_n_; ++i) argv.push_back(fmt::format("http://127.0.0.1:{}", base_ + i));
    const auto log = dir_.dir() / fmt::format("{}-{}.log", kind_->venv, policy);
    auto r = cmax::test::Daemon::start(argv, {}, log);
    ASSERT_TRUE(r) << r.error().message;
    router_.emplace(std::move(*r));
    ASSERT_TRUE(wait_ok(router_port(), "/readiness", fmt::format("\"healthy_workers\":{}", workers_n_)))
        << kind_->name << " did not register the workers: " << cmax::test::tail_of_file(log.string());
  }
  int router_port() const { return base_ + workers_n_; }

  json worker_stats(int i) {
    httplib::Client c("127.0.0.1", base_ + i);
    auto r = c.Get("/cmax/stats");
    return r && r->status == 200 ? json::parse(r->body) : json{};
  }

  // Seven conversations of six turns each, interleaved: each has its own long system prompt and
  // grows by its previous turns, as a chat client resends its history. Seven, not eight: with a
  // count divisible by the four workers, round robin would send each conversation to the same
  // worker every turn.
  HitRate run_conversations() {
    HitRate client;
    std::vector<json> histories(kConversations);
    for (int c = 0; c < kConversations; ++c)
      histories[c] = json::array({{{"role", "system"},
                                   {"content", fmt::format("Conversation {}: you are the on-call assistant of cluster {}. ", c, c * 7919) +
                                                   std::string(1500, static_cast<char>('a' + c))}}});
    httplib::Client cli("127.0.0.1", router_port());
    cli.set_read_timeout(30s);
    for (int turn = 0; turn < 6; ++turn)
      for (int c = 0; c < kConversations; ++c) {
        histories[c].push_back({{"role", "user"}, {"content", fmt::format("turn {} of conversation {}: what failed?", turn, c)}});
        json body = {{"model", "cmax-sim"}, {"max_tokens", 4}, {"messages", histories[c]}};
        auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
        EXPECT_TRUE(r && r->status == 200) << (r ? r->body : httplib::to_string(r.error()));
        if (!r || r->status != 200) continue;
        auto j = json::parse(r->body);
        client.prompt += j["usage"]["prompt_tokens"].get<std::uint64_t>();
        client.cached += j["usage"]["prompt_tokens_details"]["cached_tokens"].get<std::uint64_t>();
        histories[c].push_back(j["choices"][0]["message"]);
      }
    return client;
  }

  // The workers' own accounting since start_router.
  HitRate server_side(std::string* spread = nullptr) {
    HitRate h;
    for (int i = 0; i < workers_n_; ++i) {
      auto now = worker_stats(i);
      if (spread)
        *spread += fmt::format("{}{}", i ? "/" : "",
                               now["requests"].get<std::uint64_t>() - stats_before_[i]["requests"].get<std::uint64_t>());
      h.prompt += now["prompt_tokens"].get<std::uint64_t>() - stats_before_[i]["prompt_tokens"].get<std::uint64_t>();
      h.cached += now["cached_tokens"].get<std::uint64_t>() - stats_before_[i]["cached_tokens"].get<std::uint64_t>();
    }
    return h;
  }

  // cache_aware against round_robin through the router: the hit rates, and the client's usage
  // against the workers' accounting.
  void cache_aware_beats_round_robin() {
    std::map<std::string, HitRate> client_rate;
    for (const char* policy : {"cache_aware", "round_robin"}) {
      start_router(policy);
      if (HasFatalFailure()) return;
      auto client = run_conversations();
      std::string spread;
      auto server = server_side(&spread);
      client_rate[policy] = client;
      EXPECT_EQ(client.prompt, server.prompt) << policy;
      EXPECT_EQ(client.cached, server.cached) << policy;
      std::printf("[ measure  ] %s %s, 4 workers, 7 conversations x 6 turns: hit rate %.3f (client) %.3f (workers), "
                  "requests per worker %s\n",
                  kind_->name, policy, client.rate(), server.rate(), spread.c_str());
    }
    const double ca = client_rate["cache_aware"].rate(), rr = client_rate["round_robin"].rate();
    // cache_aware: only each conversation's first turn misses. round_robin: a conversation meets a
    // worker that has not seen it on most of its first four turns.
    EXPECT_GT(ca, 0.75);
    EXPECT_LT(rr, ca - 0.2) << "cache_aware " << ca << ", round_robin " << rr;
  }

  // The Mooncake trace through the router under each of its policies, replayed one request at a
  // time: each policy's hit rate, from the workers and from the client, against `cmax endpoint
  // simulate`'s prediction for the simulator's equivalent policy.
  struct PolicyPair {
    const char* router;  ///< the router's --policy
    const char* sim;     ///< simulate's policy that routes the same way
  };
  void mooncake_matches_simulate(std::span<const PolicyPair> pairs) {
    const std::string trace = trace_slice(kTraceRequests);
    std::map<std::string, double> measured;
    for (const auto& pair : pairs) {
      const double predicted = simulate(trace, pair.sim);
      double client = 0;
      HitRate server;
      std::string spread;
      // A router that left a healthy worker out of its policy at start (smg 1.13's prefix_hash
      // built its ring from the workers healthy first on a loaded machine: 307/0/1193/0/0/0/0/0)
      // routes nothing to it. That is the router's start, not its policy: started again once.
      for (int attempt = 1; attempt <= 2; ++attempt) {
        start_router(pair.router);
        if (HasFatalFailure()) return;
        const auto out = dir_.dir() / fmt::format("bench-{}-{}-{}", kind_->venv, pair.router, attempt);
        cmax::core::ProcessSpec bench{{CMAX_BIN, "endpoint", "bench", trace, "--base-url",
                                       fmt::format("http://127.0.0.1:{}/v1", router_port()), "--model", "cmax-sim",
                                       "--concurrency", "1", "--requests-per-level", "1000000", "--max-tokens", "4",
                                       "--json", "--out", out.string()},
                                      std::chrono::seconds(300)};
        bench.max_output_bytes = 64u << 20;
        auto b = cmax::core::run_process(bench);
        ASSERT_TRUE(b) << b.error().message;
        ASSERT_EQ(b->exit_code, 0) << pair.router << ": " << b->err.substr(0, 2000);
        client = json::parse(b->out)["overall"]["cache_hit_rate"].get<double>();
        spread.clear();
        server = server_side(&spread);
        const bool idle_worker = ("/" + spread + "/").find("/0/") != std::string::npos;
        if (attempt == 1 && idle_worker && std::abs(server.rate() - predicted) > 0.03) {
          std::printf("[ note     ] %s %s left a worker idle (%s): the router started again\n", kind_->name, pair.router,
                      spread.c_str());
          continue;
        }
        break;
      }
      EXPECT_NEAR(client, server.rate(), 1e-9) << "the usage the client read is the workers' accounting";
      measured[pair.router] = server.rate();
      std::printf("[ measure  ] %s %s, %d workers, Mooncake conversation trace (first %d requests): hit rate %.4f "
                  "measured, %.4f predicted by simulate --policies %s, requests per worker %s\n",
                  kind_->name, pair.router, workers_n_, kTraceRequests, server.rate(), predicted, pair.sim,
                  spread.c_str());
      EXPECT_NEAR(server.rate(), predicted, 0.03) << kind_->name << " " << pair.router << " against simulate " << pair.sim;
    }
    EXPECT_GT(measured["cache_aware"], measured["round_robin"] + 0.1);
  }

  // The first `n` requests of the Mooncake conversation trace, in a file.
  std::string trace_slice(int n) {
    std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "tests/golden/traces/mooncake_conversation_trace.jsonl");
    const auto path = dir_.dir() / "trace.jsonl";
    std::ofstream out(path);
    std::string line;
    for (int i = 0; i < n && std::getline(in, line); ++i) out << line << '\n';
    return path.string();
  }

  // simulate's token hit rate for `policy` on `trace`, with the workers' fleet: one replica per
  // worker, the same cache (in 512-token blocks), requests far enough apart that each finishes
  // before the next arrives (a concurrency-1 replay). A policy that draws at random is predicted
  // by the mean of eight seeds: one draw's rate spreads by about 0.006 (standard deviation) on
  // this slice, the real router's draw is one more.
  double simulate(const std::string& trace, const char* policy) {
    const bool draws = std::string_view(policy) == "random" || std::string_view(policy) == "power_of_two";
    const int seeds = draws ? 8 : 1;
    double sum = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      cmax::core::ProcessSpec sim{{CMAX_BIN, "endpoint", "simulate", trace, "--replicas", std::to_string(workers_n_),
                                   "--cache-blocks", std::to_string(kTraceCacheBlocks * 16 / 512), "--time-scale",
                                   "0.001", "--policies", policy, "--seed", std::to_string(seed), "--json"},
                                  std::chrono::seconds(120)};
      auto r = cmax::core::run_process(sim);
      EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->err : r.error().message);
      if (!r || r->exit_code != 0) return -1;
      sum += json::parse(r->out)["policies"][0]["token_hit_rate"].get<double>();
    }
    return sum / seeds;
  }
  static constexpr int kTraceRequests = 1500;
  static constexpr std::size_t kTraceCacheBlocks = 1'000'000;  // 16-token blocks per worker

  cmax::test::TempHost dir_;
  const RouterKind* kind_ = nullptr;
  int workers_n_ = 4;
  int base_ = 0;
  std::optional<cmax::test::Daemon> workers_;
  std::optional<cmax::test::Daemon> router_;
  json stats_before_[kMaxWorkers];
};

TEST_F(RealRouter, SmgCacheAwareKeepsEachConversationOnOneWorkerWhereRoundRobinSpreadsIt) {
  use(kSmg);
  if (IsSkipped() || HasFatalFailure()) return;
  cache_aware_beats_round_robin();
}

TEST_F(RealRouter, VllmRouterCacheAwareKeepsEachConversationOnOneWorkerWhereRoundRobinSpreadsIt) {
  use(kVllmRouter);
  if (IsSkipped() || HasFatalFailure()) return;
  cache_aware_beats_round_robin();
}

// smg: prefix_hash keys on the first 1,024 characters, which every request of the trace shares
// (its block 0), as simulate's consistent_hash keys on the first block when there is no session;
// consistent_hashing without a routing header (X-SMG-Routing-Key) draws at random.
TEST_F(RealRouter, SmgMooncakeTraceHitRateIsWhatSimulatePredictsForEachPolicy) {
  use(kSmg, 8, kTraceCacheBlocks);
  if (IsSkipped() || HasFatalFailure()) return;
  const PolicyPair pairs[] = {{"cache_aware", "cache_aware"}, {"round_robin", "round_robin"},
                              {"random", "random"},           {"power_of_two", "power_of_two"},
                              {"prefix_hash", "consistent_hash"}, {"consistent_hashing", "random"}};
  mooncake_matches_simulate(pairs);
}

// vllm-router: consistent_hash without a session header gives every request the same key
// ("request:"), so one worker, as simulate's consistent_hash on the trace's shared first block.
TEST_F(RealRouter, VllmRouterMooncakeTraceHitRateIsWhatSimulatePredictsForEachPolicy) {
  use(kVllmRouter, 8, kTraceCacheBlocks);
  if (IsSkipped() || HasFatalFailure()) return;
  const PolicyPair pairs[] = {{"cache_aware", "cache_aware"},
                              {"round_robin", "round_robin"},
                              {"random", "random"},
                              {"power_of_two", "power_of_two"},
                              {"consistent_hash", "consistent_hash"}};
  mooncake_matches_simulate(pairs);
}

// A session id per conversation is what session routing keys on. Conversations of 12 x 5 turns
// with no shared system prompt, so a hit is a conversation's own history.
std::vector<std::string> session_bench(int port, const std::filesystem::path& out) {
  return {CMAX_BIN,     "endpoint", "bench",        "--multiturn", "--sessions", "12", "--turns", "5",
          "--shared-prefix-tokens", "0", "--user-tokens", "200", "--base-url",
          fmt::format("http://127.0.0.1:{}/v1", port), "--model", "cmax-sim", "--concurrency", "4",
          "--requests-per-level", "60", "--json", "--out", out.string()};
}

// With `--session-header X-SMG-Routing-Key`, smg's consistent_hashing keeps each conversation on
// one worker (every turn after the first finds its history there); without it smg draws a worker
// per request. Both transports carry the header.
TEST_F(RealRouter, SmgConsistentHashingKeepsAConversationWhereItsSessionHeaderSendsIt) {
  use(kSmg, 4);
  if (IsSkipped() || HasFatalFailure()) return;
  std::map<std::string, double> rate;
  for (const char* run : {"none", "native", "curl"}) {
    start_router("consistent_hashing");
    if (HasFatalFailure()) return;
    auto argv = session_bench(router_port(), dir_.dir() / fmt::format("session-{}", run));
    if (std::string_view(run) != "none")
      argv.insert(argv.end(), {"--session-header", "X-SMG-Routing-Key", "--transport", run});
    cmax::core::ProcessSpec bench{argv, std::chrono::seconds(120)};
    bench.max_output_bytes = 16u << 20;
    auto b = cmax::core::run_process(bench);
    ASSERT_TRUE(b) << b.error().message;
    ASSERT_EQ(b->exit_code, 0) << run << ": " << b->err.substr(0, 2000);
    std::string spread;
    rate[run] = server_side(&spread).rate();
    std::printf("[ measure  ] smg 1.13.0 consistent_hashing, 4 workers, 12 conversations x 5 turns, session header %s: "
                "hit rate %.3f, requests per worker %s\n",
                run, rate[run], spread.c_str());
  }
  EXPECT_GT(rate["native"], rate["none"] + 0.2);
  EXPECT_NEAR(rate["curl"], rate["native"], 0.02) << "the same sessions on the same workers";
}

// vllm-router 0.1.17's consistent_hash keys on the X-Session-Id header (x-user-id, ... after it).
// On the HTTP path its policy is not given the body: `user` is not read, and a request with no
// session header gets the key "request:", so every such request goes to one worker.
TEST_F(RealRouter, VllmRouterConsistentHashKeepsAConversationWhereItsSessionHeaderSendsIt) {
  use(kVllmRouter, 4);
  if (IsSkipped() || HasFatalFailure()) return;
  std::map<std::string, int> busy;
  std::map<std::string, double> rate;
  for (const char* run : {"user", "header"}) {
    start_router("consistent_hash");
    if (HasFatalFailure()) return;
    auto argv = session_bench(router_port(), dir_.dir() / fmt::format("session-{}", run));
    if (std::string_view(run) == "user") argv.push_back("--session-user");
    else argv.insert(argv.end(), {"--session-header", "X-Session-Id"});
    cmax::core::ProcessSpec bench{argv, std::chrono::seconds(120)};
    bench.max_output_bytes = 16u << 20;
    auto b = cmax::core::run_process(bench);
    ASSERT_TRUE(b) << b.error().message;
    ASSERT_EQ(b->exit_code, 0) << b->err.substr(0, 2000);
    std::string spread;
    rate[run] = server_side(&spread).rate();
    for (int i = 0; i < workers_n_; ++i)
      busy[run] += worker_stats(i)["requests"].get<std::uint64_t>() > stats_before_[i]["requests"].get<std::uint64_t>();
    std::printf("[ measure  ] vllm-router 0.1.17 consistent_hash, 4 workers, 12 conversations x 5 turns, session id in "
                "%s: hit rate %.3f, requests per worker %s\n",
                run, rate[run], spread.c_str());
  }
  EXPECT_EQ(busy["user"], 1) << "vllm-router 0.1.17 ignores `user`: one key for every request";
  EXPECT_GE(busy["header"], 3) << "twelve sessions spread over the workers";
  EXPECT_GT(rate["header"], 0.6) << "each conversation where its earlier turns are";
}

}  // namespace
