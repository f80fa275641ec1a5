#include "endpoint/trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::endpoint {
namespace {

constexpr std::size_t kMaxWarnings = 10;

using json = nlohmann::json;

// A non-negative integer field that fits in uint32, or an error naming it.
Result<std::uint32_t> count_field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fail("missing \"{}\"", key);
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > std::numeric_limits<std::uint32_t>::max())
    return fail("\"{}\" is not a non-negative integer", key);
  return static_cast<std::uint32_t>(it->get<std::int64_t>());
}

// One line into `out` (request and hashes appended), or an error saying what is wrong.
Result<void> parse_line(std::string_view line, Trace& out) {
  // The parser is used without exceptions: a bad line is data, not a failure.
  const json obj = json::parse(line, nullptr, false);
  if (obj.is_discarded()) return fail("not JSON");
  if (!obj.is_object()) return fail("not a JSON object");
  const auto ts = obj.find("timestamp");
  if (ts == obj.end()) return fail("missing \"timestamp\"");
  if (!ts->is_number() || ts->get<double>() < 0) return fail("\"timestamp\" is not a non-negative number");
  auto in = count_field(obj, "input_length");
  if (!in) return Unexpected<Error>{in.error()};
  auto outl = count_field(obj, "output_length");
  if (!outl) return Unexpected<Error>{outl.error()};
  const auto ids = obj.find("hash_ids");
  if (ids == obj.end()) return fail("missing \"hash_ids\"");
  if (!ids->is_array()) return fail("\"hash_ids\" is not an array");
  TraceRequest r;
  r.arrival_s = ts->get<double>() / 1000.0;
  r.input_tokens = *in;
  r.output_tokens = *outl;
  r.first_block = static_cast<std::uint32_t>(out.hashes.size());
  for (const auto& id : *ids) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
      out.hashes.resize(r.first_block);
      return fail("\"hash_ids\" holds a value that is not a non-negative integer");
    }
    out.hashes.push_back(id.get<std::uint64_t>());
  }
  r.block_count = static_cast<std::uint32_t>(out.hashes.size() - r.first_block);
  out.requests.push_back(r);
  return ok();
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Result<Trace> parse_mooncake(std::string_view text) {
  Trace t;
  t.block_tokens = 512;
  std::size_t line_no = 0, lines = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++lines;
    auto parsed = parse_line(line, t);
    if (!parsed) {
      ++t.skipped_lines;
      if (t.warnings.size() < kMaxWarnings) t.warnings.push_back(fmt::format("line {}: {}", line_no, parsed.error().message));
    }
  }
  if (t.requests.empty()) {
    if (lines == 0) return fail("the trace is empty; expected Mooncake JSONL (one request per line)");
    return fail("no usable request in {} line{} ({}); expected Mooncake JSONL with timestamp, input_length, "
                "output_length, hash_ids",
                lines, lines == 1 ? "" : "s", t.warnings.empty() ? "" : t.warnings.front());
  }
  if (!std::is_sorted(t.requests.begin(), t.requests.end(),
                      [](const TraceRequest& a, const TraceRequest& b) { return a.arrival_s < b.arrival_s; }))
    std::stable_sort(t.requests.begin(), t.requests.end(),
                     [](const TraceRequest& a, const TraceRequest& b) { return a.arrival_s < b.arrival_s; });
  return t;
}

Trace synthetic_trace(const SyntheticConfig& c) {
  Trace t;
  t.source = "synthetic";
  t.block_tokens = std::max(1, c.block_tokens);
  const auto bt = static_cast<std::uint32_t>(t.block_tokens);
  std::mt19937_64 rng(c.seed);
  auto around = [&](std::uint32_t mean) {
    if (mean == 0) return std::uint32_t{0};
    return std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::uniform_real_distribution<double>(0.5, 1.5)(rng) * mean));
  };
  std::exponential_distribution<double> next_session(c.session_rate_per_s > 0 ? c.session_rate_per_s : 1.0);
  std::exponential_distribution<double> think(c.think_s > 0 ? 1.0 / c.think_s : 1e9);

  struct Pending {
    double arrival_s;
    std::uint32_t session, input, output;
    std::vector<std::uint64_t> chain;
  };
  std::vector<Pending> pending;
  double session_start = 0;
  for (int s = 0; s < c.sessions; ++s) {
    session_start += next_session(rng);
    // The history's full blocks and their chained hashes. A block is shared across sessions
    // only while it lies wholly inside the system prompt.
    std::vector<std::uint64_t> chain;
    std::uint32_t history = c.system_tokens;
    double at = session_start;
    auto full_block_hash = [&](std::size_t k) {
      const std::uint64_t parent = k == 0 ? 0x5eed : chain[k - 1];
      const bool shared = (k + 1) * bt <= c.system_tokens;
      return mix(parent, shared ? k : (std::uint64_t{static_cast<std::uint32_t>(s)} << 32 | k));
    };
    for (int turn = 0; turn < c.turns; ++turn) {
      history += around(c.user_tokens);
      while ((chain.size() + 1) * bt <= history) chain.push_back(full_block_hash(chain.size()));
      Pending p{at, static_cast<std::uint32_t>(s + 1), history, around(c.output_tokens), chain};
      // The partial last block (as in Mooncake) differs at every turn.
      if (history % bt != 0)
        p.chain.push_back(mix(chain.empty() ? 0x5eed : chain.back(),
                              0xfa57ull << 48 | std::uint64_t{static_cast<std::uint32_t>(s)} << 16 | static_cast<std::uint64_t>(turn)));
      history += p.output;
      pending.push_back(std::move(p));
      at += c.reply_s + think(rng);
    }
  }
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.arrival_s < b.arrival_s; });
  for (const auto& p : pending) {
    TraceRequest r{p.arrival_s, p.input, p.output, static_cast<std::uint32_t>(t.hashes.size()),
                   static_cast<std::uint32_t>(p.chain.size()), p.session};
    t.hashes.insert(t.hashes.end(), p.chain.begin(), p.chain.end());
    t.requests.push_back(r);
  }
  return t;
}

}  // namespace cmax::endpoint
