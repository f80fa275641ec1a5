// cmax endpoint serve: an OpenAI-compatible server on loopback backed by the fleet model, for
// testing clients, routers and benchmark tools against known cache and timing behaviour. Prints
// the base URL on stdout, serves until SIGINT or SIGTERM, then prints its accounting (the
// /cmax/stats JSON) on stdout. `--listen` given several times starts one independent server (its
// own fleet of --replicas, its own cache and accounting) per address, as a router's workers: one
// URL line each, and at the end one stats line each, in --listen order. Exit codes: 0 stopped cleanly; 3 usage or environment (bad flag,
// address in use).

#include "apps/cmax/cmd_endpoint_serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/strings.h"
#include "core/text_file.h"
#include "endpoint/openai_server.h"

namespace cmax::app {
namespace {

constexpr int kExitOk = 0, kExitUsage = 3;

struct ServeFlags {
  std::vector<std::string> listen{"127.0.0.1:8000"};
  std::string policy = "cache_aware";
  std::string cache_fields = "openai";
  int slow_first_token_ms = 0;
  std::string api_key_file, api_key_env;
  endpoint::ServeConfig config;
};

int run_serve(ServeFlags& f) {
  auto& c = f.config;
  std::vector<std::pair<std::string, int>> addresses;
  for (const auto& l : f.listen) {
    auto listen = endpoint::parse_listen(l);
    if (!listen) {
      fmt::print(stderr, "cmax endpoint serve: {}\n", listen.error().message);
      return kExitUsage;
    }
    addresses.push_back(*listen);
  }
  if (addresses.empty()) {
    fmt::print(stderr, "cmax endpoint serve: --listen: give at least one HOST:PORT\n");
    return kExitUsage;
  }
  std::tie(c.host, c.port) = addresses.front();
  if (!endpoint::policy_from_name(f.policy, c.fleet.policy)) {
    fmt::print(stderr, "cmax endpoint serve: --policy {}: not a policy; use one of", f.policy);
    for (auto p : endpoint::all_policies()) fmt::print(stderr, " {}", endpoint::policy_name(p));
    fmt::print(stderr, "\n");
    return kExitUsage;
  }
  if (!endpoint::cache_fields_from_name(f.cache_fields, c.cache_fields)) {
    fmt::print(stderr, "cmax endpoint serve: --cache-fields {}: use openai, anthropic, deepseek, all or none\n",
               f.cache_fields);
    return kExitUsage;
  }
  for (auto [name, rate] : {std::pair{"--fault-429-rate", c.faults.rate_429}, std::pair{"--fault-5xx-rate", c.faults.rate_5xx},
                            std::pair{"--fault-drop-stream-rate", c.faults.drop_stream_rate}}) {
    if (!(rate >= 0 && rate <= 1)) {
      fmt::print(stderr, "cmax endpoint serve: {} {}: a share between 0 and 1\n", name, rate);
      return kExitUsage;
    }
  }
  if (c.time_scale < 0 || f.slow_first_token_ms < 0) {
    fmt::print(stderr, "cmax endpoint serve: --time-scale and --fault-slow-first-token-ms must be >= 0\n");
    return kExitUsage;
  }
  c.faults.slow_first_token = std::chrono::milliseconds(f.slow_first_token_ms);
  if (!f.api_key_file.empty() && !f.api_key_env.empty()) {
    fmt::print(stderr, "cmax endpoint serve: give --api-key-file or --api-key-env, not both\n");
    return kExitUsage;
  }
  if (!f.api_key_env.empty()) {
    const char* v = std::getenv(f.api_key_env.c_str());
    if (v == nullptr || *v == '\0') {
      fmt::print(stderr, "cmax endpoint serve: --api-key-env {}: the variable is unset or empty\n", f.api_key_env);
      return kExitUsage;
    }
    c.api_key = v;
  }
  if (!f.api_key_file.empty()) {
    auto key = core::read_text_file(f.api_key_file, 64 * 1024);
    if (!key) {
      fmt::print(stderr, "cmax endpoint serve: --api-key-file: {}\n", key.error().message);
      return kExitUsage;
    }
    c.api_key = std::string(core::trim(*key));
    if (c.api_key.empty()) {
      fmt::print(stderr, "cmax endpoint serve: --api-key-file {}: the file is empty\n", f.api_key_file);
      return kExitUsage;
    }
  }

  raise_fd_limit();
  // SIGINT and SIGTERM go to sigwait below: blocked here, before any server thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::vector<std::unique_ptr<endpoint::OpenAiServer>> servers;
  std::vector<std::string> urls;
  for (const auto& [host, port] : addresses) {
    auto one = c;
    one.host = host;
    one.port = port;
    auto server = endpoint::OpenAiServer::bind(one);
    if (!server) {
      fmt::print(stderr, "cmax endpoint serve: {}\n", server.error().message);
      return kExitUsage;
    }
    const bool v6 = host.find(':') != std::string::npos;
    urls.push_back(fmt::format("http://{}{}{}:{}/v1", v6 ? "[" : "", host, v6 ? "]" : "", (*server)->port()));
    if (!endpoint::is_loopback_host(host) && c.api_key.empty())
      fmt::print(stderr, "cmax endpoint serve: warning: {} is reachable from other hosts; there is no authentication "
                 "(see --api-key-file)\n", host);
    fmt::print("cmax endpoint serve: listening on {} (model {}, {} replicas, policy {}, {}-token blocks)\n", urls.back(),
               c.model, c.fleet.replicas, f.policy, c.fleet.block_tokens);
    servers.push_back(std::move(*server));
  }
  std::fflush(stdout);

  std::vector<char> served(servers.size(), 1);
  std::vector<std::thread> runners;
  for (std::size_t i = 0; i < servers.size(); ++i)
    runners.emplace_back([&, i] {
      served[i] = servers[i]->run();
      if (!served[i]) ::kill(::getpid(), SIGTERM);  // wake the sigwait below
    });
  int sig = 0;
  ::sigwait(&stop_signals, &sig);
  for (auto& s : servers) s->stop();
  for (auto& r : runners) r.join();
  int code = kExitOk;
  for (std::size_t i = 0; i < servers.size(); ++i)
    if (!served[i]) {
      fmt::print(stderr, "cmax endpoint serve: the listener on {} failed\n", urls[i]);
      code = kExitUsage;
    }
  for (const auto& s : servers) fmt::print("{}\n", s->stats_json());
  return code;
}

}  // namespace

Runner setup_endpoint_serve(CLI::App& serve) {
  auto f = std::make_shared<ServeFlags>();
  auto& c = f->config;
  c.fleet.block_tokens = 16;  // chat-size prompts fill blocks, so caching shows (the model's default is 512)
  serve.add_option("--listen", f->listen,
                   "HOST:PORT to listen on; port 0 picks a free one (printed). Wildcards (0.0.0.0, ::) are "
                   "refused: name an address. Repeatable: one independent server (its own --replicas, cache and "
                   "accounting) per address, as the workers behind a router")
      ->capture_default_str();
  serve.add_option("--model", c.model, "The one model name served; others get 404 model_not_found")
      ->capture_default_str();
  serve.add_option("--replicas", c.fleet.replicas, "Replicas behind the router")->capture_default_str();
  serve.add_option("--policy", f->policy,
                   "Routing: round_robin, random, least_loaded, consistent_hash, cache_aware, precise, power_of_two")
      ->capture_default_str();
  serve.add_option("--cache-blocks", c.fleet.cache_blocks, "Prefix-cache blocks per replica (0 = no cache)")
      ->capture_default_str();
  serve.add_option("--block-tokens", c.fleet.block_tokens, "Tokens per cache block (the tokenizer's block size)")
      ->capture_default_str();
  serve.add_option("--prefill-tokens-per-s", c.fleet.timing.prefill_tokens_per_s, "Uncached prompt tokens per second")
      ->capture_default_str();
  serve.add_option("--decode-tokens-per-s", c.fleet.timing.decode_tokens_per_s, "Decode tokens per second, one sequence")
      ->capture_default_str();
  serve.add_option("--batch-slowdown", c.fleet.timing.batch_slowdown, "Decode slowdown per extra sequence in the batch")
      ->capture_default_str();
  serve.add_option("--max-concurrent", c.fleet.timing.max_concurrent, "Sequences per replica at once; more queue")
      ->capture_default_str();
  serve.add_option("--cache-threshold", c.fleet.cache_threshold, "cache_aware: route by match when ratio > this (the routers' default)")
      ->capture_default_str();
  serve.add_option("--balance-abs-threshold", c.fleet.balance_abs_threshold, "cache_aware: imbalance gap (running)")
      ->capture_default_str();
  serve.add_option("--balance-rel-threshold", c.fleet.balance_rel_threshold, "cache_aware: imbalance ratio")
      ->capture_default_str();
  serve.add_option("--seed", c.seed, "Seed of the fault draws and of the random policy")->capture_default_str();
  serve.add_option("--cache-fields", f->cache_fields,
                   "Usage cache fields: openai (prompt_tokens_details.cached_tokens), anthropic "
                   "(+cache_read/creation_input_tokens), deepseek (+prompt_cache_hit/miss_tokens), all, or none (as "
                   "vLLM without --enable-prompt-tokens-details: /metrics still counts the hits)")
      ->capture_default_str();
  serve.add_option("--time-scale", c.time_scale,
                   "Wall seconds per model second: 1 real time, 0.01 100x faster, 0 no pacing")
      ->capture_default_str();
  serve.add_option("--default-max-tokens", c.default_max_tokens, "Completion tokens when a request names none")
      ->capture_default_str();
  serve.add_option("--max-body-bytes", c.max_body_bytes, "Larger request bodies get 413")->capture_default_str();
  serve.add_option("--threads", c.threads, "Connection threads (a stream holds one while it waits for its tokens)")
      ->capture_default_str();
  serve.add_option("--fault-429-rate", c.faults.rate_429, "Share of completion requests answered 429 (Retry-After: 0)")
      ->capture_default_str();
  serve.add_option("--fault-5xx-rate", c.faults.rate_5xx, "Share of completion requests answered 500 server_error")
      ->capture_default_str();
  serve.add_option("--fault-drop-stream-rate", c.faults.drop_stream_rate,
                   "Share of streams whose connection is closed before a random content token")
      ->capture_default_str();
  serve.add_option("--stream-interval", c.stream_interval,
                   "Tokens per write after the first (vLLM's --stream-interval); each is still its own SSE event")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  serve.add_option("--api-key-file", f->api_key_file,
                   "Require Authorization: Bearer KEY on /v1/*, KEY being this file's content (trimmed)");
  serve.add_option("--api-key-env", f->api_key_env, "The same, with KEY from this environment variable");
  serve.add_option("--fault-slow-first-token-ms", f->slow_first_token_ms, "Wall milliseconds added to every first token")
      ->capture_default_str();
  return [f] {
    return run_serve(*f);
  };
}

}  // namespace cmax::app
