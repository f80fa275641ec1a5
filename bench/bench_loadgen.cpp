// Google Benchmark of cmax endpoint bench's per-token work: SseParser::feed over a stream of
// ~220-byte chat.completion.chunk events (goal > 500 MB/s) fed in the pieces libcurl hands over,
// and parse_stream_data on a typical content chunk (goal < 1.5 us) and on the final usage chunk,
// beside nlohmann's SAX parser alone (the reference reader the fast path falls back to); and an
// Anthropic Messages content_block_delta event, fast path against the DOM reader it falls back to.
// Run: build/bench/bench_loadgen --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "loadgen/chunk.h"
#include "loadgen/chunk_reference.h"
#include "loadgen/messages_chunk.h"
#include "loadgen/sse.h"

namespace {

using namespace cmax::loadgen;

// As vLLM writes them (model_dump_json(exclude_unset=True)): 219 bytes of JSON.
std::string content_chunk(std::string_view token) {
  return fmt::format(
      R"({{"id":"chatcmpl-4f1c0e9a7b2d4c55a6e3f8b9d0c1a2b3","object":"chat.completion.chunk","created":1733401234,)"
      R"("model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{{"index":0,"delta":{{"content":"{}"}},)"
      R"("logprobs":null,"finish_reason":null}}]}})",
      token);
}

const std::string kUsageChunk =
    R"({"id":"chatcmpl-BjcFhP7mJq2s4xWzYt0R9aLkNv3Ue","object":"chat.completion.chunk","created":1750153825,)"
    R"("model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c","choices":[],)"
    R"("usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":)"
    R"({"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,)"
    R"("accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"Q1bz"})";

// 2,000 content events, tokens of 1-8 bytes, with an escape now and then: ~460 KB.
const std::string& stream() {
  static const std::string s = [] {
    const char* tokens[] = {" the", " model", ",", " a", " of", "\\n\\n", " Paris", " \\\"quoted\\\"", "ing", " 42"};
    std::string out;
    for (int i = 0; i < 2000; ++i) out += "data: " + content_chunk(tokens[i % 10]) + "\n\n";
    out += "data: [DONE]\n\n";
    return out;
  }();
  return s;
}

struct CountingSink : SseSink {
  std::size_t bytes = 0;
  void on_event(const SseEvent& e) override { bytes += e.data.size(); }
};

// Arg: the piece size a read hands over (0 = the whole stream in one feed).
void BM_SseFeed(benchmark::State& state) {
  const std::string& s = stream();
  const std::size_t piece = state.range(0) == 0 ? s.size() : static_cast<std::size_t>(state.range(0));
  SseParser parser;
  CountingSink sink;
  for (auto _ : state) {
    parser.reset();
    for (std::size_t at = 0; at < s.size(); at += piece) parser.feed(std::string_view(s).substr(at, piece), sink);
    benchmark::DoNotOptimize(sink.bytes);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * s.size()));
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2001, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SseFeed)->Arg(0)->Arg(16384)->Arg(1448)->Arg(97);

// Arg: want_text.
void BM_ParseContentChunk(benchmark::State& state) {
  const std::string chunk = content_chunk(" the");
  const bool want_text = state.range(0) != 0;
  for (auto _ : state) {
    auto r = parse_stream_data(chunk, want_text);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * chunk.size()));
}
BENCHMARK(BM_ParseContentChunk)->Arg(0)->Arg(1);

void BM_ParseContentChunkNlohmann(benchmark::State& state) {
  const std::string chunk = content_chunk(" the");
  for (auto _ : state) {
    auto r = detail::parse_json_nlohmann(chunk, detail::JsonDoc::kStream, true);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * chunk.size()));
}
BENCHMARK(BM_ParseContentChunkNlohmann);

void BM_ParseUsageChunk(benchmark::State& state) {
  for (auto _ : state) {
    auto r = parse_stream_data(kUsageChunk, true);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kUsageChunk.size()));
}
BENCHMARK(BM_ParseUsageChunk);

void BM_ParseUsageChunkNlohmann(benchmark::State& state) {
  for (auto _ : state) {
    auto r = detail::parse_json_nlohmann(kUsageChunk, detail::JsonDoc::kStream, true);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseUsageChunkNlohmann);

// Anthropic's wire order; arg 1: cmax serve's (sorted keys).
std::string_view messages_delta(bool sorted) {
  return sorted ? R"({"delta":{"text":" the","type":"text_delta"},"index":0,"type":"content_block_delta"})"
                : R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}})";
}

void BM_ParseMessagesDelta(benchmark::State& state) {
  const std::string_view e = messages_delta(state.range(0) == 1);
  MessagesUsage acc;
  for (auto _ : state) {
    auto r = parse_messages_event("content_block_delta", e, false, acc);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseMessagesDelta)->Arg(0)->Arg(1);

void BM_ParseMessagesDeltaDom(benchmark::State& state) {
  const std::string_view e = messages_delta(state.range(0) == 1);
  MessagesUsage acc;
  for (auto _ : state) {
    auto r = detail::parse_messages_event_dom("content_block_delta", e, false, acc);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseMessagesDeltaDom)->Arg(0)->Arg(1);

// A content chunk with non-ASCII text and escapes (still the fast path).
void BM_ParseUnicodeChunk(benchmark::State& state) {
  const std::string chunk = content_chunk("\xE4\xBD\xA0\xE5\xA5\xBD\\u4e16\\ud83d\\ude00\\n");
  for (auto _ : state) {
    auto r = parse_stream_data(chunk, true);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseUnicodeChunk);

// What a client does per response: feed the stream in 16 KiB reads and parse every event.
void BM_StreamEndToEnd(benchmark::State& state) {
  struct ParsingSink : SseSink {
    std::size_t content_chunks = 0;
    void on_event(const SseEvent& e) override {
      auto r = parse_stream_data(e.data, false);
      if (r && r->has_content) ++content_chunks;
    }
  } sink;
  const std::string& s = stream();
  SseParser parser;
  for (auto _ : state) {
    parser.reset();
    for (std::size_t at = 0; at < s.size(); at += 16384) parser.feed(std::string_view(s).substr(at, 16384), sink);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * s.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2000, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StreamEndToEnd);

}  // namespace
