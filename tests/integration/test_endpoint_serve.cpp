// cmax endpoint serve end to end: the real binary on 127.0.0.1:0, spoken to over HTTP with
// cpp-httplib and (for the client that walks away mid-stream) a raw socket. Checks the OpenAI
// shapes, that a shared prefix is served from the fleet's cache, the errors, that the server
// survives a client gone mid-stream, and that /cmax/stats adds up to the usage the client read.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "integration/endpoint_serve_fixture.h"

namespace {

using json = nlohmann::json;
using cmax::test::ServeProcess;
using namespace std::chrono_literals;

std::string chat_body(const std::string& system, const std::string& user, bool stream = false, int max_tokens = 8) {
  json j = {{"model", "cmax-sim"},
            {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
            {"max_tokens", max_tokens}};
  if (stream) {
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
  }
  return j.dump();
}

std::string long_system_prompt() {
  std::string s;
  for (int i = 0; i < 40; ++i) s += fmt::format("Rule {}: answer about GPU clusters briefly and precisely. ", i);
  return s;
}

// The "data: ..." payloads of an SSE body, in order.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    auto end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end + 2;
  }
  return out;
}

struct Totals {
  std::uint64_t requests = 0, prompt = 0, cached = 0, completion = 0;
  void add(const json& usage) {
    ++requests;
    prompt += usage["prompt_tokens"].get<std::uint64_t>();
    cached += usage["prompt_tokens_details"]["cached_tokens"].get<std::uint64_t>();
    completion += usage["completion_tokens"].get<std::uint64_t>();
  }
};

json stats(httplib::Client& cli) {
  auto res = cli.Get("/cmax/stats");
  EXPECT_TRUE(res && res->status == 200);
  return res ? json::parse(res->body) : json::object();
}

TEST(EndpointServe, SpeaksOpenAiCachesSharedPrefixesAndAccountsForEveryToken) {
  ServeProcess serve({"--time-scale", "0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  httplib::Client cli("127.0.0.1", serve.port());
  cli.set_read_timeout(10, 0);
  Totals read;

  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  auto mj = json::parse(models->body);
  EXPECT_EQ(mj["object"], "list");
  EXPECT_EQ(mj["data"][0]["id"], "cmax-sim");
  EXPECT_EQ(mj["data"][0]["owned_by"], "cmax");

  const auto system = long_system_prompt();
  auto first = cli.Post("/v1/chat/completions", chat_body(system, "How many GPUs per node?"), "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  auto fj = json::parse(first->body);
  EXPECT_EQ(fj["object"], "chat.completion");
  EXPECT_EQ(fj["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(fj["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(fj["usage"]["completion_tokens"], 8);
  EXPECT_GT(fj["usage"]["prompt_tokens"].get<int>(), 500);
  EXPECT_EQ(fj["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  read.add(fj["usage"]);

  auto second = cli.Post("/v1/chat/completions", chat_body(system, "And how many NICs?"), "application/json");
  ASSERT_TRUE(second);
  ASSERT_EQ(second->status, 200) << second->body;
  auto sj = json::parse(second->body);
  const int cached = sj["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  EXPECT_GT(cached, 400) << "the shared system prompt should be served from the prefix cache";
  EXPECT_LT(cached, sj["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(cached % 16, 0) << "whole 16-token blocks";
  read.add(sj["usage"]);

  // Streaming with include_usage: role chunk, content chunks, finish_reason on the last, the
  // usage chunk with empty choices, then [DONE].
  auto streamed = cli.Post("/v1/chat/completions", chat_body(system, "Stream it.", true, 5), "application/json");
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
  auto events = sse_payloads(streamed->body);
  ASSERT_EQ(events.size(), 1u + 5u + 1u + 1u) << streamed->body;
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  for (int i = 1; i <= 5; ++i) {
    auto c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_TRUE(c["choices"][0]["delta"]["content"].is_string());
    if (i < 5) EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
    else EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  }
  auto usage_chunk = json::parse(events[6]);
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 5);
  EXPECT_GT(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(events[7], "[DONE]");
  read.add(usage_chunk["usage"]);

  // Completions, streaming without usage, then a long max_tokens that ends with "stop".
  auto comp = cli.Post("/v1/completions", R"({"model":"cmax-sim","prompt":"Once upon a time","max_tokens":1000})",
                       "application/json");
  ASSERT_TRUE(comp);
  ASSERT_EQ(comp->status, 200) << comp->body;
  auto cj = json::parse(comp->body);
  EXPECT_EQ(cj["object"], "text_completion");
  EXPECT_EQ(cj["choices"][0]["finish_reason"], "stop");
  EXPECT_LE(cj["usage"]["completion_tokens"].get<int>(), 128);
  read.add(cj["usage"]);
  auto cs = cli.Post("/v1/completions", R"({"model":"cmax-sim","prompt":"Once upon a time","stream":true,"max_tokens":3})",
                     "application/json");
  ASSERT_TRUE(cs);
  auto cev = sse_payloads(cs->body);
  ASSERT_EQ(cev.size(), 4u) << cs->body;
  EXPECT_EQ(json::parse(cev[0])["choices"][0]["text"].get<std::string>().front(), ' ');
  EXPECT_EQ(json::parse(cev[2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(cev[3], "[DONE]");

  auto st = stats(cli);
  EXPECT_EQ(st["schema"], "cmax.endpoint.serve.stats/1");
  EXPECT_EQ(st["requests"].get<std::uint64_t>(), read.requests + 1);  // + the stream without usage
  EXPECT_EQ(st["completed"].get<std::uint64_t>(), read.requests + 1);
  // The usage-less stream's prompt is shorter than one block: it adds no cached tokens.
  EXPECT_EQ(st["cached_tokens"].get<std::uint64_t>(), read.cached);
  EXPECT_EQ(st["completion_tokens"].get<std::uint64_t>(), read.completion + 3);
  std::uint64_t per_replica = 0;
  for (const auto& r : st["replicas"]) per_replica += r["prompt_tokens"].get<std::uint64_t>();
  EXPECT_EQ(per_replica, st["prompt_tokens"].get<std::uint64_t>());
  EXPECT_GT(st["prompt_tokens"].get<std::uint64_t>(), read.prompt);  // the usage-less stream's prompt too
}

TEST(EndpointServe, AnswersErrorsAsOpenAiDoes) {
  ServeProcess serve({"--time-scale", "0", "--max-body-bytes", "4096"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  httplib::Client cli("127.0.0.1", serve.port());
  auto expect_error = [](const httplib::Result& res, int status, const std::string& code) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    auto j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << res->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    EXPECT_TRUE(j["error"].contains("param"));
    if (!code.empty()) {
      EXPECT_EQ(j["error"]["code"], code);
    }
  };
  expect_error(cli.Post("/v1/chat/completions", "{\"model\": ", "application/json"), 400, "invalid_json");
  expect_error(cli.Post("/v1/chat/completions", R"({"model":"gpt-9","messages":[{"role":"user","content":"x"}]})",
                        "application/json"),
               404, "model_not_found");
  expect_error(cli.Post("/v1/chat/completions", R"({"model":"cmax-sim"})", "application/json"), 400, "");
  expect_error(cli.Post("/v1/completions", R"({"model":"cmax-sim"})", "application/json"), 400, "");
  expect_error(cli.Post("/v1/chat/completions", std::string(8192, ' ') + "{}", "application/json"), 413,
               "request_too_large");
  expect_error(cli.Get("/v1/chat/completions"), 405, "method_not_allowed");
  expect_error(cli.Get("/v1/nothing"), 404, "unknown_url");
  auto ok = cli.Get("/v1/models");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto st = stats(cli);
  EXPECT_EQ(st["requests"], 0);
  EXPECT_EQ(st["errors"]["400"], 3);
  EXPECT_EQ(st["errors"]["404"], 2);
}

// Sends a streaming request on a raw socket, reads until the first content token, and closes.
bool walk_away_mid_stream(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  const std::string body = chat_body("short", "Tell me a long story.", true, 120);
  const std::string req = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
  ok = ok && ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
  std::string got;
  char buf[4096];
  while (ok && got.find("\"content\":\" ") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) ok = false;
    else got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ok;
}

TEST(EndpointServe, AClientGoneMidStreamNeitherCrashesNorWedgesTheServer) {
  // Real-time pacing: 120 tokens at 60 tok/s is 2 s, so the client leaves well before the end.
  ServeProcess serve({"--time-scale", "1"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  ASSERT_TRUE(walk_away_mid_stream(serve.port()));
  httplib::Client cli("127.0.0.1", serve.port());
  cli.set_read_timeout(10, 0);
  auto next = cli.Post("/v1/chat/completions", chat_body("short", "Still there?", false, 2), "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  json st;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  do {
    st = stats(cli);
    if (st["disconnected"] == 1) break;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(st["disconnected"], 1) << st.dump();
  EXPECT_EQ(st["completed"], 1);
  EXPECT_LT(st["completion_tokens"].get<int>(), 120 + 2);
  int running = 0;
  for (const auto& r : st["replicas"]) running += r["running"].get<int>();
  EXPECT_EQ(running, 0) << "the dropped stream's decode slot must be freed";
  EXPECT_TRUE(serve.running()) << serve.log();
}

TEST(EndpointServe, InjectsFaultsAndOtherProvidersCacheFields) {
  {
    ServeProcess serve({"--time-scale", "0", "--fault-429-rate", "1"});
    ASSERT_GT(serve.port(), 0) << serve.error();
    httplib::Client cli("127.0.0.1", serve.port());
    auto res = cli.Post("/v1/chat/completions", chat_body("s", "u"), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 429);
    EXPECT_EQ(json::parse(res->body)["error"]["code"], "rate_limit_exceeded");
  }
  {
    ServeProcess serve({"--time-scale", "0", "--fault-drop-stream-rate", "1"});
    ASSERT_GT(serve.port(), 0) << serve.error();
    httplib::Client cli("127.0.0.1", serve.port());
    auto res = cli.Post("/v1/chat/completions", chat_body("s", "u", true, 8), "application/json");
    // httplib reports the unterminated chunked body as a read error, or a body without [DONE].
    if (res) {
      EXPECT_EQ(res->body.find("[DONE]"), std::string::npos);
    }
    EXPECT_EQ(stats(cli)["faults"]["drop_stream"], 1);
  }
  {
    ServeProcess serve({"--time-scale", "0", "--cache-fields", "all"});
    ASSERT_GT(serve.port(), 0) << serve.error();
    httplib::Client cli("127.0.0.1", serve.port());
    const auto system = long_system_prompt();
    ASSERT_TRUE(cli.Post("/v1/chat/completions", chat_body(system, "a"), "application/json"));
    auto res = cli.Post("/v1/chat/completions", chat_body(system, "b"), "application/json");
    ASSERT_TRUE(res);
    auto u = json::parse(res->body)["usage"];
    EXPECT_EQ(u["cache_read_input_tokens"], u["prompt_tokens_details"]["cached_tokens"]);
    EXPECT_EQ(u["prompt_cache_hit_tokens"], u["prompt_tokens_details"]["cached_tokens"]);
    EXPECT_EQ(u["prompt_cache_miss_tokens"].get<int>() + u["prompt_cache_hit_tokens"].get<int>(),
              u["prompt_tokens"].get<int>());
    EXPECT_TRUE(u.contains("cache_creation_input_tokens"));
  }
}

}  // namespace

namespace {

// What a real router asks a worker before and while it routes (sglang-router, smg, vllm-router:
// /health, /server_info with its /get_server_info fallback, /model_info, /get_load, /v1/loads) and
// what a scraper reads (/metrics), from the server's real state; /flush_cache empties the cache.
TEST(EndpointServe, AnswersARoutersWorkerCallsFromItsRealStateAndFlushesItsCache) {
  ServeProcess serve({"--time-scale", "0", "--replicas", "1"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  httplib::Client cli("127.0.0.1", serve.port());
  cli.set_read_timeout(10, 0);
  for (const char* path : {"/server_info", "/get_server_info", "/model_info", "/get_model_info", "/get_load", "/v1/loads"}) {
    auto r = cli.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    EXPECT_FALSE(json::parse(r->body, nullptr, false).is_discarded()) << path;
  }
  EXPECT_EQ(json::parse(cli.Get("/server_info")->body)["served_model_name"], "cmax-sim");

  const auto system = long_system_prompt();
  int cached_sum = 0, prompt_sum = 0;
  for (const char* q : {"How many GPUs per node?", "And how many NICs?"}) {
    auto r = cli.Post("/v1/chat/completions", chat_body(system, q), "application/json");
    ASSERT_TRUE(r && r->status == 200);
    auto u = json::parse(r->body)["usage"];
    cached_sum += u["prompt_tokens_details"]["cached_tokens"].get<int>();
    prompt_sum += u["prompt_tokens"].get<int>();
  }
  ASSERT_GT(cached_sum, 400);
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(metrics->body.find(fmt::format("vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"cmax-sim\"}} {}", cached_sum)),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find(fmt::format("vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"cmax-sim\"}} {}", prompt_sum)),
            std::string::npos);
  EXPECT_NE(metrics->body.find("sglang:num_running_reqs{dp_rank=\"0\",model_name=\"cmax-sim\"} 0"), std::string::npos);
  auto loads = json::parse(cli.Get("/v1/loads")->body);
  EXPECT_GT(loads["loads"][0]["num_used_tokens"].get<int>(), 400);

  auto flushed = cli.Post("/flush_cache", "", "application/json");
  ASSERT_TRUE(flushed);
  EXPECT_EQ(flushed->status, 200);
  EXPECT_EQ(flushed->body.rfind("Cache flushed.", 0), 0u) << flushed->body;
  EXPECT_EQ(json::parse(cli.Get("/v1/loads")->body)["loads"][0]["num_used_tokens"], 0);
  auto after = cli.Post("/v1/chat/completions", chat_body(system, "And how many NICs?"), "application/json");
  ASSERT_TRUE(after && after->status == 200);
  EXPECT_EQ(json::parse(after->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0)
      << "a flushed cache serves nothing from before";
}

}  // namespace

namespace {

TEST(EndpointServe, SeveralListenAddressesAreIndependentWorkers) {
  ServeProcess serve({"--time-scale", "0", "--replicas", "1", "--listen", "127.0.0.1:0"});
  ASSERT_GT(serve.port(), 0) << serve.error();
  // The second URL line.
  int second = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       second == 0 && std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    const auto log = serve.log();
    const std::string marker = "listening on http://127.0.0.1:";
    auto first = log.find(marker);
    auto next = first == std::string::npos ? std::string::npos : log.find(marker, first + 1);
    if (next != std::string::npos) second = std::atoi(log.c_str() + next + marker.size());
  }
  ASSERT_GT(second, 0) << serve.log();
  ASSERT_NE(second, serve.port());
  const auto system = long_system_prompt();
  httplib::Client a("127.0.0.1", serve.port()), b("127.0.0.1", second);
  ASSERT_TRUE(a.Post("/v1/chat/completions", chat_body(system, "q1"), "application/json"));
  // The same prefix on the other worker is not cached there: each has its own cache.
  auto other = b.Post("/v1/chat/completions", chat_body(system, "q2"), "application/json");
  ASSERT_TRUE(other && other->status == 200);
  EXPECT_EQ(json::parse(other->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto again = a.Post("/v1/chat/completions", chat_body(system, "q3"), "application/json");
  ASSERT_TRUE(again && again->status == 200);
  EXPECT_GT(json::parse(again->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 400);
  EXPECT_EQ(json::parse(a.Get("/cmax/stats")->body)["requests"], 2);
  EXPECT_EQ(json::parse(b.Get("/cmax/stats")->body)["requests"], 1);
}

}  // namespace
