// run_endpoint_bench against a scripted HTTP/1.1 server in this process that logs every request:
// the order of the preflight, the warmup, the cache flushes and the /metrics reads around the
// levels; the capacity search's measurements; a server that drops or is not there; --dry-run.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "loadgen/bench_run.h"
#include "loadgen/capacity.h"
#include "support/temp_host.h"

namespace {

using namespace std::chrono_literals;
using cmax::loadgen::BenchEnv;
using cmax::loadgen::BenchOptions;
using cmax::loadgen::BenchOutcome;
using json = nlohmann::json;

// What the server answers. Completion requests are numbered from 0 in arrival order.
struct Script {
  int flush_status = 200;                 ///< POST /flush_cache
  int reset_status = 200;                 ///< POST /reset_prefix_cache
  int metrics_status = 200;               ///< GET /metrics (vLLM counters that grow with each completion)
  std::function<int(int)> delay_ms = [](int) { return 0; };   ///< per completion
  std::function<bool(int)> drop = [](int) { return false; };  ///< close mid-body
};

class ScriptServer {
 public:
  explicit ScriptServer(Script script) : script_(std::move(script)) {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(lfd_, 64);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(lfd_, nullptr, nullptr);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        workers_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~ScriptServer() {
    ::shutdown(lfd_, SHUT_RDWR);
    ::close(lfd_);
    acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    for (int fd : fds_) ::close(fd);
  }
  std::string base_url() const { return fmt::format("http://127.0.0.1:{}/v1", port_); }
  /// "GET /v1/models", "POST /flush_cache", ... in arrival order.
  std::vector<std::string> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  static void reply(int fd, int status, const std::string& body) {
    const std::string out = fmt::format("HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                                        status, body.size(), body);
    ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }

  // One request on `fd`; false when the connection is to be closed.
  bool answer(int fd, const std::string& line) {
    if (line == "GET /v1/models") {
      reply(fd, 200, R"({"object":"list","data":[{"id":"m","object":"model"}]})");
    } else if (line == "GET /metrics") {
      const int n = completions_.load();
      reply(fd, script_.metrics_status,
            script_.metrics_status != 200 ? std::string("not here")
                                          : fmt::format("vllm:prefix_cache_queries_total{{model_name=\"m\"}} {}\n"
                                                        "vllm:prefix_cache_hits_total{{model_name=\"m\"}} {}\n",
                                                        100 * n, 50 * n));
    } else if (line == "POST /flush_cache") {
      reply(fd, script_.flush_status, "flushed");
    } else if (line == "POST /reset_prefix_cache") {
      reply(fd, script_.reset_status, "reset");
    } else if (line == "POST /v1/chat/completions") {
      const int i = next_++;
      std::this_thread::sleep_for(std::chrono::milliseconds(script_.delay_ms(i)));
      if (script_.drop(i)) {
        const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":";
        ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
        return false;
      }
      ++completions_;
      reply(fd, 200,
            R"({"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":)"
            R"({"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,)"
            R"("completion_tokens":1,"total_tokens":101,"prompt_tokens_details":{"cached_tokens":50}}})");
    } else {
      reply(fd, 404, "{}");
    }
    return true;
  }

  void serve(int fd) {
    std::string in;
    char buf[8192];
    for (;;) {
      auto end = in.find("\r\n\r\n");
      while (end == std::string::npos) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) return;
        in.append(buf, static_cast<std::size_t>(r));
        end = in.find("\r\n\r\n");
      }
      const std::string head = in.substr(0, end);
      in.erase(0, end + 4);
      std::size_t body = 0;
      for (const char* name : {"Content-Length: ", "content-length: "})
        if (auto cl = head.find(name); cl != std::string::npos) body = std::stoul(head.substr(cl + 16));
      while (in.size() < body) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) return;
        in.append(buf, static_cast<std::size_t>(r));
      }
      in.erase(0, body);
      const std::string first = head.substr(0, head.find("\r\n"));
      const std::string line = first.substr(0, first.rfind(' '));  // "METHOD PATH"
      {
        std::lock_guard lock(mu_);
        log_.push_back(line);
      }
      if (!answer(fd, line)) {
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
    }
  }

  Script script_;
  int lfd_ = -1, port_ = 0;
  std::atomic<int> next_{0}, completions_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> workers_;
  std::vector<std::string> log_;
};

// Records what the run told its sink.
struct RecordingSink final : cmax::loadgen::BenchSink {
  std::vector<std::string> events;
  std::vector<std::string> bodies;
  void capacity_load(std::string_view dimension, double load) override {
    events.push_back(fmt::format("{} {:g}", dimension, load));
  }
  void progress_done() override { events.push_back("done"); }
  void dry_run_seed(std::uint64_t seed) override { events.push_back(fmt::format("seed {}", seed)); }
  void dry_run_body(const std::string& body) override { bodies.push_back(body); }
};

// --fixed, 64-token prompts, whole bodies, no retries, model "m": quick against the script.
BenchOptions small_options(const std::string& base_url, const std::filesystem::path& out) {
  BenchOptions o;
  o.base_url = base_url;
  o.model = "m";
  o.fixed = true;
  o.fx.input_tokens = 64;
  o.fx.output_tokens = 4;
  o.no_stream = true;
  o.retries = 0;
  o.connect_timeout_s = 2;
  o.timeout_s = 10;
  o.out = out.string();
  return o;
}

struct Env {
  cmax::core::FixedClock clock{std::chrono::sys_days{std::chrono::year{2026} / 12 / 2} + 12h + 21min + 22s};
  std::atomic<bool> stop{false};
  RecordingSink sink;
  int keys_read = 0;
  BenchEnv env() {
    BenchEnv e;
    e.clock = &clock;
    e.stop = &stop;
    e.sink = &sink;
    e.api_key = [this]() -> cmax::Result<cmax::loadgen::ApiKey> {
      ++keys_read;
      return cmax::loadgen::ApiKey{"k", "env:TEST_KEY"};
    };
    e.cmax_version = "test";
    return e;
  }
};

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

std::vector<std::string> repeat(const std::string& s, int n) { return std::vector<std::string>(n, s); }

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::string kChat = "POST /v1/chat/completions";

TEST(BenchRun, PreflightThenWarmupThenEachLevelFlushedAndReadBeforeAndAfter) {
  ScriptServer server({});
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.concurrency = "1,2";
  o.requests_per_level = 3;
  o.warmup = 2;
  o.flush_cache = true;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->kind, BenchOutcome::Kind::kBench);
  const std::vector<std::string> level = concat({{"POST /flush_cache", "GET /metrics"}, repeat(kChat, 3), {"GET /metrics"}});
  EXPECT_EQ(server.log(), concat({{"GET /v1/models"}, repeat(kChat, 2), level, level}));
  EXPECT_EQ(env.keys_read, 1);
  EXPECT_EQ(env.sink.events, std::vector<std::string>{"done"});

  ASSERT_EQ(out->result.levels.size(), 2u);
  EXPECT_EQ(out->result.overall.requests, 6u) << "the warmup is not counted";
  EXPECT_EQ(out->model, "m");
  const json doc = read_json(tmp.dir() / "run" / "bench.json");
  EXPECT_EQ(doc, json::parse(out->document)) << "bench.json is what the outcome says";
  EXPECT_EQ(doc["started_at"], "2026-12-02T12:21:22Z");
  EXPECT_EQ(doc["api_key"], "env:TEST_KEY");
  EXPECT_EQ(doc["warmup"]["requests"], 2);
  EXPECT_EQ(doc["warmup"]["concurrency"], 1) << "the warmup runs at the first level";
  ASSERT_EQ(doc["cache_flushes"].size(), 2u);
  EXPECT_EQ(doc["cache_flushes"][1], json({{"level", 2}, {"path", "/flush_cache"}, {"status", 200}, {"flushed", true}}));
  const json& sm = doc["server_metrics"];
  EXPECT_EQ(sm["read"], true);
  ASSERT_EQ(sm["levels"].size(), 2u);
  for (const auto& l : sm["levels"]) {
    EXPECT_EQ(l["family"], "vllm");
    EXPECT_EQ(l["prefix_cache_queries"], 300) << "the counters' growth over the level's 3 requests";
    EXPECT_EQ(l["hit_rate"], 0.5);
  }
  EXPECT_TRUE(std::filesystem::exists(tmp.dir() / "run" / "bench.csv"));
  EXPECT_TRUE(std::filesystem::exists(tmp.dir() / "run" / "ttft_vs_concurrency.svg"));
  std::ifstream jsonl(tmp.dir() / "run" / "requests.jsonl");
  EXPECT_EQ(std::count(std::istreambuf_iterator<char>(jsonl), std::istreambuf_iterator<char>(), '\n'), 6);
}

TEST(BenchRun, AFlushRefusedFallsBackToVllmsPathAndWarnsWithoutStopping) {
  Script script;
  script.flush_status = 404;
  script.reset_status = 503;
  ScriptServer server(script);
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.concurrency = "1";
  o.requests_per_level = 2;
  o.flush_cache = true;
  o.no_server_metrics = true;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(server.log(), concat({{"GET /v1/models", "POST /flush_cache", "POST /reset_prefix_cache"}, repeat(kChat, 2)}))
      << "--no-server-metrics reads no /metrics";
  const json doc = json::parse(out->document);
  EXPECT_EQ(doc["cache_flushes"][0],
            json({{"level", 1}, {"path", "/reset_prefix_cache"}, {"status", 503}, {"flushed", false}}));
  EXPECT_FALSE(doc.contains("server_metrics"));
  ASSERT_FALSE(out->warnings.empty());
  EXPECT_NE(out->warnings[0].find("level 1: the server's prefix cache was not flushed"), std::string::npos)
      << out->warnings[0];
  EXPECT_EQ(out->result.overall.succeeded, 2u);
}

TEST(BenchRun, AnEndpointWithoutMetricsIsAskedOnceAndTheReasonRecorded) {
  Script script;
  script.metrics_status = 404;
  ScriptServer server(script);
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.concurrency = "1,2";
  o.requests_per_level = 2;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  const auto log = server.log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "GET /metrics"), 1);
  const json doc = json::parse(out->document);
  EXPECT_EQ(doc["server_metrics"]["read"], false);
  EXPECT_NE(doc["server_metrics"]["why_not"].get<std::string>().find("HTTP 404"), std::string::npos);
  EXPECT_EQ(doc["cache_flushes"], nullptr);
  EXPECT_EQ(doc["warmup"], nullptr);
}

TEST(BenchRun, AServerThatDropsMidRunFailsThoseRequestsAndTheRunStillWritesItsResults) {
  Script script;
  script.drop = [](int i) { return i >= 2; };
  ScriptServer server(script);
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.concurrency = "1";
  o.requests_per_level = 5;
  o.no_server_metrics = true;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  const auto& s = out->result.overall;
  EXPECT_EQ(s.requests, 5u);
  EXPECT_EQ(s.succeeded, 2u);
  EXPECT_EQ(s.errors[static_cast<int>(cmax::loadgen::ErrorClass::kDropped)], 3u);
  EXPECT_FALSE(out->result.interrupted);
  EXPECT_TRUE(cmax::loadgen::too_many_errors(s, 0.1));
  EXPECT_FALSE(cmax::loadgen::too_many_errors(s, 0.6));
  EXPECT_TRUE(std::filesystem::exists(tmp.dir() / "run" / "bench.json"));
}

TEST(BenchRun, AnEndpointThatIsNotThereIsAUsageErrorBeforeAnyRunDirectory) {
  int port = 0;
  {
    ScriptServer gone({});
    port = std::stoi(gone.base_url().substr(17));
  }
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(fmt::format("http://127.0.0.1:{}/v1", port), tmp.dir() / "run");
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("check --base-url and that the endpoint is up"), std::string::npos)
      << out.error().message;
  EXPECT_FALSE(std::filesystem::exists(tmp.dir() / "run"));
}

TEST(BenchRun, TheDefaultRunDirectoryIsStampedByTheInjectedClock) {
  ScriptServer server({});
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), "");
  o.concurrency = "1";
  o.requests_per_level = 1;
  o.no_server_metrics = true;
  BenchEnv e = env.env();
  e.default_run_dir = [&](std::string_view stamp) { return (tmp.dir() / stamp).string(); };
  auto out = cmax::loadgen::run_endpoint_bench(o, e);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->dir, (tmp.dir() / "20261202T122122Z-endpoint-bench").string());
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out->dir) / "bench.json"));
}

TEST(BenchRun, CapacitySearchMeasuresTheLoadsTheSearchAsksForAndRecordsEach) {
  // Loads above 5 streams miss a 60 ms E2E SLO; the server sees only request numbers, so the
  // expected sequence of loads comes from the pure search with the same verdicts.
  cmax::loadgen::CapacityConfig cc;
  cc.start = 1;
  cc.max = 16;
  cc.repeats = 2;
  cc.attainment = 0.9;
  std::vector<double> loads;
  const auto expected = cmax::loadgen::search_capacity(cc, [&](double load) -> std::optional<double> {
    loads.push_back(load);
    return load <= 5 ? 1.0 : 0.0;
  });
  constexpr int kPerMeasurement = 4;
  Script script;
  script.delay_ms = [loads](int i) {
    const auto m = static_cast<std::size_t>(i / kPerMeasurement);
    return m < loads.size() && loads[m] > 5 ? 150 : 0;
  };
  ScriptServer server(script);
  cmax::test::TempHost tmp;
  Env env;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.capacity = "concurrency";
  o.capacity_start = 1;
  o.capacity_max = 16;
  o.capacity_repeats = 2;
  o.capacity_requests = kPerMeasurement;
  o.slo.e2e_ms = 60;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->kind, BenchOutcome::Kind::kCapacity);
  const auto& run = out->capacity;
  std::vector<double> measured;
  std::vector<std::string> announced;
  for (const auto& m : run.measurements) {
    measured.push_back(m.load);
    announced.push_back(fmt::format("concurrency {:g}", m.load));
  }
  EXPECT_EQ(measured, loads);
  announced.push_back("done");
  EXPECT_EQ(env.sink.events, announced);
  EXPECT_EQ(run.result.edge, expected.edge);
  EXPECT_EQ(run.result.first_fail, expected.first_fail);
  const auto log = server.log();
  EXPECT_EQ(std::count(log.begin(), log.end(), kChat), static_cast<long>(kPerMeasurement * loads.size()));
  EXPECT_EQ(std::count(log.begin(), log.end(), "GET /metrics"), 0) << "the search reads no /metrics";
  const json doc = read_json(tmp.dir() / "run" / "capacity.json");
  EXPECT_EQ(doc["schema"], "cmax.endpoint.capacity/1");
  EXPECT_EQ(doc["probes"].size(), loads.size());
  EXPECT_EQ(doc["edge"], expected.edge);
  EXPECT_EQ(doc, json::parse(out->document));
}

TEST(BenchRun, AStopBeforeTheSearchEndsItInterruptedWithNothingMeasured) {
  ScriptServer server({});
  cmax::test::TempHost tmp;
  Env env;
  env.stop = true;
  BenchOptions o = small_options(server.base_url(), tmp.dir() / "run");
  o.capacity = "rate";
  o.slo.e2e_ms = 60;
  o.no_preflight = true;  // a stop set before the preflight cancels it: a usage error, not an outcome
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(out->capacity.result.interrupted);
  EXPECT_TRUE(server.log().empty());
  EXPECT_TRUE(out->capacity.measurements.empty());
}

TEST(BenchRun, DryRunHandsTheBodiesToTheSinkAndTouchesNoNetworkNorKey) {
  Env env;
  BenchOptions o = small_options("http://127.0.0.1:9/v1", "");
  o.max_requests = 3;
  o.seed = 77;
  o.seed_source = "fresh";
  o.dry_run = true;
  BenchEnv e = env.env();
  bool engine_made = false;
  e.make_engine = [&](const cmax::loadgen::ClientConfig&) -> cmax::Result<std::unique_ptr<cmax::loadgen::HttpEngine>> {
    engine_made = true;
    return cmax::fail("no network in a dry run");
  };
  auto out = cmax::loadgen::run_endpoint_bench(o, e);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->kind, BenchOutcome::Kind::kDryRun);
  EXPECT_EQ(env.sink.bodies.size(), 3u);
  EXPECT_EQ(env.sink.events, std::vector<std::string>{"seed 77"});
  EXPECT_NE(env.sink.bodies[0].find("\"model\":\"m\""), std::string::npos) << env.sink.bodies[0];
  EXPECT_FALSE(engine_made);
  EXPECT_EQ(env.keys_read, 0);
}

TEST(BenchRun, OptionsThatCannotGoTogetherAreRefusedBeforeAnything) {
  Env env;
  BenchOptions o = small_options("http://127.0.0.1:9/v1", "");
  o.multiturn = true;
  auto out = cmax::loadgen::run_endpoint_bench(o, env.env());
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, "give one workload: a trace file, --multiturn, --fixed or --prompts FILE");
  o.multiturn = false;
  o.capacity = "rate";
  EXPECT_EQ(cmax::loadgen::run_endpoint_bench(o, env.env()).error().message,
            "--capacity needs an SLO to meet: --slo-ttft-ms, --slo-tpot-ms or --slo-e2e-ms");
  o.capacity.clear();
  o.api = "grpc";
  EXPECT_EQ(cmax::loadgen::run_endpoint_bench(o, env.env()).error().message,
            "--api grpc: use chat, completions or messages");
  EXPECT_EQ(env.keys_read, 0);
}

}  // namespace
