// libFuzzer target: Http1Decoder (the native transport's HTTP/1.1 response decoder) over any
// bytes. Invariants: no crash; it never consumes more than it was given; feeding the same bytes
// in pieces (sizes from the input's first byte) ends in the same state with the same body and the
// same error as one whole feed; an error is one printable line. The same bytes as
// `cmax endpoint bench --header` and `--extra-body`: an accepted header has a non-empty name
// without CR or LF; an accepted extra body is a JSON object without the keys cmax sets. The same
// bytes as an engine's /metrics (loadgen/server_metrics.h) and as a prompt file (prompt_file.h).

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "loadgen/http1_decoder.h"
#include "loadgen/runner.h"
#include "loadgen/prompt_file.h"
#include "loadgen/server_metrics.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

struct Sink final : cmax::loadgen::Http1Sink {
  std::string body;
  bool on_head(const cmax::loadgen::Http1Head& h) override {
    check(h.status >= 200 && h.status <= 999);
    return true;
  }
  bool on_body(std::string_view b) override {
    body.append(b);
    return true;
  }
};

struct Result {
  cmax::loadgen::Http1Decoder::State state;
  std::string body, error;
};

Result decode(std::string_view in, std::size_t piece, bool eof) {
  cmax::loadgen::Http1Decoder d;
  Sink sink;
  std::string pending;
  for (std::size_t at = 0; at < in.size(); at += piece) {
    pending.append(in.substr(at, piece));
    const auto used = d.feed(pending, sink);
    check(used <= pending.size());
    pending.erase(0, used);
    using S = cmax::loadgen::Http1Decoder::State;
    if (d.state() != S::kHead && d.state() != S::kBody) break;
  }
  if (eof) d.eof();
  for (char c : d.error()) check(c >= 0x20 && c < 0x7f);
  return {d.state(), sink.body, d.error()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 17;
  const bool eof = data[0] & 0x80;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (auto name = cmax::loadgen::header_name(in)) {
    check(!name->empty() && in.find_first_of("\r\n") == std::string_view::npos);
  }
  if (auto extra = cmax::loadgen::parse_extra_body(in)) {
    auto j = nlohmann::json::parse(*extra);
    check(j.is_object() && !j.contains("model") && !j.contains("stream") && !j.contains("messages"));
  }
  // The same bytes as an engine's /metrics: whatever is read is finite, and a rate needs both halves.
  const auto m = cmax::loadgen::parse_engine_metrics(in);
  check(m.queries.has_value() == m.hits.has_value());
  if (m.queries) check(std::isfinite(*m.queries) && std::isfinite(*m.hits));
  if (m.sglang_hit_rate) check(std::isfinite(*m.sglang_hit_rate));
  // And as a prompt file (`--prompts`): what it reads has a message with a role in every entry.
  if (auto f = cmax::loadgen::parse_prompt_file(in)) {
    check(!f->entries.empty() && (f->format == "sharegpt" || f->format == "jsonl"));
    for (const auto& e : f->entries) {
      check(!e.messages.empty());
      for (const auto& m : e.messages) check(!m.role.empty());
    }
  }
  const auto whole = decode(in, in.size() ? in.size() : 1, eof);
  const auto split = decode(in, piece, eof);
  check(whole.state == split.state);
  check(whole.body == split.body);
  check(whole.error == split.error);
  return 0;
}
