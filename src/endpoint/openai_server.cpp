// OpenAiServer: cpp-httplib adapter. Routing is an explicit table over one catch-all handler per
// method, so a known path with the wrong method is a 405 and an unknown path a 404, both with
// OpenAI's error body.

#include "endpoint/openai_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <functional>
#include <system_error>
#include <atomic>
#include <thread>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "endpoint/anthropic_protocol.h"
#include "endpoint/openai_tokenize.h"
#include "endpoint/prefix_cache.h"
#include "endpoint/worker_api.h"

#ifndef CMAX_VERSION
#define CMAX_VERSION "0.0.0"
#endif

namespace cmax::endpoint {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
// Above cpp-httplib's compiled-in backlog of 5, which makes a burst of connects wait for SYN
// retransmits (1 s, 3 s); the kernel caps it at net.core.somaxconn.
constexpr int kListenBacklog = 4096;

// The connection threads (a stream holds one while it waits for its tokens). cpp-httplib's own
// ThreadPool terminates the process when the system refuses a thread (std::thread throws, and the
// pool's half-built vector of joinable threads is destroyed); this one keeps the threads it got
// and says how many, so a lower thread limit (ulimit -u, a container's pids.max) costs capacity,
// not the server.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(std::size_t wanted) {
    threads_.reserve(wanted);
    try {
      while (threads_.size() < wanted) threads_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      fmt::print(stderr,
                 "cmax endpoint serve: started {} of {} connection threads ({}); at most {} requests run at once. "
                 "Lower --threads, or raise the limit on threads (ulimit -u, the container's pids.max)\n",
                 threads_.size(), wanted, e.what(), threads_.size());
    }
    if (threads_.empty())
      fmt::print(stderr, "cmax endpoint serve: no connection thread could be started; serving one connection at a "
                 "time on the listening thread\n");
  }
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    if (threads_.empty()) return fn();
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_ && jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
};

struct ReplicaStats {
  std::uint64_t requests = 0, prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

struct Stats {
  std::uint64_t requests = 0;  // admitted by the fleet
  std::uint64_t completed = 0, disconnected = 0, dropped = 0;
  std::uint64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::uint64_t fault_429 = 0, fault_5xx = 0, fault_drop = 0;
  std::map<int, std::uint64_t> errors;  // by HTTP status
  std::vector<ReplicaStats> replicas;
};

// One line of /cmax/requests. Times are CLOCK_MONOTONIC nanoseconds (std::chrono::steady_clock
// on Linux), comparable with any other process's on this host; 0 = never.
struct LogEntry {
  std::string id;
  Api api = Api::kChat;
  bool stream = false;
  int status = 200;
  std::string_view outcome;  // completed, dropped, disconnected, 429, 5xx
  std::int64_t received_ns = 0, first_token_ns = 0, end_ns = 0;
  std::uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0, max_tokens = 0;
  int replica = -1;
};

std::int64_t mono_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

enum class Route {
  kModels, kModel, kChat, kCompletions, kMessages, kStats, kRequests, kHealth,
  // What a router or a scraper asks an engine (endpoint/worker_api.h).
  kServerInfo, kModelInfo, kGetLoad, kLoads, kMetrics, kFlushCache
};

struct RouteEntry {
  std::string_view method;
  Route route;
  std::string_view also = {};  ///< a second method the route takes (SGLang's /flush_cache: GET too)
};

// Which route a path names, and the method it takes; nullopt for an unknown path.
std::optional<RouteEntry> route_of(std::string_view path) {
  if (path == "/v1/models") return RouteEntry{"GET", Route::kModels};
  if (path.starts_with("/v1/models/") && path.size() > 11) return RouteEntry{"GET", Route::kModel};
  if (path == "/v1/chat/completions") return RouteEntry{"POST", Route::kChat};
  if (path == "/v1/completions") return RouteEntry{"POST", Route::kCompletions};
  if (path == "/v1/messages") return RouteEntry{"POST", Route::kMessages};
  if (path == "/cmax/stats") return RouteEntry{"GET", Route::kStats};
  if (path == "/cmax/requests") return RouteEntry{"GET", Route::kRequests};
  if (path == "/health") return RouteEntry{"GET", Route::kHealth};
  if (path == "/server_info" || path == "/get_server_info") return RouteEntry{"GET", Route::kServerInfo};
  if (path == "/model_info" || path == "/get_model_info") return RouteEntry{"GET", Route::kModelInfo};
  if (path == "/get_load") return RouteEntry{"GET", Route::kGetLoad};
  if (path == "/v1/loads") return RouteEntry{"GET", Route::kLoads};
  if (path == "/metrics") return RouteEntry{"GET", Route::kMetrics};
  // SGLang serves it on GET and POST; routers fan a POST out.
  if (path == "/flush_cache") return RouteEntry{"POST", Route::kFlushCache, "GET"};
  return std::nullopt;
}

}  // namespace

Result<std::pair<std::string, int>> parse_listen(std::string_view listen) {
  std::string_view host, port;
  if (listen.starts_with('[')) {
    auto close = listen.find(']');
    if (close == std::string_view::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
      return fail("--listen {}: expected [ADDRESS]:PORT for IPv6, e.g. [::1]:8000", listen);
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string_view::npos)
      return fail("--listen {}: expected HOST:PORT, e.g. 127.0.0.1:8000 (port 0 picks a free one)", listen);
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  int p = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535)
    return fail("--listen {}: port must be 0..65535", listen);
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*")
    return fail("--listen {}: refusing to listen on every interface; name one address (127.0.0.1 for "
                "this machine only, or the interface address to serve other hosts)",
                listen);
  return std::pair<std::string, int>{std::string(host), p};
}

bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

struct OpenAiServer::Impl {
  explicit Impl(ServeConfig c) : config(std::move(c)), fleet(config.fleet), rng(config.seed) {
    stats.replicas.resize(static_cast<std::size_t>(std::max(config.fleet.replicas, 1)));
  }

  ServeConfig config;
  httplib::Server svr;
  int listen_fd = -1;
  int bound_port = 0;
  const Clock::time_point start = Clock::now();
  const std::int64_t created = static_cast<std::int64_t>(std::time(nullptr));

  mutable std::mutex mu;  // guards fleet, rng, stats, next_id
  Fleet fleet;
  std::mt19937_64 rng;
  Stats stats;
  std::deque<LogEntry> log;
  std::uint64_t next_id = 1;

  void log_entry(LogEntry e) {  // mu held
    if (config.request_log_max == 0) return;
    if (log.size() >= config.request_log_max) log.pop_front();
    log.push_back(std::move(e));
  }

  // Constant-time comparison of the key, so its bytes cannot be found by timing: as a bearer
  // token (OpenAI) or in x-api-key (Anthropic), either on any route.
  bool authorized(const httplib::Request& req) const {
    if (config.api_key.empty()) return true;
    auto same = [&](std::string_view given) {
      if (given.size() != config.api_key.size()) return false;
      unsigned char diff = 0;
      for (std::size_t i = 0; i < config.api_key.size(); ++i)
        diff |= static_cast<unsigned char>(given[i] ^ config.api_key[i]);
      return diff == 0;
    };
    const auto h = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (std::string_view(h).starts_with(kBearer) && same(std::string_view(h).substr(kBearer.size()))) return true;
    return req.has_header("x-api-key") && same(req.get_header_value("x-api-key"));
  }

  std::atomic<bool> stopping{false};

  // The model's clock: wall seconds since start, stretched by the time scale.
  double model_now() const {
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    return config.time_scale > 0 ? wall / config.time_scale : wall;
  }

  // Sleeps until `deadline` or stop(); false when stopping.
  // Each stream's thread sleeps on its own (a shared condition variable would make every token's
  // wake-up contend for one mutex: 60,000 a second at 1,000 streams); stop() is seen within 50 ms.
  bool sleep_until(Clock::time_point deadline) {
    for (;;) {
      if (stopping.load(std::memory_order_relaxed)) return false;
      const auto now = Clock::now();
      if (now >= deadline) return true;
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(50)));
    }
  }

  // The error in the shape of the API the request came in on.
  static std::string error_body_for(Api api, const ApiError& e) {
    return api == Api::kMessages ? messages_error_body(e) : error_body(e);
  }
  static Api api_of_path(std::string_view path) { return path == "/v1/messages" ? Api::kMessages : Api::kChat; }

  void send_error(httplib::Response& res, const ApiError& e, Api api = Api::kChat) {
    res.status = e.status;
    res.set_content(error_body_for(api, e), "application/json");
    std::lock_guard lock(mu);
    ++stats.errors[e.status];
  }

  void install_routes() {
    auto dispatch = [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); };
    svr.Get(".*", dispatch);
    svr.Post(".*", dispatch);
    svr.Put(".*", dispatch);
    svr.Patch(".*", dispatch);
    svr.Delete(".*", dispatch);
    svr.Options(".*", dispatch);
    // httplib's own errors (413 over --max-body-bytes, 400 unparsable request line) get
    // OpenAI-shaped bodies; responses a handler already wrote are left alone.
    svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
      ApiError e{res.status, "invalid_request_error", fmt::format("HTTP {} from cmax endpoint serve", res.status), "", ""};
      if (res.status == 413) {
        e.message = fmt::format("request body larger than {} bytes (the server's --max-body-bytes)",
                                config.max_body_bytes);
        e.code = "request_too_large";
      }
      res.set_content(error_body_for(api_of_path(req.path), e), "application/json");
      std::lock_guard lock(mu);
      ++stats.errors[res.status];
      return httplib::Server::HandlerResponse::Handled;
    }));
    svr.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      send_error(res, ApiError{500, "server_error", "cmax endpoint serve: " + what, "", "internal_error"},
                 api_of_path(req.path));
    });
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    auto r = route_of(req.path);
    if (!r) {
      send_error(res, ApiError{404, "invalid_request_error",
                               fmt::format("Invalid URL ({} {})", req.method, req.path), "", "unknown_url"});
      return;
    }
    if (req.method != r->method && req.method != r->also) {
      res.set_header("Allow", r->also.empty() ? std::string(r->method) : fmt::format("{}, {}", r->method, r->also));
      send_error(res, ApiError{405, "invalid_request_error",
                               fmt::format("{} {} is not allowed; use {}", req.method, req.path, r->method),
                               "", "method_not_allowed"});
      return;
    }
    if (req.path.starts_with("/v1/") && !authorized(req)) {
      send_error(res, ApiError{401, "invalid_request_error",
                               "Incorrect API key provided. cmax endpoint serve was started with --api-key-file or "
                               "--api-key-env; send it as Authorization: Bearer KEY (or x-api-key: KEY).",
                               "", "invalid_api_key"},
                 api_of_path(req.path));
      return;
    }
    switch (r->route) {
      case Route::kModels:
        res.set_content(models_body(config.model, created), "application/json");
        return;
      case Route::kModel: {
        const auto id = req.path.substr(11);
        if (id != config.model) {
          send_error(res, model_not_found(id));
          return;
        }
        res.set_content(json{{"id", config.model}, {"object", "model"}, {"created", created}, {"owned_by", "cmax"}}.dump(),
                        "application/json");
        return;
      }
      case Route::kStats:
        res.set_content(stats_json(), "application/json");
        return;
      case Route::kRequests:
        res.set_content(requests_jsonl(), "application/x-ndjson");
        return;
      case Route::kHealth:
        res.set_content("{\"status\":\"ok\"}", "application/json");
        return;
      case Route::kServerInfo:
        res.set_content(server_info_json(snapshot()), "application/json");
        return;
      case Route::kModelInfo:
        res.set_content(model_info_json(snapshot()), "application/json");
        return;
      case Route::kGetLoad:
        res.set_content(get_load_json(snapshot()), "application/json");
        return;
      case Route::kLoads:
        res.set_content(v1_loads_json(snapshot(), core::format_utc(core::SystemClock().now())), "application/json");
        return;
      case Route::kMetrics:
        res.set_content(metrics_text(snapshot()), "text/plain; version=0.0.4; charset=utf-8");
        return;
      case Route::kFlushCache:
        flush_cache(res);
        return;
      case Route::kChat:
        complete(Api::kChat, req, res);
        return;
      case Route::kCompletions:
        complete(Api::kCompletions, req, res);
        return;
      case Route::kMessages:
        complete(Api::kMessages, req, res);
        return;
    }
  }

  ApiError model_not_found(std::string_view model) const {
    return ApiError{404, "invalid_request_error",
                    fmt::format("The model `{}` does not exist or you do not have access to it. This server "
                                "serves `{}`.",
                                model, config.model),
                    "model", "model_not_found"};
  }

  // The plan for one admitted request: when each token goes out, and what it says.
  struct Plan {
    ResponseMeta meta;
    Admission admission;
    Usage usage;
    std::uint64_t answer_seed = 0;
    std::uint32_t output_tokens = 0;
    std::string finish_reason;
    Clock::time_point first_token;  // wall
    Clock::time_point arrival;      // the handler started (the request was read)
    Clock::time_point first_write;  // the first content token was written (stream) or the body set
    bool stream = false;
    std::chrono::duration<double> per_token{0};  // wall
    std::optional<std::uint32_t> drop_before;  // fault: close before content token i

    // When content token i is due (wall).
    Clock::time_point due(std::uint32_t i) const {
      return first_token + std::chrono::duration_cast<Clock::duration>(per_token * i);
    }
  };

  void complete(Api api, const httplib::Request& req, httplib::Response& res) {
    const auto arrival = Clock::now();
    auto parsed = api == Api::kMessages ? parse_messages_request(req.body)
                                        : parse_request(api, req.body, config.default_max_tokens);
    if (auto* e = std::get_if<ApiError>(&parsed)) {
      send_error(res, *e, api);
      return;
    }
    auto& creq = std::get<CompletionRequest>(parsed);
    if (creq.model != config.model) {
      send_error(res, model_not_found(creq.model), api);
      return;
    }
    const auto tokens = creq.token_ids.empty() ? tokenize(creq.prompt) : creq.token_ids;
    const auto blocks = block_hashes(tokens, config.fleet.block_tokens);
    const auto prompt_tokens = static_cast<std::uint32_t>(std::min<std::size_t>(tokens.size(), UINT32_MAX));

    auto plan = std::make_shared<Plan>();
    plan->answer_seed = sequence_hash(tokens);
    const auto natural = natural_answer_tokens(plan->answer_seed);
    plan->output_tokens = std::min(creq.max_tokens, natural);
    plan->finish_reason = creq.max_tokens >= natural ? "stop" : "length";
    if (creq.ignore_eos) {  // vLLM's extension: max_tokens exactly
      plan->output_tokens = creq.max_tokens;
      plan->finish_reason = "length";
    }
    plan->arrival = arrival;
    plan->stream = creq.stream;
    if (!admit(api, creq, blocks, prompt_tokens, *plan, res)) return;
    const auto& a = plan->admission;
    plan->usage = Usage{prompt_tokens, plan->output_tokens, a.cached_tokens,
                        static_cast<std::uint32_t>(std::min<std::size_t>(
                            (a.prompt_blocks - std::min(a.cached_blocks, a.prompt_blocks)) *
                                static_cast<std::size_t>(config.fleet.block_tokens),
                            prompt_tokens - std::min(a.cached_tokens, prompt_tokens)))};
    plan->meta.api = api;
    plan->meta.created = static_cast<std::int64_t>(std::time(nullptr));
    plan->meta.model = config.model;
    plan->meta.cache_fields = config.cache_fields;
    plan->meta.include_usage = creq.include_usage;
    if (creq.stream)
      stream(plan, res);
    else
      answer_whole(*plan, res);
  }

  // An injected 429 or 5xx (--fault-429-rate, --fault-5xx-rate) answers the request: true. Under mu.
  bool answer_injected_error(Api api, const CompletionRequest& creq, Clock::time_point arrival, httplib::Response& res) {
    std::uniform_real_distribution<double> u01(0, 1);
    const auto& f = config.faults;
    if (f.rate_429 > 0 && u01(rng) < f.rate_429) {
      ++stats.fault_429;
      res.set_header("Retry-After", "0");
      res.status = 429;
      res.set_content(error_body_for(api, {429, "requests",
                                           "Rate limit reached (injected by cmax endpoint serve --fault-429-rate)", "",
                                           "rate_limit_exceeded"}),
                      "application/json");
      ++stats.errors[429];
      log_entry({"", api, creq.stream, 429, "429", mono_ns(arrival), 0, mono_ns(Clock::now()), 0, 0, 0,
                 creq.max_tokens, -1});
      return true;
    }
    if (f.rate_5xx > 0 && u01(rng) < f.rate_5xx) {
      ++stats.fault_5xx;
      res.status = 500;
      res.set_content(error_body_for(api, {500, "server_error",
                                           "The server had an error while processing your request (injected by cmax "
                                           "endpoint serve --fault-5xx-rate)",
                                           "", "internal_error"}),
                      "application/json");
      ++stats.errors[500];
      log_entry({"", api, creq.stream, 500, "5xx", mono_ns(arrival), 0, mono_ns(Clock::now()), 0, 0, 0,
                 creq.max_tokens, -1});
      return true;
    }
    return false;
  }

  // Admits the request into the model: the wall times of its first and each next token, a dropped
  // stream's cut (--drop-stream-rate), its id, and the stats. False: an injected error answered it.
  bool admit(Api api, const CompletionRequest& creq, std::span<const std::uint64_t> blocks, std::uint32_t prompt_tokens,
             Plan& plan, httplib::Response& res) {
    std::lock_guard lock(mu);
    if (answer_injected_error(api, creq, plan.arrival, res)) return false;
    const auto& f = config.faults;
    std::uniform_real_distribution<double> u01(0, 1);
    if (creq.stream && f.drop_stream_rate > 0 && u01(rng) < f.drop_stream_rate) {
      plan.drop_before = static_cast<std::uint32_t>(rng() % std::max<std::uint32_t>(plan.output_tokens, 1));
      ++stats.fault_drop;
    }
    const double now = model_now();
    plan.admission = fleet.admit(blocks, prompt_tokens, plan.output_tokens, creq.user, now);
    const double scale = config.time_scale;
    plan.first_token = plan.arrival + f.slow_first_token +
                       std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           scale > 0 ? std::max(0.0, plan.admission.first_token_s - now) * scale : 0.0));
    plan.per_token = std::chrono::duration<double>(scale > 0 ? plan.admission.per_token_s * scale : 0.0);
    plan.meta.id = api == Api::kMessages
                       ? fmt::format("msg_cmax{:08x}", next_id++)
                       : fmt::format("{}-cmax{:08x}", api == Api::kChat ? "chatcmpl" : "cmpl", next_id++);
    ++stats.requests;
    stats.prompt_tokens += prompt_tokens;
    stats.cached_tokens += plan.admission.cached_tokens;
    auto& rs = replica_stats(plan.admission.replica);
    ++rs.requests;
    rs.prompt_tokens += prompt_tokens;
    rs.cached_tokens += plan.admission.cached_tokens;
    return true;
  }

  // Not streamed: the whole answer once its last token is due.
  void answer_whole(Plan& plan, httplib::Response& res) {
    sleep_until(plan.due(plan.output_tokens - 1));
    std::string text;
    for (std::uint32_t i = 0; i < plan.output_tokens; ++i) text += answer_token(plan.answer_seed, i);
    plan.first_write = Clock::now();
    res.set_content(plan.meta.api == Api::kMessages ? message_body(plan.meta, text, plan.finish_reason, plan.usage)
                                                    : completion_body(plan.meta, text, plan.finish_reason, plan.usage),
                    "application/json");
    end(plan, plan.output_tokens, /*completed=*/true, /*dropped=*/false);
  }

  // The stream: the role chunk at once (chat), content tokens on the model's schedule, then the
  // usage chunk and [DONE]. A failed write is a client gone: stop, and the releaser accounts.
  void stream(const std::shared_ptr<Plan>& plan, httplib::Response& res) {
    auto sent = std::make_shared<std::uint32_t>(0);
    auto outcome = std::make_shared<int>(0);  // 0 disconnected/stopped, 2 dropped by fault, 3 completed and accounted
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, plan, sent, outcome](std::size_t, httplib::DataSink& sink) {
          return write_stream(*plan, *sent, *outcome, sink);
        },
        [this, plan, sent, outcome](bool) {
          if (*outcome != 3) end(*plan, *sent, /*completed=*/false, *outcome == 2);
        });
  }

  // Every token due by `now` from token i, as one write's events (one token per write when on
  // time; a server behind on its schedule flushes what it has). Stops before a fault's cut: *drop.
  std::string due_events(const Plan& plan, std::uint32_t i, Clock::time_point now, std::uint32_t* n, bool* drop) const {
    const bool messages = plan.meta.api == Api::kMessages;
    std::string batch;
    *n = 0;
    *drop = false;
    do {
      if (plan.drop_before && *plan.drop_before == i + *n) {
        *drop = true;
        break;
      }
      const bool last = i + *n + 1 == plan.output_tokens;
      if (messages) {
        batch += messages_text_event(answer_token(plan.answer_seed, i + *n));
      } else {
        batch += "data: ";
        batch += content_chunk(plan.meta, answer_token(plan.answer_seed, i + *n), last ? plan.finish_reason : "");
        batch += "\n\n";
      }
      ++*n;
    } while (i + *n < plan.output_tokens && plan.due(i + *n) <= now);
    return batch;
  }

  // The stream's writer (httplib calls it once): false when the client is gone or a fault cuts it.
  bool write_stream(Plan& plan, std::uint32_t& sent, int& outcome, httplib::DataSink& sink) {
    auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    const bool messages = plan.meta.api == Api::kMessages;
    if (plan.meta.api == Api::kChat && !write(sse_event(chat_role_chunk(plan.meta)))) return false;
    if (messages && !write(messages_stream_head(plan.meta, plan.usage))) return false;
    for (std::uint32_t i = 0; i < plan.output_tokens;) {
      // vLLM's --stream-interval: the first token alone, then `interval` tokens a write.
      const std::uint32_t interval = std::max<std::uint32_t>(config.stream_interval, 1);
      const std::uint32_t wait_for = i == 0 ? 0 : std::min(i + interval - 1, plan.output_tokens - 1);
      if (!sleep_until(plan.due(wait_for))) return false;
      std::uint32_t n = 0;
      bool drop = false;
      const std::string batch = due_events(plan, i, Clock::now(), &n, &drop);
      if (n > 0) {
        if (!write(batch)) return false;
        if (i == 0) plan.first_write = Clock::now();
        sent += n;
        i += n;
      }
      if (drop) {
        outcome = 2;
        return false;  // httplib closes the connection without the terminating chunk
      }
    }
    // Every token is out: account the request now, before the usage chunk and [DONE] reach the
    // client. httplib runs the releaser only after the response is finished on the socket, so a
    // client that reads [DONE] and then asks /cmax/stats must not beat the accounting.
    std::string tail;
    if (messages) {
      tail = messages_stream_tail(plan.meta, plan.finish_reason, plan.usage);
    } else {
      if (plan.meta.include_usage) tail = sse_event(usage_chunk(plan.meta, plan.usage));
      tail += kSseDone;
    }
    end(plan, sent, /*completed=*/true, /*dropped=*/false);
    outcome = 3;  // accounted
    if (!write(tail)) return false;
    sink.done();
    return true;
  }

  ReplicaStats& replica_stats(int replica) {
    const auto i = static_cast<std::size_t>(std::max(replica, 0));
    if (i >= stats.replicas.size()) stats.replicas.resize(i + 1);
    return stats.replicas[i];
  }

  // Once per admitted request: its decode slot frees and the tokens it delivered are counted.
  void end(const Plan& plan, std::uint32_t delivered, bool completed, bool dropped) {
    std::lock_guard lock(mu);
    fleet.finish(plan.admission.replica, model_now());
    stats.completion_tokens += delivered;
    replica_stats(plan.admission.replica).completion_tokens += delivered;
    if (completed) ++stats.completed;
    else if (dropped) ++stats.dropped;
    else ++stats.disconnected;
    const bool wrote = plan.first_write != Clock::time_point{};
    log_entry({plan.meta.id, plan.meta.api, plan.stream, 200,
               completed ? "completed" : dropped ? "dropped" : "disconnected", mono_ns(plan.arrival),
               wrote ? mono_ns(plan.first_write) : 0, mono_ns(Clock::now()), plan.usage.prompt_tokens,
               plan.usage.cached_tokens, delivered, plan.output_tokens, plan.admission.replica});
  }

  std::string requests_jsonl() const {
    std::lock_guard lock(mu);
    std::string out;
    out.reserve(log.size() * 300);
    for (const auto& e : log) {
      json j = {{"id", e.id},
                {"api", api_name(e.api)},
                {"stream", e.stream},
                {"status", e.status},
                {"outcome", e.outcome},
                {"received_ns", e.received_ns},
                {"first_token_ns", e.first_token_ns ? json(e.first_token_ns) : json(nullptr)},
                {"end_ns", e.end_ns},
                {"ttft_ms", e.first_token_ns ? json(double(e.first_token_ns - e.received_ns) / 1e6) : json(nullptr)},
                {"prompt_tokens", e.prompt_tokens},
                {"cached_tokens", e.cached_tokens},
                {"completion_tokens", e.completion_tokens},
                {"replica", e.replica}};
      out += j.dump();
      out += '\n';
    }
    return out;
  }

  // The fleet and counters now, for endpoint/worker_api.h.
  WorkerSnapshot snapshot() const {
    std::lock_guard lock(mu);
    WorkerSnapshot w;
    w.model = config.model;
    w.block_tokens = config.fleet.block_tokens;
    w.max_concurrent = config.fleet.timing.max_concurrent;
    const auto running = fleet.running();
    for (std::size_t i = 0; i < running.size(); ++i) {
      const auto& c = fleet.cache(static_cast<int>(i));
      w.ranks.push_back({running[i], c.size(), c.capacity()});
    }
    w.requests = stats.requests;
    w.prompt_tokens = stats.prompt_tokens;
    w.cached_tokens = stats.cached_tokens;
    w.completion_tokens = stats.completion_tokens;
    w.version = CMAX_VERSION;
    return w;
  }

  // SGLang's /flush_cache: refused while requests run (their blocks are in use), else every
  // replica's prefix cache is emptied. Its answer texts are SGLang's.
  void flush_cache(httplib::Response& res) {
    std::lock_guard lock(mu);
    constexpr std::string_view kNote =
        "Please check backend logs for more details. (When there are running or waiting requests, the operation "
        "will not be performed.)\n";
    for (int r : fleet.running())
      if (r > 0) {
        res.status = 400;
        res.set_content(fmt::format("Cache not flushed. {}", kNote), "text/plain");
        return;
      }
    fleet.flush_caches();
    res.set_content(fmt::format("Cache flushed.\n{}", kNote), "text/plain");
  }

  std::string stats_json() const {
    std::lock_guard lock(mu);
    json j = {{"schema", "cmax.endpoint.serve.stats/1"},
              {"model", config.model},
              {"block_tokens", config.fleet.block_tokens},
              {"requests", stats.requests},
              {"completed", stats.completed},
              {"disconnected", stats.disconnected},
              {"dropped", stats.dropped},
              {"prompt_tokens", stats.prompt_tokens},
              {"cached_tokens", stats.cached_tokens},
              {"completion_tokens", stats.completion_tokens},
              {"faults", {{"429", stats.fault_429}, {"5xx", stats.fault_5xx}, {"drop_stream", stats.fault_drop}}}};
    json errors = json::object();
    for (const auto& [status, n] : stats.errors) errors[std::to_string(status)] = n;
    j["errors"] = errors;
    const auto running = fleet.running();
    json replicas = json::array();
    for (std::size_t i = 0; i < stats.replicas.size(); ++i) {
      const auto& r = stats.replicas[i];
      replicas.push_back({{"replica", i},
                          {"requests", r.requests},
                          {"prompt_tokens", r.prompt_tokens},
                          {"cached_tokens", r.cached_tokens},
                          {"completion_tokens", r.completion_tokens},
                          {"running", i < running.size() ? running[i] : 0}});
    }
    j["replicas"] = replicas;
    return j.dump();
  }
};

OpenAiServer::OpenAiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OpenAiServer::~OpenAiServer() { stop(); }

Result<std::unique_ptr<OpenAiServer>> OpenAiServer::bind(ServeConfig config) {
  if (config.fleet.block_tokens <= 0) return fail("--block-tokens must be > 0");
  if (config.fleet.replicas <= 0) return fail("--replicas must be > 0");
  auto impl = std::make_unique<Impl>(std::move(config));
  Impl* p = impl.get();
  const int threads = std::max(p->config.threads, 1);
  p->svr.new_task_queue = [threads] { return new ConnectionThreads(static_cast<std::size_t>(threads)); };
  p->svr.set_payload_max_length(p->config.max_body_bytes);
  p->svr.set_keep_alive_max_count(1000);
  p->svr.set_tcp_nodelay(true);  // one small write per token: Nagle would batch them
  p->svr.set_socket_options([p](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    p->listen_fd = sock;
  });
  p->install_routes();
  const auto& host = p->config.host;
  int port = p->config.port;
  if (port == 0) {
    port = p->svr.bind_to_any_port(host);
    if (port < 0) return fail("listen on {}:0: bind failed; check that {} is an address of this host", host, host);
  } else if (!p->svr.bind_to_port(host, port)) {
    return fail("listen on {}:{}: bind failed (port in use, or {} not an address of this host); pick another "
                "--listen, or port 0 for a free one",
                host, port, host);
  }
  if (p->listen_fd >= 0) ::listen(p->listen_fd, kListenBacklog);
  p->bound_port = port;
  return std::unique_ptr<OpenAiServer>(new OpenAiServer(std::move(impl)));
}

int OpenAiServer::port() const { return impl_->bound_port; }

bool OpenAiServer::run() { return impl_->svr.listen_after_bind(); }

void OpenAiServer::stop() {
  impl_->stopping = true;
  impl_->svr.stop();
}

std::string OpenAiServer::stats_json() const { return impl_->stats_json(); }
std::string OpenAiServer::requests_jsonl() const { return impl_->requests_jsonl(); }

}  // namespace cmax::endpoint
